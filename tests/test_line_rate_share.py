"""The run report's line-rate share is held to the same capacities as the ``line_rate`` verdicts."""

from __future__ import annotations

import pandas as pd
import pytest

from benchharness.analysis.capacity import capacity_gbps
from benchharness.analysis.frames import line_rate_share
from benchharness.results import runview

RAILS = 8


def _info() -> dict:
    """Two 8-rail hosts of 400 Gbit/s NICs (per NIC, as ``nic_line_rate_gbps`` means)."""
    return {"hosts": ["g1", "g2"],
            "suite": {"name": "s", "tests": [
                {"name": "ar", "tool": "nccl_tests", "pattern": "group"},
                {"name": "bw", "tool": "perftest", "pattern": "pairs", "rails": "aligned",
                 "params": {"bidir": True}},
                {"name": "uni", "tool": "perftest", "pattern": "pairs", "rails": "aligned"}]},
            "inventory": {"hosts": [
                {"name": n, "vars": {"nic_line_rate_gbps": 400},
                 "rails": [{"name": f"rail{i}"} for i in range(RAILS)]} for n in ("g1", "g2")]}}


def test_collective_share_is_against_the_hosts_rails_not_one_nic() -> None:
    # A healthy all-reduce over 8 x 400G: 360 GB/s busbw = 2880 Gbit/s = 90% of 3200, never 720%.
    df = pd.DataFrame([{"test": "ar", "pattern": "group", "hosts": "g1,g2", "busbw_GBps": 360.0}])
    out = line_rate_share(df, _info(), facts={})
    assert out["busbw_GBps_line_rate_pct"].iloc[0] == pytest.approx(90.0)


def test_bidirectional_share_is_against_twice_the_rail() -> None:
    df = pd.DataFrame([
        {"test": "bw", "pattern": "pairs", "hosts": "g1,g2", "endpoints": "g1.rail3,g2.rail3", "bw_avg_gbps": 720.0},
        {"test": "uni", "pattern": "pairs", "hosts": "g1,g2", "endpoints": "g1.rail3,g2.rail3", "bw_avg_gbps": 360.0},
        {"test": "uni", "pattern": "pairs", "hosts": "g1,g2", "endpoints": "g1.rail0,g2.rail0", "bw_avg_gbps": 360.0,
         "bidir": True}])
    out = line_rate_share(df, _info(), facts={})
    # bw: bidir from the test's params (2 x 400); uni: one direction; the row's own bidir label wins.
    assert out["bw_avg_gbps_line_rate_pct"].tolist() == pytest.approx([90.0, 90.0, 45.0])


def test_share_matches_the_verdicts_capacity() -> None:
    info = _info()
    rates = runview.line_rates(info, {})
    for hosts, group, bidir in ((["g1", "g2"], True, False), (["g1.rail1", "g2.rail1"], False, True),
                                (["g1.rail1", "g2.rail1"], False, False)):
        capacity, _ = capacity_gbps(hosts, rates, group=group, bidir=bidir)
        assert capacity is not None
        test = "ar" if group else ("bw" if bidir else "uni")
        row = {"test": test, "pattern": "group" if group else "pairs", "hosts": "g1,g2", "bw_avg_gbps": 100.0}
        if not group:
            row["endpoints"] = ",".join(hosts)
        out = line_rate_share(pd.DataFrame([row]), info, facts={})
        assert out["bw_avg_gbps_line_rate_pct"].iloc[0] == pytest.approx(100.0 / capacity * 100.0)
