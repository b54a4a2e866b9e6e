"""pytest plugin: in CI a skip of a test with real parts is a failure (loaded by conftest.py)."""

from __future__ import annotations

import os

import pytest

REAL_PARTS = ("lab", "browser", "slurm", "rdma_vm")
"""Markers of the tests that use real parts (sshd, tools, Open MPI, Slurm, chromium, a VM)."""
REQUIRE_REAL = "BENCH_TESTS_REQUIRE_REAL_PARTS"
"""Set (by ``.ci/run``) where the README's set-up has installed everything: a skip of a test
with real parts is then a failure, so that a green CI run means they ran. A skip whose reason
starts with ``NOT_APPLICABLE`` (the machine is better than the test needs, e.g. a kernel that
has the module whose absence the test shows) stays a skip."""
NOT_APPLICABLE = "not applicable:"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get(REQUIRE_REAL) != "1":
        return
    marks = [m for m in REAL_PARTS if item.get_closest_marker(m)]
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if marks and not hasattr(report, "wasxfail") and NOT_APPLICABLE not in reason:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid}: skipped although {REQUIRE_REAL}=1 "
                           f"(marked {', '.join(marks)}): {reason}")


def require_commands() -> None:
    """With ``REQUIRE_REAL`` set, stop the session before it starts when a program that the lab or
    the tests run is not installed, in one line naming it and its Debian package."""
    if os.environ.get(REQUIRE_REAL) != "1":
        return
    from benchharness.lab import commands  # the package is importable once conftest runs

    lacking = commands.missing()
    if lacking:
        pytest.exit(f"{REQUIRE_REAL}=1 but not installed: {commands.describe_missing(lacking)}; "
                    "run ./setup.sh --tests as root", returncode=4)


def pytest_collection_finish(session: pytest.Session) -> None:
    """With ``REQUIRE_REAL`` set and lab tests selected, stop before the first test when what only
    ``./setup.sh --tests`` builds (the lab hosts' Horovod) is missing."""
    if os.environ.get(REQUIRE_REAL) != "1" or not any(i.get_closest_marker("lab") for i in session.items):
        return
    from benchharness.lab.files import HOROVOD_PYTHON

    if not HOROVOD_PYTHON.exists():
        pytest.exit(f"{REQUIRE_REAL}=1 but the lab's Horovod is not built ({HOROVOD_PYTHON} is missing); "
                    "run ./setup.sh --tests as root", returncode=4)
