"""Bad-link isolation over synthetic samples: scores, flags, suspects, retest plans, the whole pass."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from benchharness.config.suites import load_suite
from benchharness.core.model import Host, Record
from benchharness.execution.runner import RunOutcome
from benchharness.planning.isolation import (
    Baseline,
    Isolation,
    baseline,
    isolate,
    name_suspects,
    pair_scores,
    retest_plan,
)
from benchharness.planning.plan import Plan, build_plan
from benchharness.results.store import RunDir
from benchharness.tools import get_tool

HOSTS = [Host(f"h{i}", f"198.18.0.{i}") for i in range(1, 5)]
KEYS = {"pair-bw": ["length"]}


def sample(server: str, client: str, gbps: float, *, length: str = "128K", direction: str = "forward",
           test: str = "pair-bw", **extra: Any) -> Record:
    """A summary record as the iperf3 adapter stores it for an all-pairs step."""
    return {"test": test, "tool": "iperf3", "pattern": "all-pairs", "kind": "summary", "server": server,
            "client": client, "pair": f"{server}-{client}", "length": length, "direction": direction,
            "bw_avg_gbps": gbps, "step": f"s-{server}-{client}", "rep": 0, **extra}


def matrix(slow: dict[str, float], fast: float = 15.0, **extra: Any) -> list[Record]:
    """Every pair of h1..h4 once; a pair's bandwidth is the smallest rate of its hosts."""
    out = []
    for a, b in combinations(["h1", "h2", "h3", "h4"], 2):
        out.append(sample(a, b, min(slow.get(a, fast), slow.get(b, fast)), **extra))
    return out


def test_a_slow_host_makes_its_three_pairs_weak() -> None:
    scores = pair_scores(matrix({"h4": 0.95}), KEYS)
    bad = [s.pair for s in scores if s.bad(0.9, 2.0)]
    assert sorted(bad) == [("h1", "h4"), ("h2", "h4"), ("h3", "h4")]
    weakest = scores[0]
    assert weakest.bw_gbps == pytest.approx(0.95) and weakest.bw_share == pytest.approx(0.95 / 15)
    assert all(s.bw_share == pytest.approx(1.0) for s in scores if "h4" not in s.pair)


def test_threshold_is_a_share_of_the_best_pair() -> None:
    records = [sample("h1", "h2", 10.0), sample("h1", "h3", 9.1), sample("h2", "h3", 8.9)]
    flagged = {s.pair for s in pair_scores(records, KEYS) if s.bad(0.9, 2.0)}
    assert flagged == {("h2", "h3")}
    assert {s.pair for s in pair_scores(records, KEYS) if s.bad(0.8, 2.0)} == set()


def test_both_directions_are_pooled_and_cases_compared_separately() -> None:
    records = [
        # 1M: h1-h2 is best; h1-h3 is fine one way and poor the other: median of (10, 4) = 7
        sample("h1", "h2", 10.0, length="1M"), sample("h1", "h2", 10.0, length="1M", direction="reverse"),
        sample("h1", "h3", 10.0, length="1M"), sample("h1", "h3", 4.0, length="1M", direction="reverse"),
        # 4K: everything is slow but equal - nobody is weak at this size
        sample("h1", "h2", 1.0, length="4K"), sample("h1", "h3", 1.0, length="4K"),
    ]
    scores = {s.pair: s for s in pair_scores(records, KEYS)}
    # shares per case: 1M 0.7, 4K 1.0 -> median 0.85
    assert scores[("h1", "h3")].bw_share == pytest.approx(0.85)
    assert scores[("h1", "h3")].cases == 2
    assert scores[("h1", "h2")].bw_share == pytest.approx(1.0)


def test_latency_above_a_multiple_of_the_best_is_weak() -> None:
    records = [{**sample("h1", "h2", 0), "bw_avg_gbps": None, "lat_p50_us": 3.0},
               {**sample("h1", "h3", 0), "bw_avg_gbps": None, "lat_p50_us": 3.5},
               {**sample("h2", "h3", 0), "bw_avg_gbps": None, "lat_p50_us": 7.0}]
    scores = {s.pair: s for s in pair_scores(records, KEYS)}
    assert scores[("h2", "h3")].lat_factor == pytest.approx(7 / 3)
    assert {p for p, s in scores.items() if s.bad(0.9, 2.0)} == {("h2", "h3")}
    assert not scores[("h2", "h3")].bad(0.9, 2.5)


def test_other_patterns_partial_and_interval_rows_are_ignored() -> None:
    records = [
        *matrix({}),
        {**sample("h1", "h2", 0.1), "pattern": "pairs"},
        {**sample("h1", "h2", 0.1), "kind": "interval"},
        {**sample("h1", "h2", 0.1), "partial": True},
    ]
    assert not [s for s in pair_scores(records, KEYS) if s.bad(0.9, 2.0)]


def test_retest_samples_are_scored_against_the_first_pass() -> None:
    first = matrix({"h4": 1.0})
    best = baseline(first, KEYS)
    retests = [sample("h1", "h4", 0.9, retest=True), sample("h2", "h4", 14.5, retest=True)]
    scores = {s.pair: s for s in pair_scores(first + retests, KEYS, best, retest=True)}
    assert set(scores) == {("h1", "h4"), ("h2", "h4")}
    assert scores[("h1", "h4")].bad(0.9, 2.0) and not scores[("h2", "h4")].bad(0.9, 2.0)
    # without a baseline for the case there is no share to give
    assert pair_scores(retests, KEYS, Baseline(), retest=True)[0].bw_share is None


@pytest.mark.parametrize(("bad", "suspects", "note"), [
    ([("h1", "h4"), ("h2", "h4"), ("h3", "h4")], ["h4"], "h4 is in 3 of 3 bad pairs"),
    ([("h1", "h2")], [], "tie: h1, h2 are each in 1 bad pair(s); no suspect named for h1-h2"),
    ([("h1", "h2"), ("h3", "h4")], [], "tie: h1, h2, h3, h4"),
    ([("h1", "h3"), ("h2", "h3"), ("h4", "h5")], ["h3"],
     "h3 is in 2 of 3 bad pairs (h1-h3, h2-h3); tie: h4, h5 are each in 1 bad pair(s)"),
    # two slow hosts in four are in three bad pairs each: a tie, said as such
    ([("h1", "h3"), ("h2", "h3"), ("h3", "h4"), ("h1", "h4"), ("h2", "h4")], [], "tie: h3, h4"),
    # a slow host and, independently, a second one among the rest
    ([("h1", "h5"), ("h2", "h5"), ("h3", "h5"), ("h4", "h5"), ("h1", "h4"), ("h2", "h4")], ["h5", "h4"],
     "h5 is in 4 of 6 bad pairs"),
    ([], [], "no bad pairs"),
])
def test_suspect_is_the_host_in_most_bad_pairs(bad: list[tuple[str, str]], suspects: list[str],
                                               note: str) -> None:
    named, text = name_suspects(bad)
    assert named == suspects
    assert note in text


def plan4() -> Plan:
    return build_plan(load_suite("all-pairs"), HOSTS)


def test_retest_plan_reuses_steps_and_keeps_pairs_with_a_common_host_apart() -> None:
    plan = plan4()
    flagged = [("pair-bw", ("h1", "h4")), ("pair-bw", ("h2", "h4")), ("pair-bw", ("h2", "h3"))]
    retest = retest_plan(plan, flagged)
    originals = {s.id: s for s in plan.steps}
    assert len(retest.steps) == 3
    for step in retest.steps:
        orig = originals[step.id.removesuffix("-retest")]
        assert step.id.endswith("-retest") and step.hosts == orig.hosts and step.params == orig.params
        assert step.labels["retest"] is True and step.round >= len(plan.rounds)
    for number, steps in enumerate(retest.rounds):
        members = [h for s in steps for h in s.hosts]
        assert len(members) == len(set(members))  # no host twice in a round
        assert [s.port for s in steps] == list(range(5201, 5201 + len(steps)))
        assert all(s.round == len(plan.rounds) + number for s in steps)
    # h4's two pairs cannot share a round; h2-h3 runs beside one of them
    assert len(retest.rounds) == 2
    assert {h.name for h in retest.hosts} == {"h1", "h2", "h3", "h4"}


def test_retests_of_several_iperf3_processes_get_ports_of_their_own() -> None:
    """streams: 4 on iperf3 before 3.16 is 4 processes per pair: retests side by side reserve 4 ports each."""
    suite = load_suite("all-pairs", {"streams": "4"})
    plan = build_plan(suite, HOSTS)
    retest = retest_plan(plan, [("pair-bw", ("h1", "h2")), ("pair-bw", ("h3", "h4"))])
    (steps,) = retest.rounds
    assert [s.port for s in steps] == [5201, 5205]
    ports = [c.argv[c.argv.index("-p") + 1] for s in steps for c in get_tool("iperf3").commands(s)
             if c.role == "client"]
    assert sorted(ports) == [str(p) for p in range(5201, 5209)]


class FakeRunner:
    """Stands in for the Runner: 'measures' each retest step by writing the given bandwidth."""

    def __init__(self, plan: Plan, run: RunDir, rates: dict[str, float]) -> None:
        self.plan, self.run_dir, self.rates = plan, run, rates

    def run(self) -> RunOutcome:
        for step in self.plan.steps:
            server, client = (h.name for h in step.hosts)
            gbps = min(self.rates.get(server, 15.0), self.rates.get(client, 15.0))
            self.run_dir.append_samples([{**step.sample_labels(), "server": server, "client": client,
                                          "kind": "summary", "direction": "forward", "bw_avg_gbps": gbps}])
        return RunOutcome()


def first_pass(run: RunDir, plan: Plan, rates: dict[str, float]) -> None:
    FakeRunner(plan, run, rates).run()


def test_isolate_retests_confirms_and_names_the_slow_host(tmp_path: Path) -> None:
    plan = plan4()
    run = RunDir.create(tmp_path / "run")
    first_pass(run, plan, {"h4": 0.95})
    lines: list[str] = []
    runners: list[Plan] = []

    def make(p: Plan) -> FakeRunner:
        runners.append(p)
        return FakeRunner(p, run, {"h4": 0.97})

    result = isolate(plan, run, make, lines.append)
    assert isinstance(result, Isolation)
    assert len(runners) == 1 and result.retest_steps == 3 and len(runners[0].rounds) == 3
    assert [s.pair for s in result.confirmed] == [("h1", "h4"), ("h2", "h4"), ("h3", "h4")]
    assert result.suspects == ["h4"]
    assert result.summary()["bad_pairs"] == [["h1", "h4"], ["h2", "h4"], ["h3", "h4"]]
    stored = run.read_json("isolation.json")
    assert stored["suspects"] == ["h4"] and stored["bw_share"] == 0.9
    assert sum(r["flagged"] for r in stored["pair_scores"]) == 3
    assert all(r["retest"]["bw_share"] < 0.1 for r in stored["pair_scores"] if r["flagged"])
    assert any(line.startswith("isolation: SUSPECT h4: h4 is in 3 of 3 bad pairs") for line in lines)
    retest_ids = {s["step"] for s in run.samples() if s.get("retest")}
    assert retest_ids == {s.id for s in runners[0].steps}


def test_a_weak_pair_that_recovers_on_retest_is_not_confirmed(tmp_path: Path) -> None:
    plan = plan4()
    run = RunDir.create(tmp_path / "run")
    first_pass(run, plan, {"h3": 5.0})
    result = isolate(plan, run, lambda p: FakeRunner(p, run, {}), lambda line: None)
    assert len(result.flagged) == 3 and result.confirmed == [] and result.suspects == []
    assert run.read_json("isolation.json")["bad_pairs"] == []


def test_nothing_weak_means_no_retest(tmp_path: Path) -> None:
    plan = plan4()
    run = RunDir.create(tmp_path / "run")
    first_pass(run, plan, {})
    result = isolate(plan, run, lambda p: pytest.fail("no retest expected"), lambda line: None)
    assert result.flagged == [] and result.retest_steps == 0 and result.note == "no bad pairs"
    assert len(result.scores) == 6


def test_report_shows_the_suspect_beside_the_heatmap(tmp_path: Path) -> None:
    from benchharness.report.html import render_run_report

    plan = plan4()
    run = RunDir.create(tmp_path / "run")
    run.write_run_info({"run_id": "r1", "suite": {"name": "all-pairs"}, "hosts": [h.name for h in HOSTS],
                        "state": "complete", "exit_code": 0})
    first_pass(run, plan, {"h4": 0.95})
    isolate(plan, run, lambda p: FakeRunner(p, run, {"h4": 0.95}), lambda line: None)
    html = render_run_report(run).read_text()
    heatmap = html.index("All-pairs bw_avg_gbps")
    section = html.index("<h3>Bad-link isolation</h3>")
    assert heatmap < section and "Suspect host: <b>h4</b> — h4 is in 3 of 3 bad pairs" in html
    assert html.count("<td>yes</td>") == 3
