"""``bench parse ibv_devinfo`` on real published ``ibv_devinfo [-v]`` outputs of four hosts
(tests/fixtures/health/real and tests/fixtures/real/ibv_devinfo, SOURCES there): active width, speed,
MTU and the rate they give, for RoCE 2X HDR100-style, InfiniBand HDR 4X, BlueField-3 port lines a
grep kept, and a ConnectX-7 in a pod without -v (no width printed: absent). Figures read by hand."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

HEALTH = Path(__file__).parent / "fixtures" / "health" / "real"
REAL = Path(__file__).parent / "fixtures" / "real" / "ibv_devinfo"
parse = get_parser("ibv_devinfo")


def _ports(path: Path) -> list[tuple]:
    return [(d["device"], p["port"], p.get("link_layer"), p.get("active_width"), p.get("active_speed_gbps"),
             p.get("active_mtu"), p.get("rate_gbps")) for d in parse(path.read_text()) for p in d["ports"]]


def test_roce_port_excerpt_2x_lanes_of_50g() -> None:
    assert _ports(HEALTH / "ibv_devinfo_v_roce_2x_50g_port_excerpt.txt") == [
        (None, 1, "Ethernet", 2, 50.0, 4096, 100.0)]


def test_hdr_port_then_the_next_hcas_head() -> None:
    got = parse((HEALTH / "ibv_devinfo_v_hdr_4x_50g_port_then_next_hca_head.txt").read_text())
    assert _ports(HEALTH / "ibv_devinfo_v_hdr_4x_50g_port_then_next_hca_head.txt") == [
        (None, 1, "InfiniBand", 4, 50.0, 4096, 200.0)]
    assert got[0]["ports"][0]["port_lid"] == 4 and got[0]["ports"][0]["gids"][0]["gid"].startswith("fe80:")
    assert got[1]["device"] == "mlx5_1" and got[1]["fw_ver"] == "20.37.1700" and got[1]["ports"] == []


def test_grep_excerpt_and_plain_listing() -> None:
    bf3 = _ports(HEALTH / "ibv_devinfo_v_grep_bf3_port_down_link_up.txt")
    assert bf3 == [("mlx5_0", None, None, 4, 25.0, None, 100.0), ("mlx5_1", None, None, 4, 25.0, None, 100.0)]
    pod = _ports(REAL / "pod_port_init_spaces_odd_prompt.txt")
    assert pod[0] == ("mlx5_7", 1, "InfiniBand", None, None, 4096, None)
