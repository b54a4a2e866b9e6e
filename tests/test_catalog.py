"""The SQLite history catalog: registration, filters, tags, baselines, rebuild from run dirs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from benchharness.cli.history import list_lines, tag_lines
from benchharness.core.errors import UsageError
from benchharness.results.catalog import CATALOG_NAME, Catalog, register_run
from benchharness.results.nics import host_nics

_spec = importlib.util.spec_from_file_location("acc_runs", Path(__file__).parent / "fixtures" / "acceptance" / "runs.py")
assert _spec and _spec.loader
runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runs)

H3 = ["n1", "n2", "n3"]
PEER = {"metric": "bw_avg_gbps", "min": "90% best_peer"}


@pytest.fixture
def three_nights(tmp_path: Path) -> Path:
    """Night 1 passes (CX7), night 2 fails on n2 (CX7), night 3 passes (a CX8 shipment)."""
    for i, (name, model, slow) in enumerate([("d1", "CX7", {}), ("d2", "CX7", {"n2": 0.5}), ("d3", "CX8", {})]):
        run = runs.make_run(tmp_path / name, H3, checks=[PEER], nic_model=model, host_factor=slow,
                            started=runs.T0 + i * runs.DAY)
        runs.finish(run)
        register_run(run)
    return tmp_path


def ids(rows: list[dict]) -> list[str]:
    return [r["run_id"] for r in rows]


def test_runs_are_registered_with_hosts_nics_and_verdicts(three_nights: Path) -> None:
    cat = Catalog(three_nights)
    assert (three_nights / CATALOG_NAME).is_file()
    rows = cat.runs()
    assert ids(rows) == ["d1", "d2", "d3"]
    assert [r["verdict"] for r in rows] == ["pass", "fail", "pass"]
    assert rows[1]["nic_models"] == "CX7" and rows[1]["hosts"] == "n1,n2,n3" and rows[1]["failed_checks"] == 3
    hosts = cat.run_hosts("d2")
    assert [(h["host"], h["nic_serial"], h["nic_firmware"], h["verdict"]) for h in hosts] == [
        ("n1", "MT2234X00000", "28.39.1002", "pass"), ("n2", "MT2234X00001", "28.39.1002", "fail"),
        ("n3", "MT2234X00002", "28.39.1002", "pass")]


def test_list_filters(three_nights: Path) -> None:
    cat = Catalog(three_nights)
    assert ids(cat.runs(nic="CX8")) == ["d3"]
    assert ids(cat.runs(nic="MT2234X00001")) == ["d1", "d2", "d3"]  # a serial: every night had it here
    assert ids(cat.runs(verdict="fail")) == ["d2"]
    assert ids(cat.runs(suite="other")) == []
    assert ids(cat.runs(last=2)) == ["d2", "d3"]
    assert ids(cat.runs(since="2025-12-01T12:00:00+00:00")) == ["d3"]
    lines = list_lines({"verdict": "fail"}, cat)
    assert len(lines) == 1 and lines[0].startswith("d2  acceptance   fail ")
    assert "nic=CX7" in lines[0] and "failed_checks=3" in lines[0]


def test_tags_pick_baselines_and_survive_a_rebuild(three_nights: Path) -> None:
    cat = Catalog(three_nights)
    assert cat.resolve("golden", "acceptance") is None
    assert tag_lines("d1", ["golden", "qa-ok"], catalog=cat) == ["d1: tags golden, qa-ok"]
    assert cat.resolve("golden", "acceptance").path.name == "d1"  # type: ignore[union-attr]
    assert json.loads((three_nights / "d1" / "run.json").read_text())["tags"] == ["golden", "qa-ok"]
    cat.tag("d3", ["golden"])  # tagged later: it wins
    assert cat.resolve("golden", "acceptance").path.name == "d3"  # type: ignore[union-attr]
    assert cat.resolve("golden", "acceptance", exclude="d3").path.name == "d1"  # type: ignore[union-attr]
    assert cat.resolve("latest-pass", "acceptance").path.name == "d3"  # type: ignore[union-attr]
    assert cat.resolve("latest-pass", "acceptance", exclude="d3").path.name == "d1"  # type: ignore[union-attr]
    assert cat.resolve("latest", "acceptance", exclude="d3").path.name == "d2"  # type: ignore[union-attr]
    assert cat.resolve("d2").path.name == "d2"  # type: ignore[union-attr]
    assert ids(cat.runs(tag="golden")) == ["d1", "d3"]
    cat.tag("d1", ["qa-ok"], remove=True)
    # delete the catalog: it is rebuilt from the run directories, tags included
    (three_nights / CATALOG_NAME).unlink()
    fresh = Catalog(three_nights)
    assert fresh.sync() == 3
    assert ids(fresh.runs(tag="golden")) == ["d1", "d3"] and ids(fresh.runs(tag="qa-ok")) == []
    assert fresh.resolve("golden", "acceptance").path.name == "d3"  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="bad tag"):
        fresh.tag("d1", ["latest-pass"])


def test_sync_adds_new_and_drops_vanished_run_dirs(three_nights: Path) -> None:
    import shutil

    cat = Catalog(three_nights)
    assert cat.sync() == 0  # everything is registered already
    shutil.rmtree(three_nights / "d2")
    runs.make_run(three_nights / "d4", H3, started=runs.T0 + 4 * runs.DAY)
    assert cat.sync() == 1
    assert ids(cat.runs()) == ["d1", "d3", "d4"]
    assert [p.run_id for p in cat.series("bw_avg_gbps", size=8 << 20)] == ["d1", "d3", "d4"]


def test_series_is_the_median_over_hosts_of_their_best_pair(three_nights: Path) -> None:
    cat = Catalog(three_nights)
    pts = cat.series("bw_avg_gbps", test="write-bw", size=8 << 20, nic="CX7")
    assert [p.run_id for p in pts] == ["d1", "d2"] and all(p.hosts == 3 for p in pts)
    assert pts[0].case == "size=8M bidir=False perftest_test=ib_write_bw"
    # night 2: n2 halves both its pairs; each host counts its best pair: n1 360, n2 180, n3 360,
    # so the model's night is unchanged (the bad card is the host checks' business) ...
    assert pts[1].value == pytest.approx(pts[0].value, rel=0.02)
    # ... while the card's own history shows it
    one = cat.series("bw_avg_gbps", size=8 << 20, nic="MT2234X00001", exclude="d1")
    assert [(p.run_id, p.hosts) for p in one] == [("d2", 1), ("d3", 1)]
    assert one[0].value == pytest.approx(0.5 * pts[0].value, rel=0.02)


def test_nic_identity_prefers_telemetry_for_serial_and_firmware(tmp_path: Path) -> None:
    info = {"hosts": ["a", "b"], "inventory": {"hosts": {
        "a": {"vars": {"nic_model": "CX7", "nic_serial": "INV-1", "nic_firmware": "1.0", "netdev": "ens1"}},
        "b": {"vars": {"nic_model": "CX7", "nic_serial": "INV-2"}}}}}
    facts = {"a": {"nics": {"devices": [{"netdev": "eno1", "firmware": "9.9", "virtual": False},
                                         {"netdev": "ens1", "firmware": "28.39", "serial_number": "MT1"}]}}}
    nics = host_nics(info, facts)
    assert (nics["a"].model, nics["a"].serial, nics["a"].firmware) == ("CX7", "MT1", "28.39")
    assert (nics["b"].model, nics["b"].serial, nics["b"].firmware) == ("CX7", "INV-2", "")


def test_points_answer_as_the_measures_do(three_nights: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trend and history read the per-night points; they equal the medians over the measures
    (the answer before the points table), overall and per NIC model, also for a catalog
    written before the points table existed."""
    cat = Catalog(three_nights)
    queries = [{}, {"nic": "CX7"}, {"nic": "CX8"}, {"size": 1 << 20}, {"suite": "acceptance", "nic": "CX7"}]
    fast = [cat.series("bw_avg_gbps", **q) for q in queries]  # type: ignore[arg-type]
    with monkeypatch.context() as m:
        m.setattr(Catalog, "_by_model", lambda self, nic: False)
        slow = [cat.series("bw_avg_gbps", **q) for q in queries]  # type: ignore[arg-type]
    assert fast == slow and all(fast[:3])
    with cat.connect() as conn:
        conn.execute("DELETE FROM points")
    cat.sync()
    assert [cat.series("bw_avg_gbps", **q) for q in queries] == slow  # type: ignore[arg-type]
