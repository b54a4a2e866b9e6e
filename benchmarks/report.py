#!/usr/bin/env python3
"""Report: one run of 1,000,000 samples rendered to HTML (goals: <= 15 s and <= 10 MB).

The run directory comes from the synthetic generator of the report tests
(tests/fixtures/runs/synth.py: perftest, nccl-tests and iperf3 rows with the adapters' field
names), whose repetitions are then cloned (new rep and step ids) up to ``--samples`` rows, in
one pass; then `bench report RUN out=FILE` is timed as a user runs it, process start included,
and the file size is read.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from _common import ROOT, bench, result

GOAL_S = 15.0
GOAL_MB = 10.0


def grow(path: Path, samples: int) -> int:
    """Clone the run's repetitions (rep and step renamed) until samples.jsonl holds ``samples`` rows."""
    rows = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    steps = [json.loads(line) for line in (path / "steps.jsonl").read_text().splitlines()]
    written, copy = len(rows), 0
    with open(path / "samples.jsonl", "a", encoding="utf-8") as out, \
            open(path / "steps.jsonl", "a", encoding="utf-8") as steps_out:
        while written < samples:
            copy += 1
            for row in rows[: samples - written]:
                # compact, as the store writes samples.jsonl
                out.write(json.dumps({**row, "rep": row["rep"] + 10 * copy, "step": f"{row['step']}-c{copy}"},
                                     separators=(",", ":")) + "\n")
            written = min(samples, written + len(rows))
            for st in steps:
                steps_out.write(json.dumps({**st, "rep": st["rep"] + 10 * copy, "step": f"{st['step']}-c{copy}"}) + "\n")
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=1_000_000)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("synth", ROOT / "tests" / "fixtures" / "runs" / "synth.py")
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    with TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = synth.build_run(Path(tmp) / "big", reps=10, telemetry=False)
        grow(run.path, a.samples)
        gen_s = time.perf_counter() - t0
        with open(run.path / "samples.jsonl", encoding="utf-8") as fh:
            rows = sum(1 for _ in fh)
        out = Path(tmp) / "report.html"
        wall, _, _ = bench("report", str(run.path), f"out={out}", timeout=900)
        size_mb = out.stat().st_size / 1e6
        samples_mb = (run.path / "samples.jsonl").stat().st_size / 1e6
    figures = {"samples": rows, "samples_jsonl_MB": round(samples_mb, 1), "render_s": round(wall, 2),
               "html_MB": round(size_mb, 2), "generate_s": round(gen_s, 1)}
    cmd = [f"bench report <synthetic run of {rows} samples> out=report.html"]
    result("report-time", wall, GOAL_S, "lower", figures, cmd, "seconds to render (goal is seconds)")
    result("report-size", size_mb, GOAL_MB, "lower", figures, cmd, "MB of HTML (goal is MB)")


if __name__ == "__main__":
    main()
