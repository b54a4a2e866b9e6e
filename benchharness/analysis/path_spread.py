"""The signature of traffic concentrated on a few switch paths.

A fabric with ECMP (or static) routing hashes each connection - each RDMA queue pair, each TCP
flow - onto one path. When those paths are oversubscribed or the hash collides, one connection
stays far below line rate while many queue pairs between the same two NICs reach it: the NIC and
the hosts are fine, the traffic is not spread. Collectives show it as a plateau near half their
capacity at the largest sizes (two of a ring's flows sharing one uplink). Suite
``path-spread`` sweeps queue pairs (perftest ``-q``; NCCL ``NCCL_IB_QPS_PER_CONNECTION``).

Both checks read summary rows with the share of line rate that ``frames.add_line_rate`` wrote
(``<metric>_line_rate_pct``); without it the QP check compares with the best QP count measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from benchharness.core.model import Verdict
from benchharness.results.store import RunDir

SINGLE_SHARE = 0.6
"""One connection below this share of the capacity is far below it."""
REACH_SHARE = 0.85
"""Many queue pairs at or above this share reach the capacity."""
PLATEAU_BAND = (0.35, 0.65)
"""A collective whose largest sizes sit flat within this share of capacity plateaus near half."""
PLATEAU_FLAT = 0.05
"""The largest sizes count as flat when they differ by less than this share."""


@dataclass(frozen=True)
class PathFinding:
    """One place where traffic looks concentrated on few paths."""

    where: str  # pair and rail (h1.rail0-h2.rail0) or the collective's test
    kind: str  # single_qp | plateau
    low: float  # one QP's figure, or the plateau's
    high: float  # the best QP count's figure, or the capacity
    share: float  # low as a share of the capacity (or of high)
    message: str


def _where(row: pd.Series) -> str:
    for col in ("endpoints", "pair", "hosts"):
        if col in row and isinstance(row[col], str) and row[col]:
            return row[col].replace(",", "-")
    return "?"


def qp_spread(df: pd.DataFrame, metric: str = "bw_avg_gbps", single_share: float = SINGLE_SHARE,
              reach_share: float = REACH_SHARE) -> list[PathFinding]:
    """Pairs (per rail) where one queue pair is far below line rate while many reach it."""
    if not {"qps", metric} <= set(df.columns):
        return []
    rows = df[df[metric].notna() & df["qps"].notna()].copy()
    if rows.empty:
        return []
    rows["where"] = rows.apply(_where, axis=1)
    pct = f"{metric}_line_rate_pct"
    out = []
    for where, group in rows.groupby("where", sort=True):
        by_qps = group.groupby("qps")[metric].median()
        if 1 not in by_qps.index or len(by_qps) < 2:
            continue
        single, best_qps = float(by_qps.loc[1]), int(by_qps.idxmax())
        best = float(by_qps.max())
        capacity = None
        if pct in group and group[pct].notna().any():
            rated = group[group[pct].notna() & (group[pct] > 0)]
            capacity = float((rated[metric] / rated[pct] * 100.0).median()) if not rated.empty else None
        if capacity:
            far, reached = single < single_share * capacity, best >= reach_share * capacity
            share = single / capacity
            against = f"{capacity:.4g} line rate"
        else:
            far, reached, share = single < single_share * best, True, single / best if best else 0.0
            against = f"{best:.4g} with {best_qps} QPs"
        if far and reached:
            out.append(PathFinding(str(where), "single_qp", single, best, share,
                                   f"{where}: one queue pair reaches {single:.4g} {_unit(metric)} "
                                   f"({share:.0%} of {against}), {best_qps} queue pairs {best:.4g}: traffic "
                                   "rides few switch paths (each connection hashed onto one); spread it "
                                   "with more queue pairs (perftest -q, NCCL_IB_QPS_PER_CONNECTION) or "
                                   "adaptive routing"))
    return out


def collective_plateau(df: pd.DataFrame, metric: str = "busbw_GBps", sizes: int = 3,
                       band: tuple[float, float] = PLATEAU_BAND, flat: float = PLATEAU_FLAT,
                       by: tuple[str, ...] = ("test",)) -> list[PathFinding]:
    """Collectives whose largest ``sizes`` message sizes sit flat near half their capacity."""
    pct = f"{metric}_line_rate_pct"
    keys = [k for k in by if k in df.columns]
    if not {metric, pct, "size_bytes"} <= set(df.columns) or not keys:
        return []
    rows = df[df[metric].notna() & df[pct].notna() & df["size_bytes"].notna()]
    out = []
    for key, group in rows.groupby(keys, sort=True):
        curve = group.groupby("size_bytes")[[metric, pct]].median().sort_index()
        top = curve.tail(sizes)
        if len(top) < sizes:
            continue
        values, shares = top[metric].to_numpy(float), top[pct].to_numpy(float) / 100.0
        level = float(values.max())
        if level <= 0 or (level - float(values.min())) / level > flat:
            continue  # still climbing (or noisy): not a plateau
        share = float(shares.max())
        if band[0] <= share <= band[1]:
            where = "/".join(map(str, key)) if isinstance(key, tuple) else str(key)
            capacity = level / share if share else 0.0
            out.append(PathFinding(where, "plateau", level, capacity, share,
                                   f"{where}: {metric} flat at {level:.4g} {_unit(metric)} over the "
                                   f"{sizes} largest sizes, {share:.0%} of capacity {capacity:.4g}: "
                                   "the signature of flows sharing switch paths (try more QPs per "
                                   "connection, NCCL_IB_QPS_PER_CONNECTION, or adaptive routing)"))
    return out


def _unit(metric: str) -> str:
    return {"gbps": "Gbit/s", "GBps": "GB/s"}.get(metric.rsplit("_", 1)[-1], "")


#: The check a test's path-spread verdicts are filed under.
CHECK = "path spread"


def _with_capacity(df: pd.DataFrame, rates: Mapping[str, float], metric: str = "busbw_GBps") -> pd.DataFrame:
    """A collective's rows with ``<metric>_line_rate_pct`` against its hosts' aggregate (every rail:
    NCCL spreads a collective over them), the smallest host's (``analysis/capacity.py``)."""
    from benchharness.analysis.capacity import host_aggregate

    if metric not in df.columns or "hosts" not in df.columns:
        return df
    out = df.copy()

    def share(row: pd.Series) -> float:
        names = [h for h in str(row.get("hosts") or "").split(",") if h]
        caps = [c for c in (host_aggregate(rates, h) for h in names) if c]
        return float(row[metric]) * 8.0 / min(caps) * 100.0 if caps and pd.notna(row[metric]) else float("nan")

    out[f"{metric}_line_rate_pct"] = out.apply(share, axis=1)
    return out


def run_verdicts(run: RunDir, info: Mapping[str, Any], test: str, status: str,
                 rates: Mapping[str, float]) -> list[Verdict]:
    """The ``path_spread:`` verdicts of one test of a stored run: one per finding (``status``), or
    one ``pass`` saying what was looked at; ``info`` when the test has nothing to judge."""
    from benchharness.analysis import frames

    df, _ = frames.load_run(run, steps_per_test=0, tests=[test])
    if df.empty:
        return [Verdict(CHECK, "info", f"{test}: no samples to judge for path spread", test=test)]
    df = frames.line_rate_share(df, info, run=run)
    found = qp_spread(df) + collective_plateau(_with_capacity(df, rates))
    if found:
        return [Verdict(CHECK, status, f.message, test=test, value=round(f.share, 4),
                        limit=SINGLE_SHARE if f.kind == "single_qp" else PLATEAU_BAND[1]) for f in found]
    looked = "queue pairs per pair and rail" if "qps" in df.columns else "the largest sizes' bus bandwidth"
    return [Verdict(CHECK, "pass", f"{test}: no sign of traffic concentrated on few paths ({looked})", test=test)]
