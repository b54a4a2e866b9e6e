#!/usr/bin/env python3
"""Incast start spread: how far apart the senders of one incast step really start (goal <= 50 ms).

``bench run suite=incast`` on a lab of N hosts (N-1 senders to one receiver, every host in turn).
Each sender's start is the host-side instant its command began (``execution.clocks``: the host
waits for an agreed instant in its own clock and marks it), put on the controller's clock with
the host's measured offset; the spread of a step is the latest minus the earliest sender start
(``t_offset_s`` of its samples). The figure is the worst step's spread.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import bench, lab_up, result

GOAL_S = 0.050


def spreads(run: Path) -> list[float]:
    """Per incast step: latest minus earliest sender start, from the summary samples."""
    per_step: dict[str, list[float]] = {}
    for line in (run / "samples.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "summary" and rec.get("pattern") == "incast" and "t_offset_s" in rec:
            per_step.setdefault(rec["step"], []).append(float(rec["t_offset_s"]))
    return [max(v) - min(v) for v in per_step.values() if len(v) > 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--duration", type=int, default=2)
    a = ap.parse_args()
    with lab_up("bincast", a.hosts) as info, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        args = ["run", "suite=incast", f"hosts={info.inventory}", f"duration={a.duration}",
                "telemetry=off", f"out={out}"]
        bench(*args)
        found = spreads(out)
        offsets = json.loads((out / "run.json").read_text()).get("clock_offsets", {})
    worst = max(found)
    result("incast_start_spread_s", worst, GOAL_S, "lower",
           {"steps": len(found), "senders_per_step": a.hosts - 1,
            "worst_spread_ms": round(worst * 1000, 1),
            "median_spread_ms": round(sorted(found)[len(found) // 2] * 1000, 1),
            "max_clock_rtt_ms": round(max((o["rtt_s"] for o in offsets.values()), default=0) * 1000, 2)},
           ["bench " + " ".join(args)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
