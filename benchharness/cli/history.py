"""`bench list`, `bench history`, `bench tag` and `bench trend`: the catalog on the console.

Each function takes the subcommand's ``key=value`` arguments and returns lines (or a path), so
the CLI stays a thin dispatcher and tests need no subprocess.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchharness.analysis import regression
from benchharness.core.errors import UsageError
from benchharness.core.metrics import higher_is_better, unit_of
from benchharness.core.units import parse_size
from benchharness.results.catalog import Catalog, Point

LIST_KEYS = ("suite", "nic", "host", "verdict", "tag", "since", "last")
HISTORY_KEYS = ("metric", "nic", "suite", "test", "size", "host", "last", "window", "k", "min_change")
TREND_KEYS = ("metric", "nic", "by", "suite", "test", "size", "last", "out")


def _int(kv: Mapping[str, str], key: str) -> int | None:
    if not kv.get(key):
        return None
    try:
        value = int(kv[key])
    except ValueError as exc:
        raise UsageError(f"{key}= must be a whole number, got {kv[key]!r}") from exc
    if value < 1:
        raise UsageError(f"{key}= must be at least 1, got {value}")
    return value


def _size(kv: Mapping[str, str]) -> int | None:
    try:
        return parse_size(kv["size"]) if kv.get("size") else None
    except ValueError as exc:
        raise UsageError(f"size=: {exc}") from exc


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "?"


def list_lines(kv: Mapping[str, str], catalog: Catalog | None = None) -> list[str]:
    """One line per registered run, oldest first, filtered by suite, nic (model, serial or
    firmware), host, verdict (pass, fail, error, interrupted), tag, since (a date), last (N)."""
    cat = catalog or Catalog()
    cat.sync()
    rows = cat.runs(suite=kv.get("suite"), nic=kv.get("nic"), host=kv.get("host"), verdict=kv.get("verdict"),
                    tag=kv.get("tag"), since=kv.get("since"), last=_int(kv, "last"))
    lines = []
    for r in rows:
        extra = [f"nic={r['nic_models']}" if r["nic_models"] else "", f"tags={r['tags']}" if r["tags"] else "",
                 f"failed_checks={r['failed_checks']}" if r["failed_checks"] else ""]
        lines.append(f"{r['run_id']}  {r['suite'] or '?':<12} {r['verdict'] or '?':<11} "
                     f"hosts={r['hosts']} {' '.join(e for e in extra if e)}".rstrip())
    if not lines:
        lines.append(f"no runs match under {cat.root}" if any(kv.values()) else f"no runs under {cat.root}")
    return lines


def _series_blocks(points: Sequence[Point]) -> dict[tuple[str, str], list[Point]]:
    blocks: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        blocks.setdefault((p.test, p.case), []).append(p)
    return blocks


def history_lines(kv: Mapping[str, str], catalog: Catalog | None = None) -> list[str]:
    """A metric over runs, one block per (test, case): date, run, value (median over the hosts
    matching nic= and host=), and regressions flagged against the nights before each point."""
    metric = kv.get("metric")
    if not metric:
        raise UsageError("bench history needs metric=... (e.g. bw_avg_gbps, busbw_GBps, lat_p99_us)")
    cat = catalog or Catalog()
    cat.sync()
    points = cat.series(metric, suite=kv.get("suite"), test=kv.get("test"), size=_size(kv),
                        nic=kv.get("nic"), host=kv.get("host"))
    if not points:
        return [f"no stored values of {metric} match under {cat.root}"]
    try:
        k = float(kv.get("k", 4.0))
        min_change = float(kv.get("min_change", "5").rstrip("%")) / 100.0
    except ValueError as exc:
        raise UsageError(f"k= and min_change= must be numbers: {exc}") from exc
    window, last = _int(kv, "window") or 10, _int(kv, "last")
    unit = unit_of(metric)
    lines: list[str] = []
    who = f" · nic {kv['nic']}" if kv.get("nic") else ""
    who += f" · host {kv['host']}" if kv.get("host") else ""
    for (test, case), block in _series_blocks(points).items():
        block.sort(key=lambda p: (p.started_ts, p.run_id))
        findings = regression.flags([p.value for p in block], higher_is_better=higher_is_better(metric),
                                    window=window, min_history=min(5, window), k=k, min_change=min_change,
                                    unit=unit)
        shown = list(zip(block, findings, strict=True))[-last:] if last else list(zip(block, findings, strict=True))
        lines.append(f"{test} · {metric} [{unit}]{' · ' + case if case else ''}{who}")
        for p, f in shown:
            mark = f"  REGRESSION {f.message}" if f.flagged else ""
            lines.append(f"  {_when(p.started_ts)}  {p.run_id:<34} {p.value:>10.4g}  ({p.hosts} host"
                         f"{'s' if p.hosts != 1 else ''}){mark}")
    return lines


def tag_lines(ref: str, tags: Sequence[str], remove: bool = False, catalog: Catalog | None = None) -> list[str]:
    """Add (or remove) tags of a run; no tags: just show them. The run's tags afterwards."""
    run_id, current = (catalog or Catalog()).tag(ref, tags, remove=remove)
    return [f"{run_id}: tags {', '.join(current) if current else '(none)'}"]


def trend_command(kv: Mapping[str, str], catalog: Catalog | None = None) -> Path:
    """Render the trend report (``out=``, default ``trend-<metric>.html``); its path."""
    from benchharness.report.trend import render_trend

    metric = kv.get("metric")
    if not metric:
        raise UsageError("bench trend needs metric=... (e.g. bw_avg_gbps, busbw_GBps, lat_p99_us)")
    by = kv.get("by", "model")
    if by not in ("model", "serial", "firmware"):
        raise UsageError(f"by={by}: use model, serial or firmware")
    out = Path(kv.get("out") or f"trend-{metric}.html")
    return render_trend(catalog or Catalog(), out, metric, by=by, nic=kv.get("nic"), suite=kv.get("suite"),
                        test=kv.get("test"), size=_size(kv), last=_int(kv, "last"))
