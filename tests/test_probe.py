"""The host probe: against captured sysfs/procfs trees, and for real on this machine.

The trees under tests/fixtures/telemetry/trees/ (rebuilt by build_trees.py there) copy real
sysfs layouts; this machine has no RDMA, no GPU and a virtio NIC, so those parts are only
exercised through the trees.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchharness.telemetry.requirements import probe_tools, probe_tools_arg

PROBE = Path(__file__).parents[1] / "benchharness" / "onhost" / "probe.py"
TREES = Path(__file__).parent / "fixtures" / "telemetry" / "trees"


def probe_tree(name: str, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(PROBE), "--root", str(TREES / name), "--no-commands", *extra],
                         capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def degraded() -> dict[str, Any]:
    return probe_tree("degraded")


@pytest.fixture(scope="module")
def healthy() -> dict[str, Any]:
    return probe_tree("healthy")


def nic(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in doc["nics"]["devices"] if n["netdev"] == name)


def test_degraded_tree_nic_link_and_numa(degraded: dict[str, Any]) -> None:
    assert degraded["errors"] == []
    cx7 = nic(degraded, "ens1f0np0")
    assert cx7["pci_address"] == "0000:17:00.0" and cx7["driver"] == "mlx5_core"
    assert cx7["numa_node"] == 1 and cx7["local_cpulist"] == "2-3"
    assert cx7["pcie"]["downgraded"] is True
    assert (cx7["pcie"]["current_speed_gts"], cx7["pcie"]["current_width"]) == (16.0, 8)
    assert (cx7["pcie"]["max_speed_gts"], cx7["pcie"]["max_width"]) == (32.0, 16)
    assert cx7["speed_mbps"] == 400000 and cx7["mtu"] == 9000 and cx7["queues"] == {"rx": 4, "tx": 4}
    assert cx7["rdma_devices"] == ["mlx5_0"]
    assert cx7["lspci"] == {"available": False, "reason": "commands disabled (--no-commands)"}


def test_degraded_tree_link_down_nic_and_skips(degraded: dict[str, Any]) -> None:
    eno1 = nic(degraded, "eno1")
    assert eno1["operstate"] == "down" and eno1["speed_mbps"] is None and eno1["speed_raw"] is None
    assert degraded["nics"]["skipped"] == ["lo"]


def test_degraded_tree_host_cpu_rdma_gpu(degraded: dict[str, Any]) -> None:
    assert degraded["host"]["hostname"] == "gpu-a" and degraded["host"]["os"] == "Ubuntu 22.04.4 LTS"
    assert degraded["cpu"]["governor"] == "powersave" and degraded["cpu"]["sockets"] == 2
    (dev,) = degraded["rdma"]["devices"]
    port = dev["ports"][0]
    assert (port["state"], port["phys_state"], port["rate_gbps"]) == ("ACTIVE", "LinkUp", 400.0)
    assert [g["type"] for g in port["gids"]] == ["IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"]
    assert port["netdevs"] == ["ens1f0np0"] and dev["pci_address"] == "0000:17:00.0"
    (gpu,) = degraded["gpus"]["pci"]
    assert gpu["pcie"]["current_speed_gts"] == 2.5 and gpu["numa_node"] == 1
    assert degraded["gpus"]["devices"]["available"] is False
    (sensor,) = degraded["temperatures"]["hwmon"]
    assert sensor["pci_address"] == "0000:17:00.0" and sensor["temperature_c"] == 71.0


def test_healthy_tree_cpuless_numa_node(healthy: dict[str, Any]) -> None:
    assert healthy["numa"]["cpuless_nodes"] == [1]
    node1 = healthy["numa"]["nodes"][1]
    assert node1["cpus"] == [] and node1["distances"] == [14, 10] and node1["mem_total_bytes"] > 0
    cx7 = nic(healthy, "ens1f0np0")
    assert cx7["pcie"]["downgraded"] is False and cx7["numa_node"] == 0


def test_veth_only_tree_reports_veth_flagged_virtual() -> None:
    doc = probe_tree("veth-only")
    (veth,) = doc["nics"]["devices"]
    assert veth["netdev"] == "veth-a" and veth["virtual"] is True and veth["pcie"]["available"] is False
    assert doc["nics"]["skipped"] == ["lo"]


def test_missing_sources_are_recorded_not_crashes(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(PROBE), "--root", str(tmp_path), "--no-commands"],
                         capture_output=True, text=True, timeout=30, check=True)
    doc = json.loads(out.stdout)
    assert doc["errors"] == []
    for section in ("numa", "nics", "rdma", "memory"):
        assert doc[section]["available"] is False and doc[section]["reason"]


def test_probe_runs_for_real_on_this_machine() -> None:
    started = time.monotonic()
    out = subprocess.run([sys.executable, str(PROBE), "--tools", probe_tools_arg()], capture_output=True,
                         text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert elapsed < 30.0  # a hang guard; its speed is measured in benchmarks/
    assert doc["errors"] == []
    assert doc["host"]["kernel"] and doc["cpu"]["logical_cores"] >= 1
    names = [n["netdev"] for n in doc["nics"]["devices"]]
    assert "lo" not in names and "lo" in doc["nics"]["skipped"]
    for record in doc["nics"]["devices"]:
        assert record["mtu"] > 0 and record["operstate"]
    assert doc["tools"]["python"]["version"].startswith(f"{sys.version_info.major}.")
    iperf3 = doc["tools"]["iperf3"]
    if shutil.which("iperf3"):  # Debian's iperf3 prints "iperf 3.12 (cJSON 1.7.15)"
        assert iperf3["available"] is True and re.fullmatch(r"3\.\d+(\.\d+)?", iperf3["version"])
    else:
        assert iperf3 == {"available": False, "reason": "iperf3 not found in PATH"}
    # every version command comes from the adapters' facts, read with the tool's own pattern
    assert set(probe_tools()) <= set(doc["tools"])
    for name, program in (("perftest", "ib_write_bw"), ("ucx", "ucx_info"), ("mpirun", "mpirun")):
        if shutil.which(program):  # Debian 12: "Version: 6.06", "# Version 1.13.1", "mpirun (Open MPI) 4.1.4"
            assert re.fullmatch(r"\d+(\.\d+)+", doc["tools"][name]["version"]), doc["tools"][name]


def test_the_probe_asks_only_the_version_commands_it_is_given() -> None:
    out = subprocess.run([sys.executable, str(PROBE), "--root", str(TREES / "healthy"), "--tools",
                          '{"fake": {"argv": ["sh", "-c", "echo fake tool 9.8.7"], "pattern": "tool (\\\\S+)"}}'],
                         capture_output=True, text=True, timeout=60)
    tools = json.loads(out.stdout)["tools"]
    assert tools["fake"]["version"] == "9.8.7" and "iperf3" not in tools
    bad = subprocess.run([sys.executable, str(PROBE), "--tools", "[1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--tools: not JSON" in bad.stderr


def test_summary_rows_name_the_downgraded_link_and_numa_node(degraded: dict[str, Any]) -> None:
    from benchharness.telemetry.doctor import fact_line
    from benchharness.telemetry.summary import host_row, is_probe_facts, nic_row

    assert is_probe_facts(degraded) and not is_probe_facts({"available": False, "reason": "x"})
    host = host_row(degraded)
    assert host["governor"] == "powersave" and host["CPU"].startswith("Intel(R) Xeon(R) Platinum 8480+")
    cx7 = nic_row(next(n for n in degraded["nics"]["devices"] if n["netdev"] == "ens1f0np0"))
    assert cx7["PCIe"] == "Gen4 x8 of Gen5 x16 — DOWNGRADED"
    assert cx7["NUMA"] == "1" and cx7["RDMA"] == "mlx5_0"
    assert "DOWNGRADED" in fact_line("gpu01", degraded)


def test_tool_versions_across_hosts_name_the_odd_one_out() -> None:
    from benchharness.telemetry.summary import tool_versions

    def facts(perftest: str) -> dict[str, Any]:
        return {"tools": {"perftest": {"available": True, "version": perftest},
                          "iperf3": {"available": True, "version": "3.12"},
                          "nccl-tests": {"available": False, "reason": "not found"}}}

    got = tool_versions({"h1": facts("6.06"), "h2": facts("6.06"), "h3": facts("5.9")})
    assert got == {"iperf3": "3.12", "perftest": "5.9 (h3); 6.06 (h1, h2)"}


def test_pyverbs_attribute_names_of_debian_rdma_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian's python3-pyverbs (rdma-core 44) names the firmware ``fw_version``, not ``fw_ver``:
    the probe once died on it and lost the whole RDMA section (seen in the soft-RoCE VM)."""
    import types

    sys.path.insert(0, str(PROBE.parent))
    try:
        import probe as probe_mod
    finally:
        sys.path.remove(str(PROBE.parent))

    class Attr:  # the attributes rdma-core 44's DeviceAttr has (dir() in the VM), trimmed
        fw_version, max_qp, phys_port_cnt = "0.0.0", 1048576, 1

    class Ctx:
        def __init__(self, name: str) -> None:
            if name == "broken0":
                raise OSError("Failed to open device broken0")

        def __enter__(self) -> Ctx:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def query_device(self) -> Attr:
            return Attr()

        def query_port(self, port: int) -> Any:
            return types.SimpleNamespace(state=4, active_mtu=3, max_mtu=5, link_layer=2)

    device = types.ModuleType("pyverbs.device")
    device.get_device_list = lambda: [types.SimpleNamespace(name=b"rxe0"),  # type: ignore[attr-defined]
                                      types.SimpleNamespace(name=b"broken0")]
    device.Context = Ctx  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyverbs", types.ModuleType("pyverbs"))
    monkeypatch.setitem(sys.modules, "pyverbs.device", device)
    out = probe_mod.Probe(commands=False).pyverbs()
    assert out["available"] is True
    assert out["devices"]["rxe0"] == {"fw_ver": "0.0.0", "max_qp": 1048576,
                                      "ports": {"1": {"state": 4, "active_mtu": 1024, "max_mtu": 4096,
                                                      "link_layer": 2}}}
    assert out["devices"]["broken0"]["available"] is False
    assert "Failed to open device broken0" in out["devices"]["broken0"]["reason"]


def test_doctor_line_names_the_rdma_port_and_its_ipv4_gid() -> None:
    """Probe facts of a lab host in the soft-RoCE VM (tests/fixtures/captured/soft-roce-vm/SOURCES)."""
    from benchharness.telemetry.doctor import fact_line

    facts = json.loads((Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm" / "probe-facts-h1.json").read_text())
    line = fact_line("h1", facts)
    assert "RDMA: rxe0/1 ACTIVE Ethernet, RoCE v2 GID 1 198.18.0.254; tools: iperf3 3.12, perftest 6.06" in line
    assert "RDMA:" not in fact_line("h1", {**facts, "rdma": {"available": False, "reason": "no RDMA"}})
