"""The scorecard (analysis/scorecard.py) on run directories written by the real RunDir."""

from __future__ import annotations

import json
from pathlib import Path

from benchharness.analysis import scorecard, scorecard_evidence
from benchharness.analysis.comparison import compare
from benchharness.analysis.scorecard import Absent, Criterion, Figure
from benchharness.report.exports import comparison_json
from benchharness.results.store import RunDir
from tests import fabric_runs

FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def _rows(runs: list[RunDir]) -> dict[str, scorecard.Row]:
    return {r.key: r for r in compare(runs).scorecard}


def test_scorecard_of_three_runs_names_the_best_and_what_was_not_measured() -> None:
    runs = [RunDir(FIXTURES / n) for n in ("nic-a", "nic-b", "minimal")]
    rows = _rows(runs)
    a, b, minimal = (c.run for c in rows["bw_uni"].cells)
    assert a == "CX6 · fw 22.36" and b.startswith("CX7 · fw 28.39 · ")  # by NIC and firmware; the
    assert minimal.startswith("CX7 · fw 28.39 · ") and b != minimal  # run id parts two CX7 runs
    bw = rows["bw_uni"]
    cells = {c.run: c for c in bw.cells}
    # the fixtures' peaks: 140 (CX6), 190 (CX7), 180 (minimal); 5 % and 1 % noise decide it
    assert bw.best == b and cells[b].best and not cells[a].best
    assert abs((cells[b].value or 0) / (cells[a].value or 1) - 190 / 140) < 0.05
    assert cells[a].n == "n = 2 × 5" and cells[minimal].n == "n = 2 × 2"  # 2 host pairs x repetitions
    assert cells[a].interval.startswith("95% CI ") and "rdma-bw" in cells[a].source
    busbw = next(r for k, r in rows.items() if k.startswith("busbw:"))
    assert "4 hosts" in busbw.title and busbw.best == b
    # the minimal run has no telemetry and no price: said, never a figure, never best
    for key in ("cpu", "thermal", "price", "usd_per_gbps"):
        mine = {c.run: c for c in rows[key].cells}[minimal]
        assert mine.text == "not measured" and mine.value is None and not mine.best, key
    assert rows["price"].best == a  # 1,200 USD against 1,800
    assert rows["thermal"].best == b  # nic-a's sampler reads ~86 C, nic-b's ~73 C
    assert {c.text for c in rows["power"].cells} == {"not measured"}  # no power samples in any run


def test_format_json_carries_the_scorecard_rows() -> None:
    runs = [RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")]
    data = json.loads(json.dumps(comparison_json(runs), default=str))
    assert [r["key"] for r in data["scorecard"]] == [r.key for r in compare(runs).scorecard]
    bw = next(r for r in data["scorecard"] if r["key"] == "bw_uni")
    assert bw["best"] == "CX7 · fw 28.39" and [c["run"] for c in bw["cells"]] == ["CX6 · fw 22.36", "CX7 · fw 28.39"]


def test_format_md_carries_the_same_scorecard_rows() -> None:
    """bench compare format=md: one table row per scorecard row, a column per run, the best run's
    figure in bold, the decision last; the same rows as the HTML page and format=json."""
    from benchharness.report.exports import markdown_summary

    runs = [RunDir(FIXTURES / n) for n in ("nic-a", "nic-b", "minimal")]
    rows = compare(runs).scorecard
    text = markdown_summary(runs)
    table = text.split("## Scorecard\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0].startswith("| criterion | CX6 · fw 22.36 | CX7 · fw 28.39 · ") and table[0].endswith(" | best |")
    body = table[2:]
    assert [line.split(" | ")[0].removeprefix("| ") for line in body] == [r.title for r in rows]
    bw = body[[r.key for r in rows].index("bw_uni")]
    best = next(c for c in next(r for r in rows if r.key == "bw_uni").cells if c.best)
    assert f"**{best.text}**" in bw and bw.endswith(f"| {next(r for r in rows if r.key == 'bw_uni').decision} |")
    price = body[[r.key for r in rows].index("price")]
    assert price.split(" | ")[3] == "not measured"  # the minimal run: said, not a figure
    assert text.index("## Scorecard") < text.index("| test | band | metric |")


def test_a_counter_the_driver_lacks_is_not_exposed_and_never_wins(tmp_path: Path) -> None:
    run = fabric_runs.build(tmp_path)  # rail0 of both hosts and h2.rail1 expose no pause counters
    got = scorecard_evidence.health_evidence(run, run.run_info())
    pauses = got["health_pauses"]
    assert isinstance(pauses, Figure) and pauses.verdict == "fail"  # h1.rail1 paused 10 % > 5 %
    assert abs((pauses.value or 0) - 0.10) < 0.01 and pauses.source == "not exposed on 3 of 4 rails"
    crit = Criterion("health_pauses", "pause share", "", False, count=True)
    rows = scorecard.score(["A", "B"], [crit], {"health_pauses": {"A": pauses, "B": Absent("not exposed by bnxt_en")}})
    cells = {c.run: c for c in rows[0].cells}
    assert cells["B"].text == "not exposed by bnxt_en" and not cells["B"].best
    assert rows[0].best == "A"  # the only run that measured it, failing, rather than one that could not see


def test_an_interval_over_the_stated_factor_is_too_wide_to_decide() -> None:
    crit = Criterion("bw", "bandwidth", "Gbit/s", True)
    wide = Figure((10.0, 12.0, 90.0), 2, 3)
    tight = Figure((40.0, 41.0, 42.0), 2, 3)
    rows = scorecard.score(["A", "B"], [crit], {"bw": {"A": wide, "B": tight}})
    cells = {c.run: c for c in rows[0].cells}
    assert cells["A"].interval == "too wide to decide: repeat=12 would narrow it"
    assert cells["B"].interval == "95% CI 40–42" and cells["B"].n == "n = 2 × 3"
    assert rows[0].best is None and rows[0].decision.startswith("too wide to decide")


def test_projection_cells_follow_the_projection_rows() -> None:
    runs = [RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")]
    comp = compare(runs)
    days = {r["run"]: r["days"] for r in comp.projection["rows"]}
    cells = {c.run: c for c in next(r for r in comp.scorecard if r.key == "projection").cells}
    assert {k: c.value for k, c in cells.items()} == days
