"""Several ports' outputs of one ethtool command in one paste are read port by port.

Each paste here is two real published outputs (tests/fixtures/real, SOURCES there) one after the
other under the command line that names each port, as an operator pastes ``ethtool -i`` of both
ports of a NIC: each port reads as its own output alone, nothing of one leaks into the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _alone(parser: str, text: str, port: str) -> Any:
    return {**get_parser(parser)(text), "netdev": port}


@pytest.mark.parametrize(("parser", "flag", "first", "second"), [
    ("ethtool-i", "-i", "mlx4_en_trailing_blanks.txt", "dpaa2_non_pci_bus_info.txt"),
    ("ethtool-m", "-m", "cmis_qsfp_dd_400g_xdr4_mail_wrapped.txt", "sfp_picked_dom_lines_quote_mark_cut.txt"),
    ("ethtool-S", "-S", "mlx5_core_cx4lx_unindented_no_header.txt", "ena_1_2_unindented_no_header.txt"),
])
def test_two_ports_under_their_command_lines(parser: str, flag: str, first: str, second: str) -> None:
    a = (REAL / parser / first).read_text()
    b = (REAL / parser / second).read_text()
    paste = f"root@gpu-node-3:~# ethtool {flag} ens1f0np0\n{a.rstrip()}\n" \
            f"root@gpu-node-3:~# ethtool {flag} ens1f1np1\n{b.rstrip()}\n"
    ports = get_parser(parser)(paste)["netdevs"]
    assert list(ports) == ["ens1f0np0", "ens1f1np1"]
    assert ports["ens1f0np0"] == _alone(parser, a, "ens1f0np0")
    assert ports["ens1f1np1"] == _alone(parser, b, "ens1f1np1")


def test_two_ports_told_apart_by_their_headings() -> None:
    """``ethtool`` prints ``Settings for X:``: two shows of other ports split there even without
    command lines; two shows of one port (before and after ``ethtool -s``) stay one output."""
    settings = get_parser("ethtool")
    a = "Settings for ens1f0np0:\n\tSpeed: 400000Mb/s\n\tLanes: 4\n\tLink detected: yes\n"
    b = "Settings for ens1f1np1:\n\tSpeed: 200000Mb/s\n\tLanes: 4\n\tLink detected: no\n"
    ports = settings(a + b)["netdevs"]
    assert (ports["ens1f0np0"]["speed_mbps"], ports["ens1f1np1"]["speed_mbps"]) == (400000, 200000)
    assert ports["ens1f1np1"]["link_detected"] is False
    again = settings(a + "$ sudo ethtool -s ens1f0np0 speed 200000 autoneg off\n" + a.replace("400000", "200000"))
    assert "netdevs" not in again and again["speed_mbps"] == 200000  # one port: its last show


def test_two_nodes_topology_matrices_stay_apart() -> None:
    """``nvidia-smi topo -m`` of two nodes pasted one after the other: two matrices, each read as
    it reads alone (the second node's rows and legend were merged into the first)."""
    real = REAL / "nvidia-smi-topo"
    a = (real / "8gpu_10nic_a100_pxb_pairs_tabs_nic_legend.txt").read_text()
    b = (real / "8gpu_8nic_b200_pix_pairs_nic_legend.txt").read_text()
    topo = get_parser("nvidia-smi-topo")
    assert topo(a + "\n" + b)["matrices"] == [topo(a), topo(b)]


def test_module_lane_status_in_every_form_ethtool_prints() -> None:
    """``Rx loss of signal``: ethtool 6.4+'s per-lane list, older ``(Lane N)`` lines, a module's
    single Yes/No (an SFP without light): a Yes is in ``alarms_on`` whatever the form."""
    module = get_parser("ethtool-m")
    lanes = "\tIdentifier : 0x11 (QSFP28)\n" + "".join(
        f"\tRx loss of lock (Lane {n}) : {'Yes' if n == 3 else 'No'}\n" for n in range(1, 5))
    assert module(lanes)["lane_status"]["rx_loss_of_lock"] == [False, False, True, False]
    assert "rx_loss_of_lock" in module(lanes)["alarms_on"]
    sfp = module("\tIdentifier : 0x03 (SFP)\n\tRx loss of signal : Yes\n\tTx fault : No\n")
    assert sfp["lane_status"] == {"rx_loss_of_signal": [True], "tx_fault": [False]}
    assert sfp["alarms_on"] == ["rx_loss_of_signal"]
