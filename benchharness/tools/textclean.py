"""Noise that tool outputs pick up between the tool and a saved file, removed before parsing.

Outputs reach ``bench parse`` from CI logs, issue comments and terminals: CRLF line ends, bare
CRs of progress lines, ANSI colour codes, logger timestamps and log-level tags, the date and time
``iperf3 --timestamps`` (or ``ts``) writes before each line, Open MPI
``--tag-output`` markers, Slurm ``srun -l`` rank labels, ``kubectl logs --prefix`` pod names and
Markdown ``>`` quotes at the start of lines. :func:`clean` strips those prefixes only: it never
rewrites what follows them, so noise is never turned into a figure and a figure never into noise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from benchharness.core.errors import ToolFailure

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MPI_TAG = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:")
_WEEKDAY = r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? )"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# One prefix each, tried in turn at the start of a line until none matches.
_PREFIXES = tuple(re.compile(p) for p in (
    # ISO-8601 / "YYYY-MM-DD HH:MM:SS,mmm" timestamps, optionally bracketed, with a level tag after
    r"^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"(?:\s+(?:TRACE|DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|CRITICAL)\b[:|]?)?(?:\s|$)",
    # syslog: "Mar  7 10:00:01 host prog[123]: "
    r"^[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ [^\s:]+(?:\[\d+\])?: ",
    # bare clock times of loggers ("12:10:43 DEBUG| [stdout] ", "[10:00:01.123] ")
    r"^\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?(?:\s+(?:TRACE|DEBUG|INFO|WARN(?:ING)?|ERROR)\b[:|]?)?"
    r"(?:\s+\[std(?:out|err)\])?(?:\s|$)",
    # a date and a clock time in a strftime() form: iperf3 --timestamps (default "%c ": "Wed May 14
    # 11:21:02 2025 "; any other format it is given), `date` and `ts` output; the line may be indented
    # (a Markdown code block) and a format without a trailing blank glues the time to the text
    r"^[ \t]*\[?" + _WEEKDAY + r"?(?:" + _MONTH + r" [ \d]?\d,? (?:\d{4} )?|\d{1,2} " + _MONTH + r",? \d{4} |"
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[ T]|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}[ T])"
    r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?: ?[AP]M)?(?: (?:UTC|GMT|[A-Z]{1,3}[SD]T|[A-Z]{2,4}(?= \d{4}\b)|[+-]\d{4}))?(?: \d{4})?\]?"
    r"(?:[ \t]|$|(?=[\[A-Za-z]))",
    r"^\[pod/[^\]\s]+\]\s",            # kubectl logs --prefix
    r"^\s{0,3}\d{1,5}: (?=\s*\S)",      # srun -l / --label
    r"^ ?>(?: |$)",                      # Markdown quote
))
# A CSV/JSON document starts its lines with these; srun-style "N: " there is data, not a label.
_STRUCTURED = re.compile(r"^\s*[\[{\"]")


# the label a launcher writes before each line of one process's output: '[rank 1] ' (Modal / Ray
# style), torch's '[rank0]:' and torchrun --tee's '[default0]:', Open MPI --tag-output's
# '[1,0]<stdout>:' (job, rank), Slurm srun -l's '0: '
_RANK_LABEL = re.compile(r"^\s*(?:\[rank\s*(\d+)\]:?|\[default(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err|diag)>:"
                         r"|(\d{1,5}): )[ \t]?")


def rank_label(line: str) -> tuple[int, str] | None:
    """(rank, the rest of the line) when ``line`` starts with a launcher's rank label, else None."""
    m = _RANK_LABEL.match(line)
    return (int(next(g for g in m.groups() if g is not None)), line[m.end():]) if m else None


_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)[\w+.-]*\s*$")


def is_fence(line: str) -> bool:
    """A Markdown code fence line (```` ``` ````, ```` ```console ````, ``~~~``)."""
    return bool(_FENCE.match(line))


def strip_ansi(text: str) -> str:
    """``text`` without ANSI colour and terminal control sequences."""
    return _ANSI.sub("", text)


def clean_line(line: str) -> str:
    """``line`` without ANSI codes, trailing CR and the logger / launcher prefixes it starts with."""
    line = _ANSI.sub("", line).rstrip("\r")
    for _ in range(4):
        before = line
        line = _MPI_TAG.sub("", line, count=1) if line.lstrip().startswith("[") else line
        for pattern in _PREFIXES:
            if pattern.pattern.startswith(r"^\s{0,3}\d") and _STRUCTURED.match(line):
                continue
            line = pattern.sub("", line, count=1)
        if line == before:
            break
    return line


def clean(text: str) -> str:
    """``text`` with every line cleaned (see :func:`clean_line`); CRLF and bare CR become LF."""
    text = text.replace("\r\n", "\n")
    text = re.sub(r"\r(?=[^\n])", "\n", text)
    return "\n".join(clean_line(line) for line in text.split("\n"))


def known_error(tool: str, text: str, errors: Sequence[tuple[str, re.Pattern[str]]], hints: Mapping[str, str],
                rc: int | None = None) -> ToolFailure | None:
    """The ToolFailure of the first known error line in ``text`` (``errors``: kind and pattern, in
    order of precedence), quoting the line and the kind's hint; exit code 127 is ``tool_missing``;
    None when nothing known shows."""
    lines = [ln.strip() for ln in clean(text).splitlines() if ln.strip()]
    for kind, pattern in errors:
        for line in lines:
            if pattern.search(line):
                return ToolFailure(kind, f"{tool} {kind}: {line!r} ({hints[kind]})")
    if rc == 127:
        return ToolFailure("tool_missing", f"{tool} tool_missing: exit code 127 ({hints['tool_missing']})")
    return None
