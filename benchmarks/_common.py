"""Shared pieces of the harness benchmarks: results, labs, running `bench`, timing.

Every benchmark script prints its result as one line ``RESULT {json}`` (name, ratio, goal,
comparison, the figures behind the ratio, and the commands measured), which ``run_all.py``
collects. These are benchmarks of the harness itself, not tests: pytest never runs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchharness.lab import control as lab  # noqa: E402 - after the path set-up, so a checkout runs without install
from benchharness.lab.control import LabInfo  # noqa: E402

LAB_BASE = Path(tempfile.gettempdir()) / f"benchharness-benchmark-labs-{os.getpid()}"
BENCH = [sys.executable, "-m", "benchharness"]
SETENV = "SetEnv SHLVL=1"


def result(name: str, ratio: float, goal: float, better: str, figures: Mapping[str, Any],
           commands: Sequence[str], note: str = "") -> dict[str, Any]:
    """Print and return one benchmark result; ``better`` is ``"higher"`` or ``"lower"``."""
    met = ratio >= goal if better == "higher" else ratio <= goal
    out = {"name": name, "ratio": round(ratio, 4), "goal": goal, "better": better, "met": met,
           "figures": dict(figures), "commands": list(commands), "note": note}
    print("RESULT " + json.dumps(out), flush=True)
    return out


@contextlib.contextmanager
def lab_up(name: str, hosts: int, shape: Mapping[str, str] | None = None) -> Iterator[LabInfo]:
    """A loopback lab for one benchmark (root only), always taken down."""
    if os.geteuid() != 0:
        raise SystemExit("the benchmark needs root for the loopback lab")
    info = lab.lab_up(hosts, name=name, shape=shape, base_dir=LAB_BASE)
    try:
        yield info
    finally:
        lab.lab_down(name, base_dir=LAB_BASE)


def bench(*args: str, timeout: float = 600, env: Mapping[str, str] | None = None) -> tuple[float, str, str]:
    """Run ``bench ARGS``; (wall seconds, stdout, stderr). Exits with the error if bench fails."""
    t0 = time.perf_counter()
    proc = subprocess.run([*BENCH, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(env) if env is not None else None, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return wall, proc.stdout, proc.stderr


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def netns_argv(info: LabInfo, host: int, argv: Sequence[str]) -> list[str]:
    """``argv`` run by hand inside lab host ``h<host>`` (index from 1), the way a user would."""
    return ["ip", "netns", "exec", info.hosts[host - 1].netns, *argv]


def skip_shell_rc(info: LabInfo) -> bool:
    """Give the lab's sshd SetEnv SHLVL=1 (bash skips ~/.bashrc then); True if anything changed."""
    changed = False
    for h in info.hosts:
        conf = info.dir / "hosts" / h.name / "sshd_config"
        text = conf.read_text()
        if "SHLVL" not in text:
            conf.write_text(text + SETENV + "\n")
            os.kill(int((conf.parent / "sshd.pid").read_text()), signal.SIGHUP)  # sshd re-reads its config
            changed = True
    if changed:
        time.sleep(1.0)
    return changed
