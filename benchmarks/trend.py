#!/usr/bin/env python3
"""Trend and history over a year of nightly runs, from the catalog (goal: <= 2 s each).

Writes ``--nights`` synthetic nightly run directories (default 365) under one results root:
``--hosts`` hosts (64) in a ring of pairs on ``--rails`` rails (8), five message sizes, one
repetition: the per-host values an all-pairs night leaves in the catalog (hosts x rails x
sizes per metric). The NIC model changes half-way (two lines per chart), and one night in
ten is slower. Each run is registered in the catalog as `bench run` does at its end. Then,
timed as a user runs them (process start included):

* `bench trend metric=bw_avg_gbps`: the HTML trend report (one chart per test and case);
* `bench history metric=bw_avg_gbps size=1M`: the console history of one size on every rail;
* the same points the way there was before the catalog: opening every run directory and
  reducing its samples (`catalog.measure_rows`), in this process, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from _common import bench, result

from benchharness.results.catalog import Catalog, measure_rows
from benchharness.results.store import RunDir

GOAL_S = 2.0
DAY = 86400.0
T0 = 1735732800.0  # 2025-01-01 12:00 UTC
SIZES = [4096, 65536, 1 << 20, 4 << 20, 8 << 20]


def night(root: Path, i: int, hosts: int, rails: int, rng: random.Random) -> RunDir:
    started = T0 + i * DAY
    model = "CX7" if i < 183 else "CX8"
    names = [f"n{h:03d}" for h in range(hosts)]
    run_id = time.strftime("%Y%m%d-020000-nightly-", time.gmtime(started)) + f"{i:04x}"
    run = RunDir.create(root / run_id)
    slow = 0.9 if i % 10 == 7 else 1.0
    samples = []
    for k in range(hosts):
        a, b = names[k], names[(k + 1) % hosts]
        for rail in range(rails):
            sid = f"{k:03d}-bw-{a}-{b}-rail{rail}"
            for size in SIZES:
                bw = 380.0 * size / (size + 16384) * slow * (1 + rng.gauss(0, 0.01))
                samples.append({"test": "all-pairs-bw", "tool": "perftest", "step": sid, "rep": 0,
                                "round": k, "pattern": "all-pairs", "server": a, "client": b,
                                "pair": f"{a}<->{b}", "rail": rail, "size_bytes": size,
                                "bw_avg_gbps": bw, "lat_p99_us": 2.0 + size / 5e4})
    run.append_samples(samples)
    inventory = {"hosts": {h: {"address": "198.18.0.1", "groups": ["gpu"],
                               "vars": {"nic_model": model, "nic_firmware": "28.39"}} for h in names}}
    run.write_run_info({"run_id": run_id, "suite": {"name": "nightly", "tests": [
        {"name": "all-pairs-bw", "tool": "perftest", "params": {"size": "4K..8M"}}]},
        "inventory": inventory, "hosts": names, "started": started, "ended": started + 3600,
        "state": "complete", "exit_code": 0, "verdicts": []})
    return run


def old_path(root: Path, metric: str) -> dict[tuple[str, str, str], float]:
    """Points as they were computed before the catalog: every run directory opened and reduced."""
    points: dict[tuple[str, str, str], list[float]] = {}
    for path in sorted(root.glob("*/run.json")):
        run = RunDir(path.parent)
        for test, m, case, _size, _host, value, _n in measure_rows(run, run.run_info()):
            if m == metric:
                points.setdefault((run.path.name, test, case), []).append(value)
    return {k: statistics.median(v) for k, v in points.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--rails", type=int, default=8)
    a = ap.parse_args()
    rng = random.Random(1)
    with TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        t0 = time.perf_counter()
        catalog = Catalog(root)
        for i in range(a.nights):
            catalog.register(night(root, i, a.hosts, a.rails, rng))
        gen_s = time.perf_counter() - t0
        env = {**os.environ, "BENCH_RESULTS": str(root)}
        out = Path(tmp) / "trend.html"
        trend_s, _, _ = bench("trend", "metric=bw_avg_gbps", f"out={out}", env=env)
        trend_s2, _, _ = bench("trend", "metric=bw_avg_gbps", f"out={out}", env=env)
        history_s, hist_out, _ = bench("history", "metric=bw_avg_gbps", "size=1M", env=env)
        t1 = time.perf_counter()
        old = old_path(root, "bw_avg_gbps")
        old_s = time.perf_counter() - t1
        new = {(p.run_id, p.test, p.case): p.value for p in catalog.series("bw_avg_gbps")}
        with catalog.connect() as conn:
            rows = conn.execute("SELECT count(*) FROM measures").fetchone()[0]
        same = set(old) == set(new) and all(abs(old[k] - new[k]) <= 1e-9 * abs(old[k]) for k in old)
        figures = {"nights": a.nights, "hosts": a.hosts, "rails": a.rails, "catalog_measure_rows": rows,
                   "catalog_MB": round(catalog.path.stat().st_size / 1e6, 1),
                   "trend_s": round(min(trend_s, trend_s2), 2), "trend_first_s": round(trend_s, 2),
                   "history_s": round(history_s, 2), "history_lines": len(hist_out.splitlines()),
                   "trend_html_MB": round(out.stat().st_size / 1e6, 2),
                   "open_every_run_s": round(old_s, 2), "catalog_equals_run_dirs": same,
                   "generate_s": round(gen_s, 1)}
    cmds = [f"bench trend metric=bw_avg_gbps  (BENCH_RESULTS=<{a.nights} nightly runs>)",
            "bench history metric=bw_avg_gbps size=1M"]
    if not same:
        raise SystemExit(f"catalog points differ from the run directories' ({len(old)} vs {len(new)})")
    result("trend-365", figures["trend_s"], GOAL_S, "lower", figures, cmds, "seconds for bench trend")
    result("history-365", figures["history_s"], GOAL_S, "lower", figures, cmds, "seconds for bench history")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
