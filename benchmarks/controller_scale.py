#!/usr/bin/env python3
"""Controller at cluster scale: time and peak memory for 64, 256 and 1,024 simulated hosts.

Each size runs in a process of its own (so its peak resident memory is its own): an inventory of
N hosts is parsed, a one-round iperf3 suite (``pattern: pairs``, N/2 steps at once) is planned,
and the real ``Runner`` runs it with the real telemetry observer (host probe and preflight at the
start, a sampler per host per step) over ``transport.fake``: every command waits one injected
round trip (``--latency-ms``, drawn per command), a connection three; ``--unreachable`` of the
hosts refuse their connection and ``--failing`` of the iperf3 clients exit with iperf3's own
"Connection refused" JSON. The probe answers with this machine's own facts (run once, renamed per
host); iperf3 with a captured ``-J`` document. The hosts' side costs nothing here, so what is
timed is the controller's: connections at ``--max-connections`` at once, threads, parsing, the
run directory's writes (fsync) and the preflight's cross-host checks.

Prints a table per phase (seconds and per host), fits ``time = a * N^b`` over the sizes and
reports ``b`` (1 is linear) against the goal ``<= 1.2``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import ROOT, result

GOAL_EXPONENT = 1.2
FIXTURES = ROOT / "tests" / "fixtures" / "iperf3"
SUITE = """\
description: one round of iperf3 pairs (controller-scale benchmark)
settings: {duration: 1, repeat: 1, base_port: 5201, timeout: 30}
tests:
  - name: tcp
    tool: iperf3
    pattern: pairs
    params: {protocol: tcp}
"""


def rss_mb() -> float:
    """Resident memory of this process now, MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


HOST_MARK = "@@HOST@@"


def facts_template(kind: str) -> str:
    """The probe's JSON of a host: this machine's own, or a synthetic 8-GPU, 8-NIC DGX-shaped node
    (``tests/synthetic_hosts.py``, probed through its sysfs tree and stand-in nvidia-smi)."""
    from benchharness.telemetry.collect import script_path

    argv = [sys.executable, script_path("probe.py")]
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "dgx":
            sys.path.insert(0, str(ROOT / "tests"))
            import synthetic_hosts

            built = synthetic_hosts.build("dgx", Path(tmp))
            argv += ["--root", str(built["tree"]), "--path-prefix", str(built["bin"])]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    facts = json.loads(out)
    facts["host"]["hostname"] = HOST_MARK
    return json.dumps(facts)


def write_inventory(path: Path, n: int) -> None:
    lines = ["[gpu]"]
    for i in range(n):
        lines.append(f"node{i:04d} ansible_host=198.18.{i // 250}.{i % 250 + 1} ansible_user=bench")
    path.write_text("\n".join(lines) + "\n")


class Marks:
    """Observer that notes when the run reaches it (placed before and after the telemetry observer)."""

    def __init__(self, name: str, marks: dict[str, float]) -> None:
        self.name, self.marks = name, marks

    def start_run(self, runner: Any) -> None:
        self.marks[self.name] = time.perf_counter()

    def before_step(self, runner: Any, step: Any) -> None: ...
    def after_step(self, runner: Any, step: Any) -> None: ...
    def end_run(self, runner: Any) -> None: ...


def one(n: int, a: argparse.Namespace) -> dict[str, Any]:
    """Measure one size in this process; returns its figures."""
    from benchharness.config.inventory import load_inventory
    from benchharness.config.suites import load_suite
    from benchharness.execution.runner import Runner
    from benchharness.planning.plan import build_plan
    from benchharness.results.store import RunDir
    from benchharness.telemetry.collect import TelemetryObserver
    from benchharness.transport.fake import FakeFleet

    probe = facts_template(a.facts)
    tcp, refused = (FIXTURES / "tcp.json").read_text(), (FIXTURES / "refused.json").read_text()
    base = rss_mb()
    work = Path(tempfile.mkdtemp(prefix=f"bench-ctl-{n}-"))
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    write_inventory(work / "hosts.ini", n)
    (work / "one-round.yaml").write_text(SUITE)
    inventory = load_inventory(str(work / "hosts.ini"))
    t_inv = time.perf_counter()
    suite = load_suite(str(work / "one-round.yaml"), {"max_connections": str(a.max_connections)})
    plan = build_plan(suite, inventory.hosts, inventory=inventory, launcher="ssh")
    t_plan = time.perf_counter()
    rng = random.Random(n)
    names = [h.name for h in plan.hosts]
    down = set(rng.sample(names, round(n * a.unreachable)))
    failing = set(rng.sample(sorted(set(names) - down), round(n * a.failing)))

    failed_clients: set[str] = set()  # a failing host fails only where it runs a client

    def respond(host: Any, argv: Sequence[str]) -> tuple[int, str, str]:
        if argv[0] == "date":
            return 0, f"{time.time():.9f}\n", ""
        if len(argv) > 1 and argv[1].endswith("probe.py"):  # python3 probe.py, not mv
            return 0, probe.replace(HOST_MARK, host.name), ""
        if argv[0] == "iperf3" and "-s" in argv:
            return 0, f"-----------------------------------------------------------\n" \
                      f"Server listening on {argv[argv.index('-p') + 1]} (test #1)\n", ""
        if argv[0] == "iperf3":
            if host.name in failing:
                failed_clients.add(host.name)
                return 1, refused, ""
            return 0, tcp, ""
        return 0, "", ""  # mkdir, mv, the sampler (no counters)

    fleet = FakeFleet(respond, (a.latency_ms[0] / 1000, a.latency_ms[1] / 1000), unreachable=down, seed=n)
    run_dir = RunDir.create(work / "run")
    observers = [Marks("connected", marks), TelemetryObserver(per_step=True), Marks("probed", marks)]
    t_run = time.perf_counter()
    outcome = Runner(plan, run_dir, observers=observers, launcher=fleet,
                     max_connections=suite.settings["max_connections"]).run()
    t_end = time.perf_counter()
    failed_hosts = {h.name for o in outcome.failed for h in o.step.hosts}
    named = {o.host for o in outcome.failed if o.host}
    # a step fails when either of its hosts is down or its client failed; the down ones are named
    assert down <= named, f"unreachable hosts not named: {sorted(down - named)}"
    assert failed_hosts >= down | failed_clients, "a failed command's step was not failed"
    return {
        "hosts": n, "steps": len(plan.steps), "ok": sum(o.status == "ok" for o in outcome.outcomes),
        "failed": len(outcome.failed), "unreachable": len(down), "failed_clients": len(failed_clients),
        "commands": fleet.commands,
        "inventory_s": t_inv - t0, "plan_s": t_plan - t_inv,
        "connect_s": marks["connected"] - t_run, "probe_s": marks["probed"] - marks["connected"],
        "round_s": t_end - marks["probed"], "total_s": t_end - t0,
        "base_MiB": base, "peak_MiB": peak_mb(), "peak_over_base_MiB": peak_mb() - base,
    }


def fit_exponent(ns: Sequence[int], ts: Sequence[float]) -> float:
    """b of the least-squares fit log t = log a + b log N."""
    xs, ys = [math.log(x) for x in ns], [math.log(max(t, 1e-6)) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--latency-ms", type=float, nargs=2, default=(20.0, 50.0), metavar=("LO", "HI"))
    ap.add_argument("--unreachable", type=float, default=0.02, help="share of hosts that refuse SSH")
    ap.add_argument("--failing", type=float, default=0.02, help="share of hosts whose iperf3 client fails")
    ap.add_argument("--max-connections", type=int, default=32)
    ap.add_argument("--facts", choices=("dgx", "own"), default="dgx",
                    help="what the probe answers: a synthetic DGX-shaped node's facts, or this machine's")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print("ONE " + json.dumps(one(a.one, a)), flush=True)
        return
    rows = []
    for n in (int(x) for x in a.sizes.split(",")):
        argv = [sys.executable, __file__, "--one", str(n), "--latency-ms", *map(str, a.latency_ms),
                "--unreachable", str(a.unreachable), "--failing", str(a.failing),
                "--max-connections", str(a.max_connections), "--facts", a.facts]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        found = [json.loads(x[4:]) for x in proc.stdout.splitlines() if x.startswith("ONE ")]
        if proc.returncode or not found:
            raise SystemExit(f"size {n} failed: {proc.stderr.strip()[-800:]}")
        rows.append(found[0])
    phases = ("inventory_s", "plan_s", "connect_s", "probe_s", "round_s", "total_s")
    print(f"{'hosts':>6} {'steps':>6} {'failed':>6} " + " ".join(f"{p:>12}" for p in phases)
          + f" {'peak MiB':>9} {'+MiB':>7} {'ms/host':>8} {'KiB/host':>9}")
    for r in rows:
        print(f"{r['hosts']:>6} {r['steps']:>6} {r['failed']:>6} " + " ".join(f"{r[p]:>12.2f}" for p in phases)
              + f" {r['peak_MiB']:>9.0f} {r['peak_over_base_MiB']:>7.0f} {1000 * r['total_s'] / r['hosts']:>8.1f}"
              f" {1024 * r['peak_over_base_MiB'] / r['hosts']:>9.0f}")
    ns = [r["hosts"] for r in rows]
    figures: dict[str, Any] = {f"exponent_{p}": round(fit_exponent(ns, [r[p] for r in rows]), 2) for p in phases}
    figures["exponent_peak_over_base_MiB"] = round(fit_exponent(ns, [r["peak_over_base_MiB"] for r in rows]), 2)
    for r in rows:
        figures[f"n{r['hosts']}"] = {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
    print("fit time = a * N^b: " + ", ".join(f"{k.removeprefix('exponent_')} b={v}"
                                              for k, v in figures.items() if k.startswith("exponent_")))
    result("controller-scale", figures["exponent_total_s"], GOAL_EXPONENT, "lower", figures,
           [f"python benchmarks/controller_scale.py --sizes {a.sizes} --latency-ms {a.latency_ms[0]:g} "
            f"{a.latency_ms[1]:g} --unreachable {a.unreachable:g} --failing {a.failing:g} "
            f"--max-connections {a.max_connections} --facts {a.facts}"],
           "b of time = a * N^b over the sizes (1 is linear)")


if __name__ == "__main__":
    main()
