"""Statistics, tidy loading, line-rate share, run labels and run comparison.

Run directories are synthetic (tests/fixtures/runs/synth.py): no RDMA hardware or GPUs here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchharness.analysis import comparison, stats
from benchharness.analysis import frames as analysis
from benchharness.core.metrics import higher_is_better, unit_of
from benchharness.results.store import RunDir

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
_spec = importlib.util.spec_from_file_location("synth", FIXTURES / "synth.py")
assert _spec and _spec.loader
synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synth)


# -- stats ---------------------------------------------------------------------------------------
def test_median_ci_rank_matches_binomial_order_statistics() -> None:
    # n=10: P(B<=1) = 11/1024, so [x(2), x(9)] covers the median with 1 - 22/1024.
    assert stats.median_ci_rank(10) == (2, pytest.approx(1 - 22 / 1024))
    # n=5: no interval reaches 95 %; [min, max] with its true coverage 1 - 2/32.
    assert stats.median_ci_rank(5) == (1, pytest.approx(0.9375))
    assert stats.median_ci_rank(6) == (1, pytest.approx(1 - 2 / 64))
    rank, cover = stats.median_ci_rank(1000)  # normal approximation branch
    assert 468 <= rank <= 470 and cover == 0.95


def test_describe_values() -> None:
    d = stats.describe([10, 1, 2, 3, 4, 5, 6, 7, 8, 9, float("nan")])
    assert d.n == 10 and d.median == 5.5 and d.mean == 5.5
    assert (d.min, d.max) == (1, 10)
    assert d.stdev == pytest.approx(3.0276503540974917)
    assert d.cv == pytest.approx(3.0276503540974917 / 5.5)
    assert (d.ci95_low, d.ci95_high) == (2, 9)
    single = stats.describe([4.0])
    assert single.median == 4.0 and math.isnan(single.ci95_low) and math.isnan(single.cv)


def test_significance_decisions() -> None:
    rng = random.Random(3)
    fast = [110 + rng.gauss(0, 1) for _ in range(8)]
    slow = [100 + rng.gauss(0, 1) for _ in range(8)]
    assert stats.ratio_test(slow, fast).significant
    same_a = [100 + rng.gauss(0, 1) for _ in range(8)]
    same_b = [100 + rng.gauss(0, 1) for _ in range(8)]
    result = stats.ratio_test(same_b, same_a)
    assert result.decision == "equivalent" and not result.significant
    one = stats.ratio_test([100, 101, 102], [110])
    assert one.decision == "undecided" and one.reason == "not enough repetitions to decide (n = 1 vs 3)"
    # Three well separated repetitions per side decide (exact Mann-Whitney U could not: p >= 0.1).
    three = stats.ratio_test([100, 101, 102], [110, 111, 112])
    assert three.significant and three.p_value < 0.01
    assert three.ratio == pytest.approx(111 / 101) and three.ci_low < 111 / 101 < three.ci_high
    # Noisy repetitions whose interval spans both 1 and the effect cannot decide.
    noisy = stats.ratio_test([100, 80, 115], [90, 120, 105])
    assert noisy.decision == "undecided" and noisy.reason.startswith("not enough repetitions")
    # Significant but below the practical threshold: equivalent, not different.
    tiny = stats.ratio_test([100.0, 100.01, 100.02], [100.5, 100.51, 100.52])
    assert tiny.p_value < 1e-6 and tiny.decision == "equivalent"
    assert stats.ratio_test([100.0, 100.01, 100.02], [100.5, 100.51, 100.52],
                            threshold=0.001).decision == "different"


def test_ratio_test_matches_welch_by_hand() -> None:
    """The figures of a Welch t-test on logs, worked out from its formula."""
    base, other = [3.79, 3.65, 3.71], [1.90, 1.91, 1.905]
    res = stats.ratio_test(base, other)
    la, lb = [math.log(v) for v in base], [math.log(v) for v in other]
    ma, mb = sum(la) / 3, sum(lb) / 3
    va = sum((x - ma) ** 2 for x in la) / 2 / 3
    vb = sum((x - mb) ** 2 for x in lb) / 2 / 3
    df = (va + vb) ** 2 / (va * va / 2 + vb * vb / 2)
    assert res.df == pytest.approx(df)
    assert res.log_diff == pytest.approx(mb - ma) and res.log_se == pytest.approx(math.sqrt(va + vb))
    # df is close to 2 here: the t quantile for 95 % at 2 degrees of freedom is 4.303.
    assert df == pytest.approx(2.0, abs=0.1)
    half = res.log_se * stats._t_quantile(df)
    assert stats._t_quantile(2.0) == pytest.approx(4.3027, abs=1e-4)
    assert res.ci_low == pytest.approx(math.exp(mb - ma - half))
    assert res.ratio == pytest.approx(1.905 / 3.71)
    assert res.decision == "different" and 0.48 < res.ci_low < res.ci_high < 0.54


def test_ratio_test_error_rates_at_three_repetitions() -> None:
    """Same distribution: "different" in about alpha of the draws at most; a 2x change with 3 %
    noise: always different, with the true ratio inside the interval nearly always."""
    rng = random.Random(11)
    trials = 400
    false = sum(stats.ratio_test([math.exp(rng.gauss(0, 0.03)) for _ in range(3)],
                                 [math.exp(rng.gauss(0, 0.03)) for _ in range(3)]).significant
                for _ in range(trials))
    assert false / trials <= 0.06
    hits = covered = 0
    for _ in range(trials):
        res = stats.ratio_test([4 * math.exp(rng.gauss(0, 0.03)) for _ in range(3)],
                               [2 * math.exp(rng.gauss(0, 0.03)) for _ in range(3)])
        hits += res.significant
        covered += res.ci_low <= 0.5 <= res.ci_high
    assert hits == trials and covered / trials >= 0.93


def test_bh_adjust_reproduces_the_published_example() -> None:
    """Benjamini & Hochberg (1995), section 4: 15 p-values of a trial; at 0.05 the procedure
    rejects the four smallest (Bonferroni only three)."""
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
         0.5719, 0.6528, 0.7590, 1.0000]
    q = stats.bh_adjust(p)
    assert [i for i, v in enumerate(q) if v < 0.05] == [0, 1, 2, 3]
    assert q[3] == pytest.approx(0.0095 * 15 / 4) and q[4] == pytest.approx(0.0201 * 15 / 5)
    with_gaps = stats.bh_adjust([math.nan, 0.01, math.nan, 0.04])  # NaN: not a test of the family
    assert math.isnan(with_gaps[0]) and math.isnan(with_gaps[2])
    assert with_gaps[1] == pytest.approx(0.02) and with_gaps[3] == pytest.approx(0.04)


def test_a_family_of_same_setup_tests_calls_almost_nothing_different() -> None:
    """Identical setups, 24 cells per comparison (a sweep's sizes x metrics), 3 repetitions per
    side: alone, the tests call a cell "different" in about 1 comparison in 2; judged as a family
    (false discovery rate 5 %), in about 1 in 20. A real halving among them stays different."""
    rng = random.Random(7)

    def draws(scale: float = 1.0, noise: float = 0.2) -> list[float]:
        return [scale * math.exp(rng.gauss(0, noise)) for _ in range(3)]
    comparisons = 300
    alone = together = 0
    for _ in range(comparisons):
        tests = [stats.ratio_test(draws(), draws()) for _ in range(24)]
        alone += any(t.significant for t in tests)
        together += any(t.significant for t in stats.judge_together(tests))
    assert alone / comparisons >= 0.3
    assert together / comparisons <= 0.08
    tests = [stats.ratio_test(draws(noise=0.02), draws(0.5, noise=0.02)) for _ in range(6)] + \
        [stats.ratio_test(draws(), draws()) for _ in range(18)]
    judged = stats.judge_together(tests)
    assert all(t.decision == "different" and t.q_value < 0.05 for t in judged[:6])
    assert [t.p_value for t in judged] == [t.p_value for t in tests]  # intervals and p stay


def test_a_family_keeps_equivalence_and_undecides_a_lone_difference() -> None:
    tight = stats.ratio_test([10.0, 10.01, 9.99], [10.0, 10.02, 9.98])
    lone = stats.ratio_test([10.0, 10.5, 9.6], [12.0, 12.6, 11.5])  # p about 0.01 alone
    assert tight.decision == "equivalent" and lone.decision == "different" and lone.p_value > 0.002
    noise = [stats.ratio_test([1.0, 1.3, 0.8], [1.1, 0.9, 1.2]) for _ in range(9)]
    judged = stats.judge_together([tight, lone, *noise])
    assert judged[0].decision == "equivalent"
    assert judged[1].decision == "undecided" and judged[1].reason.startswith("not enough repetitions")
    assert judged[1].q_value == pytest.approx(min(1.0, lone.p_value * 11))


def test_a_pair_of_runs_asked_both_ways_is_one_test_of_the_family() -> None:
    """The winner's test (other run against the best) and the cell's (run against the baseline)
    are one test when they compare the same two runs: the family counts it once."""
    a, b = [10.0, 10.5, 9.6], [12.0, 12.6, 11.5]
    raw = {(0, "bw", "A", "B"): stats.ratio_test(a, b), (0, "bw", "B", "A"): stats.ratio_test(b, a),
           (1, "bw", "A", "B"): stats.ratio_test(a, [10.2, 9.7, 10.4])}
    judged = comparison._judge_pairs(raw, stats.EQUIVALENCE)
    expected = stats.bh_adjust([raw[(0, "bw", "A", "B")].p_value, raw[(1, "bw", "A", "B")].p_value])
    assert judged[(0, "bw", "A", "B")].q_value == pytest.approx(expected[0])
    assert judged[(0, "bw", "B", "A")].q_value == judged[(0, "bw", "A", "B")].q_value
    assert judged[(0, "bw", "B", "A")].decision == judged[(0, "bw", "A", "B")].decision == "different"


def test_combine_cells_into_a_band() -> None:
    cells = [stats.ratio_test([4.0, 4.1, 3.9], [2.0, 2.05, 1.95]),
             stats.ratio_test([8.0, 8.2, 7.8], [4.0, 4.1, 3.9])]
    band = stats.combine(cells)
    assert band.decision == "different" and band.ratio == pytest.approx(0.5, rel=0.01)
    assert band.ci_low < 0.5 < band.ci_high and band.n_baseline == 3
    assert stats.combine([stats.ratio_test([4.0], [2.0])]).decision == "undecided"


# -- loading and summaries -----------------------------------------------------------------------
def _write(tmp: Path, records: list[dict], info: dict | None = None) -> RunDir:
    run = RunDir.create(tmp / "run")
    run.write_run_info(info or {"run_id": "r1", "suite": {"name": "s"}, "hosts": ["a", "b"]})
    run.append_samples(records)
    return run


def test_load_samples_skips_intervals_and_flattens_lists(tmp_path: Path) -> None:
    run = _write(tmp_path, [
        {"test": "t", "step": "s1", "rep": 0, "hosts": ["a", "b"], "bw_avg_gbps": 10.0},
        {"test": "t", "step": "s1", "rep": 0, "kind": "interval", "t_start_s": 0.0, "bw_avg_gbps": 9.0},
        {"test": "t", "step": "s2", "rep": 1, "kind": "summary", "hosts": ["a", "b"], "bw_avg_gbps": 12.0},
    ])
    with open(run.path / "samples.jsonl", "a") as fh:
        fh.write('{"test": "t", "bw_avg')  # a line cut by a crash
    df = analysis.load_samples(run)
    assert len(df) == 2 and set(df["kind"]) == {"summary"}
    assert df["hosts"].tolist() == ["a,b", "a,b"]
    assert set(df["run_id"]) == {"r1"} and df["run"].iloc[0] == "s"
    everything = analysis.load_samples(run, intervals=True)
    assert len(everything) == 3
    summary, intervals = analysis.load_run(run)
    assert len(summary) == 2 and intervals["bw_avg_gbps"].tolist() == [9.0]


def test_metric_and_label_columns() -> None:
    df = pd.DataFrame({"test": ["t"], "size_bytes": [64], "rep": [0], "t_start_s": [1.0],
                       "bw_avg_gbps": [1.0], "busbw_GBps": [2.0], "lat_p99_us": [3.0],
                       "retransmits": [4], "loss_pct": [0.0], "streams": [4]})
    assert analysis.metric_columns(df) == ["bw_avg_gbps", "busbw_GBps", "lat_p99_us", "retransmits",
                                           "loss_pct"]
    assert analysis.case_columns(df) == ["test", "size_bytes", "streams"]
    assert higher_is_better("busbw_GBps") and not higher_is_better("lat_p99_us")
    assert not higher_is_better("loss_pct") and unit_of("busbw_GBps") == "GB/s"


def test_summarize_per_case() -> None:
    rows = []
    for rep, value in enumerate([10, 1, 2, 3, 4, 5, 6, 7, 8, 9]):
        rows.append({"test": "t", "step": f"s{rep}", "rep": rep, "size_bytes": 64, "bw_avg_gbps": value})
        rows.append({"test": "t", "step": f"s{rep}", "rep": rep, "size_bytes": 128,
                     "bw_avg_gbps": 100.0 if rep < 5 else float("nan")})
    out = analysis.summarize(pd.DataFrame(rows))
    assert list(out["size_bytes"]) == [64, 128]  # rep/step are not part of a case
    small = out[out["size_bytes"] == 64].iloc[0]
    assert small["n"] == 10 and small["median"] == 5.5 and small["mean"] == 5.5
    assert (small["ci95_low"], small["ci95_high"]) == (2, 9)
    assert small["cv"] == pytest.approx(3.0276503540974917 / 5.5)
    big = out[out["size_bytes"] == 128].iloc[0]
    assert big["n"] == 5 and big["stdev"] == 0 and big["ci_coverage"] == pytest.approx(0.9375)


# -- line rate -----------------------------------------------------------------------------------
def test_line_rate_share_uses_inventory_then_facts() -> None:
    info = {"inventory": {"hosts": {"a": {"vars": {"nic_line_rate_gbps": 200}},
                                    "b": {"vars": {"nic_line_rate_gbps": 100}},
                                    "c": {"vars": {}}}}, "hosts": ["a", "b", "c"]}
    facts = {"c": {"nics": [{"name": "eth0", "speed_mbps": 400000}]}}
    df = pd.DataFrame({"server": ["a", "a", "c"], "client": ["b", "c", "c"],
                       "bw_avg_gbps": [50.0, 100.0, 100.0], "busbw_GBps": [5.0, 5.0, 5.0]})
    out = analysis.line_rate_share(df, info, facts=facts)
    # a<->b limited by b (100); a<->c by a (200); c alone by its detected 400 Gbit/s link.
    assert out["bw_avg_gbps_line_rate_pct"].tolist() == pytest.approx([50.0, 50.0, 25.0])
    assert out["busbw_GBps_line_rate_pct"].tolist() == pytest.approx([40.0, 20.0, 10.0])
    unknown = analysis.line_rate_share(pd.DataFrame({"pair": ["x<->y"], "bw_avg_gbps": [1.0]}), info)
    assert math.isnan(unknown["bw_avg_gbps_line_rate_pct"].iloc[0])


# -- labels --------------------------------------------------------------------------------------
def _info(model: str, fw: str, started: float, suite: str = "q") -> dict:
    return {"run_id": f"run-{model}-{fw}-{started}", "suite": {"name": suite}, "started": started,
            "hosts": ["h1"], "inventory": {"hosts": {"h1": {"groups": ["rack1"],
                                                            "vars": {"nic_model": model, "nic_firmware": fw}}}}}


def test_run_labels_name_what_differs() -> None:
    assert analysis.run_label([_info("CX6", "22", 0), _info("CX7", "28", 0)]) == ["CX6 · fw 22", "CX7 · fw 28"]
    assert analysis.run_label([_info("CX7", "28.1", 0), _info("CX7", "28.2", 0)]) == ["CX7 · fw 28.1", "CX7 · fw 28.2"]
    by_date = analysis.run_label([_info("CX7", "28", 0), _info("CX7", "28", 86400 * 3)])
    assert by_date[0] != by_date[1] and all(lab.startswith("CX7 · fw 28 · 1970-01-0") for lab in by_date)
    twice = analysis.run_label([_info("CX7", "28", 0), _info("CX7", "28", 0)])
    assert len(set(twice)) == 2
    assert analysis.run_label([_info("CX7", "28", 0)]) == ["q · CX7"]


# -- comparison ----------------------------------------------------------------------------------
def test_compare_picks_faster_nic_with_ratio() -> None:
    comp = comparison.compare([RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")])
    assert comp.labels == ["CX6 · fw 22.36", "CX7 · fw 28.39"]
    bw = comp.bands[(comp.bands["test"] == "rdma-bw") & (comp.bands["metric"] == "bw_avg_gbps")]
    assert set(bw["winner"]) == {"CX7 · fw 28.39"}
    large = bw[bw["band"] == "large"].iloc[0]
    assert large["ratio[CX7 · fw 28.39]"] == pytest.approx(190 / 140, rel=0.03)
    lat = comp.bands[(comp.bands["test"] == "rdma-lat") & (comp.bands["metric"] == "lat_p99_us")]
    assert lat.iloc[0]["winner"] == "CX7 · fw 28.39" and "lower" in lat.iloc[0]["verdict"]
    kinds = {w["kind"] for w in comp.warnings}
    assert "pcie_link" in kinds  # the preflight finding; its NIC sensor peaks near 85 °C, under the NIC limits
    assert comp.verdicts and comp.verdicts[0]["run"] == "CX6 · fw 22.36"
    cost = {c["run"]: c for c in comp.cost if c["metric"] == "bw_avg_gbps" and c["test"] == "rdma-bw"}
    assert cost["CX6 · fw 22.36"]["price_usd"] == 1200
    json.dumps(comp.to_dict(), allow_nan=False)


def test_compare_same_distribution_and_too_few_reps(tmp_path: Path) -> None:
    a = synth.build_run(tmp_path / "a", name="a", seed=11, firmware="1")
    b = synth.build_run(tmp_path / "b", name="b", seed=12, firmware="2")
    comp = comparison.compare([a, b])
    bw = comp.bands[(comp.bands["test"] == "rdma-bw") & (comp.bands["metric"] == "bw_avg_gbps")]
    assert bw["winner"].isna().all()
    # 1 % noise, same peak: equivalent within 2 % (or undecided), never "different"
    assert all(v.startswith(("equivalent", "not enough repetitions")) for v in bw["verdict"])
    assert not any(s["decision"] == "different" for s in comp.statements)
    few_a = synth.build_run(tmp_path / "fa", name="fa", reps=2, seed=1, peak_gbps=100, firmware="1",
                            hosts=["h1", "h2", "h3", "h4"])
    few_b = synth.build_run(tmp_path / "fb", name="fb", reps=1, seed=2, peak_gbps=200, firmware="2",
                            hosts=["h1", "h2", "h3", "h4"])
    few = comparison.compare([few_a, few_b])
    # 2 pairs × 2 repetitions vs 2 pairs × 1: four against two samples per cell decide 2x apart
    bw_few = few.cells[(few.cells["test"] == "rdma-bw") & (few.cells["metric"] == "bw_avg_gbps")]
    assert (bw_few["cell_result"] == "CX7 · fw 2").all()
    one_a = synth.build_run(tmp_path / "oa", name="oa", reps=1, seed=1, peak_gbps=100, firmware="1",
                            hosts=["h1", "h2", "h1", "h2"])
    one_b = synth.build_run(tmp_path / "ob", name="ob", reps=1, seed=2, peak_gbps=200, firmware="2",
                            hosts=["h1", "h2", "h1", "h2"])
    one = comparison.compare([one_a, one_b])
    cells = one.cells[one.cells["run"] == "CX7 · fw 2"]
    undecided = cells[(cells["n"] < 2) | (cells["n_baseline"] < 2)]
    assert len(undecided) >= 10 and not undecided["significant"].any()
    assert set(undecided["test_result"]) == {"not enough repetitions to decide (n = 1 vs 1)"}
    assert not any("no significant" in str(v) for v in one.bands["verdict"])
    shutil.rmtree(tmp_path / "a")


def test_labels_the_user_chose_name_the_runs() -> None:
    from benchharness.analysis.frames import run_label

    infos = [{"run_id": "a", "labels": {"label": "vendor A"}}, {"run_id": "b", "labels": {"label": "vendor B"}}]
    assert run_label(infos) == ["vendor A", "vendor B"]
    # the same label twice says nothing apart: fall back to what differs
    assert len(set(run_label([{"run_id": "a", "labels": {"label": "x"}},
                              {"run_id": "b", "labels": {"label": "x"}}]))) == 2
