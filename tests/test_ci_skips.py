"""In CI a skip of a test with real parts fails the run; on a laptop it stays a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _run(tmp: Path, require: bool) -> subprocess.CompletedProcess[str]:
    (tmp / "conftest.py").write_text("from real_parts import pytest_runtest_makereport  # noqa\n")
    (tmp / "test_needs_lab.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.lab\n"
        "def test_lab_part():\n    pytest.skip('no sshd here')\n\n"
        "def test_plain():\n    pytest.skip('nothing to do with real parts')\n\n"
        "@pytest.mark.lab\n"
        "def test_better_machine():\n    pytest.skip('not applicable: this kernel has it')\n")
    env = {k: v for k, v in os.environ.items() if k != "BENCH_TESTS_REQUIRE_REAL_PARTS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    if require:
        env["BENCH_TESTS_REQUIRE_REAL_PARTS"] = "1"
    env["COLUMNS"] = "300"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tmp)],
                          capture_output=True, text=True, cwd=tmp, env=env, timeout=120)


def test_skip_of_a_real_part_fails_when_ci_requires_them(tmp_path: Path) -> None:
    res = _run(tmp_path, require=True)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 failed, 2 skipped" in res.stdout, res.stdout
    assert "skipped although BENCH_TESTS_REQUIRE_REAL_PARTS=1 (marked lab): Skipped: no sshd here" in res.stdout


def test_skip_stays_a_skip_elsewhere(tmp_path: Path) -> None:
    res = _run(tmp_path, require=False)
    assert res.returncode == 0 and "3 skipped" in res.stdout, res.stdout + res.stderr
