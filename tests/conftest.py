"""Shared fixtures. Loopback lab: ``lab3`` (session-wide 3-host lab) and ``make_lab``.

Lab names, bridges and namespaces are machine-wide, so every lab a test session brings up is
named ``<stem>-<session tag>`` (``lab_name``): two test sessions on one machine never meet, and a
session killed half-way (its labs left up) does not break the next, which removes them first."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import secrets
import shutil
import string
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from real_parts import (  # noqa: F401  (the hooks: CI fails skips, and a missing build stops it)
    pytest_collection_finish,
    pytest_runtest_makereport,
    require_commands,
)
from turns import (  # noqa: F401  (the hooks: tests take turns on the machine, xdist groups)
    pytest_collection_modifyitems,
    pytest_runtest_protocol,
    pytest_xdist_auto_num_workers,
)

import benchharness.tools
from benchharness.core.errors import LabError
from benchharness.lab import commands as lab_commands
from benchharness.lab import control as lab
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

LAB_BASE = Path(tempfile.gettempdir()) / f"benchharness-test-labs-{os.getpid()}"
"""State directory of the labs this test session brings up."""

LAB_TAG = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(3))
"""This session's mark on its lab names (random, not the pid: pid namespaces may differ)."""


def lab_name(stem: str) -> str:
    """The machine-wide name of this session's lab ``stem`` (a stem of at most 8 characters)."""
    assert len(stem) <= 8, f"lab stem {stem!r} too long for a 12-character lab name"
    return f"{stem}-{LAB_TAG}"

FAKE_TOOLS = Path(__file__).parent / "fixtures" / "suites" / "fake_tools.py"


def _load_fake_tools() -> dict:
    spec = importlib.util.spec_from_file_location("bench_fake_tools", FAKE_TOOLS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.FAKES)


FAKES = _load_fake_tools()


@pytest.fixture
def fake_tools(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Only the fake adapters of tests/fixtures/suites/fake_tools.py are registered, so that
    error messages list exactly them."""
    monkeypatch.setattr(benchharness.tools, "registry", lambda: FAKES)
    return FAKES


NOT_ROOT = "the loopback lab needs root (network namespaces, veth, sshd)"


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(NOT_ROOT)


def need_programs(*names: str) -> None:
    """Skips the test when a program it runs is not installed, naming its Debian package (with
    real parts required, the session has already stopped at its start instead)."""
    lacking = lab_commands.missing(names)
    if lacking:
        pytest.skip(f"not installed: {lab_commands.describe_missing(lacking)} (./setup.sh installs it)")


@contextlib.contextmanager
def make_lab(name: str, hosts: int, shape: Mapping[str, str] | None = None, rails: int = 0) -> Iterator[LabInfo]:
    """Bring up lab ``lab_name(name)`` for one test and take it down afterwards (skips unless root)."""
    _need_root()
    info = lab.lab_up(hosts, name=lab_name(name), shape=shape, base_dir=LAB_BASE, rails=rails)
    try:
        yield info
    finally:
        lab.lab_down(info.name, base_dir=LAB_BASE)


@pytest.fixture(scope="session")
def lab_base() -> Path:
    """Where the test labs keep their state (pass as ``base_dir`` to lab functions)."""
    return LAB_BASE


@pytest.fixture
def lab_root() -> None:
    """Skips the test unless it runs as root (what every lab operation needs)."""
    _need_root()


@pytest.fixture
def lab_maker() -> Callable[..., contextlib.AbstractContextManager[LabInfo]]:
    """``make_lab`` as a fixture, for tests that prefer not to import from conftest."""
    _need_root()
    return make_lab


def run_with_host_vars(info: LabInfo, tmp: Path, suite: Path, host_vars: Mapping[str, str],
                       timeout: float = 300, args: Sequence[str] = ()) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``bench run suite=SUITE`` on lab ``info`` with ``host_vars`` (``{"h2": "gpus=1 ..."}``) added to
    those hosts' inventory lines, and ``args`` (``label=A``); (the run directory, the finished process)."""
    text = info.inventory.read_text()
    for name, extra in host_vars.items():
        text, found = re.subn(rf"^({name} ansible_host=\S+)", lambda m, extra=extra: f"{m.group(1)} {extra}", text, flags=re.M)
        assert found == 1, (name, text)
    inv, out = tmp / "inventory.ini", tmp / "run"
    inv.write_text(text)
    res = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={suite}", f"hosts={inv}",
                          f"out={out}", *args], capture_output=True, text=True, timeout=timeout)
    return out, res


def health_verdicts(out: Path, prefix: str = "health: ") -> dict[tuple[str, str], dict]:
    """The run's verdicts whose check starts with ``prefix``, by (check, host)."""
    return {(v["check"], v["host"]): v for v in RunDir(out).run_info()["verdicts"] if v["check"].startswith(prefix)}


@pytest.fixture(scope="session")
def nic_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three lab runs standing for three candidate NICs (tests/nic_runs.py), made once per session
    for the comparison tests, by label: 2gbit, 1gbit, 500mbit."""
    import nic_runs as made  # tests/nic_runs.py: imports the BMC emulator only where it is used

    _need_root()
    need_programs(*made.PROGRAMS)
    return made.make_runs(tmp_path_factory.mktemp("nic_runs"), make_lab, run_with_host_vars)


@pytest.fixture(scope="session")
def lab3() -> Iterator[LabInfo]:
    """A 3-host lab ``t3-<tag>`` (h1..h3, real sshd each), up for the whole session."""
    _need_root()
    with make_lab("t3", 3) as info:
        yield info


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    """A machine that lacks a program stops the session here (with real parts required); labs of
    test sessions that died without taking them down go before this one starts."""
    require_commands()
    if os.geteuid() != 0:
        return
    for base in Path(tempfile.gettempdir()).glob("benchharness-test-labs-*"):
        match = re.fullmatch(r"benchharness-test-labs-(\d+)", base.name)
        if not match or int(match.group(1)) == os.getpid() or _pid_alive(int(match.group(1))):
            continue
        with contextlib.suppress(LabError, OSError):
            lab.lab_down(None, base_dir=base)
        shutil.rmtree(base, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Whatever a crashed test left in this session's lab directory goes too."""
    if LAB_BASE.exists():
        if os.geteuid() == 0:
            with contextlib.suppress(LabError):
                lab.lab_down(None, base_dir=LAB_BASE)
        shutil.rmtree(LAB_BASE, ignore_errors=True)

