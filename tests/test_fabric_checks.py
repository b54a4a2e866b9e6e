"""PCIe ACS on the GPU-NIC path and RoCE QoS (PFC, trust, ECN): parsers on real published outputs
(tests/fixtures/real/lspci-acs, tests/fixtures/real/qos; SOURCES there), checks, and the probe."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from benchharness.core.model import Host, Rail
from benchharness.telemetry import fabric_checks
from benchharness.telemetry.parsers import pcie_acs, qos
from benchharness.telemetry.preflight import run_checks

REAL = Path(__file__).parent / "fixtures" / "real"
PROBE = Path(__file__).parent.parent / "benchharness" / "onhost" / "probe.py"


def text(name: str) -> str:
    return (REAL / name).read_text()


# -- parsers on real outputs ------------------------------------------------------------------
def test_lspci_acsctl_of_a_plx_switch_with_redirect_on() -> None:
    found = pcie_acs.parse_lspci_acs(text("lspci-acs/plx-pex8725-acs-redirect-cut.txt"))
    # The listing starts mid-device: its ACSCtl line is kept, unattributed; 02:08.0 shows no ACS
    # before the cut.
    assert found["devices"] == {}
    (flags,) = found["unattributed"]
    assert pcie_acs.redirects(flags) == ["ReqRedir", "CmpltRedir"]
    assert flags == pcie_acs.decode(0x1D)  # SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+


def test_lspci_acsctl_all_off_on_a_root_port() -> None:
    found = pcie_acs.parse_lspci_acs(text("lspci-acs/openvmm-root-port-acs-off-elided.txt"))
    assert list(found["devices"]) == ["00:00.0"]
    assert not any(found["devices"]["00:00.0"].values()) and found["unattributed"] == []


def test_setpci_words() -> None:
    assert pcie_acs.parse_setpci_acs("001d\n")["flags"] == pcie_acs.decode(0x1D)
    assert pcie_acs.redirects(pcie_acs.parse_setpci_acs("0011")["flags"]) == []
    with pytest.raises(ValueError):
        pcie_acs.parse_setpci_acs("setpci: Cannot find extended capability")


def test_mlnx_qos_trust_and_pfc() -> None:
    full = qos.parse_mlnx_qos(text("qos/mlnx_qos-ofed42-trust-dscp.txt"))
    assert full == {"trust": "dscp", "dcbx": "OS controlled", "pfc_enabled": [0, 2, 6, 7]}
    excerpt = qos.parse_mlnx_qos(text("qos/mlnx_qos-pfc-prio3-excerpt.txt"))
    assert excerpt["pfc_enabled"] == [3] and excerpt["trust"] is None
    with pytest.raises(ValueError):
        qos.parse_mlnx_qos("DCBX mode: OS controlled\n")


def test_dcb_pfc_show() -> None:
    found = qos.parse_dcb_pfc(text("qos/dcb-pfc-show-iproute2-patch.txt"))
    assert found["pfc_enabled"] == [1, 7] and found["pfc_cap"] == 8 and found["delay"] == 0
    assert found["requests"][1] == 217 and found["requests"][7] == 28
    assert found["indications"][1] == 179 and found["indications"][7] == 18
    assert qos.parse_dcb_pfc("prio-pfc 0:off 3:on\n")["pfc_enabled"] == [3]


def test_dcb_pfc_pasted_session_reads_the_last_show_not_the_set_line() -> None:
    """hns3 (pfc-cap 4): show, set 0-3 on, show again; the driver of the time reports all eight."""
    session = text("qos/dcb-pfc-hns3-show-set-show-pfc-cap-4.txt")
    found = qos.parse_dcb_pfc(session)
    assert found["pfc_enabled"] == list(range(8)) and found["pfc_cap"] == 4 and found["delay"] == 0
    assert found["requests"] is None and found["indications"] is None
    asked_only = session.split("$ dcb pfc show", 2)[1].rsplit("\n$ dcb pfc show", 1)[0]
    assert "pfc set" in asked_only and qos.parse_dcb_pfc(asked_only)["pfc_enabled"] == []


# -- checks -----------------------------------------------------------------------------------
def gpu_host(name: str = "gpu-a", gpus: object = 8) -> Host:
    return Host(name, "10.0.0.1", vars={"gpus": gpus} if gpus else {},
                rails=(Rail(0, netdev="ens1f0np0", rdma_dev="mlx5_0"),))


def facts_with(words: list[str | None], reason: str = "") -> dict:
    bridges = [{"bdf": bdf, "word": w, **({"reason": reason} if w is None else {})}
               for bdf, w in zip(["0000:00:01.0", "0000:01:00.0", "0000:02:08.0"], words, strict=True)]
    return {"fabric": {"acs": {"ens1f0np0": {"kind": "nic", "pci_address": "0000:82:00.0",
                                             "bridges": bridges}}, "qos": {}}}


def test_acs_redirect_on_a_switch_port_fails_a_gpudirect_host() -> None:
    (v,) = fabric_checks.acs_verdicts(gpu_host(), facts_with(["001d", "0000", "001d"]))
    assert v.status == "fail" and v.check == "preflight.pcie_acs"
    # the root port's own ACS is not the switch's: only 02:08.0 is named
    assert "0000:02:08.0 (ReqRedir+CmpltRedir) above nic ens1f0np0" in v.message
    assert "0000:00:01.0" not in v.message and "ECAP_ACS+0x6.w=0000" in v.message
    (w,) = fabric_checks.acs_verdicts(gpu_host(gpus=None), facts_with(["001d", "0000", "001d"]))
    assert w.status == "warn"


def test_acs_off_passes_and_unreadable_is_said() -> None:
    (ok,) = fabric_checks.acs_verdicts(gpu_host(), facts_with(["0000", "0011", "0000"]))
    assert ok.status == "pass" and "2 switch port(s)" in ok.message
    (info,) = fabric_checks.acs_verdicts(gpu_host(), facts_with([None, None, None], "setpci not found in PATH"))
    assert info.status == "info" and "setpci not found in PATH" in info.message


def qos_facts(mlnx: str | None = None, dcb: str | None = None, ecn: dict | None = None) -> dict:
    return {"fabric": {"acs": {}, "qos": {"ens1f0np0": {"mlnx_qos": mlnx, "dcb_pfc": dcb, "ecn": ecn or {}}}}}


def test_roce_qos_is_shown_and_the_odd_host_named() -> None:
    full = text("qos/mlnx_qos-ofed42-trust-dscp.txt")
    ecn = {"roce_np/enable/3": "1", "roce_rp/enable/3": "1", "roce_np/enable/0": "0"}
    facts = {"gpu-a": qos_facts(full, ecn=ecn), "gpu-b": qos_facts(full, ecn=ecn),
             "gpu-c": qos_facts(dcb=text("qos/dcb-pfc-show-iproute2-patch.txt"))}
    hosts = [gpu_host("gpu-a"), gpu_host("gpu-b"), gpu_host("gpu-c")]
    verdicts = fabric_checks.qos_verdicts(facts, hosts)
    shown = {v.host: v.message for v in verdicts if v.check == "preflight.roce_qos"}
    assert shown["gpu-a"] == ("ens1f0np0: PFC on priorities 0,2,6,7, trust dscp, ECN notification on 3, "
                              "reaction on 3 (mlnx_qos)")
    assert shown["gpu-c"] == "ens1f0np0: PFC on priorities 1,7 (dcb)"
    (odd,) = [v for v in verdicts if v.check == "preflight.roce_qos_mismatch"]
    assert odd.status == "warn" and "on gpu-c/ens1f0np0:" in odd.message and "gpu-a" not in odd.message


def test_fabric_checks_run_in_preflight() -> None:
    facts = facts_with(["0000", "0000", "001d"])
    facts.update({"host": {"modules": ["nvidia_peermem"]}})
    verdicts = run_checks({"gpu-a": facts}, [gpu_host()], required_tools=[])
    assert [v.status for v in verdicts if v.check == "preflight.pcie_acs"] == ["fail"]


# -- the probe on a captured sysfs tree ---------------------------------------------------------
def test_probe_walks_the_bridges_above_an_rdma_nic(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_probe", PROBE)
    assert spec and spec.loader
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    chain = tmp_path / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:82:00.0"
    (chain / "infiniband" / "mlx5_0").mkdir(parents=True)
    (chain / "net").mkdir()
    net = tmp_path / "sys/class/net/ens1f0np0"
    net.mkdir(parents=True)
    os.symlink(chain, net / "device")
    ecn = net / "ecn" / "roce_np" / "enable"
    ecn.mkdir(parents=True)
    (ecn / "3").write_text("1\n")
    found = probe.Probe(root=str(tmp_path), commands=False).fabric()
    entry = found["acs"]["ens1f0np0"]
    assert entry["kind"] == "nic" and entry["pci_address"] == "0000:82:00.0"
    assert [b["bdf"] for b in entry["bridges"]] == ["0000:00:01.0", "0000:01:00.0", "0000:02:08.0"]
    assert all(b["word"] is None and "commands disabled" in b["reason"] for b in entry["bridges"])
    assert found["qos"]["ens1f0np0"] == {"mlnx_qos": None, "dcb_pfc": None, "ecn": {"roce_np/enable/3": "1"}}
