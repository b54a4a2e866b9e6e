"""Stragglers and spikes from nccl-tests' per-iteration JSON (``-I 1 -J FILE``).

With more than one MPI process nccl-tests writes, per size and placement, each process's time of
every iteration (``per_process_max_times_us``: the max over that process's GPUs). A collective
waits for its slowest member, so:

- a **straggler** is a process whose median iteration time is more than ``factor`` (1.2) times
  the median process's: named with its ranks, host and GPU (``config.devices``);
- a **spike** is an iteration whose time (max over processes) exceeds ``spike`` (1.5) times the
  median iteration; it is *system-wide* when most processes spiked with it, else it names the
  processes that did (nccl-tests' own ``analyze_perf_json.py`` reads the same fields).

The finding itself (``analyze``) sits in ``tools/nccl_iter.py``, where a run's step reads its
document; this module puts it in words: ``bench parse nccl-stragglers`` and the ``stragglers:``
verdicts of a stored run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.core.model import Verdict
from benchharness.core.units import format_size
from benchharness.tools.nccl_iter import DEFAULT_FACTOR, DEFAULT_SPIKE, Spike, Straggler, analyze
from benchharness.tools.nccl_json import load

if TYPE_CHECKING:
    from benchharness.results.store import RunDir


def lines(stragglers: list[Straggler], spikes: list[Spike]) -> list[str]:
    """Console lines: the slow ranks with host and GPU, then the spiking iterations."""
    out = []
    for s in stragglers:
        out.append(f"straggler at {s.size_bytes} B {s.placement}: {s.where()}: median iteration "
                   f"{s.median_us:.4g} us = {s.factor:.2f}x the median process ({s.peers_median_us:.4g} us)")
    for k in spikes:
        who = ("system-wide" if k.system_wide else
               f"processes {', '.join(map(str, k.processes))}" if k.processes else "no single process")
        out.append(f"spike at {k.size_bytes} B {k.placement}: iteration {k.iteration} took {k.time_us:.4g} us "
                   f"= {k.time_us / k.median_us:.2f}x the median ({who})")
    return out


def report(text: str) -> dict[str, Any]:
    """``bench parse nccl-stragglers FILE.json``: the stragglers and spikes of one ``-J`` document."""
    found, spikes = analyze(load(text))
    return {"stragglers": [dict(s.__dict__, factor=round(s.factor, 3), where=s.where()) for s in found],
            "spikes": [dict(k.__dict__) for k in spikes], "lines": lines(found, spikes)}


PARSERS = {"nccl-stragglers": report}
READS = {"nccl-stragglers": "nccl-tests -I 1 -J FILE (2.20+, per_process_max_times_us of two or more "
                            "processes): stragglers by rank, host and GPU, and spikes"}


#: The check a test's straggler verdicts are filed under (test key ``stragglers: warn|fail``).
CHECK = "stragglers"


#: The sample kinds a step with per-iteration timing writes (``tools/nccl_iter.records``).
KINDS = ("straggler", "spike", "iterations")


def run_records(run: RunDir) -> Sequence[Mapping[str, Any]]:
    """Every ``straggler``, ``spike`` and ``iterations`` record of a stored run (one read)."""
    return run.samples_of_kind(*KINDS)


def run_verdicts(records: Sequence[Mapping[str, Any]], test: str, status: str) -> list[Verdict]:
    """The ``stragglers:`` verdicts of one test, from its steps' ``straggler``, ``spike`` and
    ``iterations`` records (:func:`run_records`): one per slow rank and host (``status``, its
    worst size), one ``info`` per host whose own iterations spiked, and a ``pass`` saying what was
    looked at when nobody straggled; ``info`` when there was nothing to judge."""
    rows = [r for r in records if r.get("test") == test]
    looked = [r for r in rows if r.get("kind") == "iterations" and r.get("per_process")]
    if not looked:
        why = next((str(r["missing"]) for r in rows if r.get("missing")), None)
        return [Verdict(CHECK, "info", f"{test}: no per-process iteration times to judge"
                        + (f" ({why})" if why else " (one process, or nccl-tests before 2.19)"), test=test)]
    worst: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for r in rows:
        if r.get("kind") == "straggler":
            key = (r.get("host"), r.get("where"))
            if key not in worst or float(r.get("factor") or 0) > float(worst[key].get("factor") or 0):
                worst[key] = r
    out = [Verdict(CHECK, status, f"{test}: {r.get('where')} is a straggler: its median iteration took "
                   f"{float(r['median_us']):.4g} us, {float(r['factor']):.2f}x its peers' "
                   f"({float(r['peers_median_us']):.4g} us) at {format_size(int(r.get('size_bytes') or 0))} B {r.get('placement')}",
                   host=str(r.get("host")) if r.get("host") else None, test=test,
                   value=float(r["factor"]), limit=DEFAULT_FACTOR) for r in worst.values()]
    spiked: dict[str, int] = {}
    for r in rows:
        if r.get("kind") == "spike" and not r.get("system_wide"):
            for h in r.get("spike_hosts") or []:
                spiked[str(h)] = spiked.get(str(h), 0) + 1
    out += [Verdict(CHECK, "info", f"{test}: {n} iteration(s) spiked above {DEFAULT_SPIKE}x the median on {h} "
                    "alone", host=h, test=test, value=float(n)) for h, n in sorted(spiked.items())]
    if not worst:
        procs = max(int(r.get("processes") or 0) for r in looked)
        out.append(Verdict(CHECK, "pass", f"{test}: no straggler among {procs} processes "
                           f"(median iteration within {DEFAULT_FACTOR}x of the median process, "
                           f"{len(looked)} step(s))", test=test))
    return out
