#!/usr/bin/env python3
"""Report: runs of 1,000,000 and 10,000,000 samples rendered to HTML (goals: <= 5 s and <= 45 s,
<= 1.5 GB peak memory, <= 10 MB of HTML).

The run directory comes from the synthetic generator of the report tests
(tests/fixtures/runs/synth.py: perftest, nccl-tests and iperf3 rows with the adapters' field
names), whose repetitions are then cloned (new rep and step ids) up to ``--samples`` rows, in
one pass. Then, each in its own process, timed as a user runs it (process start included) and
with its peak resident memory (the child's ``ru_maxrss``):

* ``build``: the columnar copy (``results.columnar.build``), as `bench run` writes it at the end;
* ``report``: `bench report RUN out=FILE` with that copy present (the goal);
* ``report-rebuild``: `bench report` of the same run without the copy (a run stored before it
  existed, or cut short): the copy is rebuilt first, then read.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from _common import BENCH, ROOT, result

GOALS_S = {1_000_000: 5.0, 10_000_000: 45.0}
GOAL_MB = 10.0
GOAL_PEAK_MB = 1500.0
PEAK = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "w = time.perf_counter() - t; sys.stderr.write(r.stderr[-800:]); "
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); sys.exit(r.returncode)")


def grow(path: Path, samples: int) -> int:
    """Clone the run's repetitions (rep and step renamed) until samples.jsonl holds ``samples`` rows."""
    import orjson

    rows = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    steps = [json.loads(line) for line in (path / "steps.jsonl").read_text().splitlines()]
    written, copy = len(rows), 0
    with open(path / "samples.jsonl", "ab") as out, open(path / "steps.jsonl", "ab") as steps_out:
        while written < samples:
            copy += 1
            # compact, as the store writes samples.jsonl
            out.write(b"\n".join(orjson.dumps({**row, "rep": row["rep"] + 10 * copy,
                                               "step": f"{row['step']}-c{copy}"})
                                 for row in rows[: samples - written]) + b"\n")
            written = min(samples, written + len(rows))
            steps_out.write(b"\n".join(orjson.dumps({**st, "rep": st["rep"] + 10 * copy,
                                                     "step": f"{st['step']}-c{copy}"}) for st in steps) + b"\n")
    return written


def timed(argv: list[str], timeout: float = 1800) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one child process."""
    proc = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    wall, peak = proc.stdout.split()[-2:]
    return float(wall), float(peak)


def one(synth: object, tmp: Path, samples: int) -> dict[str, float | int]:
    t0 = time.perf_counter()
    run = synth.build_run(tmp / f"big{samples}", reps=10, telemetry=False)  # type: ignore[attr-defined]
    grow(run.path, samples)
    gen_s = time.perf_counter() - t0
    build = [sys.executable, "-c", "import sys; from benchharness.results import columnar, store; "
             "columnar.build(store.RunDir(sys.argv[1]))", str(run.path)]
    build_s, build_mb = timed(build)
    out = tmp / f"report{samples}.html"
    report_s, report_mb = timed([*BENCH, "report", str(run.path), f"out={out}"])
    size_mb = out.stat().st_size / 1e6
    (run.path / "samples.parquet").unlink()
    rebuild_s, rebuild_mb = timed([*BENCH, "report", str(run.path), f"out={out}"])
    figures = {"samples": samples, "samples_jsonl_MB": round((run.path / "samples.jsonl").stat().st_size / 1e6, 1),
               "samples_parquet_MB": round((run.path / "samples.parquet").stat().st_size / 1e6, 1),
               "render_s": round(report_s, 2), "render_peak_MB": round(report_mb),
               "html_MB": round(size_mb, 2), "build_s": round(build_s, 2), "build_peak_MB": round(build_mb),
               "render_with_rebuild_s": round(rebuild_s, 2), "render_with_rebuild_peak_MB": round(rebuild_mb),
               "generate_s": round(gen_s, 1)}
    for p in run.path.glob("samples.*"):
        p.unlink()
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="1000000,10000000", help="comma-separated run sizes")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("synth", ROOT / "tests" / "fixtures" / "runs" / "synth.py")
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    for samples in [int(s) for s in a.samples.split(",") if s]:
        with TemporaryDirectory() as tmp:
            f = one(synth, Path(tmp), samples)
        tag = f"{samples // 1_000_000}M" if samples >= 1_000_000 else str(samples)
        cmd = [f"bench report <synthetic run of {samples} samples, columnar copy present> out=report.html"]
        goal = GOALS_S.get(samples, 45.0 * samples / 10_000_000)
        result(f"report-{tag}", f["render_s"], goal, "lower", f, cmd, "seconds to render (goal is seconds)")
        result(f"report-{tag}-mem", f["render_peak_MB"], GOAL_PEAK_MB, "lower", f, cmd,
               "peak MB resident of bench report")
        result(f"report-{tag}-html", f["html_MB"], GOAL_MB, "lower", f, cmd, "MB of HTML (goal is MB)")


if __name__ == "__main__":
    main()
