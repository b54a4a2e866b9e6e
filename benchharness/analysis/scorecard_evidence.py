"""What each run measured for each scorecard criterion, read from its run directory.

The samples (the comparison's tidy frame) give bandwidth, message and packet rate, latency,
collectives and framework figures: per criterion the case (test, size ...) with the best median,
among the cases most runs measured. The run directory gives the rest through the one reader of
each: CPU cost (``results/cpu.py``), fabric health (``results/health.py``: a limit whose counter
the driver lacks is "not exposed by <driver>"), temperatures and throttling
(``results/fabric.py``), PCIe headroom (the stored probe facts judged by ``host_checks``),
measured power (sample metrics ending in ``power_w``), price (one NIC with its optics,
``nic_cost.inventory_price``, else inventory ``price_usd``) and the training projection (``analysis/projection.py``'s rows).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.analysis.nic_cost import inventory_price
from benchharness.analysis.projection import too_wide
from benchharness.analysis.scorecard import Absent, Criterion, Figure
from benchharness.results import runview
from benchharness.results.store import RunDir

if TYPE_CHECKING:
    import pandas as pd

Evidence = dict[str, dict[str, Figure | Absent]]

#: (key, title, unit, higher is better, metrics in order of preference, which tests qualify)
SAMPLE_CRITERIA: tuple[tuple[str, str, str, bool, tuple[str, ...], str], ...] = (
    ("bw_uni", "Bandwidth, one direction (best case per NIC)", "Gbit/s", True, ("bw_avg_gbps",), "uni"),
    ("bw_bidir", "Bandwidth, both directions", "Gbit/s", True, ("bw_avg_gbps",), "bidir"),
    ("bw_sustained", "Bandwidth, sustained (soak)", "Gbit/s", True, ("bw_avg_gbps",), "soak"),
    ("msg_rate", "Message rate", "Mpps", True, ("msg_rate_mpps",), "any"),
    ("pkt_rate", "Packet rate", "Mpps", True, ("pkt_rate_mpps",), "any"),
    ("lat_typical", "Latency, typical", "µs", False, ("lat_typical_us", "lat_p50_us", "lat_avg_us"), "idle"),
    ("lat_p99", "Latency, p99", "µs", False, ("lat_p99_us",), "idle"),
    ("lat_p999", "Latency, p99.9", "µs", False, ("lat_p999_us",), "idle"),
    ("lat_load", "Latency under load, p99", "µs", False, ("lat_p99_us", "lat_typical_us", "lat_avg_us"), "load"),
)
HEALTH_FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("health_pauses", "Fabric health: pause share", ("pause_share",)),
    ("health_retrans", "Fabric health: retransmissions per M packets", ("retrans_per_mpkt",)),
    ("health_errors", "Fabric health: discards and errors", ("discards_per_mpkt", "out_of_buffer_per_mpkt",
                                                             "symbol_errors", "fec_uncorrected", "pcie_errors")),
    ("health_flaps", "Fabric health: link flaps", ("link_flaps",)),
    ("health_ber", "Fabric health: pre-FEC BER", ("pre_fec_ber",)),
)
_NOT_EXPOSED = re.compile(r"not exposed by (.+?);")
_EXCLUDED_KINDS = ("load", "process", "interval")


def _tests(info: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    suite = info.get("suite")
    tests = suite.get("tests") if isinstance(suite, Mapping) else None
    return {str(t.get("name")): t for t in tests or [] if isinstance(t, Mapping)}


def _test_kind(name: str, spec: Mapping[str, Any], suite_name: str) -> set[str]:
    """The classes a test's samples fall in: soak, load (latency under bulk load), bidir."""
    params: Mapping[str, Any] = spec.get("params") or {} if isinstance(spec.get("params"), Mapping) else {}
    health: Mapping[str, Any] = spec.get("health") or {} if isinstance(spec.get("health"), Mapping) else {}
    out = set()
    if "soak" in name or "soak" in suite_name or any(k in health for k in ("degradation", "sustained_s")):
        out.add("soak")
    if params.get("load_streams") or params.get("load") or params.get("mode") == "under-load":
        out.add("load")
    if params.get("bidir") is True:
        out.add("bidir")
    return out


def _qualifies(which: str, kinds: set[str], bidir_row: bool) -> bool:
    bidir = bidir_row or "bidir" in kinds
    return {"uni": not bidir and "soak" not in kinds and "load" not in kinds,
            "bidir": bidir and "soak" not in kinds, "soak": "soak" in kinds,
            "idle": "load" not in kinds, "load": "load" in kinds, "any": True}[which]


def _cards(rows: pd.DataFrame) -> int:
    """Hosts or rail pairs behind a case: distinct (server, client, rail) ends, else hosts in a group."""
    ends = [c for c in ("endpoints", "server", "client", "pair", "rail") if c in rows and rows[c].notna().any()]
    if ends:
        return int(rows[ends].astype(str).drop_duplicates().shape[0])
    if "hosts" in rows and rows["hosts"].notna().any():
        return max(len(str(h).split(",")) for h in rows["hosts"].dropna())
    return 1


def _reps(rows: pd.DataFrame) -> int:
    return int(rows["rep"].nunique()) if "rep" in rows and rows["rep"].notna().any() else len(rows)


def _best_cases(df: pd.DataFrame, labels: Sequence[str], keys: Sequence[str], metric: str,
                higher: bool) -> dict[str, tuple[str, pd.DataFrame]]:
    """Per run: (case text, its rows) of the case with the best median, among the cases the most
    runs measured (so that runs are compared on the same test wherever they can be)."""
    if df.empty:
        return {}
    cols = [k for k in keys if k in df]
    groups = list(df.groupby(cols, dropna=False, sort=False)) if cols else [((), df)]
    runs_per_case = [(key, sub, set(sub["run"])) for key, sub in groups]
    most = max(len(r) for _, _, r in runs_per_case)
    out: dict[str, tuple[str, pd.DataFrame]] = {}
    for lab in labels:
        mine = [(key, sub[sub["run"] == lab]) for key, sub, r in runs_per_case if lab in r]
        common = [(k, s) for k, s in mine if any(k == k2 for k2, _, r in runs_per_case if len(r) == most)]
        pool = common or mine
        if not pool:
            continue
        key, rows = (max if higher else min)(pool, key=lambda ks: float(ks[1][metric].median()))
        key = key if isinstance(key, tuple) else (key,)
        out[lab] = (_case_text(dict(zip(cols, key, strict=True))), rows)
    return out


def _case_text(case: Mapping[str, Any]) -> str:
    from benchharness.core.units import format_size

    parts = [str(case.get("test") or "")]
    for k, v in case.items():
        if k in ("test", "tool", "pattern") or v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        parts.append(format_size(int(v)) if k == "size_bytes" else f"{k}={v}")
    return " ".join(p for p in parts if p)


def _figure(rows: pd.DataFrame, metric: str, source: str, verdict: str = "") -> Figure:
    values = tuple(float(v) for v in rows[metric].dropna())
    return Figure(values, _cards(rows), _reps(rows), verdict, source)


def sample_evidence(df: pd.DataFrame, labels: Sequence[str], keys: Sequence[str],
                    infos: Sequence[Mapping[str, Any]]) -> tuple[list[Criterion], Evidence]:
    """Bandwidth, rates, latency, collectives (per collective and host count) and framework step times."""
    import numpy as np

    criteria: list[Criterion] = []
    evidence: Evidence = {}
    if df.empty or "test" not in df:
        return criteria, evidence
    if "kind" in df:
        df = df[~df["kind"].isin(_EXCLUDED_KINDS)]
    kinds: dict[tuple[str, str], set[str]] = {}
    for lab, info in zip(labels, infos, strict=True):
        suite = info.get("suite")
        suite_name = str(suite.get("name", "")) if isinstance(suite, Mapping) else str(suite or "")
        for name, spec in _tests(info).items():
            kinds[(lab, name)] = _test_kind(name, spec, suite_name)
    bidir_col = df["bidir"].astype(str).str.lower().eq("true") if "bidir" in df else None
    collective = df["busbw_GBps"].notna() if "busbw_GBps" in df else None
    for key, title, unit, higher, metrics, which in SAMPLE_CRITERIA:
        metric = next((m for m in metrics if m in df and df[m].notna().any()), None)
        criteria.append(Criterion(key, title, unit, higher))
        if metric is None:
            continue
        mask = df[metric].notna()
        if collective is not None:
            mask &= ~collective
        bidir = bidir_col if bidir_col is not None else [False] * len(df)
        ok = [_qualifies(which, kinds.get((r, t), set()), bool(b))
              for r, t, b in zip(df["run"], df["test"], bidir, strict=True)]
        sub = df[mask.to_numpy() & np.asarray(ok, dtype=bool)]
        evidence[key] = {lab: _figure(rows, metric, src)
                         for lab, (src, rows) in _best_cases(sub, labels, keys, metric, higher).items()}
    if collective is not None and collective.any():
        c, e = _collectives(df[collective], labels, keys)
        criteria += c
        evidence.update(e)
    if "step_ms" in df and df["step_ms"].notna().any():
        for test, sub in df[df["step_ms"].notna()].groupby("test", sort=False):
            key = f"framework:{test}"
            criteria.append(Criterion(key, f"Framework: {test} step time", "ms", False))
            evidence[key] = {lab: _figure(rows, "step_ms", src)
                             for lab, (src, rows) in _best_cases(sub, labels, keys, "step_ms", False).items()}
    return criteria, evidence


def _host_count(rows: pd.DataFrame) -> pd.Series:
    if "nhosts" in rows and rows["nhosts"].notna().any():
        return rows["nhosts"]
    return rows["hosts"].map(lambda h: len(str(h).split(",")) if isinstance(h, str) else None) \
        if "hosts" in rows else rows["test"].map(lambda _: None)


def _collectives(df: pd.DataFrame, labels: Sequence[str], keys: Sequence[str]) -> tuple[list[Criterion], Evidence]:
    """One row per collective and host count: the best busbw over message sizes."""
    criteria: list[Criterion] = []
    evidence: Evidence = {}
    df = df.assign(_nhosts=_host_count(df))
    name = df["collective"].fillna(df["test"]) if "collective" in df else df["test"]
    for (coll, hosts), sub in df.assign(_coll=name).groupby(["_coll", "_nhosts"], dropna=False, sort=True):
        where = f", {int(hosts)} hosts" if isinstance(hosts, int | float) and not math.isnan(hosts) else ""
        key = f"busbw:{coll}{where}"
        criteria.append(Criterion(key, f"Collective busbw: {coll}{where}", "GB/s", True))
        evidence[key] = {lab: _figure(rows, "busbw_GBps", src)
                         for lab, (src, rows) in _best_cases(sub, labels, keys, "busbw_GBps", True).items()}
    return criteria, evidence


def _worst(statuses: Sequence[str]) -> str:
    for s in ("fail", "warn", "pass", "info"):
        if s in statuses:
            return s
    return ""


def health_evidence(run: RunDir, info: Mapping[str, Any]) -> dict[str, Figure | Absent]:
    """Per health family: the worst value over steps and rails, the worst verdict, or why none."""
    from benchharness.results import health

    rows = health.rows(run, info)
    out: dict[str, Figure | Absent] = {}
    for key, _, limits in HEALTH_FAMILIES:
        mine = [r for r in rows if r.judged.limit in limits]
        if not mine:
            continue
        valued = [r for r in mine if r.judged.value is not None]
        hidden = sorted({m.group(1) for r in mine if r.judged.value is None
                         for m in [_NOT_EXPOSED.search(r.judged.message)] if m})
        if not valued:
            out[key] = Absent(f"not exposed by {', '.join(hidden)}" if hidden else "not judged: "
                              + mine[0].judged.message)
            continue
        ends = {(r.host, r.rail) for r in valued}
        steps = {r.step for r in valued}
        rails = {(r.host, r.rail) for r in mine}
        source = f"not exposed on {len(rails) - len(ends)} of {len(rails)} rails" if len(ends) < len(rails) else ""
        worst = max(float(r.judged.value or 0.0) for r in valued)
        out[key] = Figure(tuple(float(r.judged.value or 0.0) for r in valued), len(ends), len(steps),
                          _worst([r.judged.status for r in valued]), source, value=worst)
    return out


def cpu_evidence(run: RunDir, info: Mapping[str, Any]) -> Figure | None:
    """CPU cores busy per 100 Gbit/s moved (CPU-s per GB x 100/8), per host, rail and step."""
    from benchharness.results import cpu
    from benchharness.results.health import limits_by_test

    rows = [r for r in cpu.cpu_rows(run) if r.cost.cpu_s_per_gb is not None]
    if not rows:
        return None
    verdict = _worst([r.status for r in cpu.judge(run, limits_by_test(info)) if r.status != "info"])
    ends = {(r.host, r.rail) for r in rows}
    return Figure(tuple(float(r.cost.cpu_s_per_gb or 0.0) * 100 / 8 for r in rows), len(ends),
                  max(1, len(rows) // max(len(ends), 1)), verdict, "host CPU per NIC byte counters")


def thermal_evidence(run: RunDir, info: Mapping[str, Any]) -> Figure | None:
    """The hottest sampler temperature per host; the verdict of temperature and throttle limits."""
    from benchharness.results import fabric

    temps = runview.max_temperatures(run)
    limits = ("temp_peak_c", "temp_slope_c_per_min", "throttle")
    judged = [r for r in fabric.load_rows(run, info) if r.limit in limits]
    if not temps and not judged:
        return None
    throttled = [r for r in judged if r.limit == "throttle" and r.status in ("fail", "warn")]
    source = f"throttled on {len({r.host for r in throttled})} hosts" if throttled else ""
    steps = run.path / "telemetry" / "samples"
    reps = max(1, sum(1 for p in steps.iterdir() if p.is_dir())) if steps.is_dir() else 1
    values = tuple(temps.values())
    return Figure(values, len(temps), reps, _worst([r.status for r in judged if r.status != "info"]), source,
                  value=max(values) if values else None)


def pcie_evidence(run: RunDir, info: Mapping[str, Any]) -> Figure | Absent | None:
    """PCIe headroom: the slot's usable bandwidth over the NIC's line rate, the tightest rail."""
    found = [f for f in runview.judge_stored_facts(run, info) if f.check == "pcie_bandwidth"]
    if not found:
        return None
    valued = [f for f in found if f.value is not None and f.limit]
    if not valued:
        return Absent(f"not available: {found[0].message}")
    ratios = tuple(float(f.value or 0.0) / float(f.limit or 1.0) for f in valued)
    return Figure(ratios, len(valued), 1, _worst([f.status for f in valued]), "slot usable / line rate",
                  value=min(ratios))


def power_evidence(run: RunDir, df: pd.DataFrame, lab: str, bandwidth: Figure | Absent | None
                   ) -> tuple[Figure | None, Figure | None]:
    """Measured power and energy per TB moved (Wh/TB): the BMC readings the run stored
    (``results/power.run_power``), else sample metrics ending ``power_w`` with the one-direction
    bandwidth; None where the run has neither."""
    from benchharness.results.power import run_power

    bmc = run_power(run)
    if "node_power_w" in bmc:
        hosts, steps = int(bmc.get("power_hosts") or 0), int(bmc.get("power_steps") or 0)
        watts = Figure((), hosts, steps, "", "BMC node power, mean over steps", value=float(bmc["node_power_w"]))
        per_tb = bmc.get("energy_per_tb_wh")
        energy = Figure((), hosts, steps, "", "BMC energy over data moved", value=float(per_tb)) \
            if per_tb is not None else None
        return watts, energy
    cols = [c for c in df.columns if str(c).endswith("power_w")] if not df.empty else []
    rows = df[df["run"] == lab] if cols else df
    col = next((c for c in cols if rows[c].notna().any()), None)
    if col is None:
        return None, None
    power = _figure(rows[rows[col].notna()], col, col)
    if not isinstance(bandwidth, Figure) or not bandwidth.values:
        return power, None
    import statistics

    gbps = statistics.median(bandwidth.values)
    wh = tuple(w * 8000 / gbps / 3600 for w in power.values) if gbps > 0 else ()
    return power, Figure(wh, power.cards, power.reps, "", f"{col} over {bandwidth.source}")


def price_evidence(info: Mapping[str, Any]) -> Figure | None:
    """The price of one NIC with its optics (``nic_cost.inventory_price``: ``nic_price_usd`` plus
    ``optics_per_nic`` x ``optic_price_usd``, the projection's figure), else the inventory's
    ``price_usd``, of the run's hosts."""
    inv = runview.inventory_hosts(info)
    used = [h for h in runview.run_host_names(info) if h in inv] or list(inv)
    price, source = inventory_price(info)
    if price is not None and price > 0:
        return Figure((price,), len(used), 1, "", source, value=price)
    prices = [float(inv[h]["price_usd"]) for h in used if _positive(inv[h].get("price_usd"))]
    if prices:
        return Figure(tuple(prices), len(prices), 1, "", "inventory price_usd", value=sum(prices) / len(prices))
    return None


def _positive(value: Any) -> bool:
    try:
        return float(value) > 0
    except (TypeError, ValueError):
        return False


def projection_evidence(rows: Sequence[Mapping[str, Any]]) -> dict[str, Figure]:
    """Projected training days per run; the difference's interval decides (``projection.too_wide``)."""
    base = next((r for r in rows if r.get("baseline")), None)
    out = {}
    for r in rows:
        reps = int(r.get("repeats") or 0)
        low = high = None
        wide = False
        if base is not None and "delta_days_low" in r:
            d_lo, d_hi = sorted((float(r["delta_days_low"]), float(r["delta_days_high"])))
            longer = float(r.get("delta_days") or 0.0) >= 0
            a, b = sorted((d_lo, d_hi) if longer else (-d_hi, -d_lo))
            wide = too_wide(a, b)
            low, high = float(base["days"]) + d_lo, float(base["days"]) + d_hi
        out[str(r["run"])] = Figure((), 0, max(reps, 1), "", "all-reduce curve", value=float(r["days"]),
                                    low=low, high=high, wide=wide)
    return out


def run_evidence(runs: Sequence[RunDir], infos: Sequence[Mapping[str, Any]], labels: Sequence[str],
                 df: pd.DataFrame, keys: Sequence[str], projection_rows: Sequence[Mapping[str, Any]]
                 ) -> tuple[list[Criterion], Evidence]:
    """Every criterion's evidence, in the scorecard's row order."""
    criteria, evidence = sample_evidence(df, labels, keys, infos)
    bw = evidence.get("bw_uni", {})
    per_run: list[tuple[Criterion, Callable[[RunDir, Mapping[str, Any], str], Figure | Absent | None]]] = [
        (Criterion("cpu", "CPU cost (cores busy per 100 Gbit/s)", "cores", False),
         lambda r, i, lab: cpu_evidence(r, i)),
        *((Criterion(k, t, "", False, count=True),
           lambda r, i, lab, k=k: health_evidence(r, i).get(k)) for k, t, _ in HEALTH_FAMILIES),
        (Criterion("thermal", "Thermals and throttling (hottest sensor)", "°C", False, count=True),
         lambda r, i, lab: thermal_evidence(r, i)),
        (Criterion("pcie", "PCIe headroom (usable / line rate, tightest rail)", "×", True, count=True),
         lambda r, i, lab: pcie_evidence(r, i)),
        (Criterion("power", "Measured power", "W", False), lambda r, i, lab: power_evidence(r, df, lab, bw.get(lab))[0]),
        (Criterion("energy", "Energy per TB moved", "Wh/TB", False),
         lambda r, i, lab: power_evidence(r, df, lab, bw.get(lab))[1]),
        (Criterion("price", "Price (inventory)", "USD", False, count=True), lambda r, i, lab: price_evidence(i)),
    ]
    health_cache: dict[str, dict[str, Figure | Absent]] = {}
    for crit, get in per_run:
        criteria.append(crit)
        evidence[crit.key] = {}
        for run, info, lab in zip(runs, infos, labels, strict=True):
            if crit.key.startswith("health_"):
                if lab not in health_cache:
                    health_cache[lab] = health_evidence(run, info)
                got = health_cache[lab].get(crit.key)
            else:
                got = get(run, info, lab)
            if got is not None:
                evidence[crit.key][lab] = got
    criteria.append(Criterion("usd_per_gbps", "Price per Gbit/s (one direction)", "USD/(Gbit/s)", False, count=True))
    evidence["usd_per_gbps"] = {}
    for lab, price in evidence.get("price", {}).items():
        got = bw.get(lab)
        if isinstance(price, Figure) and isinstance(got, Figure) and got.values and price.value:
            import statistics

            evidence["usd_per_gbps"][lab] = Figure(got.values, got.cards, got.reps, "", price.source,
                                                   value=price.value / statistics.median(got.values))
    criteria.append(Criterion("projection", "Training projection (days)", "days", False))
    evidence["projection"] = dict(projection_evidence(projection_rows))
    return criteria, evidence
