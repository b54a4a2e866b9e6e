"""Parse nccl-tests / rccl-tests output: the stdout table, nccl-tests' ``-J`` JSON, rccl-tests' CSV/JSON.

Formats follow nccl-tests' src/common.cu (and src/util.cu from 2.17), every version since the
per-collective ``print_header`` (old ``error`` column = max relative delta, printed ``%5.0le``)
through ``#wrong`` (count of wrong elements, ``%5g`` / ``%6g``, ``N/A`` without ``-c``), and
rccl-tests' ``-x FILE -Z csv|json`` reporter. Bandwidths are nccl-tests' GB/s = 10^9 bytes/s, so
``algbw_GBps`` / ``busbw_GBps`` are the tool's figures unchanged.

Failures are never numbers: wrong results, NCCL/CUDA failures and mpirun launch errors raise
:class:`ToolFailure` with a stable ``kind``. Rows with wrong elements (``#wrong`` > 0, or an old
``error`` value marked ``*``) are kept on that failure (``ToolFailure.records``) with their figures,
as ``kind: invalid`` / ``valid: false`` records that no analysis reads as a measurement.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record
from benchharness.tools.textclean import clean

#: What ``bench parse nccl-tests`` / ``rccl-tests`` read (``bench parse --list``).
READS = {
    "nccl-tests": "nccl-tests *_perf stdout (2.x to 2.20: the old max-delta 'error' column without root, "
                  "#wrong with N/A, 2.20's per-iteration i_* columns; the version line with its git hash and "
                  "nccl-headers / nccl-library codes, 'Rank N Group G Pid' lines with PCI-domain bus ids "
                  "(K80 to B200 and GB10); any collective: all_reduce, all_gather, "
                  "alltoall, broadcast, sendrecv ... seen; 1 to 64 ranks) under mpirun / srun -l / "
                  "--tag-output, with NCCL INFO/WARN lines between rows, elided rows, Markdown-damaged "
                  "headers; out-of-place and in-place rows, the Avg bus bandwidth footer; several runs in one "
                  "paste (a sweep run after run, split at each output's opening lines, its command line or "
                  "a '====== label ======' line) each with its rows and footer (run = 1, 2 ..., run_label); "
                  "-N repeated sweeps numbered as cycles (a one-size -b = -e run too; the repeated 0 B rows "
                  "small sizes round down to are one sweep); rows a grep kept without their column titles "
                  "(the 13-cell #wrong and 12-cell error layouts); the settings line as footer fields "
                  "(nthread, ngpus for -t/-g, min/max_bytes, step, iters, agg_iters, validation for -c, graph "
                  "for -G); 2.11-2.12's root + error layout; outputs cut to their last rank line (nranks from "
                  "it, ranks_elided) and outputs under Markdown headings or kept to their rank lines / column "
                  "titles, each its own run; tables indented in Markdown lists, kubectl logs / exec pastes "
                  "(A3 Mega/High, GB200 to 1440 ranks); a table with masked figures (XXX.XX) refused naming "
                  "its line; wrong results and NCCL/CUDA/MPI failures named by kind",
    "rccl-tests": "rccl-tests *_perf stdout (2023 layout with the 'error' column, and the #wrong layout with "
                  "the 'rccl-tests: Version' line; ROCm 6.2 to 7.0: RCCL's 'RCCL version : ...' banner of "
                  "NCCL_DEBUG=VERSION (rccl_version), '# Testing N cycle.' lines; 2.17.9's '# rccl-tests version V "
                  "rccl-headers=N rccl-library=N' line (rccl_tests_version, rccl_library_version) and '# Collective "
                  "test concluded: NAME'; MI250X, MI300X, MI325X, "
                  "MI355X, Radeon; 1 to 64 ranks), as nccl-tests is read: several runs in one paste each "
                  "its own, egrep-kept rows without column titles",
}

_TAG = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:")
# An NCCL log line ("host:pid:tid [dev] NCCL INFO ...") may start in the middle of a table row
# (lazy connection setup logs while rank 0 has printed only the row's first columns), glued to
# the row's last field: "      -1node01:2211:2301 [0] NCCL INFO Channel ...".
_LOG = re.compile(r":\d+:\d+ \[\d+\] (?:NCCL|RCCL) (?:INFO|WARN|TRACE|ABORT)")
_GLUED_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][+-]\d+)?\*?(?=[A-Za-z])")
_WORDS = ("N/A", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float", "double", "half", "uint8", "uint32", "uint64",
          "int8", "int32", "int64", "char", "int", "mulsum", "none", "prod", "sum", "max", "min", "avg")
_RANK = re.compile(r"^#?\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)"
                   r"\s+\[([^\]]*)\]\s*(.*?)\s*$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_START = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
# "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102": the git hash in
# parentheses since 2.14-ish builds from a checkout; headers / library are NCCL_VERSION_CODEs
_VERSION = re.compile(r"^#\s*(nccl|rccl)-tests version (\S+)(?:\s+\([0-9A-Za-z._-]+\))?"
                      r"(?:\s+[nr]ccl-headers=(\d+)\s+[nr]ccl-library=(\d+))?")
_RCCL_VERSION = re.compile(r"^rccl-tests: Version (\S+)")
# RCCL's own banner (NCCL_DEBUG=VERSION, ROCm 6.4+): "RCCL version : 2.22.3-HEAD:7d8d67c", then HIP / ROCm
# version, Hostname and Librccl path lines
_RCCL_LIBRARY = re.compile(r"^RCCL version\s*:\s*(\S+)")
# lines that open an output (nccl-tests' first lines, rccl-tests' version line): after rows, a second run
_OPENS = re.compile(r"^#?\s*(?:nThread \d|nGpus(?:\(perProc\))? \d+ minBytes|Collective test starting:|[nr]ccl-tests version |Using devices\s*$)"
                    r"|^rccl-tests: Version ")
# a line a script or a reader put between runs: "====== 2-node ======", "======== reduce_scatter_perf"
_SEPARATOR = re.compile(r"^(?:={3,}|-{3,}|\*{3,})\s*(?:(.*?)\s*(?:={3,}|-{3,}|\*{3,})?)?$")
_CYCLE = re.compile(r"^#\s*Testing (\d+) cycle")
# a Markdown heading a writer put above each output ("#### 2 Racks"): nccl-tests' own comment lines
# open with a single '#'
_HEADING = re.compile(r"^#{2,6}\s+(\S.*?)\s*#*$")
# the settings line: "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5
# iters: 20 agg iters: 1 validation: 1 graph: 0" (agg iters from 2.10, graph from 2.11, unalign in 2.17+;
# "nGpus(perProc)" in some builds); before 2.x the same fields without agg iters / graph
_SETTINGS = (("nthread", re.compile(r"\bnThread (\d+)")),
             ("ngpus", re.compile(r"\bnGpus(?:\(perProc\))? (\d+)")),
             ("min_bytes", re.compile(r"\bminBytes (\d+)")), ("max_bytes", re.compile(r"\bmaxBytes (\d+)")),
             ("warmup_iters", re.compile(r"\bwarmup iters: (\d+)")),
             ("iters", re.compile(r"(?<!warmup )(?<!agg )\biters: (\d+)")),
             ("agg_iters", re.compile(r"\bagg iters: (\d+)")), ("validation", re.compile(r"\bvalidation: (\d+)")),
             ("graph", re.compile(r"\bgraph: (\d+)")))
_STEP = re.compile(r"\bstep: (\d+)\((factor|bytes)\)")
# the benchmark's program on a command line pasted above the output (``mpirun ... ./build/broadcast_perf
# -b 8``): the collective's name where the tool printed none (before 2.11 there is no "Collective test
# starting" line)
_PROGRAM = re.compile(r"(?:^|[\s/])([a-z]+(?:_[a-z]+)*_perf(?:_mpi)?)(?=\s|$)")
# the column titles of a stdout table; a text holding them is a table even when its first line is a
# bracketed shell prompt ("[root@node dir]# mpirun ...") rather than a JSON document
_TABLE_HEADER = re.compile(r"^\s*#?\s*size\s+count\s+type\b", re.MULTILINE)

_COLUMN_KEYS = {"time": "time_us", "cputime": "time_us", "algbw": "algbw_GBps", "busbw": "busbw_GBps",
                "#wrong": "wrong", "error": "wrong", "i_min": "iter_min_us", "i_max": "iter_max_us",
                "i_p99": "iter_p99_us", "i_cv%": "iter_cv_pct"}
_LEAD = ("size", "count", "type", "redop", "root")

# tool name spellings (program, JSON experiment, rccl reporter "AllReduce") -> suite op name
_COLLECTIVES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
                "alltoall": "alltoall", "alltoallv": "alltoallv", "broadcast": "broadcast",
                "bcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv", "gather": "gather",
                "scatter": "scatter", "hypercube": "hypercube"}

# (pattern, kind, message prefix). Checked before the table: a run that failed is not measured.
_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(\S+): Test NCCL failure (\S+) '([^']*)'"), "nccl_error", "NCCL failure"),
    (re.compile(r"(\S+): Test (?:CUDA|HIP) failure (\S+) '([^']*)'"), "cuda_error", "CUDA failure"),
    (re.compile(r"()Hip error: '([^']*)'\(\d+\) at (\S+)"), "cuda_error", "HIP failure"),
    (re.compile(r"(\S+): Test timeout \((\d+s)\) (\S+)"), "timeout", "test timeout"),
    (re.compile(r"mpirun was unable to (?:launch the specified application as it could not access\s+or "
                r"execute an executable|find the specified executable file)[\s\S]*?Executable:\s*(\S+)"),
     "tool_missing", "mpirun could not execute"),
    (re.compile(r"(?:mpirun|orterun|mpiexec): (?:command )?not found"), "tool_missing", "mpirun not found"),
    (re.compile(r"There are not enough slots available in the system to satisfy the (\d+)"),
     "launch_failed", "mpirun: not enough slots for ranks:"),
    (re.compile(r"ORTE was unable to reliably start one or more daemons"), "launch_failed",
     "mpirun could not start its daemons on the other hosts (ssh, PATH, or no common network)"),
    (re.compile(r"ORTE has lost communication with a remote daemon|An ORTE daemon has unexpectedly failed"),
     "launch_failed", "mpirun lost a remote daemon"),
    (re.compile(r"mpirun was unable to launch"), "launch_failed", "mpirun was unable to launch"),
)
_CRASH = re.compile(r"mpirun noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal "
                    r"(\d+)|Primary job\s+terminated normally, but (\d+) process returned")


@dataclass
class NcclRun:
    """Everything one nccl-tests / rccl-tests output holds."""

    records: list[Record] = field(default_factory=list)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: the outputs of a paste that holds several runs (a sweep pasted run after run), each with its
    #: rows and footer and ``run`` = 1, 2, ...; empty for one run. ``records`` then holds every row.
    runs: list[NcclRun] = field(default_factory=list)

    def all_records(self) -> list[Record]:
        """Result rows followed by one ``kind: footer`` record (ranks, footer, versions); run by run
        when the text held several runs."""
        if self.runs:
            return [r for run in self.runs for r in run.all_records()]
        summary: Record = {"kind": "footer", **self.meta, "ranks": self.ranks,
                           "nranks": _rank_count(self.ranks) or self.meta.get("nranks")}
        if self.ranks and _rank_count(self.ranks) > len(self.ranks):
            summary["ranks_elided"] = True
        return [*self.records, summary]


def _rank_count(ranks: list[dict[str, Any]]) -> int:
    """How many ranks the run had: one line per rank, printed 0 .. n-1, so a listing a writer cut to its
    last lines ('#  Rank 71 ...' alone) still says 72."""
    numbers = [r["rank"] for r in ranks if isinstance(r.get("rank"), int)]
    return max(len(ranks), max(numbers, default=-1) + 1)


def with_nranks(records: list[Record]) -> list[Record]:
    """Result rows labelled with the run's rank count (its footer's ``nranks``): part of a case, so
    that runs over different rank counts are not pooled and projections know the shape."""
    nranks = next((r.get("nranks") for r in records if r.get("kind") == "footer" and r.get("nranks")), None)
    return [{**r, "nranks": nranks} if nranks and r.get("kind") != "footer" and "nranks" not in r else r
            for r in records]


def collective_name(name: str | None) -> str | None:
    """Suite op name (``all_reduce``) for ``all_reduce_perf``, ``AllReduce``, ``./build/alltoall_perf``."""
    if not name:
        return None
    base = name.rsplit("/", 1)[-1].strip().strip('"')
    base = re.sub(r"_perf(_mpi)?$", "", base)
    return _COLLECTIVES.get(base.replace("_", "").lower(), base)


def strip_tags(text: str) -> str:
    """Text without Open MPI ``--tag-output`` markers (they also appear mid-line)."""
    return _TAG.sub("", text)


def check_failures(text: str) -> None:
    """Raise ToolFailure for a tool or launcher error found anywhere in ``text``."""
    for pattern, kind, prefix in _FAILURES:
        m = pattern.search(text)
        if m:
            detail = " ".join(g for g in m.groups() if g)
            raise ToolFailure(kind, f"{prefix} {detail}".strip())


def parse_nccl_tests(text: str, collective: str | None = None) -> NcclRun:
    """Parse any nccl-tests/rccl-tests output (table, ``-J`` JSON, rccl CSV/JSON); raise ToolFailure."""
    text = strip_tags(clean(text))
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and not _TABLE_HEADER.search(text):
        run = _parse_json(stripped, collective)
    elif re.match(r"^\s*(numCycle,\s*)?collective,", text):
        run = _parse_rccl_csv(text)
    else:
        check_failures(text)
        run = _parse_table(text, collective)
    if not run.records:
        crash = _CRASH.search(text)
        if crash:
            raise ToolFailure("crashed", "a rank exited before any result: " + crash.group(0))
        raise ToolFailure("no_results", "no nccl-tests result rows in the output")
    _check_results(run)
    return run


def _flag_invalid(run: NcclRun) -> list[Record]:
    """Mark rows with wrong elements ``kind: invalid``, ``valid: false`` (figures kept); return them."""
    bad = []
    for rec in run.records:
        if (rec.get("wrong") or 0) > 0:
            reason = f"{rec['wrong']} wrong elements"
        elif rec.get("error_flagged"):
            reason = f"error {rec.get('max_delta_tool')} above the tool's threshold"
        else:
            continue
        rec.update(kind="invalid", valid=False, invalid_reason=reason)
        bad.append(rec)
    return bad


def _check_results(run: NcclRun) -> None:
    bad = _flag_invalid(run)
    if bad:
        r = bad[0]
        raise ToolFailure("wrong_results", f"{r.get('collective') or 'collective'} returned wrong data: "
                          f"{r.get('wrong')} wrong elements at {r['size_bytes']} B {r['placement']} "
                          f"({len(bad)} rows with errors)", records=run.all_records())
    for part in run.runs or [run]:
        _check_footer(part, run)


def _check_footer(part: NcclRun, whole: NcclRun) -> None:
    """Raise for a footer that failed (``part``: one run of ``whole``); the failure keeps every row."""
    where = f" (run {part.meta['run']})" if "run" in part.meta else ""
    oob = part.meta.get("out_of_bounds")
    if oob:
        raise ToolFailure("wrong_results", f"nccl-tests reported {oob} out-of-bounds values (FAILED){where}",
                          records=whole.all_records())
    if part.meta.get("avg_busbw_check") == "FAILED":
        raise ToolFailure("below_min_bw", f"average bus bandwidth {part.meta.get('avg_busbw_GBps')} GB/s "
                          f"is below NCCL_TESTS_MIN_BW{where}", records=whole.all_records())


@dataclass
class _Layout:
    lead: list[str]
    groups: list[list[str]]
    placements: list[str]
    timestamp: bool = False

    @property
    def width(self) -> int:
        return len(self.lead) + sum(len(g) for g in self.groups) + (2 if self.timestamp else 0)


def _layout(labels: list[str], banner: str) -> _Layout:
    lead: list[str] = []
    groups: list[list[str]] = []
    timestamp = False
    for label in labels:
        if label == "timestamp":
            timestamp = True
        elif label in ("time", "cputime"):
            groups.append([label])
        elif groups:
            groups[-1].append(label)
        else:
            lead.append(label)
    if "out-of-place" in banner and "in-place" in banner.replace("out-of-place", ""):
        placements = ["out-of-place", "in-place"]
    elif "out-of-place" in banner:
        placements = ["out-of-place"]
    elif "in-place" in banner:
        placements = ["in-place"]
    else:
        placements = ["out-of-place", "in-place"][: len(groups)] if len(groups) > 1 else ["out-of-place"]
    return _Layout(lead, groups, placements, timestamp)


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _row(tokens: list[str], layout: _Layout, collective: str | None) -> list[Record]:
    base: Record = {"kind": "summary", "collective": collective, "redop": None, "root": None}
    for name, tok in zip(layout.lead, tokens, strict=False):
        if name in ("size", "count"):
            base["size_bytes" if name == "size" else "count"] = int(tok)
        elif name == "root":
            base["root"] = int(tok)
        elif name == "redop":
            base["redop"] = tok or None
        else:
            base[name] = tok
    pos = len(layout.lead)
    out: list[Record] = []
    for placement, group in zip(layout.placements, layout.groups, strict=False):
        rec = dict(base, placement=placement)
        for label, tok in zip(group, tokens[pos:pos + len(group)], strict=True):
            key = _COLUMN_KEYS.get(label, label)
            if label == "cputime":
                rec["time_is_cputime"] = True
            if key != "wrong":
                rec[key] = _number(tok)
            elif tok == "N/A":
                rec["wrong"] = None
            elif label == "error":  # before 2.13: max relative delta, '*' when above threshold
                rec["wrong"] = None
                rec["max_delta_tool"] = _number(tok.rstrip("*"))
                rec["error_flagged"] = tok.endswith("*")
            else:
                rec["wrong"] = int(float(tok))
        pos += len(group)
        out.append(rec)
    if layout.timestamp:
        for rec in out:
            rec["timestamp"] = " ".join(tokens[-2:])
    return out


def _is_row_start(tokens: list[str]) -> bool:
    return len(tokens) >= 3 and tokens[0].isdigit() and tokens[1].isdigit() and not tokens[2][0].isdigit()


def _parse_table(text: str, collective: str | None) -> NcclRun:
    """The runs of a text, each read as one output; a text of one run gives that run itself."""
    runs: list[NcclRun] = []
    state = _TableState(collective)
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = _without_log(raw)
        if not line.strip():
            continue
        stripped = line.strip()
        label = _SEPARATOR.match(stripped) or _HEADING.match(stripped)
        program = None if stripped.startswith("#") or label else _PROGRAM.search(stripped)
        # a second output begins (the first one is complete): its opening lines, a command line or a label,
        # and also its rank lines or column titles when a writer kept only those of each output
        again = _RANK.match(stripped) or _TABLE_HEADER.match(stripped)
        if (label or program or again or _OPENS.match(stripped)) and state.run.records:
            runs.append(state.finish())
            state = _TableState(collective)
        if label:
            if label.group(1):
                state.run.meta["run_label"] = label.group(1)
                if named := _PROGRAM.search(label.group(1)):
                    state.program = named.group(1)
            continue
        if program and state.program is None:
            state.program = program.group(1)
        state.read(stripped, line_no)
    if not runs:
        return state.finish()
    runs.append(state.finish())
    for before, run in itertools.pairwise(runs):
        if run.meta["collective"] is None:  # a sweep of one benchmark: the runs after the first name none
            run.meta["collective"] = before.meta["collective"]
            for rec in run.records:
                rec["collective"] = rec["collective"] or before.meta["collective"]
    whole = NcclRun(records=[r for run in runs for r in run.records], ranks=runs[0].ranks,
                    meta=dict(runs[0].meta), runs=runs)
    for number, run in enumerate(runs, 1):
        run.meta["run"] = number
        extra = {"run": number, **({"run_label": run.meta["run_label"]} if "run_label" in run.meta else {})}
        for rec in run.records:
            rec.update(extra)
    return whole


class _TableState:
    """What one output's lines said so far (its table's layout, names, a row cut by log lines)."""

    def __init__(self, collective: str | None) -> None:
        self.run = NcclRun(meta={"format": "table"})
        self.name = collective
        self.layout: _Layout | None = None
        self.banner = ""
        self.pending: list[str] | None = None
        self.cycle: int | None = None
        self.program: str | None = None

    def read(self, stripped: str, line_no: int) -> None:
        """Take line ``line_no`` (without an NCCL log message, not blank)."""
        run = self.run
        if stripped.startswith("#") or _RANK.match(stripped):  # a paste may lose a rank line's "#"
            self.pending = None
            self.name, self.layout, self.banner, self.cycle = _header_line(
                stripped, run, self.name, self.layout, self.banner, self.cycle)
            return
        if (vm := _RCCL_VERSION.match(stripped)) is not None:
            run.meta["rccl_tests_version"] = vm.group(1)
            return
        if (vm := _RCCL_LIBRARY.match(stripped)) is not None:
            run.meta["rccl_version"] = vm.group(1)
            return
        tokens = stripped.split()
        if self.layout is None:
            # rows a grep kept without their column titles: nccl-tests' own layouts, told by their cells
            self.layout = _inferred_layout(tokens)
            if self.layout is None:
                return
            run.meta["columns"] = "inferred from the rows (no column titles)"
        layout = self.layout
        if self.pending is not None:
            joined = self.pending + tokens
            # a row cut by log lines continues with its numbers; a complete new row does not join
            if len(joined) <= layout.width and not (_is_row_start(tokens) and len(tokens) == layout.width):
                tokens = joined
        self.pending = None
        if not _is_row_start(tokens) or len(tokens) > layout.width:
            return
        tokens = _fill_empty_redop(tokens, layout)
        if len(tokens) < layout.width:
            self.pending = tokens
            return
        if bad := _unreadable_figure(tokens, layout):
            raise ToolFailure("unreadable", f"nccl-tests: line {line_no}: a result row whose {bad[0]} is "
                              f"{bad[1]!r}, not a figure: {stripped[:120]}")
        for rec in _row(tokens, layout, collective_name(self.name)):
            if self.cycle is not None:
                rec["cycle"] = self.cycle
            run.records.append(rec)

    def finish(self) -> NcclRun:
        """The run, its rows named after its collective, repeated sweeps (``-N``) numbered as cycles."""
        run, name = self.run, self.name or self.program
        for rec in run.records:
            if rec.get("collective") is None:
                rec["collective"] = collective_name(name)
        run.meta["collective"] = collective_name(name)
        _number_cycles(run.records, _one_size(run.meta))
        return run


def _one_size(meta: dict[str, Any]) -> bool | None:
    """Whether the settings line says the sweep is one size (``-b`` = ``-e``, or a step past ``-e``): then
    every row of a ``-N`` run repeats that size; None without a settings line."""
    low, high = meta.get("min_bytes"), meta.get("max_bytes")
    if low is None or high is None:
        return None
    if "step_factor" in meta:
        return low == high or (low > 0 and low * meta["step_factor"] > high)
    return low == high or low + meta.get("step_bytes", 0) > high


def _unreadable_figure(tokens: list[str], layout: _Layout) -> tuple[str, str] | None:
    """(column, cell) of the first figure cell of a row that is no number ('XXX.XX' where a writer masked
    the figures); the wrong-elements cells may say N/A, and an old max-delta cell ends in '*' above its
    threshold."""
    pos = len(layout.lead)
    for group in layout.groups:
        for label, tok in zip(group, tokens[pos:pos + len(group)], strict=False):
            cell = tok.rstrip("*") if label == "error" else tok
            if _number(cell) is None and not (cell == "N/A" and _COLUMN_KEYS.get(label, label) == "wrong"):
                return label, tok
        pos += len(group)
    return None


def _number_cycles(records: list[Record], one_size: bool | None = None) -> None:
    """``cycle`` 1, 2 ... on the rows of ``-N`` / ``--run_cycles`` runs: nccl-tests prints the whole sweep
    again with no line between, so a size smaller than the last for the same type, op, root and
    placement starts the next cycle (``-d all`` / ``-o all`` sweeps differ in type or op and do not).
    An equal size does when the sweep is one size (``one_size``), and not when it is 0: the sizes a
    collective rounds down to no element (all_gather of 8 ranks from 1 B prints 0 B five times) repeat
    within one sweep. Rows that rccl-tests already numbered ("# Testing N cycle.") are left as they are."""
    if any("cycle" in r for r in records):
        return
    last: dict[tuple[Any, ...], int] = {}
    cycles: dict[tuple[Any, ...], int] = {}
    numbered: list[int] = []
    for rec in records:
        key = (rec.get("type"), rec.get("redop"), rec.get("root"), rec.get("placement"))
        size = rec.get("size_bytes") or 0
        repeated = size == last.get(key) and (one_size or (one_size is None and size > 0))
        if key in last and (size < last[key] or repeated):
            cycles[key] = cycles.get(key, 1) + 1
        last[key] = size
        numbered.append(cycles.get(key, 1))
    if max(numbered, default=1) > 1:
        for rec, cycle in zip(records, numbered, strict=True):
            rec["cycle"] = cycle


def _inferred_layout(tokens: list[str]) -> _Layout | None:
    """The layout of a row printed without its column titles, when its cells tell it apart: 2.13+
    (``root`` and ``#wrong``: 13 cells) or before 2.13 (no root, a max-delta ``error``: 12 cells)."""
    if not _is_row_start(tokens):
        return None
    wrong = re.compile(r"^(?:\d+|N/A)$")
    delta = re.compile(r"^(?:\d(?:\.\d+)?e[+-]\d+\*?|N/A)$")
    if len(tokens) == 13 and re.fullmatch(r"-?\d+", tokens[4]) and wrong.match(tokens[8]) and wrong.match(tokens[12]):
        labels = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                  "time", "algbw", "busbw", "#wrong"]
    elif len(tokens) == 12 and not _number(tokens[3]) and delta.match(tokens[7]) and delta.match(tokens[11]):
        labels = ["size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw",
                  "busbw", "error"]
    else:
        return None
    return _layout(labels, "")


def _fill_empty_redop(tokens: list[str], layout: _Layout) -> list[str]:
    """``tokens`` with an empty redop cell put back: old alltoall rows print blanks under ``redop``,
    so the row is one token short and a number (the time) stands where the operation goes."""
    if "redop" not in layout.lead or len(tokens) != layout.width - 1:
        return tokens
    at = layout.lead.index("redop")
    if at < len(tokens) and _number(tokens[at]) is not None:
        return [*tokens[:at], "", *tokens[at:]]
    return tokens


def _without_log(line: str) -> str:
    """The part of ``line`` before an NCCL log message that starts on it ('' for a log line)."""
    if line.startswith("NCCL version "):
        return ""
    m = _LOG.search(line)
    if not m:
        return line
    start = line.rfind(" ", 0, m.start()) + 1  # the host name is glued to what came before it
    if not line[:start].strip():
        return ""  # the line is a log line (table fields always start with spaces)
    glued = line[start:m.start()]
    num = _GLUED_NUMBER.match(glued) or re.match(r"-?\d", glued)
    if num:
        return line[:start] + num.group(0)
    word = next((w for w in _WORDS if glued.startswith(w) and len(glued) > len(w)), "")
    return line[:start] + word


def _header_line(line: str, run: NcclRun, name: str | None, layout: _Layout | None, banner: str,
                 cycle: int | None) -> tuple[str | None, _Layout | None, str, int | None]:
    labels = line.lstrip("#").split()
    if labels[:2] == ["size", "count"]:
        return name, _layout(labels, banner), banner, cycle
    if "out-of-place" in line or "in-place" in line:
        return name, layout, line, cycle
    if (m := _RANK.match(line)) is not None:
        run.ranks.append({"rank": int(m.group(1)), "group": int(m.group(2)) if m.group(2) else None,
                          "pid": int(m.group(3)), "host": m.group(4), "device": int(m.group(5)),
                          "bus_id": m.group(6), "gpu": m.group(7)})
    elif (m := _OOB.match(line)) is not None:
        run.meta["out_of_bounds"] = int(m.group(1))
    elif (m := _AVG.match(line)) is not None:
        run.meta["avg_busbw_GBps"] = _number(m.group(1))
        if m.group(2):
            run.meta["avg_busbw_check"] = m.group(2)
    elif (m := _START.match(line)) is not None:
        name = name or m.group(1)
    elif (m := _VERSION.match(line)) is not None:
        # rccl-tests since 2.17.9 (ROCm 7.1): "# rccl-tests version 2.17.9-develop:2596ca5f71
        # rccl-headers=22803 rccl-library=22707", RCCL's own version codes
        run.meta[f"{m.group(1)}_tests_version"] = m.group(2)
        if m.group(4):
            run.meta[f"{m.group(1)}_library_version"] = int(m.group(4))
    elif (m := _CYCLE.match(line)) is not None:
        cycle = int(m.group(1))
    elif "minBytes" in line and "maxBytes" in line:
        for key, pattern in _SETTINGS:
            if (m := pattern.search(line)) is not None:
                run.meta[key] = int(m.group(1))
        if (m := _STEP.search(line)) is not None:
            run.meta["step_factor" if m.group(2) == "factor" else "step_bytes"] = int(m.group(1))
    elif line.startswith("# error:"):
        run.meta.setdefault("errors", []).append(line[len("# error:"):].strip())
    return name, layout, banner, cycle


def _parse_json(text: str, collective: str | None) -> NcclRun:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # rccl-tests before the array form wrote one object per line
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ToolFailure("no_results", f"unreadable nccl-tests JSON: {exc}") from exc
    if isinstance(data, dict):
        return _parse_nccl_json(data, collective)
    if isinstance(data, list):
        return _parse_rccl_rows(data, "rccl-json")
    raise ToolFailure("no_results", "nccl-tests JSON is neither an object nor a list")


def _parse_nccl_json(data: dict[str, Any], collective: str | None) -> NcclRun:
    """nccl-tests ``-J file.json`` (util.cu, JSON_FILE_VERSION 1-2)."""
    args = data.get("args") or []
    name = collective_name(collective or (args[0] if args else None))
    config = data.get("config") or {}
    run = NcclRun(meta={"format": "nccl-json", "collective": name, "json_version": data.get("version"),
                        "nccl_library_version": data.get("nccl_version")})
    for dev in config.get("devices") or []:
        run.ranks.append({"rank": dev.get("rank"), "group": dev.get("group"), "pid": dev.get("pid"),
                          "host": dev.get("hostname"), "device": dev.get("device"),
                          "bus_id": dev.get("device_hex"), "gpu": dev.get("device_info")})
    for row in data.get("results") or []:
        root = str(row.get("root", "")).strip()
        base: Record = {"kind": "summary", "collective": name, "size_bytes": row.get("size"),
                        "count": row.get("count"), "type": row.get("type"), "redop": row.get("redop"),
                        "root": int(root) if root.lstrip("-").isdigit() else None}
        for key, placement in (("out_of_place", "out-of-place"), ("in_place", "in-place")):
            body = row.get(key)
            if not body:
                continue
            nwrong = body.get("nwrong")
            rec = dict(base, placement=placement, time_us=body.get("time", body.get("cpu_time")),
                       algbw_GBps=body.get("alg_bw"), busbw_GBps=body.get("bus_bw"),
                       wrong=None if nwrong is None or nwrong == "nan" else int(float(nwrong)))
            if "cpu_time" in body:
                rec["time_is_cputime"] = True
            per_iter = row.get(f"{key}_per_iter") or {}
            for src, dst in (("min_us", "iter_min_us"), ("max_us", "iter_max_us"), ("p99_us", "iter_p99_us"),
                             ("cv_pct", "iter_cv_pct")):
                if src in per_iter:
                    rec[dst] = per_iter[src]
            run.records.append(rec)
    oob = data.get("out_of_bounds") or {}
    if "count" in oob:
        run.meta["out_of_bounds"] = int(oob["count"])
    avg = data.get("average_bus_bandwidth") or {}
    if "bandwidth" in avg:
        run.meta["avg_busbw_GBps"] = _number(str(avg["bandwidth"]))
        if str(avg.get("okay")) == "false":
            run.meta["avg_busbw_check"] = "FAILED"
    if data.get("errors"):
        run.meta["errors"] = list(data["errors"])
    return run


def _parse_rccl_csv(text: str) -> NcclRun:
    """rccl-tests ``-x FILE -Z csv``: old ``collective, ranks, ...`` (with one more value per row than
    header names under MPI) and new ``numCycle,collective,nodes,...`` headers; values align from the right."""
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = [h.strip() for h in next(reader)]
    rows: list[dict[str, Any]] = []
    tail = ("size", "type", "redop", "inPlace", "time", "algBw", "busBw", "wrong")
    for values in reader:
        if not values or not any(v.strip() for v in values):
            continue
        row: dict[str, Any] = dict(zip(tail, values[-len(tail):], strict=True))
        row["name"] = values[1] if header[0] == "numCycle" else values[0]
        if header[0] == "numCycle":
            row["numCycle"] = values[0]
        if len(values) == len(header) and "ranks" in header:
            row["ranks"] = values[header.index("ranks")]
        rows.append(row)
    return _parse_rccl_rows(rows, "rccl-csv")


def _parse_rccl_rows(rows: list[Any], fmt: str) -> NcclRun:
    run = NcclRun(meta={"format": fmt})
    for row in rows:
        if not isinstance(row, dict):
            raise ToolFailure("no_results", f"unexpected rccl-tests {fmt} entry: {row!r}")
        wrong = str(row.get("wrong", "N/A")).strip().strip('"')
        in_place = int(row.get("inPlace", 0))
        rec: Record = {"kind": "summary", "collective": collective_name(str(row.get("name", ""))),
                       "size_bytes": int(row["size"]), "count": None,
                       "type": str(row.get("type", "")).strip('"'),
                       "redop": str(row.get("redop", "")).strip('"'), "root": None,
                       "placement": "in-place" if in_place else "out-of-place",
                       "time_us": float(row["time"]), "algbw_GBps": float(row["algBw"]),
                       "busbw_GBps": float(row["busBw"]), "wrong": None if wrong == "N/A" else int(wrong)}
        if row.get("numCycle") is not None:
            rec["cycle"] = int(row["numCycle"])
        if row.get("ranks") is not None:
            run.meta["nranks"] = int(row["ranks"])
        run.records.append(rec)
    run.meta["collective"] = run.records[0]["collective"] if run.records else None
    return run
