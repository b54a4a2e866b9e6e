#!/usr/bin/env python3
"""DuckDB against pandas on Arrow, for what a report computes: per test, the statistics per case
(median, mean, min, max, stdev, n) of every metric of its summary rows, from samples.parquet.

Not part of run_all.py (DuckDB is not a dependency: this is the measurement behind that
choice). Needs duckdb importable (e.g. ``pip install --target DIR duckdb`` and PYTHONPATH=DIR)
and a run directory with a columnar copy (``benchmarks/report.py`` makes one; or any run):

    PYTHONPATH=.:DIR python benchmarks/duckdb_vs_arrow.py RUN

Each way runs in its own process; wall seconds and peak resident MB are printed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from _common import ROOT


def arrow_way(path: str) -> None:
    from benchharness.analysis import frames
    from benchharness.results import columnar
    from benchharness.results.store import RunDir

    run = RunDir(path)
    rows = 0
    for test in frames.test_names(run):
        df = frames.load_samples(run, tests=[test])
        rows += len(frames.summarize(df))
        del df
        columnar.release_memory()
    print(rows)


def duckdb_way(path: str) -> None:
    import duckdb

    from benchharness.analysis import frames
    from benchharness.core.metrics import is_metric_name
    from benchharness.results import cases, columnar
    from benchharness.results.store import RunDir

    run = RunDir(path)
    keys = cases.run_case_keys(run.run_info())
    con = duckdb.connect()
    pq_path = str(columnar.path_of(run))
    rows = 0
    for test in frames.test_names(run):
        present = columnar.present_columns(run, ["summary"], [test]) or []
        by = cases.case_columns(present, keys)
        metrics = [c for c in present if is_metric_name(c) and c not in by]
        for metric in metrics:
            group = ", ".join(f'"{c}"' for c in by)
            sql = (f'SELECT {group}, count("{metric}"), median("{metric}"), avg("{metric}"), '
                   f'min("{metric}"), max("{metric}"), stddev_samp("{metric}") FROM read_parquet(?) '
                   f'WHERE kind = \'summary\' AND test = ? AND "{metric}" IS NOT NULL GROUP BY {group}')
            rows += len(con.execute(sql, [pq_path, test]).fetchall())
    print(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--way", choices=["arrow", "duckdb"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.way:
        (arrow_way if a.way == "arrow" else duckdb_way)(a.run)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return
    out = {}
    for way in ("arrow", "duckdb", "arrow", "duckdb"):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, a.run, "--way", way], capture_output=True, text=True,
                              cwd=ROOT)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(proc.stderr[-800:])
        best = out.get(way, {"s": 1e9})
        rows, peak = proc.stdout.split()[-2:]
        out[way] = {"s": round(min(best["s"], wall), 2), "rows": int(rows), "peak_MB": round(float(peak))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
