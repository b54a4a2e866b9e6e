#!/usr/bin/env python3
"""Fan-out: the host probe on 32 lab hosts against 1 host (goal <= 3x).

Times ``telemetry.collect.probe_all`` (what `bench doctor` and the run's start use) over fresh
SSH transports, connections included, for h1 alone and for all 32 hosts; best of ``--reps``.
It also times a trivial command (``true``) the same way, which isolates the harness's own
fan-out (connections, threads, channels) from the probe's CPU work: on this machine all 32
"hosts" share the same 2 cores, so 32 probes cost 32 probes' CPU, which no real cluster does.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from _common import lab_up, result, skip_shell_rc

from benchharness.config.inventory import load_inventory
from benchharness.core.model import Host
from benchharness.telemetry import collect
from benchharness.telemetry.collect import probe_all
from benchharness.transport import Transport, transport_for

GOAL = 3.0
HOSTS = 32


def timed(hosts: Sequence[Host], work: Callable[[list], object], warm: bool = False) -> float:
    """Seconds ``work`` takes over fresh transports; ``warm``: connections opened before the clock starts."""
    transports = [transport_for(h) for h in hosts]
    if warm:  # as in `bench run`, where connect_all opens every connection before the probe
        with ThreadPoolExecutor(max_workers=min(32, len(transports))) as pool:
            list(pool.map(lambda t: t.connection(), transports))
    t0 = time.perf_counter()
    try:
        work(transports)
    finally:
        elapsed = time.perf_counter() - t0
        for t in transports:
            t.close()
    return elapsed


def probe(transports: list) -> None:
    facts = probe_all(transports)
    bad = [n for n, f in facts.items() if f.get("available") is False]
    if bad:
        raise SystemExit(f"probe failed on {bad}: {facts[bad[0]].get('reason')}")


def trivial(transports: list) -> None:
    with ThreadPoolExecutor(max_workers=min(32, len(transports))) as pool:
        codes = list(pool.map(lambda t: t.run(["true"])[0], transports))
    if any(c != 0 for c in codes):
        raise SystemExit(f"`true` failed on some host: {codes}")


def _atomic_stage(transport: Transport, name: str) -> str:
    """stage_script, but upload to a private name and rename (atomic on the host's disk).

    The lab's hosts share one disk: 32 concurrent uploads to one path let a probe read a file
    that another upload is rewriting (SyntaxError). docs/performance.md proposes this for collect.py.
    """
    remote = f"{collect.REMOTE_DIR}/{name}"
    tmp = f"{remote}.{transport.host.name}.tmp"
    transport.put(collect.script_path(name), tmp)
    rc, _, err, _ = transport.run(["mv", "-f", tmp, remote], timeout=30)
    if rc != 0:
        raise SystemExit(f"{transport.host.name}: mv {tmp}: {err.strip()}")
    return remote


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=HOSTS)
    ap.add_argument("--as-is", action="store_true",
                    help="use collect.stage_script and the lab's sshd unchanged")
    a = ap.parse_args()
    if not a.as_is:
        collect.stage_script = _atomic_stage
    t_lab = time.perf_counter()
    with lab_up("bmfan", a.hosts) as info:
        up_s = time.perf_counter() - t_lab
        patched = False if a.as_is else skip_shell_rc(info)
        hosts = load_inventory(str(info.inventory)).hosts
        figures: dict[str, float] = {}
        for name, work, warm in (("probe", probe, False), ("probe_warm", probe, True), ("true", trivial, False)):
            one = min(timed(hosts[:1], work, warm) for _ in range(a.reps))
            many = min(timed(hosts, work, warm) for _ in range(a.reps))
            figures[f"{name}_1_s"], figures[f"{name}_{a.hosts}_s"] = round(one, 3), round(many, 3)
            figures[f"{name}_ratio"] = round(many / one, 2)
    figures["lab_up_s"] = round(up_s, 1)
    figures["lab_sshd_setenv_shlvl"] = patched
    result("fan-out", figures["probe_ratio"], GOAL, "lower", figures,
           [f"probe_all over {a.hosts} lab hosts vs 1 (fresh SSH transports, best of {a.reps})"],
           "probe ratio; true_ratio is the harness's fan-out without the probe's CPU work")


if __name__ == "__main__":
    main()
