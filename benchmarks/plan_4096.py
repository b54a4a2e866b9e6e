#!/usr/bin/env python3
"""A 4,096-host plan, simulated: all-pairs rounds, fan-out bounds and catalog size.

Builds the real all-pairs schedule (``schedule.all_pairs_rounds``, the circle method) for
``--hosts`` hosts and checks it (every pair once, no host twice in a round), then projects what a
run of it would cost with the per-step figures measured on the lab (``--overhead-s``,
``--raw-kb``, ``--samples-kb``, ``--files``): wall time, concurrent steps and connections, and
the size of the run directory. It compares the ring and k random perfect matchings, which cover
every host in far fewer rounds. Nothing is started.
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from _common import result

from benchharness.planning.schedule import all_pairs_rounds, ring


def human_s(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=4096)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per step")
    ap.add_argument("--overhead-s", type=float, default=0.15, help="harness seconds per step (overhead.py)")
    ap.add_argument("--raw-kb", type=float, default=20.0, help="raw output per step, KB (iperf3 -J, 10 s)")
    ap.add_argument("--samples-kb", type=float, default=4.0, help="samples.jsonl per step, KB")
    ap.add_argument("--files", type=int, default=6, help="raw files per step (2 commands x 3)")
    ap.add_argument("--matchings", type=int, default=8, help="random perfect matchings to compare")
    a = ap.parse_args()
    n = a.hosts
    t0 = time.perf_counter()
    rounds = all_pairs_rounds(list(range(n)))
    plan_s = time.perf_counter() - t0
    steps = sum(len(r) for r in rounds)
    assert steps == n * (n - 1) // 2
    assert all(len({h for p in r for h in p}) == 2 * len(r) for r in rounds)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_round = max(len(r) for r in rounds)
    wall = len(rounds) * (a.duration + a.overhead_s)
    catalog_gb = steps * (a.raw_kb + a.samples_kb + 0.3) / 1e6
    rng = random.Random(1)
    hosts = list(range(n))
    matchings = []
    for _ in range(a.matchings):
        rng.shuffle(hosts)
        matchings.append([(hosts[i], hosts[i + 1]) for i in range(0, n - 1, 2)])
    ring_pairs = len(ring(list(range(n))))
    figures = {
        "hosts": n, "all_pairs_steps": steps, "all_pairs_rounds": len(rounds), "steps_per_round": per_round,
        "plan_build_s": round(plan_s, 1), "plan_rss_MB": round(rss_mb),
        "all_pairs_wall": human_s(wall), "all_pairs_catalog_GB": round(catalog_gb, 1),
        "all_pairs_raw_files": steps * a.files, "samples_jsonl_GB": round(steps * a.samples_kb / 1e6, 1),
        "concurrent_steps_per_round": per_round, "connections": n,
        "ring_steps": ring_pairs, "ring_wall": human_s(2 * (a.duration + a.overhead_s)),
        "matchings": a.matchings, "matchings_wall": human_s(a.matchings * (a.duration + a.overhead_s)),
        "matchings_catalog_MB": round(a.matchings * (n // 2) * (a.raw_kb + a.samples_kb + 0.3) / 1e3),
    }
    for k, v in figures.items():
        print(f"{k:>28}: {v}")
    result("plan-4096", len(rounds), n - 1, "lower", figures,
           [f"python benchmarks/plan_4096.py --hosts {n} --duration {a.duration:g}"],
           "all-pairs rounds (the circle method's optimum is hosts - 1)")


if __name__ == "__main__":
    main()
