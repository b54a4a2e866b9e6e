"""Compare runs (procurement: NIC A vs NIC B, firmware X vs Y) case by case.

A *cell* is one test, case (``results.cases``, without host names), message size and metric. In
each cell every run contributes its summary samples (repetitions × host pairs). Per cell: each
run's median and 95 % CI, its ratio to the first run (the baseline) with the 95 % interval of a
Welch t-test on log values (``stats.ratio_test``), and a decision: ``different``, ``equivalent``
(within the practical threshold, default 2 %) or "not enough repetitions to decide". The winner
of a cell is the best run when it is different from (and better than) every other run. Cells roll
up into size bands (small <= 64K, medium <= 1M, large), whose combined ratio and interval give
the plain verdict sentences a review reads first (``sentences``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchharness import tools
from benchharness.analysis import frames as analysis
from benchharness.analysis import nic_cost, projection, scorecard, scorecard_evidence, sentences, stats
from benchharness.config.workloads import Workload, load_workload
from benchharness.core.metrics import gbps_factor, higher_is_better
from benchharness.results import runview
from benchharness.results.store import RunDir

if TYPE_CHECKING:
    import pandas as pd

SMALL, MEDIUM = 64 * 1024, 1024 * 1024
DEFAULT_WORKLOAD = "llama-70b-1024"
HEADLINE = (("bw_avg_gbps", "busbw_GBps", "msg_rate_mpps", "bw_sent_gbps"),
            ("lat_typical_us", "lat_p50_us", "lat_avg_us"),
            ("lat_p99_us",), ("loss_pct",))


def size_band(size: Any) -> str:
    """``small`` (<= 64K), ``medium`` (<= 1M), ``large``, or ``all`` without a size."""
    try:
        value = float(size)
    except (TypeError, ValueError):
        return "all"
    if math.isnan(value):
        return "all"
    return "small" if value <= SMALL else "medium" if value <= MEDIUM else "large"


def headline_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics a reviewer reads first: one bandwidth, one typical latency, p99, loss."""
    chosen = []
    for options in HEADLINE:
        for name in options:
            if name in metrics:
                chosen.append(name)
                break
    return chosen or list(metrics[:2])


@dataclass
class Comparison:
    """Result of ``compare``: per-cell and per-band tables plus context for reviewers."""

    runs: list[dict[str, Any]]
    labels: list[str]
    keys: list[str]
    cells: pd.DataFrame
    bands: pd.DataFrame
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    cost: list[dict[str, Any]] = field(default_factory=list)
    noise: list[dict[str, Any]] = field(default_factory=list)
    threshold: float = stats.EQUIVALENCE
    statements: list[dict[str, Any]] = field(default_factory=list)
    #: The workload projection (``analysis.projection.comparison_projection``); empty without an all-reduce curve.
    projection: dict[str, Any] = field(default_factory=dict)
    #: The procurement scorecard: one row per criterion (``analysis.scorecard``).
    scorecard: list[scorecard.Row] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.labels[0] if self.labels else ""

    def headline(self) -> list[dict[str, Any]]:
        """Band rows for headline metrics: what the reviewer summary shows."""
        if self.bands.empty:
            return []
        rows = self.bands[self.bands["headline"]]
        return [_clean(r) for r in rows.to_dict("records")]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN becomes null)."""
        return {
            "baseline": self.baseline, "runs": [_clean(r) for r in self.runs],
            "keys": self.keys,
            "summary": self.headline(),
            "bands": [_clean(r) for r in self.bands.to_dict("records")],
            "cells": [_clean(r) for r in self.cells.to_dict("records")],
            "verdicts": [_clean(v) for v in self.verdicts],
            "telemetry_warnings": [_clean(w) for w in self.warnings],
            "cost": [_clean(c) for c in self.cost], "noise": [_clean(n) for n in self.noise],
            "method": stats.METHOD, "equivalence_threshold": self.threshold,
            "statements": [_clean(s) for s in self.statements],
            "projection": {k: v for k, v in self.projection.items() if k != "series"},
            "scorecard": [r.to_dict() for r in self.scorecard],
        }


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if hasattr(v, "item") and not isinstance(v, str | bytes):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[str(k)] = v
    return out


def _host_like(series: pd.Series, hostnames: set[str]) -> bool:
    values = {str(v) for v in series.dropna().unique()[:200]}
    if not values or not hostnames:
        return False
    return all(set(runview.split_hosts(v, hostnames)) <= hostnames and
               any(h in v for h in hostnames) for v in values)


def compare(runs: Sequence[RunDir], threshold: float = stats.EQUIVALENCE,
            workload: Workload | None = None) -> Comparison:
    """Compare runs; the first run is the baseline for ratios and tests. ``threshold``: ratios
    within 1 ± threshold are "equivalent" however small the p-value. ``workload``: what an
    all-reduce curve means for that training run (default ``llama-70b-1024``)."""
    import pandas as pd

    infos = [r.run_info() for r in runs]
    labels = analysis.run_label(infos, [runview.read_facts(r) for r in runs])  # firmware as probed
    frames = [analysis.load_samples(r, label=lab) for r, lab in zip(runs, labels, strict=True)]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    hostnames: set[str] = set()
    for info in infos:
        hostnames |= set(runview.inventory_hosts(info)) | set(runview.run_host_names(info))
    keys = [c for c in analysis.case_columns(df, hosts=False) if not _host_like(df[c], hostnames)] \
        if not df.empty else []
    judged = _without_restated(df) if not df.empty else df
    metrics = [m for m in analysis.metric_columns(judged) if not m.endswith(("_tool", "_line_rate_pct"))
               and judged[m].notna().any()] if not judged.empty else []
    cells, bands = _cells(judged, keys, metrics, labels, threshold) if metrics \
        else (pd.DataFrame(), pd.DataFrame())
    runs_meta = [_run_meta(r, info, lab) for r, info, lab in zip(runs, infos, labels, strict=True)]
    verdicts = [{"run": lab, **v} for info, lab in zip(infos, labels, strict=True)
                for v in info.get("verdicts") or [] if isinstance(v, Mapping)
                and str(v.get("status", "")).lower() in ("fail", "failed", "warn")]
    warnings = [{"run": lab, **w} for r, info, lab in zip(runs, infos, labels, strict=True)
                for w in runview.telemetry_warnings(r, info)]
    comp = Comparison(runs_meta, labels, keys, cells, bands, verdicts, warnings, threshold=threshold)
    if not cells.empty:
        comp.cost = _cost(cells, infos, labels)
        comp.noise = _noise(cells)
        comp.statements = sentences.band_statements(bands, labels, threshold) + \
            sentences.cost_statements(comp.cost)
        nics = {lab: nic_cost.run_nic_cost(r, info) for r, info, lab in zip(runs, infos, labels, strict=True)}
        comp.projection = projection.comparison_projection(cells, labels, workload or load_workload(DEFAULT_WORKLOAD),
                                                           nics)
        comp.statements = list(comp.projection.get("statements", [])) + comp.statements
    criteria, evidence = scorecard_evidence.run_evidence(runs, infos, labels, df, keys,
                                                         comp.projection.get("rows") or [])
    comp.scorecard = scorecard.score(labels, criteria, evidence, threshold)
    return comp


def _without_restated(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without the metrics a tool's records repeat from other fields (the adapter's
    ``restated_metrics``): one measured fact is judged once, not counted as two cells."""
    restated = tools.restated_metrics()
    if "tool" not in df or not restated:
        return df
    df = df.copy()
    for tool, names in restated.items():
        mine = df["tool"] == tool
        for name in sorted(names & set(df.columns)):
            df.loc[mine, name] = math.nan
    return df


def _run_meta(run: RunDir, info: Mapping[str, Any], label: str) -> dict[str, Any]:
    dims = analysis._dimensions(info)
    steps = run.steps()
    return {"label": label, "run_id": info.get("run_id", run.path.name), "path": str(run.path),
            "suite": dims["suite"], "started": info.get("started"), "ended": info.get("ended"),
            "state": info.get("state"), "exit_code": info.get("exit_code"),
            "hosts": ", ".join(runview.run_host_names(info)), "nic_model": dims["nic_model"],
            "nic_firmware": dims["nic_firmware"], "group": dims["group"],
            "steps_ok": sum(1 for s in steps if s.get("status") == "ok"),
            "steps_failed": sum(1 for s in steps if s.get("status") == "failed"),
            "failures": len(info.get("failures") or [])}


def _cells(df: pd.DataFrame, keys: list[str], metrics: list[str], labels: list[str],
           threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    import numpy as np
    import pandas as pd

    df = df.copy()
    if keys:
        df["_cell"] = df.groupby(keys, dropna=False, sort=True).ngroup()
    else:
        df["_cell"] = 0
    summary = analysis.summarize(df[["_cell", "run", *metrics]], by=["_cell", "run"])
    cell_keys = df.drop_duplicates("_cell").set_index("_cell")[keys]
    index = df.groupby(["_cell", "run"], sort=False).indices
    base = labels[0]
    arrays = {m: df[m].to_numpy(dtype=float, na_value=np.nan) for m in metrics}
    groups = []
    raw: dict[tuple[Any, ...], stats.RatioTest] = {}
    for (cell, metric), sub in summary.groupby(["_cell", "metric"], sort=True):
        higher = higher_is_better(str(metric))
        per_run = {r["run"]: r for r in sub.to_dict("records")}
        values = {lab: arrays[str(metric)][index[(cell, lab)]] for lab in per_run}
        values = {lab: v[~np.isnan(v)] for lab, v in values.items()}
        present = [lab for lab in labels if lab in per_run]
        best = (max if higher else min)(present, key=lambda lab: per_run[lab]["median"])
        pairs = [(base, lab) for lab in present if base in per_run and lab != base] + \
            [(o, best) for o in present if o != best]
        for a, b in pairs:
            raw.setdefault((cell, metric, a, b), stats.ratio_test(values[a], values[b], threshold=threshold))
        groups.append((cell, metric, higher, per_run, present, best))
    judged = _judge_pairs(raw, threshold)
    rows = []
    for cell, metric, higher, per_run, present, best in groups:
        others = [lab for lab in present if lab != best]
        verdict, margin = _winner(best, [judged[(cell, metric, o, best)] for o in others], per_run, higher)
        for lab in present:
            r = per_run[lab]
            test = judged.get((cell, metric, base, lab)) if lab != base else None
            ratio = test.ratio if test else (1.0 if lab == base else math.nan)
            rows.append({**{k: cell_keys.at[cell, k] for k in keys}, "metric": metric,
                         "unit": r["unit"], "run": lab, "n": int(r["n"]), "median": r["median"],
                         "ci95_low": r["ci95_low"], "ci95_high": r["ci95_high"], "cv": r["cv"],
                         "ratio": ratio,
                         "ratio_ci_low": test.ci_low if test else math.nan,
                         "ratio_ci_high": test.ci_high if test else math.nan,
                         "p_value": test.p_value if test else math.nan,
                         "q_value": test.q_value if test else math.nan,
                         "significant": bool(test and test.significant),
                         "decision": test.decision if test else "baseline",
                         "test_result": test.reason if test else "baseline",
                         "log_diff": test.log_diff if test else math.nan,
                         "log_se": test.log_se if test else math.nan,
                         "df": test.df if test else math.nan,
                         "n_baseline": test.n_baseline if test else int(r["n"]),
                         "winner": verdict if verdict in labels else None,
                         "cell_result": verdict, "winner_margin": margin,
                         "higher_is_better": higher})
    cells = pd.DataFrame(rows)
    cells["band"] = cells["size_bytes"].map(size_band) if "size_bytes" in cells else "all"
    return cells, _bands(cells, keys, labels, threshold)


def _judge_pairs(raw: Mapping[tuple[Any, ...], stats.RatioTest], threshold: float
                 ) -> dict[tuple[Any, ...], stats.RatioTest]:
    """Every test of a comparison decided as one family (``stats.judge_together``). A pair of
    runs in one cell is one test whichever way round it was asked (the p-value is the same)."""
    pair_of = {key: (key[0], key[1], frozenset(key[2:])) for key in raw}
    first: dict[tuple[Any, ...], stats.RatioTest] = {}
    for key, pair in pair_of.items():
        first.setdefault(pair, raw[key])
    q = dict(zip(first, stats.bh_adjust([t.p_value for t in first.values()]), strict=True))
    return {key: stats.rejudge(test, q[pair_of[key]], threshold=threshold) for key, test in raw.items()}


def _winner(best: str, results: Sequence[stats.RatioTest], per_run: Mapping[str, Any],
            higher: bool) -> tuple[str, float]:
    """The best run when different from (and better than) every other (``results``: each other
    run against it); else why there is none: ``equivalent`` or "not enough repetitions to
    decide (n = ...)"."""
    if not results:
        return "single run", math.nan
    undecided = [r for r in results if r.decision == "undecided"]
    if undecided:
        return undecided[0].reason, math.nan
    if not all(r.significant for r in results):
        return "equivalent", math.nan
    others = [lab for lab in per_run if lab != best]
    runner_up = (max if higher else min)(others, key=lambda lab: per_run[lab]["median"])
    a, b = per_run[best]["median"], per_run[runner_up]["median"]
    margin = (a / b if higher else b / a) if a and b else math.nan
    return best, margin


def _band_test(sub: pd.DataFrame, lab: str, threshold: float) -> stats.RatioTest:
    tests = [stats.RatioTest(int(r["n_baseline"]), int(r["n"]), float(r["ratio"]),
                             float(r["ratio_ci_low"]), float(r["ratio_ci_high"]),
                             float(r["p_value"]), str(r["decision"]), str(r["test_result"]),
                             float(r["log_diff"]), float(r["log_se"]), float(r["df"]))
             for r in sub[sub["run"] == lab].to_dict("records")]
    return stats.combine(tests, threshold=threshold)


def _bands(cells: pd.DataFrame, keys: list[str], labels: list[str], threshold: float) -> pd.DataFrame:
    import pandas as pd

    group = [k for k in keys if k != "size_bytes"] + ["band", "metric"]
    by_test = cells.groupby("test")["metric"].unique() if "test" in cells else None
    everything = headline_metrics(list(dict.fromkeys(cells["metric"])))
    base = labels[0]
    groups = [(gkey, sub, {lab: _band_test(sub, lab, threshold) for lab in labels[1:]
                           if (sub["run"] == lab).any() and (sub["run"] == base).any()})
              for gkey, sub in cells.groupby(group, dropna=False, sort=False)]
    # the bands' verdicts are claims of one comparison too: decided as one family
    flat = [(i, lab, test) for i, (_, _, tests) in enumerate(groups) for lab, test in tests.items()]
    for (i, lab, _), judged in zip(flat, stats.judge_together([t for _, _, t in flat], threshold=threshold),
                                   strict=True):
        groups[i][2][lab] = judged
    rows = []
    for gkey, sub, band_tests in groups:
        meta = dict(zip(group, gkey if isinstance(gkey, tuple) else (gkey,), strict=True))
        higher = bool(sub["higher_is_better"].iloc[0])
        per_cell = sub.drop_duplicates(subset=[c for c in [*keys, "metric"] if c in sub])
        results = per_cell["cell_result"].tolist()
        n_cells = len(results)
        ratios = {lab: (band_tests[lab].ratio if lab in band_tests else
                        (1.0 if lab == base and (sub["run"] == base).any() else math.nan))
                  for lab in labels}
        wins = {lab: results.count(lab) for lab in labels}
        winners = [lab for lab, w in wins.items() if w]
        win: str | None = None
        rival: str | None = None
        factor = math.nan
        if len(band_tests) == 1:  # two runs: the band's combined test decides
            other, test = next(iter(band_tests.items()))
            if test.significant:
                better_other = (test.ratio > 1) == higher
                win, rival = (other, base) if better_other else (base, other)
                factor = ratios[win] / ratios[rival] if ratios[rival] else math.nan
                way = "higher" if factor > 1 else "lower"
                verdict = f"{win} wins: {abs(factor - 1) * 100:.1f}% {way}"
            else:
                verdict = test.reason
            detail = f"{sum(1 for r in results if r in labels)} of {n_cells} cells different"
        elif len(winners) == 1 and wins[winners[0]] * 2 >= n_cells:
            win = winners[0]
            rivals = [lab for lab in labels if lab != win and not math.isnan(ratios[lab])]
            pick = max if higher else min
            rival = pick(rivals, key=lambda lab: ratios[lab]) if rivals else None
            factor = ratios[win] / ratios[rival] if rival and ratios[rival] else math.nan
            way = "higher" if factor > 1 else "lower"
            verdict = f"{win} wins: {abs(factor - 1) * 100:.1f}% {way}" if rival else win
            detail = f"better than every other run in {wins[win]} of {n_cells} cells"
        elif winners:
            verdict = "mixed: " + ", ".join(f"{lab} wins {wins[lab]}" for lab in winners)
            detail = f"of {n_cells} cells"
        else:
            undecided = [r for r in results if r.startswith("not enough")]
            present = [lab for lab in labels if (sub["run"] == lab).any()]
            # sizes only one run measured (sweeps of different ranges) compare nothing
            verdict = undecided[0] if undecided else "equivalent" if len(present) > 1 \
                else f"only {present[0]} measured these sizes" if present else "no samples"
            detail = f"{n_cells} cells"
        heads = headline_metrics(list(by_test[meta["test"]])) if by_test is not None else everything
        sizes = sorted(float(v) for v in sub["size_bytes"].dropna().unique()) \
            if "size_bytes" in sub else []
        row = {**meta, "headline": meta["metric"] in heads, "cells": n_cells,
               "winner": win, "runner_up": rival, "factor": factor, "verdict": verdict,
               "detail": detail, "higher_is_better": higher,
               "size_min": sizes[0] if sizes else math.nan,
               "size_max": sizes[-1] if sizes else math.nan,
               **{f"ratio[{lab}]": ratios[lab] for lab in labels}}
        for lab, test in band_tests.items():
            row.update({f"ci_low[{lab}]": test.ci_low, f"ci_high[{lab}]": test.ci_high,
                        f"p[{lab}]": test.p_value, f"q[{lab}]": test.q_value,
                        f"decision[{lab}]": test.decision,
                        f"n[{lab}]": test.n_other, f"n_base[{lab}]": test.n_baseline})
        rows.append(row)
    return pd.DataFrame(rows)


def _cost(cells: pd.DataFrame, infos: Sequence[Mapping[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Best median bandwidth per test and run, per dollar and per watt of one host's NIC."""
    rows = []
    for info, lab in zip(infos, labels, strict=True):
        inv = runview.inventory_hosts(info)
        used = [h for h in runview.run_host_names(info) if h in inv]
        prices = [float(inv[h]["price_usd"]) for h in used if _num(inv[h].get("price_usd"))]
        power = [float(inv[h]["power_w"]) for h in used if _num(inv[h].get("power_w"))]
        if not prices and not power:
            continue
        mine = cells[(cells["run"] == lab) & cells["metric"].map(lambda m: gbps_factor(m)
                                                                  is not None)]
        for (test, metric), sub in mine.groupby(["test", "metric"]) if "test" in mine else []:
            if metric not in ("bw_avg_gbps", "busbw_GBps"):
                continue
            best = float(sub["median"].max()) * (gbps_factor(str(metric)) or 1.0)
            price = sum(prices) / len(prices) if prices else math.nan
            watts = sum(power) / len(power) if power else math.nan
            rows.append({"run": lab, "test": test, "metric": metric, "best_gbps": best,
                         "price_usd": price, "power_w": watts,
                         "gbps_per_kusd": best / price * 1000 if prices and price else math.nan,
                         "gbps_per_w": best / watts if power and watts else math.nan,
                         "usd_per_gbps": price / best if prices and best else math.nan,
                         "w_per_gbps": watts / best if power and best else math.nan})
    return rows


def _num(value: Any) -> bool:
    try:
        return float(value) > 0
    except (TypeError, ValueError):
        return False


def _noise(cells: pd.DataFrame) -> list[dict[str, Any]]:
    heads = {m for _, sub in (cells.groupby("test") if "test" in cells else [(None, cells)])
             for m in headline_metrics(list(dict.fromkeys(sub["metric"])))}
    rows = []
    by = ["test", "metric", "run"] if "test" in cells else ["metric", "run"]
    for key, sub in cells[cells["metric"].isin(heads)].groupby(by, sort=False):
        meta = dict(zip(by, key, strict=True))
        rows.append({**meta, "cells": len(sub), "median_cv": float(sub["cv"].median()),
                     "max_cv": float(sub["cv"].max()), "min_n": int(sub["n"].min())})
    return rows
