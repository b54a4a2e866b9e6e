"""Every program the lab and the tests run is on one list (benchharness/lab/commands.py) with its
Debian package, and setup.sh installs each of those packages: a fresh machine set up by the README
has them all. With BENCH_TESTS_REQUIRE_REAL_PARTS=1 a missing one stops the session at its start."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from benchharness.lab import commands

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "setup.sh"
SCANNED = [*sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "benchharness" / "lab").glob("*.py"))]
"""Where the lab and the tests run programs."""

NOT_COMMANDS = {
    "test": "a test's name in a table (tests/test_analysis.py)",
    "link": "an `ip` subcommand given apart from `ip` (benchharness/lab/jump.py)",
    "time": "a column name",
    "size": "a column name",
    "sum": "a column name",
    "python": "torch's launcher argument, not run here",
    "no-such-benchmark-tool": "a program that must not exist (tests/test_transport_local.py)",
}
"""Words that the scan below finds in a command's place and that this machine has as a program,
but that the code uses as data."""

RUNNERS = {"run", "Popen", "check_output", "check_call", "call"}


def setup_packages(text: str) -> set[str]:
    """The packages in setup.sh's ``packages=( ... )`` array (comments dropped)."""
    m = re.search(r"^packages=\((.*?)^\)", text, flags=re.S | re.M)
    assert m, "setup.sh has no packages=( ... ) array"
    return {word for line in m.group(1).splitlines() for word in line.split("#", 1)[0].split()}


def not_installed_by(text: str) -> list[commands.Needed]:
    """The list's programs whose package setup.sh ``text`` does not install."""
    have = setup_packages(text)
    return [n for n in commands.COMMANDS if n.package not in have]


def test_setup_sh_installs_every_package_on_the_list() -> None:
    lacking = not_installed_by(SETUP.read_text())
    assert not lacking, f"setup.sh does not install: {commands.describe_missing(lacking)}"


def test_a_package_removed_from_setup_sh_is_named_with_the_command_that_needs_it() -> None:
    text = SETUP.read_text()
    assert re.search(r"^\s*nftables\b", text, flags=re.M)
    without = re.sub(r"^(\s*)nftables\b", r"\1", text, flags=re.M)
    lacking = not_installed_by(without)
    assert [n.describe() for n in lacking] == ["nft (Debian package nftables)"]
    assert "fabric health" in lacking[0].used_by


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _first_word(node: ast.AST) -> str | None:
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            word = first.value
            return word if re.fullmatch(r"[a-z][\w.+-]*", word) else None
    return None


def program_words(source: str) -> Iterator[tuple[str, int, bool]]:
    """(word, line, certain) for each word in a program's place: the first element of a list or
    tuple of strings (``certain`` when that list is what subprocess runs), or ``shutil.which``'s
    argument (certain)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            name, arg = _name(node.func), node.args[0]
            if name == "which" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value, node.lineno, True
            elif name in RUNNERS and (word := _first_word(arg)):
                yield word, node.lineno, True
        elif word := _first_word(node):
            yield word, getattr(node, "lineno", 0), False


def unlisted(files: Iterable[Path], base: Path = ROOT) -> list[str]:
    """``file:line: word`` for each program that the files run and the list lacks: those run for
    certain, and any other word in a program's place that this machine has as a program."""
    search = f"{os.environ.get('PATH', '')}:{commands.SYSTEM_PATH}"
    found = set()
    for path in files:
        for word, line, certain in program_words(path.read_text()):
            if word in commands.BY_COMMAND or word in NOT_COMMANDS:
                continue
            if certain or shutil.which(word, path=search):
                found.add((word, f"{path.relative_to(base)}:{line}: {word}"))
    return [where for _, where in sorted(found)]


def test_every_program_the_lab_and_the_tests_run_is_on_the_list() -> None:
    found = unlisted(SCANNED)
    assert not found, ("programs run by the lab or the tests but missing from benchharness/lab/commands.py "
                       "(add each with its Debian package, and the package to setup.sh): " + "; ".join(found))


def test_the_scan_finds_a_program_the_list_lacks(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("import subprocess, shutil\n"
                     "subprocess.run(['frobnicate-net', '--all'])\n"
                     "if shutil.which('nft-helper-x'):\n    pass\n"
                     "ARGV = ['ls', '-l']\n"
                     "ROWS = [('gpu01', 1), ('pass', 2)]\n")
    found = [f.split(": ", 1)[1] for f in unlisted([probe], base=tmp_path)]
    # 'ls' is a program this machine has; 'gpu01' and 'pass' are data
    assert found == ["frobnicate-net", "ls", "nft-helper-x"]


def test_missing_names_each_command_with_its_package(tmp_path: Path) -> None:
    (tmp_path / "ip").write_text("#!/bin/sh\n")
    (tmp_path / "ip").chmod(0o755)
    got = commands.missing(["ip", "nft", "no-such-program"], path=str(tmp_path))
    assert [n.describe() for n in got] == ["nft (Debian package nftables)",
                                           "no-such-program (Debian package ?)"]


HIDE_PROGRAMS = """
import os
from benchharness.lab import commands
os.environ["PATH"] = {path!r}
commands.SYSTEM_PATH = ""
"""


def test_a_session_requiring_real_parts_stops_at_its_start_naming_the_missing_package(tmp_path: Path) -> None:
    # Every program but nft (and python, which runs pytest) is visible; the session must stop
    # before collecting anything, with one line naming nft and its package.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    search = f"{os.environ.get('PATH', '')}:{commands.SYSTEM_PATH}"
    for n in commands.COMMANDS:
        if n.command != "nft" and (real := shutil.which(n.command, path=search)):
            (bin_dir / n.command).symlink_to(real)
    if commands.missing(path=str(bin_dir)) != [commands.BY_COMMAND["nft"]]:
        pytest.skip("not applicable: this machine lacks more than the program the test hides")
    (tmp_path / "hide_programs.py").write_text(HIDE_PROGRAMS.format(path=str(bin_dir)))
    env = {**os.environ, "BENCH_TESTS_REQUIRE_REAL_PARTS": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "hide_programs", "--collect-only", "-q",
                          "-p", "no:cacheprovider", str(ROOT / "tests" / "test_setup_packages.py")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert res.returncode == 4, res.stdout + res.stderr
    # pytest shows the reason once on stderr (and once in its banner on stdout)
    assert res.stderr.strip() == ("Exit: BENCH_TESTS_REQUIRE_REAL_PARTS=1 but not installed: "
                                  "nft (Debian package nftables); run ./setup.sh --tests as root"), res.stderr
    assert "collected" not in res.stdout and "test_" not in res.stdout, res.stdout
