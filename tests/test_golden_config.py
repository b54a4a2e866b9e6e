"""The learned golden configuration: 16 MI300X-shaped hosts probed by the real probe, one on
other NIC firmware, one NIC at MTU 1500 and one rail with GRO off; `bench doctor` names exactly those."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchharness.cli.main import main
from benchharness.telemetry import golden
from tests import synthetic_hosts

PROBE = Path(__file__).resolve().parents[1] / "benchharness" / "onhost" / "probe.py"
FIRMWARE, OLD_FIRMWARE = "230.0.154.0/pkg 230.0.154.0", "227.1.111.0/pkg 227.1.111.0"
ODD_FIRMWARE, ODD_MTU, ODD_GRO = "h05", "h12", "h07"


def _ethtool(path: Path, firmware: str) -> None:
    """A stand-in ``ethtool`` that answers ``-i`` in ethtool's format and leaves the rest to the
    synthetic host's own stand-in (real published ``-k/-l/-g/-c`` outputs)."""
    path.rename(path.with_name("ethtool.synthetic"))
    path.write_text("#!/bin/sh\nif [ \"$1\" = -i ]; then\n"
                    "  printf 'driver: bnxt_en\\nversion: 6.8.0-synthetic\\nfirmware-version: %s\\n"
                    "bus-info: 0000:00:00.0\\n' '" + firmware + "'\n"
                    f"  exit 0\nfi\nexec '{path.with_name('ethtool.synthetic')}' \"$@\"\n")
    path.chmod(0o755)


def _probe(built: dict[str, Path]) -> dict:
    out = subprocess.run([sys.executable, str(PROBE), "--root", str(built["tree"]), "--path-prefix",
                          str(built["bin"]), "--timeout", "20"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Probe facts of h01..h16 (``bench doctor out=`` layout)."""
    root = tmp_path_factory.mktemp("fleet")
    built = {}
    for i in range(1, 17):
        name = f"h{i:02d}"
        built[name] = synthetic_hosts.build("mi300x", root / name, {2: "gro"} if name == ODD_GRO else {})
        _ethtool(built[name]["bin"] / "ethtool", OLD_FIRMWARE if name == ODD_FIRMWARE else FIRMWARE)
    netdev = synthetic_hosts.inventory_vars("mi300x", built[ODD_MTU])["netdev"].split(",")[3]
    (built[ODD_MTU]["tree"] / "sys" / "class" / "net" / netdev / "mtu").write_text("1500\n")
    with ThreadPoolExecutor(max_workers=4) as pool:
        facts = dict(zip(built, pool.map(_probe, built.values()), strict=True))
    path = root / "facts.json"
    path.write_text(json.dumps({"facts": facts}))
    return path


def test_doctor_names_exactly_the_two_odd_hosts(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = json.loads(fleet.read_text())["facts"]
    learned = golden.learn(facts)
    found = golden.deviations(facts, learned)
    assert {d.host for d in found} == {ODD_FIRMWARE, ODD_MTU, ODD_GRO}
    assert {(d.host, d.fact, d.value, d.expected) for d in found} == (
        {(ODD_FIRMWARE, "firmware", OLD_FIRMWARE, FIRMWARE)} | {(ODD_MTU, "mtu", "1500", "9000")}
        | {(ODD_GRO, "gro", "off", "on")})
    (gro,) = [d for d in found if d.host == ODD_GRO]
    assert gro.nic == synthetic_hosts.inventory_vars("mi300x", {"tree": Path(), "bin": Path()})["netdev"].split(",")[2]
    assert sum(d.host == ODD_FIRMWARE for d in found) == 8  # every NIC of that host

    assert main(["doctor", f"facts={fleet}"]) == 0  # a learned majority warns, it does not fail
    out = capsys.readouterr().out
    drift = [line for line in out.splitlines() if line.startswith("  WARN ")]
    assert len(drift) == 3, out
    assert f"{ODD_FIRMWARE}: firmware {OLD_FIRMWARE}" in drift[0] and f"majority {FIRMWARE}, 15 of 16" in drift[0]
    assert f"{ODD_GRO}: gro off on {gro.nic} (majority on, 15 of 16 hosts" in drift[1], drift[1]
    assert f"{ODD_MTU}: mtu 1500 on " in drift[2] and "majority 9000, 15 of 16 hosts" in drift[2]
    assert "3 host(s) differ: h05, h07, h12" in out


def test_golden_tag_in_the_catalog(fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCH_RESULTS", str(tmp_path))
    facts = json.loads(fleet.read_text())["facts"]
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"facts": {h: f for h, f in facts.items() if h not in (ODD_FIRMWARE, ODD_MTU)}}))
    assert main(["doctor", f"facts={clean}", "save_golden=fleet-2026"]) == 0
    assert "stored in" in capsys.readouterr().out
    assert (tmp_path / "catalog.sqlite").is_file()
    only_odd = tmp_path / "odd.json"
    only_odd.write_text(json.dumps({"facts": {h: facts[h] for h in (ODD_FIRMWARE, ODD_MTU, "h01")}}))
    # Three hosts alone have no majority worth trusting against the two odd ones; the tag decides.
    assert main(["doctor", f"facts={only_odd}", "golden=fleet-2026"]) == 1
    out = capsys.readouterr().out
    assert "FAIL h05: firmware" in out and "FAIL h12: mtu 1500" in out and "h01:" not in out.split("golden")[1]
    assert main(["doctor", f"facts={clean}", "golden=no-such-tag"]) == 2
    assert "known: fleet-2026" in capsys.readouterr().err


def test_a_split_has_no_golden_value() -> None:
    def host(mtu: int) -> dict:
        return {"host": {"kernel": "6.8"}, "cpu": {}, "nics": {"devices": [
            {"netdev": "eth0", "driver": "mlx5_core", "mtu": mtu, "virtual": False}]}}
    facts = {"a": host(9000), "b": host(1500)}
    assert "nic.eth0.mtu" not in golden.learn(facts)["all/mlx5_core"]
    assert golden.deviations(facts, golden.learn(facts)) == []
    facts["c"] = host(9000)
    assert [(d.host, d.value) for d in golden.deviations(facts, golden.learn(facts))] == [("b", "1500")]
    # roles keep groups apart: b alone in its role is nobody's minority
    assert golden.deviations(facts, golden.learn(facts, {"b": "storage"}), {"b": "storage"}) == []


def test_doctor_reaches_max_connections_hosts_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench doctor max_connections=N`` bounds the probe's fan-out (a cluster's controller), and a
    bad value is a one-line usage error."""
    from benchharness.cli.main import main
    from benchharness.telemetry import doctor as doctor_mod

    seen: list[int] = []

    def probe_all(transports: list, workers: int = 32) -> dict:
        seen.append(workers)
        return {t.host.name: {"available": False, "reason": "not probed in this test",
                              "host": {"name": t.host.name}} for t in transports}

    monkeypatch.setattr(doctor_mod, "probe_all", probe_all)
    main(["doctor", "max_connections=3"])
    main(["doctor"])
    assert seen == [3, 32]
    for bad in ("0", "1025", "many"):
        assert main(["doctor", f"max_connections={bad}"]) == 2
    assert seen == [3, 32]
