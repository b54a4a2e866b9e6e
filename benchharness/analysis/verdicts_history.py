"""Regression verdicts: this night's values against earlier nights in the history catalog.

For a check with ``regression: true``, each case's value tonight (median over the hosts of one
NIC model, each host's value being its best pair) is compared with the same suite,
test, case and NIC model in earlier runs (``regression.check``). One verdict per check and NIC
model; its status on a regression is the suite's ``verdicts: regression: status`` (default fail).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchharness.analysis import regression
from benchharness.config.thresholds import Check, format_sizes
from benchharness.core.errors import BenchError
from benchharness.core.metrics import higher_is_better, unit_of
from benchharness.core.model import Record, Verdict
from benchharness.results import measures

if TYPE_CHECKING:
    from benchharness.analysis.verdict_context import Context


def _by_model(found: Sequence[measures.Unit], metric: str, ctx: Context) -> dict[str, dict[Any, list[float]]]:
    """NIC model -> case -> tonight's host values (group values go to every model of the group)."""
    out: dict[str, dict[Any, list[float]]] = {}
    for case, host, value, _n in measures.host_values(found, higher_is_better(metric)):
        if host == measures.GROUP:
            models = {n.model for n in ctx.nics.values()}
        else:
            nic = ctx.nics.get(host)
            models = {nic.model if nic else ""}
        for model in models:
            out.setdefault(model, {}).setdefault(case, []).append(value)
    return out


def regression_verdicts(test: str, check: Check, records: Sequence[Record], keys: Sequence[str],
                        ctx: Context) -> list[Verdict]:
    """One verdict per NIC model: flagged cases, or why nothing could be compared."""
    sizes = f" [{format_sizes(check.sizes)}]" if check.sizes else ""
    name = f"{check.metric} regression{sizes}"
    found = measures.units(records, check.metric, keys, select=check.matches)
    if not found:
        return []
    catalog = ctx.catalog()
    try:
        catalog.sync()
    except BenchError as exc:
        return [Verdict(name, "warn", f"history catalog unavailable: {exc}", test=test)]
    p = ctx.policy
    unit = unit_of(check.metric)
    out: list[Verdict] = []
    for model, cases in sorted(_by_model(found, check.metric, ctx).items()):
        who = f"NIC {model}" if model else "all hosts"
        flagged, compared, short = [], 0, 0
        for case, values in cases.items():
            tonight = statistics.median(values)
            history = catalog.series(check.metric, suite=ctx.suite or None, test=test,
                                     case=measures.case_text(case), nic=model or None, exclude=ctx.run_id)
            finding = regression.check([pt.value for pt in history], tonight,
                                       higher_is_better=higher_is_better(check.metric), window=p.window,
                                       min_history=p.min_history, k=p.k, min_change=p.min_change, unit=unit)
            if finding.kind == "short":
                short += 1
                continue
            compared += 1
            if finding.flagged:
                flagged.append((finding, measures.case_text(case)))
        if flagged:
            worst = min(flagged, key=lambda f: f[0].change if higher_is_better(check.metric) else -f[0].change)
            out.append(Verdict(name, p.regression_status,
                               f"{who}: {len(flagged)} of {compared} cases regressed; worst at "
                               f"{worst[1] or 'the only case'}: {worst[0].message}", test=test,
                               value=worst[0].value, limit=worst[0].center))
        elif compared:
            out.append(Verdict(name, "pass", f"{who}: no drop beyond noise in {compared} cases "
                               f"(history of up to {p.window} nights)", test=test))
        elif short:
            out.append(Verdict(name, "info", f"{who}: too little history to compare "
                               f"(needs {p.min_history} earlier nights)", test=test))
    return out
