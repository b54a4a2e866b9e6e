#!/usr/bin/env python3
"""torch all-reduce at h2 shaped to 2 vs 4 Gbit/s: is the bus bandwidth ratio the rates' 0.5?

Real torchrun (Debian's python3-torch, gloo) through ``bench run`` over lab namespaces. gloo's
per-byte CPU time adds to the link's, so the ratio holds only where the machine drives gloo well
above 4 Gbit/s: the unshaped run measures that ceiling and is reported beside the ratio. The
test suite's known truth (tests/test_torch_lab.py) runs at 100 vs 200 Mbit/s, where the link
decides on any machine; this benchmark records what 2 vs 4 Gbit/s gives on this one.
The figure is the relative error of the median ratio against 0.5; goal <= 0.10 (0.5 +/- 10%).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from _common import bench, lab_up, result

GOAL = 0.10
RATES = ("4gbit", "2gbit", None)


def suite_text(maxbytes: str) -> str:
    return ("description: torch all-reduce, shaped-link ratio (benchmark)\n"
            "settings: {repeat: 1, timeout: 600}\ntests:\n  - name: all_reduce\n    tool: torch\n"
            "    pattern: group\n    params: {op: all_reduce, minbytes: 16M, "
            f"maxbytes: {maxbytes}, cpu_maxbytes: {maxbytes}, stepfactor: 2, iters: 5, warmup: 1}}\n")


def busbw(out: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    return {int(r["size_bytes"]): float(r["busbw_GBps"]) for r in rows if r.get("kind") == "summary"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--maxbytes", default="64M")
    a = ap.parse_args()
    figures: dict[str, list[dict[int, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(suite_text(a.maxbytes))
        for rate in RATES:
            with lab_up(f"bmt{(rate or 'no')[:2]}", a.hosts, shape={"h2": rate} if rate else None) as info:
                for rep in range(a.reps):
                    out = Path(tmp) / f"{rate}-{rep}"
                    bench("run", f"suite={suite}", f"hosts={info.inventory}", "telemetry=off", f"out={out}",
                          timeout=900)
                    figures.setdefault(str(rate), []).append(busbw(out))
    ratios = [figures["2gbit"][k][size] / figures["4gbit"][k][size]
              for k in range(a.reps) for size in figures["4gbit"][k]]
    ratio = statistics.median(ratios)
    ceiling = statistics.median(v for run in figures["None"] for v in run.values())
    result("torch_shaped_ratio", abs(ratio - 0.5) / 0.5, GOAL, "lower",
           {"median_ratio": round(ratio, 4), "ratios": [round(r, 4) for r in ratios],
            "unshaped_busbw_GBps": round(ceiling, 4), "line_4gbit_GBps": 0.5, "hosts": a.hosts,
            "busbw_GBps": {k: [{str(s >> 20) + "M": round(v, 4) for s, v in run.items()} for run in runs]
                           for k, runs in figures.items()}},
           [f"bench run suite=<torch all_reduce 16M..{a.maxbytes}, iters 5> hosts=<{a.hosts}-host lab, "
            "h2 shaped 4gbit | 2gbit | unshaped> telemetry=off"],
           note="" if ceiling >= 1.5 * 0.5 else "gloo's CPU ceiling is near the 4 Gbit/s line here: "
                "the CPU, not the link, sets part of the pace")


if __name__ == "__main__":
    main()
