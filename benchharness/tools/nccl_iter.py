"""Per-iteration timing of a collective step (nccl-tests ``-I 1 -J FILE``), carried home on stdout.

nccl-tests 2.19 and later time every iteration (``-I 1``) and write them, per MPI process, into
the JSON document of ``-J FILE`` (rank 0 only; a file that exists is never overwritten: it
probes ``FILE.0``, ``FILE.1`` ..., see ``jsonOutputInit`` in src/util.cu). The document is
written on the host of rank 0, which with Slurm is not the controller, so each rank runs under
:data:`WRAPPER`: rank 0 gives the tool a fresh directory for the document and prints it between
two marker lines after the tool ends; the other ranks ``exec`` the tool unchanged. The step's
stdout then holds the table and the document; :func:`split` separates them.

:func:`records` turns the document into the step's ``straggler`` and ``spike`` records
(:func:`analyze` finds them, below), each naming the rank's inventory host and GPU;
``analysis/stragglers.py`` words them for ``bench parse`` and the ``stragglers:`` verdicts.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Host, Record
from benchharness.tools.nccl_json import IterationRows, iterations, load, process_ranks

#: nccl-tests' first version with ``-I`` (per-iteration timing; ``-J`` came in 2.17).
MIN_VERSION = "2.19"
BEGIN = "# benchharness per-iteration json begin"
END = "# benchharness per-iteration json end"
#: ``sh -c WRAPPER bench-iter PROGRAM ARGS...``: rank 0 (Open MPI's OMPI_COMM_WORLD_RANK, Slurm's
#: SLURM_PROCID, torchrun's RANK) runs PROGRAM with ``-J DIR/iterations.json``, forwards a stop to it, prints the
#: document between the markers and removes the directory; other ranks become PROGRAM.
WRAPPER = ('r="${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${RANK:-0}}}"; [ "$r" = 0 ] || exec "$@"; '
           'd=$(mktemp -d) || exec "$@"; "$@" -J "$d/iterations.json" & p=$!; '
           "trap 'kill -TERM \"$p\" 2>/dev/null' TERM INT HUP; "
           'wait "$p"; rc=$?; if kill -0 "$p" 2>/dev/null; then wait "$p"; rc=$?; fi; '
           'for f in "$d"/iterations.json*; do if [ -s "$f" ]; then '
           f"printf '\\n%s\\n' '{BEGIN}'; cat \"$f\"; printf '\\n%s\\n' '{END}'; break; fi; done; "
           'rm -rf "$d"; exit "$rc"')
#: What nccl-tests before 2.19 prints for ``-I`` (glibc getopt's message), then its usage text.
_TOO_OLD = ("invalid option -- 'I'", "invalid option -- I")
_RANK_TAG = re.compile(r"^\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:")
_ANY_TAG = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:")
_NCCL_LOG = re.compile(r":\d+:\d+ \[\d+\] (?:NCCL|RCCL) (?:INFO|WARN|TRACE)")


def wrap(program: Sequence[str]) -> list[str]:
    """``program`` with per-iteration timing on, under :data:`WRAPPER`."""
    return ["sh", "-c", WRAPPER, "bench-iter", *program, "-I", "1"]


def split(stdout: str) -> tuple[str, str | None]:
    """``(the output without the document, the document's text or None)``.

    Under ``mpirun --tag-output`` the document's lines carry rank 0's tag, and other ranks' lines
    (NCCL_DEBUG's teardown messages, printed while rank 0 prints the document) may fall between
    them: those are left out of the document."""
    start = stdout.find(BEGIN)
    if start < 0:
        return stdout, None
    end = stdout.find(END, start)
    body = stdout[start + len(BEGIN): end if end >= 0 else len(stdout)]
    rest = stdout[:start] + (stdout[end + len(END):] if end >= 0 else "")
    kept = []
    for line in body.split("\n"):
        tag = _RANK_TAG.match(line)
        if tag and tag.group(1) != "0":
            continue
        line = _ANY_TAG.sub("", line)
        if not _NCCL_LOG.search(line):
            kept.append(line)
    return rest, "\n".join(kept).strip()


def check_supported(text: str, tool: str) -> None:
    """ToolFailure('tool_too_old') when the tool refused ``-I`` (nccl-tests before 2.19)."""
    if any(m in text for m in _TOO_OLD):
        raise ToolFailure("tool_too_old", f"{tool} refused -I: per_iteration needs nccl-tests {MIN_VERSION} "
                          "or later (drop per_iteration, or upgrade)")


def _inventory_host(reported: Any, hosts: Sequence[Host]) -> str | None:
    """The inventory name of the host that reported ``reported`` (its hostname, maybe an FQDN)."""
    if not reported:
        return None
    name = str(reported)
    short = name.split(".")[0]
    for h in hosts:
        known = {h.name, h.name.split(".")[0], str(h.var("hostname") or ""), str(h.address or "")}
        if name in known or short in known:
            return h.name
    return name


def step_records(stdout: str, hosts: Sequence[Host], tool: str) -> list[Record]:
    """The records of the document a step printed (:func:`records`); one ``iterations`` record
    with the reason when none came back (the tool stopped before writing it) or it is unreadable."""
    _, doc_text = split(stdout)
    if doc_text is None:
        return [{"kind": "iterations", "processes": None, "missing": f"{tool} printed no per-iteration document"}]
    try:
        return records(load(doc_text), hosts)
    except ToolFailure as exc:
        return [{"kind": "iterations", "processes": None, "missing": f"per-iteration document unreadable: {exc}"}]


def records(doc: Mapping[str, Any], hosts: Sequence[Host]) -> list[Record]:
    """The document's stragglers and spikes as sample records (kinds ``straggler`` and ``spike``),
    and one ``iterations`` record saying what was looked at. Their field names differ from the
    step's labels (``hosts``) and the footer's (``ranks``), which they travel with."""
    found, spikes = analyze(doc)
    rows = iterations(doc)
    ranks = process_ranks(doc)
    seen = sorted({str(_inventory_host(r.get("hostname"), hosts)) for p in ranks for r in p if r.get("hostname")})
    out: list[Record] = [{"kind": "iterations", "processes": len(ranks), "rank_hosts": seen,
                          "sizes": len({r.size_bytes for r in rows}),
                          "per_process": any(r.processes for r in rows),
                          "stragglers": len(found), "spikes": len(spikes)}]
    for s in found:
        first = s.ranks[0] if s.ranks else {}
        out.append({"kind": "straggler", "size_bytes": s.size_bytes, "placement": s.placement,
                    "process": s.process, "host": _inventory_host(first.get("hostname"), hosts),
                    "reported_host": first.get("hostname"), "gpu_index": first.get("device"),
                    "straggler_ranks": [r.get("rank") for r in s.ranks], "where": s.where(),
                    "median_us": round(s.median_us, 3), "peers_median_us": round(s.peers_median_us, 3),
                    "factor": round(s.factor, 3)})
    for k in spikes:
        named = sorted({str(_inventory_host(ranks[p][0].get("hostname"), hosts)) for p in k.processes
                        if p < len(ranks) and ranks[p]})
        out.append({"kind": "spike", "size_bytes": k.size_bytes, "placement": k.placement,
                    "iteration": k.iteration, "time_us": round(k.time_us, 3), "median_us": round(k.median_us, 3),
                    "ratio": round(k.time_us / k.median_us, 3) if k.median_us else None,
                    "spike_processes": list(k.processes), "spike_hosts": named, "system_wide": k.system_wide})
    return out


DEFAULT_FACTOR = 1.2
DEFAULT_SPIKE = 1.5


@dataclass(frozen=True)
class Straggler:
    """A process slower than its peers at one size and placement."""

    size_bytes: int
    placement: str
    process: int
    ranks: list[dict[str, Any]]
    median_us: float
    peers_median_us: float

    @property
    def factor(self) -> float:
        return self.median_us / self.peers_median_us if self.peers_median_us else float("inf")

    def where(self) -> str:
        """``rank 3 on gpu-b GPU 1 (0000:05:00)``; the process number when devices are unknown."""
        if not self.ranks:
            return f"process {self.process}"
        return "; ".join(f"rank {r.get('rank')} on {r.get('hostname')} GPU {r.get('device')}"
                         + (f" ({r.get('device_hex')})" if r.get("device_hex") else "") for r in self.ranks)


@dataclass(frozen=True)
class Spike:
    """An iteration far above the median iteration of its size and placement."""

    size_bytes: int
    placement: str
    iteration: int
    time_us: float
    median_us: float
    processes: list[int] = field(default_factory=list)
    system_wide: bool = False


def _stragglers(rows: IterationRows, ranks: list[list[Mapping[str, Any]]], factor: float) -> list[Straggler]:
    medians = [statistics.median(p) for p in rows.processes if p]
    if len(medians) < 2:
        return []
    peers = statistics.median(medians)
    out = []
    for i, m in enumerate(medians):
        if peers > 0 and m > factor * peers:
            out.append(Straggler(rows.size_bytes, rows.placement, i,
                                 [dict(r) for r in ranks[i]] if i < len(ranks) else [], m, peers))
    return out


def _spikes(rows: IterationRows, threshold: float) -> list[Spike]:
    times = rows.overall or ([max(col) for col in zip(*rows.processes, strict=False)] if rows.processes else [])
    if len(times) < 3:
        return []
    median = statistics.median(times)
    out = []
    for i, t in enumerate(times):
        if median <= 0 or t <= threshold * median:
            continue
        procs: list[int] = []
        for p, series in enumerate(rows.processes):
            if i < len(series) and series:
                own = statistics.median(series)
                if own > 0 and series[i] > threshold * own:
                    procs.append(p)
        wide = bool(rows.processes) and len(procs) * 2 > len(rows.processes)
        out.append(Spike(rows.size_bytes, rows.placement, i, t, median, procs, wide))
    return out


def analyze(doc: Mapping[str, Any], factor: float = DEFAULT_FACTOR, spike: float = DEFAULT_SPIKE
            ) -> tuple[list[Straggler], list[Spike]]:
    """Stragglers and spikes of every size and placement with per-iteration data."""
    ranks = [list(p) for p in process_ranks(doc)]
    stragglers: list[Straggler] = []
    spikes: list[Spike] = []
    for rows in iterations(doc):
        stragglers += _stragglers(rows, ranks, factor)
        spikes += _spikes(rows, spike)
    return stragglers, spikes
