#!/usr/bin/env python3
"""Start-up: wall time of `bench --help` (goal <= 0.3 s), median of ``--reps`` runs.

Uses the installed ``bench`` console script next to this Python (the virtualenv's), else
``python -m benchharness``. Also lists the slowest imports `bench --help` pays for (-X importtime),
so that a module imported too early shows at once.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import BENCH, ROOT, median, result

GOAL_S = 0.3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    script = Path(sys.executable).parent / "bench"
    argv = [str(script), "--help"] if script.exists() else [*BENCH, "--help"]
    times = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    prof = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchharness", "--help"],
                          capture_output=True, text=True, cwd=ROOT).stderr
    cumulative = []
    for line in prof.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(2)) <= 2:  # top-level imports only
            cumulative.append((int(m.group(1)), m.group(3)))
    slowest = [f"{name} {us / 1000:.0f} ms" for us, name in sorted(cumulative, reverse=True)[:5]]
    result("start-up", median(times), GOAL_S, "lower",
           {"median_s": round(median(times), 3), "min_s": round(min(times), 3), "reps": a.reps,
            "slowest_imports": slowest}, [" ".join(["bench" if script.exists() else "python -m benchharness",
                                                    "--help"])], "seconds (goal is seconds)")


if __name__ == "__main__":
    main()
