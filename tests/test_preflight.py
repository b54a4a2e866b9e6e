"""Preflight checks over probe documents of the captured trees (and edited copies of them)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchharness.core.model import Host, Verdict
from benchharness.telemetry.preflight import run_checks

PROBE = Path(__file__).parents[1] / "benchharness" / "onhost" / "probe.py"
FIXTURES = Path(__file__).parent / "fixtures" / "telemetry"
# gid_index 3: the RoCE v2 GID of 198.18.0.2 in the healthy tree's table
VARS = {"netdev": "ens1f0np0", "rdma_dev": "mlx5_0", "numa_node": 0, "gid_index": 3}


def probe(tree: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(PROBE), "--root", str(FIXTURES / "trees" / tree), "--no-commands"],
                         capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def facts() -> dict[str, dict[str, Any]]:
    return {"gpu-a": probe("degraded"), "gpu-b": probe("healthy")}


HOSTS = [Host("gpu-a", "10.0.0.1", vars=VARS), Host("gpu-b", "10.0.0.2", vars=VARS)]


def only(verdicts: list[Verdict], check: str, host: str, status: str | None = None) -> list[Verdict]:
    return [v for v in verdicts if v.check == f"preflight.{check}" and v.host == host
            and (status is None or v.status == status)]


def test_degraded_host_names_pcie_and_numa_problems(facts: dict[str, dict[str, Any]]) -> None:
    verdicts = run_checks(facts, HOSTS, [("gpu-a", "gpu-b")])
    (pcie,) = only(verdicts, "pcie_link", "gpu-a", "fail")
    assert "ens1f0np0" in pcie.message and "16 GT/s x8" in pcie.message and "32 GT/s x16" in pcie.message
    assert (pcie.value, pcie.limit) == (128.0, 512.0)
    (numa,) = only(verdicts, "numa_affinity", "gpu-a", "warn")
    assert "NUMA node 0" in numa.message and "NUMA node 1" in numa.message and "set numa_node=1" in numa.message
    assert only(verdicts, "cpu_governor", "gpu-a", "warn")
    # the idle GPU at 2.5 GT/s of 32 is information, not a failure
    (gpu,) = only(verdicts, "pcie_link", "gpu-a", "info")
    assert "0000:18:00.0" in gpu.message


def test_healthy_host_passes(facts: dict[str, dict[str, Any]]) -> None:
    verdicts = run_checks(facts, HOSTS, [("gpu-a", "gpu-b")])
    mine = [v for v in verdicts if v.host == "gpu-b"]
    assert not [v for v in mine if v.status in ("fail", "warn")], mine
    assert only(verdicts, "pcie_link", "gpu-b", "pass") and only(verdicts, "link_state", "gpu-b", "pass")
    # --no-commands: tools were not probed, which is information only
    assert {v.status for v in only(verdicts, "tool_version", "gpu-b")} == {"info"}


def test_mtu_mismatch_and_link_down(facts: dict[str, dict[str, Any]]) -> None:
    edited = copy.deepcopy(facts)
    nic_b = next(n for n in edited["gpu-b"]["nics"]["devices"] if n["netdev"] == "ens1f0np0")
    nic_b["mtu"] = 1500
    nic_b["operstate"] = "down"
    edited["gpu-b"]["rdma"]["devices"][0]["ports"][0].update(state="DOWN", phys_state="Disabled")
    verdicts = run_checks(edited, HOSTS, [("gpu-a", "gpu-b")])
    (mtu,) = [v for v in verdicts if v.check == "preflight.mtu_pair"]
    assert mtu.status == "fail" and "9000" in mtu.message and "1500" in mtu.message
    down = only(verdicts, "link_state", "gpu-b", "fail")
    assert any("ens1f0np0 link is down" in v.message for v in down)
    assert any("mlx5_0/1 is DOWN / Disabled" in v.message for v in down)


def test_tools_missing_or_too_old(facts: dict[str, dict[str, Any]]) -> None:
    edited = copy.deepcopy(facts)
    edited["gpu-b"]["commands"] = True
    edited["gpu-b"]["tools"]["perftest"] = {"available": True, "version": "4.4", "path": "/usr/bin/ib_write_bw"}
    edited["gpu-b"]["tools"]["iperf3"] = {"available": False, "reason": "iperf3 not found in PATH"}
    verdicts = only(run_checks(edited, HOSTS), "tool_version", "gpu-b", "fail")
    assert {v.message.split()[0] for v in verdicts} == {"perftest", "iperf3"}
    assert any("older than 4.5" in v.message for v in verdicts)


def test_temperatures_over_limits(facts: dict[str, dict[str, Any]]) -> None:
    edited = copy.deepcopy(facts)
    raw = (FIXTURES / "parsers" / "ethtool-m" / "qsfp-dd-400g-sr8-hot.txt").read_text()
    nic_b = next(n for n in edited["gpu-b"]["nics"]["devices"] if n["netdev"] == "ens1f0np0")
    nic_b["module"] = {"available": True, "temperature_c": 72.5, "raw": raw}
    edited["gpu-b"]["temperatures"]["hwmon"][0]["temperature_c"] = 106.0
    verdicts = only(run_checks(edited, HOSTS), "temperature", "gpu-b")
    module = next(v for v in verdicts if "transceiver" in v.message)
    assert module.status == "warn" and module.limit == 70.0  # the module's own warning threshold
    asic = next(v for v in verdicts if "ASIC" in v.message)
    assert asic.status == "fail" and asic.limit == 105.0


def test_gpu_nic_topology_from_nvidia_smi(facts: dict[str, dict[str, Any]]) -> None:
    edited = copy.deepcopy(facts)
    topo = (FIXTURES / "parsers" / "nvidia-smi-topo" / "h100-4gpu-4nic.txt").read_text()
    edited["gpu-b"]["gpus"]["topology"] = {"available": True, "text": topo}
    hosts = [Host("gpu-b", "10.0.0.2", vars=dict(VARS, rdma_dev="mlx5_3", gpus=[3])),
             Host("gpu-a", "10.0.0.1", vars=dict(VARS, rdma_dev="mlx5_2"))]
    edited["gpu-a"]["gpus"]["topology"] = {"available": True, "text": topo}
    verdicts = run_checks(edited, hosts)
    (warn,) = only(verdicts, "gpu_nic_topology", "gpu-b")
    assert warn.status == "warn" and "GPU3 <-> mlx5_3: PHB" in warn.message
    (ok,) = only(verdicts, "gpu_nic_topology", "gpu-a")
    assert ok.status == "pass" and "GPU1 <-> mlx5_2: PXB" in ok.message


def test_host_without_facts_fails() -> None:
    (v,) = run_checks({}, [Host("gpu-z", "10.0.0.9")])
    assert (v.check, v.status, v.host) == ("preflight.probe", "fail", "gpu-z")


@pytest.mark.parametrize(("gid_index", "data_ip", "status", "words"), [
    (3, "198.18.0.2", "pass", "RoCE v2, 0000:0000:0000:0000:0000:ffff:c612:0002"),
    (1, "198.18.0.2", "fail", "RoCE v2 fe80:0000:0000:0000:a288:c2ff:fea1:b2c3; use gid_index=3"),
    (2, "198.18.0.2", "fail", "IB/RoCE v1 0000:0000:0000:0000:0000:ffff:c612:0002; use gid_index=3"),
    (7, None, "fail", "no such entry; use gid_index=3"),
    (3, "198.18.0.9", "fail", "no RoCE v2 GID carries 198.18.0.9 (is the address on ens1f0np0?)"),
])
def test_gid_index_checked_against_the_hosts_gid_table(facts: dict[str, dict[str, Any]], gid_index: int,
                                                       data_ip: str | None, status: str, words: str) -> None:
    host = Host("gpu-b", "10.0.0.2", data_ip=data_ip, vars={**VARS, "gid_index": gid_index})
    (verdict,) = only(run_checks(facts, [host]), "gid_index", "gpu-b")
    assert verdict.status == status and words in verdict.message, verdict.message
    assert "mlx5_0/1 (rail0)" in verdict.message


def test_gid_index_follows_the_ports_link_layer(facts: dict[str, dict[str, Any]]) -> None:
    """RoCE without a GID index fails (naming the right one); one set on InfiniBand is a warning;
    an inventory link_layer the port contradicts fails."""
    missing = Host("gpu-b", "10.0.0.2", data_ip="198.18.0.2", vars={**VARS, "gid_index": None})
    (verdict,) = only(run_checks(facts, [missing]), "gid_index", "gpu-b")
    assert verdict.status == "fail" and "RoCE port without gid_index" in verdict.message
    assert "use gid_index=3" in verdict.message and verdict.limit == 3.0
    ib = json.loads(json.dumps(facts["gpu-b"]))
    for dev in ib["rdma"]["devices"]:
        for port in dev["ports"]:
            port["link_layer"] = "InfiniBand"
    (verdict,) = only(run_checks({"gpu-b": ib}, [Host("gpu-b", "10.0.0.2", vars=VARS)]), "gid_index", "gpu-b")
    assert verdict.status == "warn" and "gid_index=3 is set on an InfiniBand port" in verdict.message
    assert not only(run_checks({"gpu-b": ib}, [missing]), "gid_index", "gpu-b")  # IB, none set: right
    wrong = Host("gpu-b", "10.0.0.2", data_ip="198.18.0.2", vars={**VARS, "link_layer": "InfiniBand"})
    (verdict,) = only(run_checks(facts, [wrong]), "link_layer", "gpu-b")
    assert verdict.status == "fail" and "the port is Ethernet" in verdict.message


def test_rail_mtus_must_agree_across_rails_and_hosts(facts: dict[str, dict[str, Any]]) -> None:
    from benchharness.core.model import Rail

    def host(name: str) -> Host:
        return Host(name, "10.0.0.1", vars=VARS, rails=(Rail(0, netdev="ens1f0np0", rdma_dev="mlx5_0"),))
    same = {"gpu-b": facts["gpu-b"], "gpu-c": facts["gpu-b"]}
    (ok,) = [v for v in run_checks(same, [host("gpu-b"), host("gpu-c")]) if v.check == "preflight.mtu_rails"]
    assert ok.status == "pass" and "2 rails" in ok.message
    mtu = next(n for n in facts["gpu-b"]["nics"]["devices"] if n["netdev"] == "ens1f0np0")["mtu"]
    odd = json.loads(json.dumps(facts["gpu-b"]))
    next(n for n in odd["nics"]["devices"] if n["netdev"] == "ens1f0np0")["mtu"] = 1500
    verdicts = run_checks({"gpu-b": facts["gpu-b"], "gpu-c": odd, "gpu-d": facts["gpu-b"]},
                          [host("gpu-b"), host("gpu-c"), host("gpu-d")])
    (bad,) = [v for v in verdicts if v.check == "preflight.mtu_rails"]
    assert bad.status == "fail" and f"most are {mtu}, but gpu-c/ens1f0np0 1500" in bad.message, bad.message


def test_gpudirect_needs_nvidia_peermem_on_gpu_hosts_with_rdma(facts: dict[str, dict[str, Any]]) -> None:
    hosts = [Host(n, "10.0.0.1", vars={**VARS, "gpus": 8}) for n in ("gpu-a", "gpu-b")]
    verdicts = run_checks(facts, hosts)
    (ok,) = only(verdicts, "gpudirect", "gpu-b")
    assert ok.status == "pass" and "nvidia_peermem is loaded" in ok.message
    (missing,) = only(verdicts, "gpudirect", "gpu-a")
    assert missing.status == "warn" and "modprobe nvidia_peermem" in missing.message
    assert "kernel 5.15.0-105-generic has it" in missing.message  # DMA-BUF is the other way
    assert facts["gpu-a"]["host"]["modules"] == ["nvidia_uvm", "nvidia", "mlx5_ib", "ib_uverbs"]
    # no GPUs: nothing to say
    assert not only(run_checks(facts, [Host("gpu-b", "10.0.0.2", vars=VARS)]), "gpudirect", "gpu-b")


def test_gid_ip_names_the_address_a_shared_device_carries(facts: dict[str, dict[str, Any]]) -> None:
    """A namespace (the lab's soft-RoCE layout) or container sees the root's GIDs: gid_ip says which."""
    shared = Host("gpu-b", "10.0.0.2", data_ip="198.18.0.9", vars={**VARS, "gid_index": 3, "gid_ip": "198.18.0.2"})
    (ok,) = only(run_checks(facts, [shared]), "gid_index", "gpu-b")
    assert ok.status == "pass", ok.message
    own = Host("gpu-b", "10.0.0.2", data_ip="198.18.0.9", vars={**VARS, "gid_index": 3})
    (bad,) = only(run_checks(facts, [own]), "gid_index", "gpu-b")
    assert bad.status == "fail" and "no RoCE v2 GID carries 198.18.0.9" in bad.message, bad.message
