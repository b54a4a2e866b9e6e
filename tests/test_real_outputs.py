"""The parsers against real tool outputs that people published (issues, READMEs, saved logs).

Each ``tests/fixtures/real/<parser>/<name>.<ext>`` is machine output copied as published, prompts
and decorations included (see README.md there); ``SOURCES`` says where each came from. Beside it,
``<name>.expected.json`` holds figures read by hand from the text:

* ``count`` and ``rows`` (``{"index": {field: value}}``, negative indices from the end) for the
  records a tool parser returns (nccl-tests: result rows, both placements of a line in turn; iperf3:
  summaries, ``intervals`` for its interval records), ``footer`` for nccl-tests' summary record;
* ``result`` (a subset) for parsers that return one object, ``count``/``rows`` for those that
  return a list;
* ``absent``: fields a row must not have (perftest's ``-D`` peak, printed 0.00 = not measured);
* ``error`` (``kind``, ``quote``) when the parser must refuse the text, and ``kept`` for the rows a
  failure keeps (flagged, never a measurement).

The directory name is the ``bench parse`` parser name.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.results import measures

ROOT = Path(__file__).parent / "fixtures" / "real"
TOOLS_WITH_ROWS = ("perftest", "nccl-tests", "nccl-tests-json", "rccl-tests", "ucx_perftest", "iperf3")


def _fixtures() -> list[Path]:
    return sorted(p for p in ROOT.glob("*/*") if p.is_file() and not p.name.endswith(".expected.json"))


FIXTURES = _fixtures()


def _expected(path: Path) -> Path:
    return path.with_name(path.name.rsplit(".", 1)[0] + ".expected.json")


def _same(want: Any, got: Any, where: str) -> None:
    """``got`` matches ``want``: floats to 1e-6 relative, dicts by ``want``'s keys, lists item by item."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: expected an object, got {got!r:.200}"
        for key, value in want.items():
            assert key in got, f"{where}: key {key!r} missing (have {sorted(got)})"
            _same(value, got[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r:.200} is not {len(want)} items"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            _same(w, g, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, int | float) and not isinstance(got, bool) \
            and math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12), f"{where}: got {got!r}, read {want!r}"
    elif isinstance(want, int) and not isinstance(want, bool):  # "10052" printed, 10052.0 parsed
        assert isinstance(got, int | float) and not isinstance(got, bool) and got == want, \
            f"{where}: got {got!r}, read {want!r}"
    else:
        assert got == want and type(got) is type(want), f"{where}: got {got!r}, read {want!r}"


def _rows(tool: str, data: Any, select: str | None) -> tuple[list[Any], dict[str, Any] | None]:
    """(records the expectation counts, nccl-tests footer) of one parse."""
    if tool in ("nccl-tests", "nccl-tests-json", "rccl-tests", "rccl-tests-json"):
        return [r for r in data if r.get("kind") in ("summary", "invalid")], \
            next((r for r in data if r.get("kind") == "footer"), None)
    if tool == "iperf3":
        return [r for r in data if r.get("kind") == (select or "summary")], None
    return (list(data) if isinstance(data, list) else [data]), None


def _check_rows(rows: list[Any], expected: dict[str, Any], where: str) -> None:
    if "count" in expected:
        assert len(rows) == expected["count"], f"{where}: {len(rows)} records, read {expected['count']}"
    for index, want in expected.get("rows", {}).items():
        _same(want, rows[int(index)], f"{where}[{index}]")
    for index, keys in expected.get("absent", {}).items():  # figures the tool printed as 0 = not measured
        assert not set(keys) & set(rows[int(index)]), f"{where}[{index}]: {keys} must be absent"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_output_gives_the_figures_read_by_hand(path: Path) -> None:
    tool = path.parent.name
    expected = json.loads(_expected(path).read_text())
    parser = get_parser(expected.get("parser", tool))
    text = path.read_text(encoding="utf-8")
    where = f"{tool}/{path.name}"
    if "error" in expected:
        with pytest.raises(ToolFailure) as info:
            data = parser(text)
            pytest.fail(f"{where}: expected {expected['error']['kind']}, parsed {data!r:.300}")
        assert info.value.kind == expected["error"]["kind"], f"{where}: {info.value.kind}: {info.value}"
        assert "\n" not in info.value.message, f"{where}: the message is not one line"
        assert expected["error"].get("quote", "") in info.value.message, f"{where}: {info.value.message!r}"
        kept, _ = _rows(tool, info.value.records, None) if info.value.records else ([], None)
        _check_rows(kept, expected.get("kept", {"count": 0}), f"{where} kept")
        assert not any(measures.is_summary(r) for r in kept if r.get("valid") is False)
        return
    data = json.loads(json.dumps(parser(text), default=str))
    if "result" in expected:
        _same(expected["result"], data, where)
    rows, footer = _rows(tool, data, expected.get("select"))
    _check_rows(rows, expected, where)
    if "intervals" in expected:
        _check_rows(_rows(tool, data, "interval")[0], expected["intervals"], f"{where} intervals")
    if "footer" in expected:
        assert footer is not None, f"{where}: no footer record"
        _same(expected["footer"], footer, f"{where} footer")


def sources(text: str) -> dict[str, str]:
    """``{fixture path: where it was found}`` from SOURCES; AssertionError on a malformed line."""
    listed: dict[str, str] = {}
    for line in (ln for ln in text.splitlines() if ln.strip()):
        fields = [f.strip() for f in line.split(" | ", 3)]
        assert len(fields) == 4 and all(fields), f"SOURCES: not 'path | source | version | what': {line!r}"
        assert fields[0] not in listed, f"SOURCES lists {fields[0]} twice"
        assert "github.com/" in fields[1] or fields[1].startswith("https://"), f"SOURCES: no source in {line!r}"
        listed[fields[0]] = fields[1]
    return listed


def test_every_fixture_has_its_figures_and_a_sources_line() -> None:
    listed = sources((ROOT / "SOURCES").read_text(encoding="utf-8"))
    names = {str(p.relative_to(ROOT)) for p in FIXTURES}
    assert names - set(listed) == set(), f"fixtures without a SOURCES line: {sorted(names - set(listed))}"
    assert set(listed) - names == set(), f"SOURCES lines without a fixture: {sorted(set(listed) - names)}"
    assert [p for p in FIXTURES if not _expected(p).exists()] == []
    assert not [p for p in ROOT.glob("*/*.expected.json") if not any(_expected(f) == p for f in FIXTURES)]
    assert len(FIXTURES) >= 60


def test_readme_describes_every_folder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for folder in sorted({p.parent.name for p in FIXTURES}):
        assert f"`{folder}/`" in readme, f"README.md does not describe {folder}/"


def test_the_checks_can_fail() -> None:
    """A SOURCES line without its four fields, a figure off by 10 %, a count read as a missing value."""
    with pytest.raises(AssertionError, match="not 'path"):
        sources("perftest/x.txt | https://example.org/x\n")
    with pytest.raises(AssertionError, match="no source"):
        sources("perftest/x.txt | somewhere | 1.0 | a table\n")
    with pytest.raises(AssertionError):
        _same({"a": 1.0}, {"a": 1.1}, "$")
    with pytest.raises(AssertionError):
        _same({"wrong": 0}, {"wrong": None}, "$")


@pytest.mark.parametrize(("parser", "rel"), [
    ("show_gids", "show_gids/roce_one_port_4_gids_tabs_prompt.txt"),
    ("iperf3", "iperf3/tcp_client_intervals_cwnd_no_header_bitrate.txt"),
    ("ibdev2netdev", "ibdev2netdev/verbose_vfs_padded_down_state_then_plain.txt"),
])
def test_bench_parse_reads_real_outputs(parser: str, rel: str) -> None:
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", parser, str(ROOT / rel)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    expected = json.loads(_expected(ROOT / rel).read_text())
    rows, _ = _rows(parser, json.loads(res.stdout), None)
    _check_rows(rows, expected, rel)


def test_iperf3_text_reads_the_real_text_outputs_as_the_adapter_does() -> None:
    """``bench parse iperf3-text`` is the text reader the ``iperf3`` adapter uses for text: on every
    real text output under iperf3/ both give the same records, or refuse it alike."""
    adapter, text_only = get_parser("iperf3"), get_parser("iperf3-text")
    compared = 0
    for path in sorted((ROOT / "iperf3").glob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "{" in text:  # a -J document: the adapter's JSON reader
            continue
        try:
            want = json.dumps(adapter(text), default=str, sort_keys=True)
        except ToolFailure as exc:
            with pytest.raises(ToolFailure) as got:
                text_only(text)
            assert got.value.kind == exc.kind, path.name
            continue
        assert json.dumps(text_only(text), default=str, sort_keys=True) == want, path.name
        compared += 1
    assert compared >= 10
