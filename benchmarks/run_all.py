#!/usr/bin/env python3
"""Run every harness benchmark and print each ratio against its goal.

    sudo .venv/bin/python benchmarks/run_all.py            # full: about 10 minutes on 2 cores
    sudo .venv/bin/python benchmarks/run_all.py --quick    # shorter runs, same goals
    sudo .venv/bin/python benchmarks/run_all.py --only startup,report

Each benchmark is its own script (fidelity, overhead, fanout, report, trend, startup, plan_4096, controller_scale, torch_shaped_ratio) and
prints one ``RESULT {json}`` line per goal; this script runs them one after the other (never in
parallel: they would disturb each other), prints the table, writes every figure to
``--json FILE`` if asked, and exits 1 when a goal is missed. Lab benchmarks need root.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS: dict[str, tuple[list[str], list[str]]] = {
    # name: (full arguments, --quick arguments)
    "startup": ([], ["--reps", "7"]),
    "fidelity": ([], ["--reps", "2", "--duration", "3"]),
    # the overhead goal is at iperf3's default step length (10 s), so --quick keeps it
    "overhead": ([], []),
    "fanout": ([], ["--reps", "1"]),
    "report": ([], []),
    "trend": ([], []),
    "plan_4096": ([], []),
    "incast_start": ([], ["--hosts", "5"]),
    "controller_scale": ([], ["--sizes", "64,256"]),
    "torch_shaped_ratio": ([], ["--reps", "1"]),
}


def run(name: str, args: list[str]) -> tuple[list[dict], str]:
    proc = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *args], capture_output=True, text=True,
                          cwd=HERE, timeout=1800)
    results = [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    error = "" if proc.returncode == 0 and results else (proc.stderr.strip().splitlines()[-1:] or ["no result"])[0]
    return results, error


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--json", help="write all results to this file")
    a = ap.parse_args()
    names = [n for n in (a.only.split(",") if a.only else SCRIPTS) if n]
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; known: {', '.join(SCRIPTS)}")
    everything, missed = [], 0
    print(f"{'benchmark':<12} {'value':>10} {'goal':>10}  result   seconds  note")
    for name in names:
        t0 = time.perf_counter()
        results, error = run(name, SCRIPTS[name][1 if a.quick else 0])
        took = time.perf_counter() - t0
        if error:
            missed += 1
            print(f"{name:<12} {'-':>10} {'-':>10}  ERROR   {took:7.0f}  {error}", flush=True)
            continue
        for r in results:
            sign = ">=" if r["better"] == "higher" else "<="
            missed += not r["met"]
            print(f"{r['name']:<12} {r['ratio']:>10.3f} {sign + ' ' + format(r['goal'], 'g'):>10}  "
                  f"{'met   ' if r['met'] else 'MISSED'}  {took:7.0f}  {r['note']}", flush=True)
            everything.append(r)
    if a.json:
        Path(a.json).write_text(json.dumps(everything, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
