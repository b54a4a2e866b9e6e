"""Command-output parsers against fixtures in the tools' real formats.

No NIC, RDMA device or GPU exists on the development machine: the fixtures under
tests/fixtures/telemetry/parsers/<parser>/ are written in each tool's published output format
(ethtool, lspci, numactl, nvidia-smi, amd-smi, ibstat, ibv_devinfo, rdma, ibdev2netdev, mlxlink);
``virtio-speed-unknown``, ``virtio`` and the sampler/snapshot captures are real outputs of this
machine. Each ``<case>.<ext>`` sits beside ``<case>.expected.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser, registry

FIXTURES = Path(__file__).parent / "fixtures" / "telemetry" / "parsers"
CASES = sorted(p for p in FIXTURES.glob("*/*") if not p.name.endswith(".expected.json"))


def load(parser: str, case: str) -> Any:
    path = next(p for p in FIXTURES.joinpath(parser).glob(case + ".*") if not p.name.endswith(".expected.json"))
    return get_parser(parser)(path.read_text())


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_matches_expected_parse(path: Path) -> None:
    expected = json.loads(path.with_name(path.name.rsplit(".", 1)[0] + ".expected.json").read_text())
    got = json.loads(json.dumps(get_parser(path.parent.name)(path.read_text())))
    assert got == expected


def test_every_parser_is_registered_and_has_a_fixture() -> None:
    names = {"lspci", "ethtool", "ethtool-i", "ethtool-m", "ethtool-S", "numactl", "nvidia-smi-topo",
             "nvidia-smi", "amd-smi", "ibstat", "ibv_devinfo", "rdma", "ibdev2netdev", "mlxlink", "sampler",
             "counters-snapshot"}
    assert names <= set(registry())
    assert names <= {p.parent.name for p in CASES}


def test_lspci_downgraded_gen5_link() -> None:
    nic, gpu = load("lspci", "cx7-downgraded-h100-gen5")
    assert nic["link_cap"] == {"speed_gts": 32.0, "gen": 5, "width": 16}
    assert (nic["link_sta"]["speed_gts"], nic["link_sta"]["width"]) == (16.0, 8)
    assert nic["downgraded"] is True and nic["numa_node"] == 1
    assert (nic["max_payload_bytes"], nic["max_read_req_bytes"]) == (256, 4096)
    assert gpu["downgraded"] is False and gpu["link_sta"]["gen"] == 5


def test_lspci_without_annotations_compares_width() -> None:
    (dev,) = load("lspci", "cx5-old-lspci-x8")
    assert dev["address"] == "0000:3b:00.0"
    assert dev["downgraded"] is True  # x8 of x16, older lspci prints no "(downgraded)"


def test_ethtool_speed_unknown_and_link_down() -> None:
    assert load("ethtool", "cx7-400g")["speed_mbps"] == 400000
    virtio = load("ethtool", "virtio-speed-unknown")
    assert virtio["speed_mbps"] is None and virtio["speed_raw"] == "Unknown!" and virtio["duplex"] is None
    down = load("ethtool", "cx6dx-link-down")
    assert down["link_detected"] is False and "25000baseSR/Full" in down["supported_link_modes"]


def test_ethtool_module_variants() -> None:
    sfp = load("ethtool-m", "sfp-10g-sr-no-light")
    assert sfp["form_factor"] == "SFP" and sfp["temperature_c"] == 30.14
    assert sfp["lanes"][0]["rx_power_mw"] == 0.0 and sfp["lanes"][0]["rx_power_dbm"] is None  # -inf dBm
    assert "laser_rx_power_low_alarm" in sfp["alarms_on"]
    qsfp = load("ethtool-m", "qsfp28-100g-sr4")
    assert [lane["rx_power_dbm"] for lane in qsfp["lanes"]] == [-1.16, -1.35, -1.61, -1.10]
    assert qsfp["alarms_on"] == ["rx_power_low_warning_lane3"]
    dd = load("ethtool-m", "qsfp-dd-400g-sr8-hot")
    assert dd["form_factor"] == "QSFP-DD" and len(dd["lanes"]) == 8
    assert dd["temperature_c"] == 72.5 and dd["temperature_high_warning_c"] == 70.0
    assert dd["flags"]["module_temperature_high_warning"] is True


def test_ethtool_stats_highlights_pfc_per_priority() -> None:
    mlx5 = load("ethtool-S", "mlx5-pfc-prio3")
    hl = mlx5["highlights"]
    assert hl["pfc_pause"]["rx"]["3"] == 48213 and hl["pfc_pause"]["tx"]["3"] == 1507
    assert hl["out_of_buffer"] == {"rx_out_of_buffer": 1532}
    assert hl["discards"]["rx_discards_phy"] == 27 and "rx0_xdp_drop" not in hl["discards"]
    ice = load("ethtool-S", "ice-e810")["highlights"]
    assert ice["pfc_pause"]["rx"] == {"3": 41, "5": 1} and ice["global_pause"]["rx"] == 5


def test_numactl_cpuless_node() -> None:
    numa = load("numactl", "two-socket-cpuless-node")
    assert numa["cpuless_nodes"] == [2]
    assert numa["nodes"][2]["size_mb"] == 262144 and numa["nodes"][0]["distances"] == [10, 21, 14]


def test_nvidia_topo_legend_and_affinity() -> None:
    topo = load("nvidia-smi-topo", "h100-4gpu-4nic")
    assert topo["nics"]["NIC2"] == "mlx5_2"
    assert topo["matrix"]["GPU1"]["NIC2"] == "PXB" and topo["matrix"]["GPU3"]["NIC3"] == "PHB"
    assert topo["affinity"]["GPU2"] == {"cpus": "56-111,168-223", "numa": 1, "gpu_numa_id": None}


def test_nvidia_smi_query_and_amd_smi() -> None:
    gpus = load("nvidia-smi", "h100-query-header")
    assert gpus[2]["pcie_width_current"] == 8 and gpus[2]["power_w"] is None
    metric = load("amd-smi", "mi300x-metric")
    assert metric[1]["pcie_width_current"] == 8 and metric[0]["temperature_c"] == 35.0


def test_rdma_tools() -> None:
    ibstat = load("ibstat", "ndr-active-and-down")
    assert ibstat[1]["ports"][0]["state"] == "Down" and ibstat[0]["ports"][0]["rate_gbps"] == 400.0
    (roce,) = load("ibv_devinfo", "cx6dx-roce-v")
    port = roce["ports"][0]
    assert port["rate_gbps"] == 100.0 and port["gids"][3] == {"index": 3, "gid": "::ffff:198.18.0.2",
                                                              "type": "RoCE v2"}
    down = load("ibv_devinfo", "ndr-ib-and-down")[1]["ports"][0]
    assert (down["state"], down["state_code"]) == ("PORT_DOWN", 1)
    stat = load("rdma", "stat")["ports"][0]
    assert stat["counters"]["np_cnp_sent"] == 598 and stat["device"] == "mlx5_2"
    links = load("rdma", "link")["ports"]
    assert links[1]["state"] == "DOWN" and links[2]["netdev"] == "ens2f0np0" and "counters" not in links[0]
    v = load("ibdev2netdev", "verbose")
    assert v[0]["pci_address"] == "0000:17:00.0" and v[1]["netdev_state"] == "Down"
    assert load("ibdev2netdev", "plain")[2] == {"device": "mlx5_2", "port": 1, "netdev": "ens2f0np0",
                                               "netdev_state": "Up"}


def test_mlxlink_strips_colours() -> None:
    link = load("mlxlink", "cx7-ndr-osfp")
    assert link["state"] == "Active" and link["speed_gbps"] == 400
    assert link["module"]["temperature_c"] == 71.0 and link["module"]["temperature_c_range"] == [-5.0, 75.0]
    assert link["module"]["rx_power_dbm"] == [1.209, 1.316, 0.981, 1.102]
    assert link["counters"]["link_down_counter"] == 1
