"""The halving search planner on simulated clusters: a group runs at its slowest member's pace."""

from __future__ import annotations

import math
import random

import pytest

from benchharness.execution.bisect import group_figure
from benchharness.planning.halving import HalvingSearch


def simulate(n: int, bad: set[str], limit: float | None = None, noise: float = 0.05, seed: int = 1,
             **kw: object) -> HalvingSearch:
    rng = random.Random(seed)
    speed = {f"h{i}": 0.25 if f"h{i}" in bad else 1.0 for i in range(1, n + 1)}
    search = HalvingSearch(list(speed), limit=limit, **kw)  # type: ignore[arg-type]
    while groups := search.next_round():
        for g in groups:
            assert len(g) >= 2
        flat = [h for g in groups for h in g]
        assert len(flat) == len(set(flat)), f"groups of one round share a host: {groups}"
        search.record([min(speed[h] for h in g) * (1 + rng.uniform(-noise, noise)) for g in groups])
    return search


@pytest.mark.parametrize("n", [4, 7, 8, 16, 64, 1024])
def test_one_slow_node_is_named_within_log2_n_plus_1_rounds(n: int) -> None:
    for slow in {1, n // 2 + 1, n}:
        s = simulate(n, {f"h{slow}"})
        assert s.suspects == [f"h{slow}"]
        assert s.rounds <= math.ceil(math.log2(n)) + 1
        evidence = s.evidence(f"h{slow}")
        assert [r.purpose for r in evidence][-2:] == ["single", "confirm"]
        assert all(r.passed is False for r in evidence)
        partners = [next(m for m in r.members if m != f"h{slow}") for r in evidence[-2:]]
        assert partners[0] != partners[1]  # the confirmation uses another partner


def test_healthy_cluster_names_nobody() -> None:
    assert simulate(8, set(), limit=1.0).suspects == []
    s = simulate(8, set())
    assert s.suspects == [] and s.rounds == 1
    assert "without limit=" in " ".join(s.finish_notes())


def test_two_slow_nodes_with_a_limit() -> None:
    assert sorted(simulate(8, {"h2", "h7"}, limit=1.0).suspects) == ["h2", "h7"]
    assert sorted(simulate(16, {"h2", "h3"}, limit=1.0).suspects) == ["h2", "h3"]


def test_limit_round_zero_tests_everyone_and_bounds_hold() -> None:
    s = HalvingSearch([f"h{i}" for i in range(8)], limit=10.0, max_rounds=2)
    assert s.next_round() == [tuple(f"h{i}" for i in range(8))]
    s.record([1.0])
    assert len(s.next_round()) == 2
    s.record([1.0, 9.0])
    assert s.next_round() == [] and "max_rounds" in s.stopped
    assert s.suspects == []


def test_flaky_miss_is_not_named_and_failed_groups_count_as_misses() -> None:
    s = HalvingSearch(["a", "b", "c", "d"])
    assert s.next_round() == [("a", "b"), ("c", "d")]
    s.record([None, 1.0])  # a group that could not run misses
    singles = s.next_round()
    assert {g[0] for g in singles} == {"a", "b"} and all(g[1] in ("c", "d") for g in singles)
    s.record([0.2 if g[0] == "a" else 1.0 for g in singles])
    (confirm,) = s.next_round()
    assert confirm[0] == "a"
    s.record([1.0])  # fine beside another partner: not named
    assert s.next_round() == [] and s.suspects == []
    assert any("not named" in n for n in s.finish_notes())


def test_each_node_gets_a_verdict_that_junit_carries() -> None:
    """A named node fails with every group it was in; the others pass, cleared by a group; the
    verdicts become one JUnit testcase per node (what ``bench bisect junit=FILE`` writes)."""
    import xml.etree.ElementTree as ET

    from benchharness.report.junit import junit_xml

    s = simulate(8, {"h5"}, limit=1.0)
    verdicts = {v.host: v for v in s.verdicts(test="allreduce")}
    assert set(verdicts) == {f"h{i}" for i in range(1, 9)}
    assert verdicts["h5"].status == "fail" and "h5 drags the collective down" in verdicts["h5"].message
    assert "confirm" in verdicts["h5"].message and "MISS" in verdicts["h5"].message
    assert all(v.status == "pass" and "cleared" in v.message for h, v in verdicts.items() if h != "h5")
    root = ET.fromstring(junit_xml({"run_id": "b", "suite": {"name": "allreduce"}, "hosts": list(verdicts),
                                    "verdicts": [v.__dict__ for v in verdicts.values()]}))
    assert root.get("tests") == "8" and root.get("failures") == "1"
    (failed,) = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed.get("classname") == "allreduce.h5" and failed.get("name") == "allreduce: bisect: collective pace"
    stopped = HalvingSearch([f"h{i}" for i in range(8)], limit=10.0, max_rounds=1)
    stopped.next_round()
    stopped.record([1.0])
    assert stopped.next_round() == []
    assert {v.status for v in stopped.verdicts()} == {"info"}
    assert "max_rounds" in stopped.verdicts()[0].message


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        HalvingSearch(["a"])
    with pytest.raises(ValueError, match="share"):
        HalvingSearch(["a", "b"], share=1.5, limit=1.0)
    with pytest.raises(ValueError, match="limit="):
        HalvingSearch(["a", "b", "c"])
    s = HalvingSearch(["a", "b"], limit=1.0)
    s.next_round()
    with pytest.raises(ValueError, match="figures"):
        s.record([1.0, 2.0])


def test_group_figure_from_time_and_rank_count() -> None:
    rows = [{"step": "s", "kind": "summary", "collective": "all_reduce", "placement": "out-of-place",
             "size_bytes": 16 << 20, "time_us": 338919.0, "busbw_GBps": 0.07},
            {"step": "s", "kind": "summary", "collective": "all_reduce", "placement": "in-place",
             "size_bytes": 16 << 20, "time_us": 1.0, "busbw_GBps": 9.0},
            {"step": "s", "kind": "summary", "collective": "all_reduce", "placement": "out-of-place",
             "size_bytes": 8, "time_us": 1.0, "busbw_GBps": 5.0},
            {"step": "s", "kind": "footer", "nranks": 4}]
    assert group_figure(rows, "s") == pytest.approx((16 << 20) / 338919.0 / 1e3 * 1.5)
    assert group_figure(rows[:1], "s") == 0.07  # no rank count: the printed figure
    assert group_figure(rows, "other") is None


def test_report_shows_the_search_with_its_evidence(tmp_path) -> None:
    """The run report of a search: the named node first, every group it was in, a node x round
    grid, and names escaped (an inventory name is not markup)."""
    import html as html_lib
    import re

    from benchharness.report.html import render_run_report
    from benchharness.results.store import RunDir

    s = simulate(8, {"h5"})
    evil = "<script>x</script>"
    doc = s.as_dict()
    doc["hosts"] = [evil if h == "h8" else h for h in doc["hosts"]]
    for r in doc["results"]:
        r["members"] = [evil if m == "h8" else m for m in r["members"]]
    run = RunDir.create(tmp_path / "run")
    run.write_json("bisect.json", doc)
    run.write_run_info({"run_id": "run", "kind": "bisect", "suite": {"name": "allreduce"}, "test": "allreduce",
                        "hosts": doc["hosts"], "state": "complete",
                        "verdicts": [v.__dict__ for v in s.verdicts(test="allreduce")]})
    page = render_run_report(run).read_text()
    assert evil not in page and html_lib.escape(evil) in page
    section = page[page.index('id="halving-search"'):]
    section = section[:section.index("</section>")]
    assert "<b>h5</b> drags the collective down" in section
    evidence = section[section.index("bisect-evidence"):section.index("</table>", section.index("bisect-evidence"))]
    assert evidence.count("<tr>") - 1 == len(s.evidence("h5"))  # header row + one per group h5 was in
    grid = section[section.index("bisect-grid"):]
    rows = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", grid[:grid.index("</table>")])
    assert rows[0][0] == "<b>h5</b>" and len(rows) == 8  # the named node first, then every node
    assert "pass" not in rows[0][1] and rows[0][1].count("MISS") == len(s.evidence("h5"))
    cleared = {h for h in s.hosts if any(r.passed for r in s.evidence(h))}
    shown_as = {html_lib.escape(evil): "h8"}  # the grid shows the escaped name of h8
    assert cleared and all(("pass" in cells) == (shown_as.get(name, name) in cleared) for name, cells in rows[1:])
    assert f"{s.rounds} round(s)" in section
