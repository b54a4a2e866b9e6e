"""Concentrated-path signature on synthetic samples with a known answer: one QP far below line
rate while 8 QPs reach it (flagged), a pair where one QP already reaches it (not flagged), a NIC
slow at every QP count (not a path problem: not flagged); a collective flat at half capacity."""

from __future__ import annotations

import pandas as pd

from benchharness.analysis.path_spread import collective_plateau, qp_spread

LINE = 400.0


def _qp_rows(where: str, by_qps: dict[int, float]) -> list[dict[str, object]]:
    return [{"endpoints": where, "qps": q, "rep": r, "bw_avg_gbps": bw * (1 + 0.01 * r),
             "bw_avg_gbps_line_rate_pct": bw * (1 + 0.01 * r) / LINE * 100} for q, bw in by_qps.items()
            for r in range(3)]


def test_one_queue_pair_far_below_line_rate_while_many_reach_it() -> None:
    df = pd.DataFrame(
        _qp_rows("h1.rail0,h2.rail0", {1: 150.0, 2: 260.0, 4: 330.0, 8: 385.0, 16: 386.0})  # concentrated
        + _qp_rows("h1.rail1,h2.rail1", {1: 380.0, 2: 385.0, 4: 386.0, 8: 386.0, 16: 386.0})  # healthy
        + _qp_rows("h1.rail2,h2.rail2", {1: 120.0, 2: 150.0, 4: 160.0, 8: 160.0, 16: 161.0}))  # slow NIC
    found = qp_spread(df)
    assert [f.where for f in found] == ["h1.rail0-h2.rail0"]
    f = found[0]
    assert f.kind == "single_qp" and 0.37 < f.share < 0.39 and f.high > 385
    assert "16 queue pairs" in f.message and "few switch paths" in f.message


def test_without_line_rate_the_best_qp_count_is_the_yardstick() -> None:
    df = pd.DataFrame(_qp_rows("a,b", {1: 40.0, 8: 95.0})).drop(columns="bw_avg_gbps_line_rate_pct")
    assert [f.where for f in qp_spread(df)] == ["a-b"]
    df = pd.DataFrame(_qp_rows("a,b", {1: 80.0, 8: 95.0})).drop(columns="bw_avg_gbps_line_rate_pct")
    assert qp_spread(df) == []


def test_collective_plateau_near_half_capacity() -> None:
    capacity = 50.0  # GB/s of bus bandwidth the rails allow
    rows = []
    for test, curve in (("allreduce-qps1", [5, 12, 20, 24.5, 25.0, 25.2]),     # flat at ~50 %
                        ("allreduce-qps4", [5, 14, 28, 40, 45.5, 46.0]),       # reaches 92 %
                        ("allreduce-climb", [2, 4, 8, 12, 18, 26])):           # still climbing
        for k, v in enumerate(curve):
            rows.append({"test": test, "size_bytes": 1 << (24 + k), "busbw_GBps": v,
                         "busbw_GBps_line_rate_pct": v / capacity * 100})
    found = collective_plateau(pd.DataFrame(rows))
    assert [f.where for f in found] == ["allreduce-qps1"]
    assert found[0].kind == "plateau" and abs(found[0].high - capacity) < 0.5
