"""The bench command line: arguments, help, exit codes (run as a real subprocess where it matters)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchharness.cli.main import main, parse_kv
from benchharness.core.errors import UsageError


def bench(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_parse_kv() -> None:
    assert parse_kv(["suite=quick", "duration=5", "length=[1K,4K]"]) == {
        "suite": "quick", "duration": "5", "length": "[1K,4K]"}
    with pytest.raises(UsageError, match="expected key=value"):
        parse_kv(["quick"])
    with pytest.raises(UsageError, match="unknown argument 'x'"):
        parse_kv(["x=1"], allowed=["hosts"])


@pytest.mark.parametrize("sub", ["run", "plan", "suites", "list", "show", "report", "parse", "lab"])
def test_help_everywhere(sub: str) -> None:
    res = bench(sub, "--help")
    assert res.returncode == 0
    assert "exit codes" in res.stdout


def test_no_command_prints_help_and_exits_2(capsys) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_parse_missing_file_is_a_one_line_error(tmp_path) -> None:
    res = bench("parse", "iperf3", str(tmp_path / "nope.json"))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "nope.json" in res.stderr


def test_unknown_parser_lists_known_ones(tmp_path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("x")
    res = bench("parse", "nosuchtool", str(f))
    assert res.returncode == 2
    assert "unknown parser 'nosuchtool'" in res.stderr and "iperf3" in res.stderr


def test_show_unknown_run(tmp_path) -> None:
    res = bench("show", "nope", cwd=tmp_path)
    assert res.returncode == 2 and "no run 'nope'" in res.stderr
