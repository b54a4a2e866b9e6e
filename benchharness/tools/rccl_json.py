"""rccl-tests' results file (``-x FILE -Z json``; ROCm/rccl-tests ``src/common.cu`` ``Reporter``).

Two layouts, both read here (the one reader of this format):

* JSON lines (rccl-tests from late 2024, PR #93): one object per result, written as each size
  finishes, so a killed run leaves its complete lines and at most one cut line;
* a JSON list (from mid 2025, PR #140: ``Reporter::writeFile`` at the end of the run), with
  ``numCycle`` per record.

Keys: ``name`` (``AllReduce``), ``size`` (bytes), ``type``, ``redop``, ``inPlace`` (0/1), ``time``
(microseconds), ``algBw`` / ``busBw`` (GB/s), ``wrong`` (``#wrong`` in the first published form;
``"N/A"`` without a check), and ``gpus`` (built without MPI) or ``nodes``, ``ranks``,
``ranksPerNode``, ``gpusPerRank`` (with MPI). Numbers are C++ ``std::to_string`` output, so an
infinite or NaN figure arrives as ``inf`` / ``nan``: read as absent. Records are those of the
nccl-tests parsers (``kind: summary``, ``placement``, ``time_us``, ``algbw_GBps``, ``busbw_GBps``),
then a footer; a file cut short keeps its complete records, each marked ``truncated: true``, and the
footer says where the cut is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record
from benchharness.tools.textclean import clean_line

READS = {"rccl-tests-json": "rccl-tests -x FILE -Z json (JSON lines, late 2024; JSON list with numCycle, "
                            "mid 2025 on), cut files keep their complete records"}

# rccl-tests' collective names (its testColl.name) -> the program's name without _perf
_COLLECTIVES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
                "alltoall": "alltoall", "alltoallv": "alltoallv", "sendrecv": "sendrecv"}
_OPENS = re.compile(r"^\s*(?:\{|\[\s*(?:[{\]]|$))")
_NONFINITE = re.compile(r'(:\s*)-?(?:inf|nan)(?=\s*[,}])', re.IGNORECASE)
_KEYS = {"algBw", "busBw", "size"}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _wrong(row: Mapping[str, Any]) -> int | None:
    value = row.get("wrong", row.get("#wrong"))
    try:
        return None if value is None else int(str(value).strip())
    except ValueError:  # "N/A": no data check
        return None


def _record(row: Mapping[str, Any], line_no: int, line: str) -> Record:
    if not isinstance(row, Mapping) or not set(row) >= _KEYS:
        raise ToolFailure("unreadable", f"line {line_no}: not an rccl-tests result (no size/algBw/busBw): "
                                        f"{line.strip()[:80]!r}")
    name = str(row.get("name", ""))
    rec: Record = {
        "kind": "summary", "collective": _COLLECTIVES.get(name.lower(), name.lower() or None),
        "redop": row.get("redop"), "size_bytes": int(row["size"]), "type": row.get("type"),
        "placement": "in-place" if row.get("inPlace") else "out-of-place",
        "time_us": _num(row.get("time")), "algbw_GBps": _num(row.get("algBw")),
        "busbw_GBps": _num(row.get("busBw")), "wrong": _wrong(row),
    }
    ranks = row.get("ranks", row.get("gpus"))
    if isinstance(ranks, int):
        rec["nranks"] = ranks
    for key, field in (("nodes", "nodes"), ("numCycle", "cycle")):
        if isinstance(row.get(key), int):
            rec[field] = row[key]
    return rec


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _from_list(body: str, start: int) -> tuple[list[tuple[Any, int]], str | None]:
    """The objects of a JSON list from ``start`` (just after ``[``), and where it is cut (None: whole)."""
    decoder = json.JSONDecoder()
    rows: list[tuple[Any, int]] = []
    pos = start
    while True:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(body):
            return rows, _where(body, pos)
        if body[pos] == "]":
            return rows, None
        try:
            row, end = decoder.raw_decode(body, pos)
        except ValueError:
            return rows, _where(body, pos)
        rows.append((row, body.count("\n", 0, pos) + 1))
        pos = end


def _from_lines(lines: list[str]) -> tuple[list[tuple[Any, int]], str | None]:
    """One object per line; a line the terminal wrapped is joined to its continuation. A line that
    does not parse is the cut when nothing follows it, else an error naming it."""
    rows: list[tuple[Any, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line.startswith("{"):
            i += 1
            continue
        joined, j = line, i
        while True:
            try:
                rows.append((json.loads(joined), i + 1))
                break
            except ValueError:
                nxt = lines[j + 1].strip() if j + 1 < len(lines) else ""
                if j + 1 < len(lines) and nxt and not nxt.startswith("{"):
                    j += 1
                    joined += nxt
                    continue
                if any(ln.strip().startswith("{") for ln in lines[j + 1:]):
                    raise ToolFailure("unreadable", f"line {i + 1}: an rccl-tests result that is not JSON: "
                                                    f"{line[:80]!r}") from None
                return rows, f"line {i + 1}, column {len(lines[i].rstrip()) + 1}"
        i = j + 1
    return rows, None


def parse_results_file(text: str) -> list[Record]:
    """The results of an rccl-tests ``-Z json`` file: one record per size and placement, then a
    footer (``format``, ``nranks``, ``nodes``, and ``truncated`` / ``cut_at`` when the file is cut)."""
    lines = [_NONFINITE.sub(r"\1null", clean_line(ln)) for ln in text.replace("\r\n", "\n").split("\n")]
    if not any(ln.strip() for ln in lines):
        return []
    # "[root@node ~]# cmd" is a prompt, not a list: a list opens with "[" then "{", "]" or nothing
    first = next((k for k, ln in enumerate(lines) if _OPENS.match(ln)), None)
    if first is None:
        raise ToolFailure("parse_error", "not an rccl-tests JSON results file (no '{' or '[' line)")
    if lines[first].strip().startswith("["):
        body = "\n".join(lines)
        offset = sum(len(ln) + 1 for ln in lines[:first]) + lines[first].index("[") + 1
        found, cut = _from_list(body, offset)
        layout = "json-list"
    else:
        found, cut = _from_lines(lines)
        layout = "json-lines"
    if not found:
        raise ToolFailure("parse_error", f"rccl-tests JSON results file cut at {cut or 'its start'}, "
                                         "before any complete result")
    records = [_record(row, line_no, lines[line_no - 1]) for row, line_no in found]
    footer: Record = {"kind": "footer", "collective": records[0]["collective"], "format": layout,
                      "nranks": records[0].get("nranks"), "nodes": records[0].get("nodes")}
    if cut:
        for rec in records:
            rec["truncated"] = True
        footer.update(truncated=True, cut_at=cut)
    return [*records, footer]


PARSERS = {"rccl-tests-json": parse_results_file}
