"""pytest plugin: tests take turns on the machine (loaded by conftest.py).

The suite runs in parallel (pytest-xdist, ``-n`` in pyproject.toml): most lab tests wait on
shaped links, sshd and sleeps, and a second worker fills that time. What must not overlap:

- A test marked ``alone`` (the comparison's two runs of one setup, which a load that starts or
  stops between them tells apart) runs with no other test of any session on this machine. Every
  other test holds the machine lock shared; an ``alone`` test holds it exclusively.
- A test marked ``apart`` (the soft-RoCE VM) runs with no other test with real parts beside it,
  but tests without real parts run meanwhile: the VM's two vCPUs keep about one core busy on
  average (231 s of CPU in 220 s), so a whole core would idle under ``alone``. Tests with real
  parts hold a second lock shared; an ``apart`` test holds it exclusively. The VM stands a core
  kept busy beside it (its limits scale with the speed it measures; perftest's clock estimate
  then falls back to /proc/cpuinfo, which its tests accept), not a lab test's bursts of sshd,
  Open MPI and frameworks on both cores.
- A gate lock in front of both lets a waiting ``alone`` or ``apart`` test in before new holders,
  so a worker of short tests cannot keep it out for ever (flock has no writer priority).
- Tests that use fixed ports on the root namespace's loopback (a local ``bench run`` takes
  iperf3's 5201, torchrun its master port) share the xdist group ``loopback``: one worker runs
  them one after another. A lab test is a unit of its own unless it uses a fixture of its file
  wider than a test (then the file is one group, so that fixture is made once); any other test
  goes in its file's group; the three shared comparison runs (``nic_runs``) and the CPU-heavy
  framework lab tests (``frameworks``) are named groups across their files.
- Order: the ``apart`` VM first, with the tests without real parts after it (the other workers
  run those while it runs); then ``long(SECONDS)`` lab tests, longest first; the other tests
  with real parts; the ``alone`` ones last.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_parts import REAL_PARTS

LOCK = Path("/tmp/bench-lab-tests.lock")
"""Held shared by every test and exclusively by ``alone`` tests, machine-wide."""
REAL = Path("/tmp/bench-lab-tests.real.lock")
"""Held shared by every test with real parts and exclusively by ``apart`` tests, machine-wide."""
GATE = Path("/tmp/bench-lab-tests.gate")
"""Taken briefly before the lock, and held by an ``alone`` test while it waits for it."""
MAX_WORKERS = 4
"""``-n auto``'s ceiling: more lab tests at once than this only load each other."""


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        pid = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
    return pids


def held_by_an_ancestor(path: Path) -> bool:
    """True when this process or a parent (``flock PATH pytest ...``) holds ``path`` exclusively."""
    inode, mine = os.stat(path).st_ino, _ancestors()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()  # "3: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; waiters have "->"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[3] == "WRITE" and fields[4].isdigit() \
                and int(fields[4]) in mine and fields[5].rsplit(":", 1)[-1] == str(inode):
            return True
    return False


Mode = str
"""``plain`` (no real parts), ``real``, ``apart`` or ``alone``."""


@contextlib.contextmanager
def turn(mode: Mode, lock_path: Path = LOCK, gate_path: Path = GATE, real_path: Path = REAL) -> Iterator[None]:
    """Hold the locks of a test of ``mode``, unless a parent holds the machine lock exclusively."""
    with open(lock_path, "a") as lock, open(real_path, "a") as real:
        if held_by_an_ancestor(lock_path):
            yield
            return
        real_later = False
        with open(gate_path, "a") as gate:
            fcntl.flock(gate, fcntl.LOCK_EX)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX if mode == "alone" else fcntl.LOCK_SH)
                if mode == "apart":
                    fcntl.flock(real, fcntl.LOCK_EX)  # gate held: new tests with real parts wait behind it
                elif mode == "real":
                    try:
                        fcntl.flock(real, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    except BlockingIOError:
                        real_later = True  # an apart test runs: wait for it without the gate, so
                        # that tests without real parts still pass it
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
        if real_later:
            fcntl.flock(real, fcntl.LOCK_SH)
        yield


def mode_of(item: pytest.Item) -> Mode:
    """The turn a test takes: ``alone``, ``apart``, ``real`` (it has real parts) or ``plain``."""
    for mode in ("alone", "apart"):
        if item.get_closest_marker(mode) is not None:
            return mode
    return "real" if any(item.get_closest_marker(m) for m in REAL_PARTS) else "plain"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    with turn(mode_of(item)):
        yield


def _shares_a_fixture_of_its_file(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture of its own file that outlives a test (module or session
    scope): its file's tests then stay on one worker, which makes that fixture once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::")[0]
    return any(d.scope != "function" and d.baseid == module for defs in info.name2fixturedefs.values() for d in defs)


def _turn_order(item: pytest.Item) -> tuple[int, float]:
    """The ``apart`` VM first and the tests without real parts after it (the other workers run
    those beside it); then long lab tests, longest (``long(SECONDS)``, as measured on the 2-core
    machine) first, so that none starts last and holds the run while the other workers idle; then
    the other tests with real parts, and the ``alone`` ones at the end, where the tests they wait
    for are short."""
    mode = mode_of(item)
    if mode == "alone":
        return 4, 0.0
    if mode == "apart":
        return 0, 0.0
    if mode == "plain":
        return 1, 0.0
    long = item.get_closest_marker("long")
    if long:
        return 2, -float(long.args[0])
    return 3, 0.0


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups and order for xdist (before it reads the groups; ``--no-loadscope-reorder`` keeps the
    order): a test with real parts is a group of its own unless it shares a fixture of its file;
    every other test without an ``xdist_group`` goes in its file's group."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        real = any(item.get_closest_marker(m) for m in REAL_PARTS)
        if not real or _shares_a_fixture_of_its_file(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    items.sort(key=_turn_order)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core this process may use, at most ``MAX_WORKERS``."""
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))
