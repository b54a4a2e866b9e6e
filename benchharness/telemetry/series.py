"""Counter deltas per interval within a step: the sampler's snapshot lines turned into a series.

With ``counters_interval: N`` (suite settings) the sampler prints a counter snapshot every N
seconds beside its start and end snapshots (``phase: interval``). Consecutive snapshots give one
delta each, stored as ``telemetry/series/<step>/<host>.jsonl``: one line per interval,
``{"t0": wall seconds, "t1": ..., "counters": {"source:object:name": delta}}`` with the non-zero,
non-per-queue counters only. The report draws pause share and throughput over time from it; the
load judge (``telemetry/load.py``) reads bandwidth per interval from it when the tool printed none.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from benchharness.core.naming import safe_name
from benchharness.telemetry.counters import delta
from benchharness.telemetry.parsers._counter_names import base_name
from benchharness.telemetry.parsers.sampler import read_sampler

#: Per-queue and per-channel counters (mlx5 ``rx3_bytes``, ``ch12_events``; ice ``tx_queue_5_packets``):
#: the per-port counters already sum them.
PER_QUEUE = re.compile(r"^(?:rx|tx|ch|xdp)\d+_|queue_\d+|_q\d+_")
_PHASE_ORDER = {"start": 0, "interval": 1, "end": 2}


def snapshots(sampler_output: str) -> list[tuple[float, dict[str, int]]]:
    """The sampler's snapshot lines in time order: (wall seconds, counters)."""
    found = [(_PHASE_ORDER.get(s.phase, 1), s.ts, s.counters) for s in read_sampler(sampler_output).snapshots]
    found.sort(key=lambda f: (f[1], f[0]))
    return [(ts, counters) for _, ts, counters in found]


def intervals(sampler_output: str) -> list[dict[str, Any]]:
    """One delta per pair of consecutive snapshots (wraps and resets handled by ``counters.delta``);
    empty when the sampler printed only its start and end snapshots."""
    snaps = snapshots(sampler_output)
    if len(snaps) < 3:
        return []
    out: list[dict[str, Any]] = []
    for (t0, before), (t1, after) in itertools.pairwise(snaps):
        if t1 <= t0:
            continue
        d = delta(before, after)["counters"]
        out.append({"t0": t0, "t1": t1, "counters": {k: v for k, v in d.items()
                                                     if v and not PER_QUEUE.search(base_name(k))}})
    return out


def series_path(step_id: str, host: str) -> str:
    """Where one host's series of one step lives in the run directory."""
    return f"telemetry/series/{safe_name(step_id)}/{safe_name(host)}.jsonl"


def write_series(run_dir: Any, step_id: str, host: str, sampler_output: str) -> bool:
    """Store one host's counter series of a step (``RunDir.write_text``); False when there is none."""
    rows = intervals(sampler_output)
    if rows:
        run_dir.write_text(series_path(step_id, host), "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return bool(rows)
