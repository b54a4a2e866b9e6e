#!/usr/bin/env python3
"""Fidelity: iperf3 through bench against iperf3 by hand, on the same shaped lab pair.

Alternates bench and by-hand runs (same direction h2 -> h1, same length, same duration) so that
drift of the machine hits both alike; the ratio is median(bench) / median(by hand). Goal >= 0.98.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from _common import bench, lab_up, median, netns_argv, result

GOAL = 0.98
RATE = "2gbit"


def by_hand(info, duration: int, length: str, port: int) -> float:
    h1 = info.hosts[0]
    # --forceflush: iperf3 buffers its stdout on a pipe, and the ready line must arrive now
    server = subprocess.Popen(netns_argv(info, 1, ["iperf3", "-s", "-1", "-p", str(port), "-B", h1.address,
                                                   "--forceflush"]), stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if "Server listening" in line:
                break
        out = subprocess.run(netns_argv(info, 2, ["iperf3", "-c", h1.address, "-p", str(port), "-t",
                                                  str(duration), "-l", length, "-J"]),
                             capture_output=True, text=True, timeout=duration + 30, check=True).stdout
    finally:
        server.wait(10)
    return float(json.loads(out)["end"]["sum_received"]["bits_per_second"]) / 1e9


def via_bench(info, duration: int, length: str, out: Path, extra: list[str]) -> float:
    bench("run", "suite=quick", f"hosts={info.inventory}", f"length={length}", f"duration={duration}",
          f"out={out}", *extra)
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r.get("kind", "summary") == "summary"]
    return float(row["bw_avg_gbps"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--length", default="128K")
    ap.add_argument("bench_args", nargs="*", help="extra key=value for bench run (e.g. telemetry=off)")
    a = ap.parse_args()
    bench_gbps, hand_gbps = [], []
    with lab_up("bmfid", 2, shape={"h2": RATE}) as info, tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            bench_gbps.append(via_bench(info, a.duration, a.length, Path(tmp) / f"run{rep}", a.bench_args))
            hand_gbps.append(by_hand(info, a.duration, a.length, 5990 + rep))
    ratio = median(bench_gbps) / median(hand_gbps)
    result("fidelity", ratio, GOAL, "higher",
           {"bench_gbps": [round(x, 4) for x in bench_gbps], "by_hand_gbps": [round(x, 4) for x in hand_gbps],
            "shape": f"h2:{RATE}", "duration_s": a.duration, "length": a.length},
           [f"bench run suite=quick hosts=<2-host lab, shape=h2:{RATE}> length={a.length} duration={a.duration} "
            + " ".join(a.bench_args),
            f"ip netns exec <h1> iperf3 -s -1 -B <h1>; ip netns exec <h2> iperf3 -c <h1> -t {a.duration} "
            f"-l {a.length} -J"])


if __name__ == "__main__":
    main()
