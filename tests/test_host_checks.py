"""The one judge of host facts (telemetry/host_checks.py) on synthetic 8-rail GPU nodes of known truth.

A DGX-shaped and an MI300X-shaped node (tests/synthetic_hosts.py: sysfs/procfs trees, and stand-in
nvidia-smi / amd-smi / rocm-smi printing real published topologies) with rail 5 trained at PCIe x8
and rail 6 link-down: the probe reads them as a host would, and exactly those two rails are flagged.
The lab test runs `bench doctor` over real ssh into a lab namespace that probes the same trees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import synthetic_hosts as sh

from benchharness.config.inventory import load_inventory
from benchharness.core.model import Host
from benchharness.telemetry.parsers._counter_names import highlights
from benchharness.telemetry.preflight import run_findings
from benchharness.telemetry.rails import gpu_table, nic_gpu_relations, pci_relation, rails_from_facts
from benchharness.telemetry.requirements import probe_tools_arg
from benchharness.telemetry.temperature_checks import judge_sensor

PROBE = Path(__file__).parents[1] / "benchharness" / "onhost" / "probe.py"
KINDS = ("dgx", "mi300x")


def _host_line(name: str, address: str, hvars: dict[str, Any]) -> str:
    return " ".join([name, f"ansible_host={address}", *(f"{k}={v}" for k, v in hvars.items())])


def node(tmp: Path, kind: str, degrade: dict[int, str], numa: bool = True) -> tuple[Host, dict[str, Any]]:
    built = sh.build(kind, tmp / kind, degrade)
    inv = tmp / f"{kind}.ini"
    inv.write_text("[gpu]\n" + _host_line("n1", "127.0.0.1", sh.inventory_vars(kind, built, numa)) + "\n")
    out = subprocess.run([sys.executable, str(PROBE), "--tools", probe_tools_arg(), "--root", str(built["tree"]), "--path-prefix",
                          str(built["bin"])], capture_output=True, text=True, timeout=120, check=True)
    return load_inventory(inv).host("n1"), json.loads(out.stdout)


def flagged(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        if r["status"] in ("fail", "warn"):
            out.setdefault(str(r.get("rail")), set()).add(r["check"].removeprefix("preflight."))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_exactly_the_x8_and_the_down_rail_are_flagged(tmp_path: Path, kind: str) -> None:
    host, facts = node(tmp_path, kind, {5: "x8", 6: "down"})
    records = run_findings({"n1": facts}, [host])
    # x8 of a Gen5 x16 card: below capability, and 252 Gbit/s cannot carry the 400G link
    assert flagged(records) == {"rail5": {"pcie_link", "pcie_bandwidth"}, "rail6": {"link_state"}}, flagged(records)
    (pcie,) = [r for r in records if r["rail"] == "rail5" and r["check"] == "preflight.pcie_link"]
    assert (pcie["observed"], pcie["expected"]) == ("32 GT/s x8", "32 GT/s x16")
    assert f"SYN-{kind}-5" in pcie["nic"] and pcie["host"] == "n1"
    # rails 4-7 sit on NUMA node 1 as the inventory says: judged per rail, they pass
    numa = {r["rail"]: (r["status"], r["observed"]) for r in records if r["check"] == "preflight.numa_affinity"}
    assert numa == {f"rail{i}": ("pass", 0 if i < 4 else 1) for i in range(8)}
    # each NIC's nearest GPU shares its PCIe switch (nvidia-smi topo -m / sysfs PCI paths for AMD)
    topo = [r for r in records if r["check"] == "preflight.gpu_nic_topology"]
    assert len(topo) == 8 and {r["observed"] for r in topo} == {"PIX"}, topo


def test_amd_nearest_gpu_numa_temperatures_and_rccl(tmp_path: Path) -> None:
    host, facts = node(tmp_path, "mi300x", {})
    assert [g["bdf"] for g in gpu_table(facts)][:2] == ["0000:0c:00.0", "0000:22:00.0"]
    assert [g["numa"] for g in gpu_table(facts)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert nic_gpu_relations(facts, "bnxt_re3") == {0: "NODE", 1: "NODE", 2: "NODE", 3: "PIX", 4: "SYS",
                                                    5: "SYS", 6: "SYS", 7: "SYS"}
    rails = rails_from_facts(dict(facts, nics={"devices": [dict(n, ipv4=[sh.rail_address("mi300x", i)])
                                                           for i, n in enumerate(facts["nics"]["devices"])]}))
    assert [(r.rdma_dev, r.nearest_gpu, r.numa_node) for r in rails][3:5] == [("bnxt_re3", 3, 0), ("bnxt_re4", 4, 1)]
    assert facts["tools"]["rccl"] == {"available": True, "version": "2.20.5"}
    temps = [r for r in run_findings({"n1": facts}, [host]) if r["check"] == "preflight.temperature"]
    assert [r["observed"] for r in temps] == [45.0 + i for i in range(8)] and {r["status"] for r in temps} == {"pass"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_nic_on_the_wrong_numa_node_for_its_gpu_is_named(tmp_path: Path, kind: str) -> None:
    host, facts = node(tmp_path, kind, {2: "numa"}, numa=False)  # no numa_node in the inventory
    records = run_findings({"n1": facts}, [host])
    assert flagged(records) == {"rail2": {"numa_affinity"}}, flagged(records)
    (warn,) = [r for r in records if r["status"] == "warn"]
    assert "is on NUMA node 1 but its GPU2 is on NUMA node 0" in warn["message"], warn["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_nic_configuration_faults_are_named_with_rail_fact_and_expectation(tmp_path: Path, kind: str) -> None:
    """A 400G NIC on a Gen4 x16 slot, a NIC whose queue IRQs all sit on one CPU of the far NUMA
    node, one with TSO off and one with correctable AER errors: each is named on its rail only."""
    host, facts = node(tmp_path, kind, {1: "gen4", 2: "irq_far", 3: "tso", 4: "aer"})
    records = run_findings({"n1": facts}, [host])
    assert flagged(records) == {"rail1": {"pcie_bandwidth"}, "rail2": {"irq_spread", "irq_numa"},
                                "rail3": {"offloads"}, "rail4": {"aer"}}, flagged(records)
    by = {(r["rail"], r["check"].removeprefix("preflight.")): r for r in records}
    bw = by[("rail1", "pcie_bandwidth")]
    assert bw["status"] == "fail" and (bw["observed"], bw["expected"]) == ("252 Gbit/s", ">= 400 Gbit/s")
    assert round(bw["value"], 2) == 252.06 and bw["limit"] == 400.0  # 16 GT/s x 16 x 128/130
    assert "PCIe Gen4 x16 (252 Gbit/s) caps this 400G NIC near 252 Gbit/s" in bw["message"]
    assert f"SYN-{kind}-1" in bw["nic"]
    far, spread = by[("rail2", "irq_numa")], by[("rail2", "irq_spread")]
    assert (far["observed"], far["expected"]) == ("21", "0-15")  # node 0's NIC, its IRQs on CPU 21 of node 1
    assert "4 of 4 queue IRQs" in far["message"] and spread["observed"] == "CPU 21"
    tso = by[("rail3", "offloads")]
    assert (tso["observed"], tso["expected"]) == ("TSO off", "on") and tso["status"] == "warn"
    assert "Receiver Error 2" in by[("rail4", "aer")]["message"]
    # the healthy rails pass each check (RSS: the stand-in ethtool has no -x: info, never a pass)
    for check in ("pcie_bandwidth", "offloads", "irq_spread", "irq_numa", "pcie_payload", "aer"):
        assert by[("rail0", check)]["status"] == "pass", by[("rail0", check)]
    assert by[("rail0", "rss")]["status"] == "info" and "not available" in by[("rail0", "rss")]["message"]
    assert by[("rail0", "pcie_bandwidth")]["observed"] == "504 Gbit/s"


@pytest.mark.parametrize("kind", KINDS)
def test_a_correct_node_passes_every_nic_configuration_check(tmp_path: Path, kind: str) -> None:
    host, facts = node(tmp_path, kind, {})
    records = run_findings({"n1": facts}, [host])
    assert flagged(records) == {}, flagged(records)
    checks = {r["check"].removeprefix("preflight.") for r in records if r["status"] == "pass" and r["rail"]}
    assert {"pcie_bandwidth", "offloads", "irq_spread", "irq_numa", "pcie_payload", "aer"} <= checks


def test_pci_relation_words() -> None:
    rc, rp, usp = "pci0000:10", "0000:10:01.0", "0000:11:00.0"
    gpu = [rc, rp, usp, "0000:12:00.0", "0000:13:00.0"]
    assert pci_relation(gpu, [rc, rp, usp, "0000:12:02.0", "0000:15:00.0"], 0, 0) == "PIX"
    assert pci_relation(gpu, [rc, "0000:10:03.0", "0000:40:00.0"], 0, 0) == "PHB"
    assert pci_relation(gpu, ["pci0000:30", "0000:30:01.0", "0000:31:00.0"], 0, 0) == "NODE"
    assert pci_relation(gpu, ["pci0000:30", "0000:30:01.0", "0000:31:00.0"], 0, 1) == "SYS"
    assert pci_relation(gpu, [], 0, 0) is None


def test_sampler_temperatures_are_judged_by_sensor_kind() -> None:
    assert judge_sensor("h", "hwmon/hwmon2/k10temp/Tctl", 86).status == "warn"
    assert judge_sensor("h", "hwmon/hwmon5/mlx5/asic", 86).status == "pass"  # NIC ASICs: 95 / 105
    assert judge_sensor("h", "hwmon/hwmon9/amdgpu/junction", 91).status == "fail"


def test_bnxt_re_and_irdma_counters_are_highlighted() -> None:
    # names as drivers/infiniband/hw/bnxt_re/hw_counters.c and irdma/verbs.c define them
    hl = highlights({"ib_hw:bnxt_re0/1:to_retransmits": 3, "ib_hw:bnxt_re0/1:oos_drop_count": 2,
                     "ib_hw:bnxt_re0/1:rx_roce_discards": 5, "ib_hw:irdma0/1:cnpSent": 7,
                     "ib_hw:irdma0/1:ip4InDiscards": 1, "ib_hw:irdma0/1:tcpInProtoErrors": 4})
    assert hl["retransmission"] == {"to_retransmits": 3, "oos_drop_count": 2}
    assert hl["discards"] == {"rx_roce_discards": 5, "ip4InDiscards": 1}
    assert hl["ecn_cnp"] == {"cnpSent": 7} and hl["errors"] == {"tcpInProtoErrors": 4}


@pytest.mark.lab
def test_bench_doctor_over_ssh_flags_exactly_the_degraded_rails(tmp_path: Path) -> None:
    from conftest import make_lab

    with make_lab("i23hc", 2) as lab:
        lines, lab_ini = [], lab.inventory.read_text()
        for name, kind in (("h1", "dgx"), ("h2", "mi300x")):
            built = sh.build(kind, tmp_path / kind, {1: "gen4", 2: "irq_far", 3: "tso", 5: "x8", 6: "down"})
            address = next(h.address for h in lab.hosts if h.name == name)
            lines.append(_host_line(name, address, sh.inventory_vars(kind, built)))
        inv = tmp_path / "inventory.ini"
        inv.write_text("[lab]\n" + "\n".join(lines) + "\n\n" + lab_ini[lab_ini.index("[lab:vars]"):])
        out = tmp_path / "doctor.json"
        res = subprocess.run([sys.executable, "-m", "benchharness", "doctor", f"hosts={inv}", f"out={out}"],
                             capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr  # failed checks: exit 1
    records = json.loads(out.read_text())["verdicts"]
    for name in ("h1", "h2"):
        mine = [r for r in records if r["host"] == name]
        assert flagged(mine) == {"rail1": {"pcie_bandwidth"}, "rail2": {"irq_spread", "irq_numa"},
                                 "rail3": {"offloads"}, "rail5": {"pcie_link", "pcie_bandwidth"},
                                 "rail6": {"link_state"}}, (name, flagged(mine))
    assert "FAIL preflight.pcie_link h1.rail5: rail5 mlx5_5" in res.stdout
    assert "FAIL preflight.link_state h2.rail6: rail6 bnxt_re6" in res.stdout
    # each NIC-configuration fault named with its rail, the fact and what was expected
    assert "FAIL preflight.pcie_bandwidth h1.rail1: rail1 mlx5_1" in res.stdout
    assert "PCIe Gen4 x16 (252 Gbit/s) caps this 400G NIC near 252 Gbit/s" in res.stdout
    assert "WARN preflight.irq_numa h2.rail2: rail2 bnxt_re2" in res.stdout
    assert "WARN preflight.offloads h1.rail3: rail3 mlx5_3" in res.stdout and "TSO off on ibp36s0" in res.stdout


def test_a_rail_whose_errors_get_past_fec_is_flagged_by_its_ber(tmp_path: Path) -> None:
    """mlxlink -c run by the real probe on each mlx5 rail (a stand-in printing the real 400G counters)."""
    host, facts = node(tmp_path, "dgx", {2: "ber"})
    records = run_findings({"n1": facts}, [host])
    assert flagged(records) == {"rail2": {"link_ber"}}, flagged(records)
    ber = {r["rail"]: r for r in records if r["check"] == "preflight.link_ber"}
    assert set(ber) == {f"rail{i}" for i in range(8)}
    assert ber["rail2"]["status"] == "fail" and ber["rail2"]["value"] == 1e-11
    assert "effective BER above 1e-12" in ber["rail2"]["message"] and "mlx5_2" in ber["rail2"]["message"]
    assert ber["rail0"]["status"] == "pass" and "raw BER 2e-09" in ber["rail0"]["message"]


def test_ber_limits_on_real_mlxlink_outputs() -> None:
    from benchharness.telemetry.link_ber import judge_ber

    real = Path(__file__).parent / "fixtures" / "health" / "real"
    clean = judge_ber((real / "mlxlink_bf3_100g_dac_m_c.txt").read_text())
    assert clean.status == "pass" and "raw BER none, effective BER none" in clean.message  # 15E-255
    ansi = (real / "mlxlink_400g_counters_ansi.txt").read_text()
    assert judge_ber(ansi).status == "pass" and judge_ber(ansi).value == 2e-9
    thin = judge_ber(ansi.replace("2E-9", "3E-5"))
    assert thin.status == "warn" and thin.limit == 1e-5 and "little margin" in thin.message
    assert judge_ber("mlxlink: -E- Device mlx5_9 not found").status == "info"
