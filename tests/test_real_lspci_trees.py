"""Figures of host fixtures that matter more than a subset: which bridge a NIC sits
below in an ``lspci -tv`` tree, an old pciutils' unknown Gen5 speed, a ``numactl -H`` listing cut
before its last nodes, and ``/proc/interrupts`` with a poster's ``...`` columns."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _parse(parser: str, name: str):  # type: ignore[no-untyped-def]
    return get_parser(parser)((REAL / parser / name).read_text(encoding="utf-8"))


def test_a_tree_gives_each_connectx7_the_root_port_above_it() -> None:
    devices = _parse("lspci", "tree_tv_genoa_cx7_rtx6000_nvme_switches_prompt.txt")
    nics = {d["address"]: d["upstream"] for d in devices if "ConnectX-7" in (d.get("name") or "")}
    assert nics == {"0000:21:00.0": "0000:20:03.1", "0000:21:00.1": "0000:20:03.1",
                    "0000:81:00.0": "0000:80:01.1", "0000:81:00.1": "0000:80:01.1"}
    bridges = {d["address"] for d in devices if d["bridge"]}
    assert all(d["upstream"] in bridges for d in devices if d["upstream"])


def test_a_tree_cut_at_its_top_keeps_those_devices_without_an_address() -> None:
    devices = _parse("lspci", "tree_tv_skylake_cx5_behind_two_switches_cut_top.txt")
    assert [d["cut"] for d in devices[:15]] == [True] * 15
    chain, dev = [], devices[-1]
    by_address = {d["address"]: d for d in devices if d["address"]}
    while dev["upstream"]:
        chain.append(dev["upstream"])
        dev = by_address[dev["upstream"]]
    assert chain == ["0000:57:04.0", "0000:56:00.0", "0000:55:04.0", "0000:54:00.0", "0000:53:00.0"]


def test_an_unknown_lnkcap_speed_leaves_downgraded_undecided() -> None:
    (dev,) = _parse("lspci", "lnkcap_speed_unknown_cx7_old_pciutils_gen4_x16.txt")
    assert dev["link_cap"]["speed_unknown"] is True and dev["downgraded"] is None


def test_a_numactl_listing_cut_at_node_10_names_the_nodes_it_lacks() -> None:
    out = _parse("numactl", "spr_hbm_snc4_16_nodes_cut_at_node_10.txt")
    assert out["cut"] is True and out["missing_nodes"] == [11, 12, 13, 14, 15]
    assert [n["node"] for n in out["nodes"]] == list(range(11))


def test_elided_cpu_columns_keep_the_counts_of_the_cpus_printed() -> None:
    out = _parse("interrupts", "mlx5_40cpu_columns_and_rows_elided_dots.txt")
    assert out["cpus"] == [0, 1, 38, 39] and out["elided"] is True
    comp = {r["name"]: r["counts"] for r in out["irqs"] if (r["name"] or "").startswith("mlx5_comp")}
    assert comp == {"mlx5_comp1@pci:0000:12:00.0": [68719, 42920, 0, 0],
                    "mlx5_comp39@pci:0000:12:00.1": [5743, 15415, 0, 1]}
    assert all(r["chip"] != "..." for r in out["irqs"])
