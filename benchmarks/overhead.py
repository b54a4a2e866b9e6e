#!/usr/bin/env python3
"""Overhead: wall time of `bench run` over the tools' own measurement time, for a 10-step sweep.

The sweep (benchmarks/suites/overhead.yaml) is iperf3 over ten message lengths on one lab pair,
each step ``duration`` seconds (iperf3's own default, 10 s, unless told). The tools' time is the
sum of iperf3's ``end.sum_sent.seconds``; the wall time is the whole `bench run` process, start-up,
inventory, connections and report included. Goal <= 1.05. The breakdown says where time goes:
start-up (process start to the first step), per-step overhead, and the end (last step to exit,
mostly the report).

Root's ~/.bashrc on the development machine runs ``pyenv init``, which costs every SSH command
about 0.3-0.7 s; that is the machine, not the harness. Unless ``--as-is``, the benchmark's own lab
sshd gets ``SetEnv SHLVL=1`` (bash then skips ~/.bashrc for ssh commands), as docs/performance.md
proposes for lab/control.py; if it already does it, nothing changes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from _common import BENCH, ROOT, lab_up, result, skip_shell_rc

GOAL = 1.05
SUITE = ROOT / "benchmarks" / "suites" / "overhead.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--as-is", action="store_true", help="leave the lab's sshd as lab/control.py made it")
    a = ap.parse_args()
    import subprocess

    with lab_up("bmovh", 2) as info, TemporaryDirectory() as tmp:
        patched = False if a.as_is else skip_shell_rc(info)
        out = Path(tmp) / "run"
        argv = [*BENCH, "run", f"suite={SUITE}", f"hosts={info.inventory}", f"duration={a.duration}", f"out={out}"]
        t0 = time.time()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=40 * a.duration + 300)
        t1 = time.time()
        if proc.returncode != 0:
            raise SystemExit(f"bench run failed ({proc.returncode}): {proc.stderr[-800:]}")
        steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
        samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    tools_s = sum(s["duration_s"] for s in samples if s.get("kind", "summary") == "summary")
    steps_s = sum(s["ended"] - s["started"] for s in steps)
    wall = t1 - t0
    figures = {
        "wall_s": round(wall, 2), "tools_s": round(tools_s, 2), "steps": len(steps),
        "startup_s": round(min(s["started"] for s in steps) - t0, 2),
        "per_step_overhead_s": round((steps_s - tools_s) / max(1, len(steps)), 3),
        "end_s": round(t1 - max(s["ended"] for s in steps), 2),
        "duration_s": a.duration, "lab_sshd_setenv_shlvl": patched,
    }
    note = ("lab sshd given SetEnv SHLVL=1 by the benchmark (root's ~/.bashrc skipped)" if patched else
            "lab as lab/control.py made it")
    result("overhead", wall / tools_s, GOAL, "lower", figures,
           [f"bench run suite=benchmarks/suites/overhead.yaml hosts=<2-host lab> duration={a.duration}"], note)


if __name__ == "__main__":
    main()
