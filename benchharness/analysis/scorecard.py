"""The procurement scorecard: one row per criterion a NIC is chosen on, one cell per run.

Pure: what each run measured for each criterion (``Figure``) or why it has nothing (``Absent``:
"not measured", "not exposed by <driver>") in, rows out. ``analysis/scorecard_evidence.py``
reads the run directories into that evidence; the comparison report and ``bench compare
format=json`` show the rows.

Each cell gives the figure (the median of the samples behind it), the 95% interval of that
median (``stats.describe``), "n = cards x repetitions" (the hosts or rail pairs and the
repetitions behind it) and the verdict against the suite's limits. An interval spanning more
than ``projection.WIDE_FACTOR`` is said as "too wide to decide: repeat=N would narrow it"
(``projection.too_wide``, the one home of that rule), not printed as figures.

Which run is best: for a measured figure, the best median when a Welch test on logs
(``stats.ratio_test``, every row's tests judged as one family: ``stats.judge_together``) finds it
different from, and better than, every other run; for a health
count (``count=True``), the lowest worst-case value with the best verdict, when no other run
ties it. A run with no figure never wins a row: a driver that exposes fewer counters does not
look healthier.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchharness.analysis import stats
from benchharness.analysis.projection import too_wide, too_wide_advice

NOT_MEASURED = "not measured"
_RANK = {"fail": 0, "warn": 1, "": 2, "info": 2, "pass": 3}


@dataclass(frozen=True)
class Criterion:
    """One row of the scorecard: what is judged, in which unit, and which way is better."""

    key: str
    title: str
    unit: str
    higher_is_better: bool
    #: A worst-case count (retransmissions, flaps): best by value and verdict, not by a ratio test.
    count: bool = False


@dataclass(frozen=True)
class Figure:
    """What one run measured for one criterion."""

    values: tuple[float, ...]
    cards: int  # hosts or rail pairs behind the values
    reps: int  # repetitions (steps) per card
    verdict: str = ""  # pass | warn | fail | info against the suite's limits; "" when none applies
    source: str = ""  # where it comes from: "tcp-length 1M", "3 of 4 rails"
    #: A figure that is not a median of ``values`` (a projection): the value and its bounds.
    value: float | None = None
    low: float | None = None
    high: float | None = None
    #: The interval of the difference behind this figure spans more than the stated factor.
    wide: bool = False


@dataclass(frozen=True)
class Absent:
    """Why a run has no figure for a criterion: "not measured", "not exposed by mlx5_core"."""

    reason: str = NOT_MEASURED


@dataclass(frozen=True)
class Cell:
    """One run's cell of one row."""

    run: str
    text: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    interval: str = ""
    n: str = ""
    verdict: str = ""
    source: str = ""
    best: bool = False


@dataclass(frozen=True)
class Row:
    """One criterion across the runs, with the best run (or why none is)."""

    key: str
    title: str
    unit: str
    higher_is_better: bool
    cells: tuple[Cell, ...]
    best: str | None
    decision: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"key": self.key, "title": self.title, "unit": self.unit,
                "higher_is_better": self.higher_is_better, "best": self.best, "decision": self.decision,
                "cells": [vars(c).copy() for c in self.cells]}


def fmt(value: float) -> str:
    """3 significant digits, thousands separated: 2,760 / 3.82 / 0.0421."""
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _cell(run: str, crit: Criterion, got: Figure | Absent) -> Cell:
    if isinstance(got, Absent):
        return Cell(run, got.reason)
    if got.value is not None:
        value, low, high = got.value, got.low, got.high
        n_values = max(got.cards * got.reps, 1)
    else:
        d = stats.describe(got.values)
        if d.n == 0:
            return Cell(run, NOT_MEASURED, verdict=got.verdict, source=got.source)
        value, low, high, n_values = d.median, d.ci95_low, d.ci95_high, d.n
    interval = ""
    if got.wide:
        interval = f"too wide to decide: {too_wide_advice({'repeats': got.reps})}"
        low = high = None
    elif low is not None and high is not None and math.isfinite(low) and math.isfinite(high) and low != high:
        if too_wide(min(low, high), max(low, high)):
            interval = f"too wide to decide: {too_wide_advice({'repeats': got.reps})}"
        else:
            interval = f"95% CI {fmt(low)}–{fmt(high)}"
    elif not crit.count and got.value is None and n_values < 2:
        interval = f"no interval: one sample; {too_wide_advice({'repeats': got.reps})}"
    n = f"n = {got.cards} × {got.reps}" if got.cards and got.reps else \
        f"n = {got.reps} repetitions" if got.reps else ""
    return Cell(run, f"{fmt(value)} {crit.unit}".strip(), value,
                low if low is not None and math.isfinite(low) else None,
                high if high is not None and math.isfinite(high) else None, interval, n, got.verdict, got.source)


def _measure_tests(crit: Criterion, present: Mapping[str, Figure], cells: Mapping[str, Cell],
                   threshold: float) -> list[stats.RatioTest]:
    """Every other run's samples against the best median's (Welch on logs); none where a
    projection's own intervals decide or only one run measured it."""
    if len(present) < 2 or any(f.value is not None for f in present.values()):
        return []
    best = _best_median(crit, present, cells)
    return [stats.ratio_test(present[o].values, present[best].values, threshold=threshold)
            for o in present if o != best]


def _best_median(crit: Criterion, present: Mapping[str, Figure], cells: Mapping[str, Cell]) -> str:
    pick = max if crit.higher_is_better else min
    return pick(present, key=lambda lab: cells[lab].value or 0.0)


def _best_measure(crit: Criterion, present: Mapping[str, Figure], cells: Mapping[str, Cell],
                  threshold: float, tests: Sequence[stats.RatioTest]) -> tuple[str | None, str]:
    """The best median when different from and better than every other run (``tests``: theirs
    against it, judged with the scorecard's other criteria as one family)."""
    pick = max if crit.higher_is_better else min
    best = _best_median(crit, present, cells)
    if len(present) == 1:
        return best, f"only {best} measured it"
    if any(f.value is not None for f in present.values()):  # projections: their own intervals
        wide = next((c.interval for c in cells.values() if c.interval.startswith("too wide")), "")
        if wide:
            return None, wide

        def bounds(lab: str) -> tuple[float, float]:
            c = cells[lab]
            v = c.value or 0.0
            return (c.low if c.low is not None else v), (c.high if c.high is not None else v)
        b_lo, b_hi = bounds(best)
        apart = all((b_lo > bounds(o)[1]) if crit.higher_is_better else (b_hi < bounds(o)[0])
                    for o in present if o != best)
        return (best, f"{best} best") if apart else (None, "intervals overlap: not decided")
    others = [lab for lab in present if lab != best]
    undecided = [t for t in tests if t.decision == "undecided"]
    if undecided:
        wide = next((c.interval for c in cells.values() if c.interval.startswith("too wide")), "")
        return None, wide or undecided[0].reason
    if not all(t.significant for t in tests):
        return None, f"equivalent (within {threshold * 100:g}%)"
    runner = pick(others, key=lambda lab: cells[lab].value or 0.0)
    a, b = cells[best].value or 0.0, cells[runner].value or 0.0
    if not a or not b:
        return best, f"{best} best"
    factor = a / b if crit.higher_is_better else b / a
    return best, f"{best} best: ×{factor:.2f} {runner}" if crit.higher_is_better else \
        f"{best} best: {(1 - 1 / factor) * 100:.0f}% lower than {runner}"


def _best_count(crit: Criterion, present: Mapping[str, Figure], cells: Mapping[str, Cell]
                ) -> tuple[str | None, str]:
    """Counts: the best verdict, then the lowest worst-case value; a tie names no run."""
    def key(lab: str) -> tuple[int, float]:
        got = cells[lab].value
        value = float(got) if got is not None else math.inf
        return -_RANK.get(present[lab].verdict, 2), value if not crit.higher_is_better else -value
    ranked = sorted(present, key=key)
    if len(ranked) == 1:
        return ranked[0], f"only {ranked[0]} measured it"
    if key(ranked[0]) == key(ranked[1]):
        return None, "equal"
    return ranked[0], f"{ranked[0]} best"


def score(labels: Sequence[str], criteria: Sequence[Criterion],
          evidence: Mapping[str, Mapping[str, Figure | Absent]],
          threshold: float = stats.EQUIVALENCE) -> list[Row]:
    """The scorecard's rows: one per criterion, a cell per run in ``labels`` order.
    ``evidence[criterion key][run label]``; a run missing there is "not measured"."""
    staged = []
    for crit in criteria:
        mine = evidence.get(crit.key, {})
        got = {lab: mine.get(lab, Absent()) for lab in labels}
        cells = {lab: _cell(lab, crit, g) for lab, g in got.items()}
        present = {lab: g for lab, g in got.items() if isinstance(g, Figure) and cells[lab].value is not None}
        tests = _measure_tests(crit, present, cells, threshold) if present and not crit.count else []
        staged.append((crit, cells, present, tests))
    # every criterion's tests are claims of one scorecard: decided as one family
    judged = iter(stats.judge_together([t for *_, tests in staged for t in tests], threshold=threshold))
    rows = []
    for crit, cells, present, tests in staged:
        if not present:
            reasons = sorted({c.text for c in cells.values()})
            best, decision = None, "; ".join(reasons)
        elif crit.count:
            best, decision = _best_count(crit, present, cells)
        else:
            best, decision = _best_measure(crit, present, cells, threshold, [next(judged) for _ in tests])
        out = tuple(Cell(**{**vars(cells[lab]), "best": lab == best}) for lab in labels)
        rows.append(Row(crit.key, crit.title, crit.unit, crit.higher_is_better, out, best, decision))
    return rows
