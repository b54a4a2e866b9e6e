"""rccl-tests' ``-Z json`` results file: both layouts, cuts, wrapped lines and refusals.

The real published files (JSON lines, two builds) are checked figure by figure by
tests/test_real_outputs.py; here the same records are laid out as the later ``Reporter::writeFile``
writes them (a JSON list, ``numCycle`` first; ROCm/rccl-tests src/common.cpp) and damaged the ways a
copy damages them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "real" / "rccl-tests-json"
MPI = REAL / "pr93_mpi_4ranks_nodes_jsonl_cut.jsonl"
parse = get_parser("rccl-tests-json")


def _complete_lines() -> list[str]:
    return MPI.read_text().splitlines()[:5]


def _summaries(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "summary"]


def test_the_list_layout_reads_as_the_lines_layout() -> None:
    lines = _complete_lines()
    listed = "[\n" + ",\n".join('{"numCycle":0, ' + ln[1:] for ln in lines) + "\n]\n"
    got = parse(listed)
    want = parse("\n".join(lines) + "\n")
    assert got[-1] == {"kind": "footer", "collective": "all_reduce", "format": "json-list", "nranks": 4, "nodes": 1}
    assert want[-1]["format"] == "json-lines" and "truncated" not in want[-1]
    assert [{k: v for k, v in r.items() if k != "cycle"} for r in _summaries(got)] == _summaries(want)
    assert [r["cycle"] for r in _summaries(got)] == [0] * 5
    cut = listed[:listed.index('"size":2048')]
    kept = parse(cut)
    assert len(_summaries(kept)) == 2 and kept[-1]["truncated"] is True and kept[-1]["cut_at"].startswith("line 4,")


def test_a_terminal_wrapped_file_reads_as_the_unwrapped_one() -> None:
    lines = _complete_lines()
    wrapped = "\n".join(piece for ln in lines for piece in textwrap.wrap(ln, 80, break_long_words=True,
                                                                          break_on_hyphens=False))
    assert len(wrapped.splitlines()) > 10
    assert parse(wrapped) == parse("\n".join(lines))


def test_prompts_and_inf_nan_figures() -> None:
    """A ``cat`` of the file after its prompt; std::to_string prints inf / nan: absent, not a figure."""
    lines = _complete_lines()
    lines[0] = lines[0].replace('"busBw":0.08093550057105371', '"busBw":inf').replace('"time":18.978075', '"time":-nan')
    got = parse("user@node:~$ cat /tmp/ar.json\n" + "\n".join(lines) + "\nuser@node:~$\n")
    rows = _summaries(got)
    assert len(rows) == 5 and rows[0]["busbw_GBps"] is None and rows[0]["time_us"] is None
    assert rows[1]["busbw_GBps"] == pytest.approx(0.08004658961661279)


@pytest.mark.parametrize(("text", "kind", "quote"), [
    ('{"algBw":1.0, "busBw":2.0, "size":8}\n{"algBw":1.0, "busBw"}\n{"algBw":1.0, "busBw":2.0, "size":16}\n',
     "unreadable", "line 2"),
    ('{"sum_sent": {"bytes": 10}}\n', "unreadable", "line 1: not an rccl-tests result"),
    ('{"#wrong":"0","algBw":0.05', "parse_error", "before any complete result"),
    ("no results here\n", "parse_error", "not an rccl-tests JSON results file"),
])
def test_what_cannot_be_read_is_an_error_naming_the_place(text: str, kind: str, quote: str) -> None:
    with pytest.raises(ToolFailure) as info:
        parse(text)
    assert info.value.kind == kind and quote in info.value.message and "\n" not in info.value.message


def test_bench_parse_exit_codes(tmp_path: Path) -> None:
    def bench(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "benchharness", "parse", "rccl-tests-json", str(path)],
                              capture_output=True, text=True, timeout=60, check=False)

    res = bench(MPI)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)[-1]["cut_at"] == "line 6, column 56"
    bad = tmp_path / "bad.json"
    bad.write_text('{"name":"AllReduce"}\n')
    res = bench(bad)
    assert res.returncode == 3 and "line 1" in res.stderr
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert bench(empty).returncode == 0
