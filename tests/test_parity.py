"""Parity of set-up across compared runs, from what the real probe read on synthetic MI300X-shaped
hosts (tests/synthetic_hosts.py: real published tool outputs) whose NIC firmware differs."""

from __future__ import annotations

from pathlib import Path

from benchharness.analysis import parity
from benchharness.config.inventory import load_inventory
from benchharness.results.store import RunDir
from tests import synthetic_hosts
from tests.test_golden_config import FIRMWARE, OLD_FIRMWARE, _ethtool, _probe

HOSTS = ("g1", "g2", "g3", "g4")


def _run(path: Path, snapshot: dict, facts: dict[str, dict]) -> RunDir:
    run = RunDir.create(path)
    run.write_run_info({"run_id": path.name, "suite": {"name": "s"}, "state": "complete", "exit_code": 0,
                        "hosts": list(facts), "inventory": snapshot})
    for host, doc in facts.items():
        run.write_json(f"telemetry/facts/{host}.json", doc)
    return run


def test_parity_names_the_firmware_three_of_four_hosts_ran(tmp_path: Path) -> None:
    built = {}
    for name, firmware in (("new", FIRMWARE), ("old", OLD_FIRMWARE)):
        built[name] = synthetic_hosts.build("mi300x", tmp_path / name)
        _ethtool(built[name]["bin"] / "ethtool", firmware)
    facts = {name: _probe(b) for name, b in built.items()}
    hvars = synthetic_hosts.inventory_vars("mi300x", built["new"])
    inv = tmp_path / "inventory.ini"
    inv.write_text("[gpu]\n" + "\n".join(" ".join([h, "ansible_host=127.0.0.1", *(f"{k}={v}" for k, v in hvars.items())])
                                         for h in HOSTS) + "\n")
    snapshot = load_inventory(inv).snapshot()
    a = _run(tmp_path / "a", snapshot, dict.fromkeys(HOSTS, facts["new"]))
    b = _run(tmp_path / "b", snapshot, {**dict.fromkeys(HOSTS[:3], facts["old"]), "g4": facts["new"]})

    found = parity.parity([a, b], ["A", "B"])
    assert found.sentences == [f"A ran firmware {FIRMWARE} on all 4 hosts; "
                               f"B ran firmware {OLD_FIRMWARE} on 3 of 4 hosts ({FIRMWARE} on 1)"]
    rows = {r.fact: r for r in found.rows}
    assert rows["firmware"].values == {"A": FIRMWARE, "B": f"{OLD_FIRMWARE} on 3 of 4 hosts, {FIRMWARE} on 1"}
    same = {k: r.values["A"] for k, r in rows.items() if not r.differs}
    assert same["mtu"] == "9000" and same["gid_index"] == "3 (RoCE v2)" and same["traffic_class"] == "not set"
    assert same["driver"] == "bnxt_en 6.8.0-synthetic" and same["tool:rccl"] == "2.20.5"
    # no mlnx_qos / dcb on these hosts: not read, and said so per driver (never "off")
    assert same["pfc"] == "not available on bnxt_en" and same["ecn"] == "not available on bnxt_en"
    assert found.to_dict()["differences"] == found.sentences


def test_parity_counts_hosts_and_names_values_that_differ() -> None:
    a = {"h1": {"mtu": "9000", "kernel": "6.8"}, "h2": {"mtu": "9000", "kernel": "6.8"}}
    b = {"h1": {"mtu": "1500", "kernel": "6.8"}, "h2": {"mtu": "1500", "kernel": "6.8"},
         "h3": {"probe": parity.NOT_PROBED}}
    found = parity.compare_setups([a, b], ["A", "B"])
    rows = {r.fact: r for r in found.rows}
    assert rows["mtu"].sentence == "A ran MTU 9000 on all 2 hosts; B ran MTU 1500 on 2 of 3 hosts (not probed on 1)"
    assert rows["probe"].differs and rows["probe"].values["B"] == "probed on 2 of 3 hosts, not probed on 1"
    uniform = parity.compare_setups([a, {"h1": {"mtu": "1500", "kernel": "6.8"}}], ["A", "B"])
    assert uniform.sentences == ["A's MTU 9000 vs B's 1500"]  # kernel alike on 2 and on 1 host: parity


def test_comparison_report_and_json_carry_the_parity(tmp_path: Path) -> None:
    """The set-up differences reach the comparison page and ``format=json`` (runs without samples)."""
    import html
    import json
    import shutil
    import subprocess
    import sys

    from benchharness.report.compare import render_comparison
    from benchharness.report.exports import comparison_json

    tree = tmp_path / "tree"
    shutil.copytree(Path(__file__).parent / "fixtures" / "telemetry" / "trees" / "healthy", tree, symlinks=True)
    probe = Path(parity.__file__).parents[1] / "onhost" / "probe.py"

    def probed(mtu: str) -> dict:
        (tree / "sys" / "class" / "net" / "ens1f0np0" / "mtu").write_text(mtu + "\n")
        return json.loads(subprocess.run([sys.executable, str(probe), "--root", str(tree), "--no-commands"],
                                         capture_output=True, text=True, check=True, timeout=60).stdout)

    facts_a, facts_b = probed("9000"), probed("1500")
    snapshot = {"hosts": {h: {"vars": {"netdev": "ens1f0np0"}} for h in ("h1", "h2")}}
    runs = [_run(tmp_path / lab, {"hosts": snapshot["hosts"]}, dict.fromkeys(("h1", "h2"), f))
            for lab, f in (("a", facts_a), ("b", facts_b))]
    for run, lab in zip(runs, ("A", "B"), strict=True):
        run.write_run_info({**run.run_info(), "labels": {"label": lab}})
    doc = comparison_json(runs)
    assert doc["parity"]["differences"] == ["A's MTU 9000 vs B's 1500"]
    page = html.unescape(render_comparison(runs, tmp_path / "c.html").read_text(encoding="utf-8"))
    assert "Parity of set-up" in page and "A's MTU 9000 vs B's 1500" in page
