"""``bench parse rdma`` on ``rdma link`` as three iproute2 generations print it (real published
outputs, tests/fixtures/health/real and tests/fixtures/real/rdma, SOURCES there): the old form led by
``N/1:`` indexes (i40iw and mlx5, physical_state NOP), the padded column form after a prompt, and GKE's
eight ports. Figures read by hand."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

HEALTH = Path(__file__).parent / "fixtures" / "health" / "real"
parse = get_parser("rdma")


def _ports(name: str) -> list[tuple]:
    return [(p["device"], p["port"], p["state"], p["physical_state"], p.get("netdev"))
            for p in parse((HEALTH / name).read_text())["ports"]]


def test_old_index_prefixed_records() -> None:
    assert _ports("rdma_link_iproute2_old_index_prefix_i40iw_mlx5.txt") == [
        ("i40iw0", 1, "DOWN", "NOP", None), ("i40iw1", 1, "ACTIVE", "NOP", None),
        ("mlx5_0", 1, "DOWN", "DISABLED", "ens803f0"), ("mlx5_1", 1, "ACTIVE", "LINK_UP", "ens803f1")]


def test_padded_device_column_after_a_prompt() -> None:
    got = _ports("rdma_link_padded_columns_prompt_4_rocep.txt")
    assert [g[0] for g in got] == ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    assert {g[2:4] for g in got} == {("ACTIVE", "LINK_UP")} and got[2][4] == "enP2p1s0f0np0"
