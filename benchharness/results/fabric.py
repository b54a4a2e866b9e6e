"""Fabric health of a stored run as the report shows it, and its load verdicts.

Read side only, over the run directory:

* per rail, the counter families of every step summed and normalized per GB moved
  (``telemetry/counters/<step>.json`` with their context; ``telemetry.health.families``);
* per rail over time, throughput and pause share from the counter series
  (``telemetry/series/<step>/<host>.jsonl``, ``counters_interval``), and per host the sampler's
  temperatures (``telemetry/samples/<step>/<host>.jsonl``), on the run's wall clock;
* the load limits of a test's ``health:`` block (``telemetry/load.py``): ``degradation`` of
  sustained steps from interval samples (the tool's own, else the counter series), the peak and
  slope of each sensor over a step, clock throttle reasons (``telemetry/gpu/<step>/<host>.json``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchharness.core.model import Verdict, endpoint, split_endpoint
from benchharness.core.naming import safe_name
from benchharness.results import cpu, runview
from benchharness.results.health import CHECK_PREFIX, limits_by_test
from benchharness.results.store import RunDir
from benchharness.telemetry import load
from benchharness.telemetry.health import FAMILIES, families, pause_seconds, split_rails, traffic

_ORDER = {"fail": 0, "warn": 1, "pass": 2, "info": 3}


# ---------------------------------------------------------------- stored files

def _counter_files(run: RunDir) -> Iterator[tuple[str, dict[str, Any]]]:
    folder = run.path / "telemetry" / "counters"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, Mapping):
            yield path.stem, dict(data)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict):
                    yield item
    except OSError:
        return


def _per_rail(d: Mapping[str, Any]) -> dict[str | None, dict[str, int]]:
    """One host's step delta split per rail with its stored context (the rails the step used)."""
    ctx = d.get("context") if isinstance(d.get("context"), Mapping) else {}
    rails: Mapping[str, Any] = (ctx or {}).get("rails") or {}
    counters = {str(k): int(v) for k, v in (d.get("counters") or {}).items()
                if isinstance(v, int | float) and not isinstance(v, bool)}
    used = [str(r) for r in (ctx or {}).get("step_rails") or []]
    split = split_rails(counters, {r: list(v.get("objects") or []) for r, v in rails.items()}, used)
    return {r: c for r, c in split.items() if not (used and r is not None and r not in used)}


def _rail_spec(d: Mapping[str, Any], rail: str | None) -> Mapping[str, Any]:
    ctx = d.get("context") if isinstance(d.get("context"), Mapping) else {}
    spec = ((ctx or {}).get("rails") or {}).get(rail or "", {})
    return spec if isinstance(spec, Mapping) else {}


# ---------------------------------------------------------------- per rail, per GB

@dataclass
class RailTotals:
    """One rail of one host over every step of the run."""

    host: str
    rail: str | None
    nic: str | None
    serial: str | None
    steps: int
    bytes: int
    seconds: float
    totals: dict[str, int | None]

    @property
    def gb(self) -> float:
        return self.bytes / 1e9

    def per_gb(self, family: str) -> float | None:
        """The family's delta per GB moved; None when not exposed or nothing moved."""
        value = self.totals.get(family)
        return value / self.gb if value is not None and self.bytes > 0 else None


def rail_totals(run: RunDir) -> list[RailTotals]:
    """Counter families per host and rail, summed over the run's steps (absent stays None)."""
    out: dict[tuple[str, str | None], RailTotals] = {}
    for _, per_host in _counter_files(run):
        for host, d in per_host.items():
            if not isinstance(d, Mapping) or not isinstance(d.get("context"), Mapping):
                continue
            seconds = float(d["context"].get("seconds") or 0.0)
            for rail, counters in _per_rail(d).items():
                spec = _rail_spec(d, rail)
                row = out.setdefault((host, rail), RailTotals(
                    host, rail, " ".join(str(x) for x in (spec.get("netdev") or spec.get("rdma_dev"),) if x) or None,
                    spec.get("serial"), 0, 0, 0.0, dict.fromkeys(FAMILIES)))
                row.steps += 1
                row.bytes += traffic(counters)[0] or 0
                row.seconds += seconds
                for family, value in families(counters).items():
                    if value is not None:
                        row.totals[family] = (row.totals[family] or 0) + value
    return sorted(out.values(), key=lambda r: (r.host, r.rail or ""))


# ---------------------------------------------------------------- over time

@dataclass(frozen=True)
class RailPoint:
    """One interval of one rail: its mid time (wall seconds), Gbit/s (rx+tx), paused share."""

    t: float
    seconds: float
    gbps: float | None
    pause_share: float | None


def rail_series(run: RunDir) -> dict[str, list[RailPoint]]:
    """``host.rail`` -> points from the counter series of every step, time-sorted."""
    facts = runview.read_facts(run)
    out: dict[str, list[RailPoint]] = {}
    for step, per_host in _counter_files(run):
        folder = run.path / "telemetry" / "series" / step
        for host, d in per_host.items():
            if not isinstance(d, Mapping):
                continue
            path = folder / f"{safe_name(host)}.jsonl"
            for item in _jsonl(path) if path.is_file() else []:
                t0, t1 = item.get("t0"), item.get("t1")
                if not isinstance(t0, int | float) or not isinstance(t1, int | float) or t1 <= t0:
                    continue
                fake = {"counters": item.get("counters") or {}, "context": d.get("context")}
                for rail, counters in _per_rail(fake).items():
                    spec = _rail_spec(d, rail)
                    speed = runview.detected_line_rate(facts.get(host), spec.get("netdev")) \
                        if spec.get("netdev") else None
                    nbytes = traffic(counters)[0]
                    paused = pause_seconds(counters, speed)
                    dt = float(t1) - float(t0)
                    out.setdefault(endpoint(host, rail), []).append(RailPoint(
                        (float(t0) + float(t1)) / 2, dt, nbytes * 8 / 1e9 / dt if nbytes is not None else None,
                        min(paused / dt, 1.0) if paused is not None else None))
    for pts in out.values():
        pts.sort(key=lambda p: p.t)
    return out


def temperatures(run: RunDir, step: str | None = None) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Host -> sensor -> [(wall seconds, °C)] from the samplers (one step, or all)."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for st, host, sampled in runview.sampler_files(run):
        if step is not None and st != step:
            continue
        for line in sampled.lines:
            for name, value in line.temps.items():
                out.setdefault(host, {}).setdefault(name, []).append((line.ts, value))
    for sensors in out.values():
        for pts in sensors.values():
            pts.sort()
    return out


def host_throughput(run: RunDir) -> dict[str, list[tuple[float, float]]]:
    """Host -> [(wall seconds, rx+tx Gbit/s of its netdevs)] from the samplers' interval lines."""
    series = runview.sampler_series(run).get("net_gbps", {})
    return {host: pts for host, pts in series.items() if pts}


# ---------------------------------------------------------------- load limits judged

@dataclass(frozen=True)
class LoadRow:
    """One load limit judged on one host (and rail) in one step."""

    test: str
    step: str
    host: str
    rail: str | None
    limit: str  # a load.LOAD_LIMITS name
    status: str
    value: float | None
    bound: float | None
    message: str

    @property
    def check(self) -> str:
        return CHECK_PREFIX + load.LABELS[self.limit]


def _step_times(run: RunDir) -> dict[str, tuple[str, float, float]]:
    """safe step name -> (test, started, ended)."""
    out = {}
    for s in run.iter_steps():
        a, b = s.get("started"), s.get("ended")
        if isinstance(a, int | float) and isinstance(b, int | float) and b > a:
            out[safe_name(str(s.get("step")))] = (str(s.get("test")), float(a), float(b))
    return out


_FLOW_KEYS = ("client", "server", "client_rail", "server_rail", "rail", "direction", "host", "stream")


def interval_flows(run: RunDir, tests: set[str]) -> dict[tuple[str, str], dict[tuple[Any, ...], list[dict[str, Any]]]]:
    """(test, safe step) -> flow labels -> the tool's interval samples (non-omitted, with Gbit/s)."""
    out: dict[tuple[str, str], dict[tuple[Any, ...], list[dict[str, Any]]]] = {}
    path = run.path / "samples.jsonl"
    for rec in _jsonl(path) if path.is_file() else []:
        if rec.get("kind") != "interval" or rec.get("test") not in tests or rec.get("omitted"):
            continue
        if not isinstance(rec.get("bw_avg_gbps"), int | float) or not isinstance(rec.get("t_start_s"), int | float):
            continue
        flow = tuple((k, rec.get(k)) for k in _FLOW_KEYS if rec.get(k) is not None)
        out.setdefault((str(rec["test"]), safe_name(str(rec.get("step")))), {}).setdefault(flow, []).append(rec)
    return out


def _rows_of(recs: Sequence[Mapping[str, Any]]) -> list[tuple[float, float, float]]:
    """(start, end, Gbit/s): a missing end is the next start (or the median spacing)."""
    recs = sorted(recs, key=lambda r: (float(r["t_start_s"]), float(r.get("t_offset_s") or 0.0)))
    starts = [float(r["t_start_s"]) + float(r.get("t_offset_s") or 0.0) for r in recs]
    gaps = sorted(b - a for a, b in itertools.pairwise(starts) if b > a)
    step = gaps[len(gaps) // 2] if gaps else 1.0
    out = []
    for i, (r, a) in enumerate(zip(recs, starts, strict=True)):
        end = r.get("t_end_s")
        b = float(end) + float(r.get("t_offset_s") or 0.0) if isinstance(end, int | float) else (
            starts[i + 1] if i + 1 < len(starts) and starts[i + 1] > a else a + step)
        out.append((a, b, float(r["bw_avg_gbps"])))
    return out


def _flow_owner(flow: tuple[tuple[str, Any], ...]) -> tuple[str, str | None, str]:
    labels = dict(flow)
    host = str(labels.get("client") or labels.get("host") or labels.get("server") or "?")
    rail = labels.get("client_rail") or labels.get("rail")
    who = f"{labels['client']} → {labels['server']}" if "client" in labels and "server" in labels else host
    if labels.get("client_rail"):
        who = f"{labels['client']}.{labels['client_rail']} → {labels.get('server')}.{labels.get('server_rail')}"
    if labels.get("direction"):
        who += f" ({labels['direction']})"
    return host, str(rail) if rail else None, who


def _degradation(test: str, step: str, seconds: float, rows: list[tuple[float, float, float]], host: str,
                 rail: str | None, who: str, limits: Mapping[str, Any], source: str) -> LoadRow:
    bound = float(limits["degradation"])
    bad = str(limits.get("status", "fail"))
    got = load.thirds(rows)
    if got is None:
        return LoadRow(test, step, host, rail, "degradation", "info", None, bound,
                       f"{who}: {len(rows)} {source} over {seconds:.0f} s: too few per third to judge")
    status = bad if got.drop > bound * (1 + 1e-9) else "pass"
    cmp = ">" if status != "pass" else "≤"
    return LoadRow(test, step, host, rail, "degradation", status, got.drop, bound,
                   f"{who}: last third {got.last_gbps:.4g} Gbit/s vs first third {got.first_gbps:.4g} Gbit/s "
                   f"({got.drop:+.1%} lost, {source}, {got.n_first}+{got.n_last} intervals of {got.seconds:.0f} s) "
                   f"{cmp} limit {bound:.1%}")


def load_rows(run: RunDir, info: Mapping[str, Any] | None = None) -> list[LoadRow]:
    """Every load limit of every test judged per step and host (and rail)."""
    info = info if info is not None else run.run_info()
    limits = {t: lim for t, lim in limits_by_test(info).items() if any(k in lim for k in load.LOAD_LIMITS)}
    if not limits:
        return []
    times = {k: v for k, v in _step_times(run).items() if v[0] in limits}
    flows = interval_flows(run, set(limits)) if any("degradation" in v for v in limits.values()) else {}
    cache: dict[str, dict[str, list[RailPoint]]] = {}

    def series() -> dict[str, list[RailPoint]]:
        if "s" not in cache:
            cache["s"] = rail_series(run)
        return cache["s"]

    out: list[LoadRow] = []
    for step, (test, started, ended) in sorted(times.items()):
        lim = limits[test]
        seconds = ended - started
        if "degradation" in lim:
            sustained = float(lim.get("sustained_s", load.DEFAULT_SUSTAINED_S))
            mine = flows.get((test, step), {})
            if seconds < sustained:
                out.append(LoadRow(test, step, "*", None, "degradation", "info", None, float(lim["degradation"]),
                                   f"step of {seconds:.0f} s is shorter than sustained_s {sustained:g} s: not judged"))
            elif mine:
                for flow, recs in sorted(mine.items(), key=lambda kv: str(kv[0])):
                    host, rail, who = _flow_owner(flow)
                    out.append(_degradation(test, step, seconds, _rows_of(recs), host, rail, who, lim,
                                            "tool interval samples"))
            else:
                out += _series_degradation(test, step, started, ended, series(), lim)
        out += _heat_rows(run, test, step, seconds, lim)
        if "throttle" in lim:
            out += _throttle_rows(run, test, step, lim)
    return out + [LoadRow(*row) for row in cpu.judge(run, limits)]


def _series_degradation(test: str, step: str, started: float, ended: float, series: Mapping[str, list[RailPoint]],
                        lim: Mapping[str, Any]) -> list[LoadRow]:
    out = []
    for who, pts in sorted(series.items()):
        mine = [(p.t - p.seconds / 2, p.t + p.seconds / 2, p.gbps) for p in pts
                if started - 1 <= p.t <= ended + 1 and p.gbps is not None]
        if not mine:
            continue
        host, rail = split_endpoint(who)
        out.append(_degradation(test, step, ended - started, [(a, b, float(v)) for a, b, v in mine], host,
                                rail, who, lim, "counter series"))
    if not out:
        out.append(LoadRow(test, step, "*", None, "degradation", "info", None, float(lim["degradation"]),
                           "no interval samples: the tool printed none and counters_interval is off; not judged"))
    return out


def _heat_rows(run: RunDir, test: str, step: str, seconds: float, lim: Mapping[str, Any]) -> list[LoadRow]:
    wanted = [k for k in ("temp_peak_c", "temp_slope_c_per_min") if k in lim]
    if not wanted:
        return []
    bad = str(lim.get("status", "fail"))
    out = []
    temps = temperatures(run, step)
    for host, sensors in sorted(temps.items()):
        found = load.heat(sensors)
        if not found:
            continue
        if "temp_peak_c" in lim:
            hot = max(found, key=lambda h: h.peak_c)
            bound = float(lim["temp_peak_c"])
            status = bad if hot.peak_c > bound else "pass"
            out.append(LoadRow(test, step, host, None, "temp_peak_c", status, hot.peak_c, bound,
                               f"{host}: hottest {hot.kind} sensor {hot.sensor} peaked at {hot.peak_c:.1f} °C "
                               f"({'>' if status != 'pass' else '≤'} limit {bound:g} °C)"))
        if "temp_slope_c_per_min" in lim:
            bound = float(lim["temp_slope_c_per_min"])
            sloped = [h for h in found if h.slope_c_per_min is not None and h.n >= 3]
            span = max((pts[-1][0] - pts[0][0] for pts in sensors.values() if pts), default=0.0)
            if not sloped or span < min(float(lim.get("sustained_s", load.DEFAULT_SUSTAINED_S)), 60.0):
                out.append(LoadRow(test, step, host, None, "temp_slope_c_per_min", "info", None, bound,
                                   f"{host}: temperatures over {span:.0f} s: too short for a slope; not judged"))
                continue
            steep = max(sloped, key=lambda h: h.slope_c_per_min or 0.0)
            slope = steep.slope_c_per_min or 0.0
            status = bad if slope > bound else "pass"
            out.append(LoadRow(test, step, host, None, "temp_slope_c_per_min", status, slope, bound,
                               f"{host}: {steep.kind} sensor {steep.sensor} rose {slope:+.2f} °C/min "
                               f"({steep.first_c:.1f} → {steep.last_c:.1f} °C, least squares over {steep.n} "
                               f"readings) {'>' if status != 'pass' else '≤'} limit {bound:g} °C/min"))
    return out


def _throttle_rows(run: RunDir, test: str, step: str, lim: Mapping[str, Any]) -> list[LoadRow]:
    """Clock throttle reasons of the step (``telemetry/gpu/<step>/<host>.json``, written by
    ``telemetry/gpu_step.py``: ``{"gpus": [{"gpu": id, "active": [reason ...]}], "source": ...}``);
    the value is the number of GPUs throttled."""
    folder = run.path / "telemetry" / "gpu" / step
    mode = str(lim["throttle"])
    bad = str(lim.get("status", "fail"))
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        gpus = data.get("gpus") if isinstance(data, Mapping) else None
        if isinstance(data, Mapping) and data.get("error"):  # the tool answered nothing: said, not judged
            out.append(LoadRow(test, step, path.stem, None, "throttle", "info", None, 0.0,
                               f"{path.stem}: clock throttle state not read ({data.get('source', 'GPU tool')}: "
                               f"{data['error']}); not judged"))
            continue
        if not isinstance(gpus, list) or not gpus:
            continue
        hits = [(str(g.get("gpu")), r) for g in gpus if isinstance(g, Mapping)
                for r in load.throttled([str(x) for x in g.get("active") or []], mode)]
        status = bad if hits else "pass"
        hot = {g for g, _ in hits}
        text = "; ".join(f"GPU {g}: {r}" for g, r in hits[:6]) or f"no {'thermal ' if mode == 'thermal' else ''}" \
            f"throttle reason active on {len(gpus)} GPU(s)"
        out.append(LoadRow(test, step, path.stem, None, "throttle", status, float(len(hot)), 0.0,
                           f"{path.stem}: {text} ({data.get('source', 'GPU tool')}, throttle: {mode})"))
    if not out:
        out.append(LoadRow(test, step, "*", None, "throttle", "info", None, 0.0,
                           "no clock throttle reasons read (no nvidia-smi / amd-smi on the hosts); not judged"))
    return out


def load_verdicts(rows: Sequence[LoadRow]) -> list[Verdict]:
    """One verdict per test, host, rail and limit: the worst step decides and is named."""
    groups: dict[tuple[str, str, str | None, str], list[LoadRow]] = {}
    for r in rows:
        groups.setdefault((r.test, r.host, r.rail, r.limit), []).append(r)
    out = []
    for (test, host, rail, _), mine in groups.items():
        worst = min(mine, key=lambda r: (_ORDER.get(r.status, 9), -(r.value or 0.0)))
        judged = [r for r in mine if r.status != "info"]
        bad = [r for r in judged if r.status in ("fail", "warn")]
        head = (f"over the limit in {len(bad)} of {len(judged)} steps; worst step {worst.step}: " if bad else
                f"within the limit in all {len(judged)} steps; highest step {worst.step}: " if judged else "")
        out.append(Verdict(worst.check, worst.status, head + worst.message, host=None if host == "*" else host,
                           test=test, value=worst.value, limit=worst.bound, rail=rail))
    return sorted(out, key=lambda v: (v.test or "", v.host or "", v.rail or "", v.check))
