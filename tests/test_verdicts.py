"""Verdicts over stored samples: thresholds, per-host attribution, roll-ups, baselines.

Run directories are synthetic (tests/fixtures/acceptance/runs.py): no RDMA hardware here; the
samples carry the labels and metric names the perftest and collective adapters write.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchharness.analysis.verdicts import ROLLUP, check_baseline_ref, evaluate, summary_lines
from benchharness.core.errors import EXIT_OK, EXIT_STEPS_FAILED, EXIT_VERDICT_FAILED, UsageError
from benchharness.core.model import Verdict
from benchharness.execution.execute import exit_code_for
from benchharness.results.catalog import Catalog

_spec = importlib.util.spec_from_file_location("acc_runs", Path(__file__).parent / "fixtures" / "acceptance" / "runs.py")
assert _spec and _spec.loader
runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runs)

H4 = ["gpu01", "gpu02", "gpu03", "gpu04"]
LINE = {"metric": "bw_avg_gbps", "sizes": "1M..8M", "min": "85% line_rate"}
PEER = {"metric": "bw_avg_gbps", "sizes": "64K..8M", "min": "90% best_peer"}


def failed_hosts(verdicts: list[Verdict], check: str | None = None) -> set[str]:
    return {v.host for v in verdicts if v.status == "fail" and v.host and (check is None or v.check == check)}


def by(verdicts: list[Verdict], check: str) -> dict[str | None, Verdict]:
    return {v.host: v for v in verdicts if v.check == check}


def test_one_slow_nic_fails_that_host_only(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[LINE, PEER], host_factor={"gpu03": 0.5})
    verdicts = evaluate(run, run.run_info())
    assert failed_hosts(verdicts) == {"gpu03"}
    line = by(verdicts, "bw_avg_gbps >= 85% line_rate [1M..8M]")
    assert set(line) == set(H4)  # one verdict per host for the check
    assert line["gpu03"].status == "fail" and line["gpu03"].limit == pytest.approx(340.0)
    assert line["gpu03"].value == pytest.approx(179.3, rel=0.02)  # half of 360 at 1M
    assert "fails in 2 of 2 cases" in line["gpu03"].message
    assert all(line[h].status == "pass" for h in ("gpu01", "gpu02", "gpu04"))
    assert "explained by the other host" in line["gpu01"].message
    roll = by(verdicts, ROLLUP)
    assert roll["gpu03"].status == "fail" and "sn MT2234X00002" in roll["gpu03"].message
    assert "fw 28.39.1002" in roll["gpu03"].message and roll["gpu01"].status == "pass"
    assert roll[None].status == "fail" and roll[None].message.startswith("failed hosts: gpu03;")
    assert verdicts[0].check == ROLLUP  # roll-ups come first: the report and console lead with them
    assert exit_code_for("complete", 0, verdicts) == EXIT_VERDICT_FAILED


def test_three_hosts_one_shaped_names_exactly_that_host(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", ["h1", "h2", "h3"], checks=[PEER], host_factor={"h3": 0.1})
    verdicts = evaluate(run, run.run_info())
    assert failed_hosts(verdicts) == {"h3"}
    assert [v for v in verdicts if v.status == "fail" and v.host is None and v.check != ROLLUP] == []
    # nothing in the failing host's evidence names its peers
    assert all("h1" not in v.message and "h2" not in v.message for v in verdicts if v.host == "h3")


def test_two_bad_hosts_of_four_are_both_named(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[PEER], host_factor={"gpu01": 0.6, "gpu02": 0.6})
    assert failed_hosts(evaluate(run, run.run_info())) == {"gpu01", "gpu02"}


def test_a_slow_path_between_good_hosts_is_a_pair_failure(tmp_path: Path) -> None:
    slow = {frozenset(("gpu01", "gpu04"))}
    run = runs.make_run(tmp_path / "r", H4, checks=[PEER],
                        pair_factor=lambda a, b: 0.5 if frozenset((a, b)) in slow else 1.0)
    verdicts = evaluate(run, run.run_info())
    assert failed_hosts(verdicts) == set()
    pair = [v for v in verdicts if v.status == "fail" and v.host is None and v.check != ROLLUP]
    assert len(pair) == 3  # one per failing case: 64K, 1M and 8M
    assert all(v.message.startswith("pair gpu01,gpu04: both hosts pass with other peers") for v in pair)
    assert exit_code_for("complete", 0, verdicts) == EXIT_VERDICT_FAILED


def test_unknown_line_rate_fails_with_what_to_set(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[LINE], line_rate=None, facts=False)
    verdicts = evaluate(run, run.run_info())
    fails = [v for v in verdicts if v.status == "fail" and v.check != ROLLUP]
    assert {v.host for v in fails} == set(H4)
    assert all("set nic_line_rate_gbps" in v.message for v in fails)


def test_line_rate_falls_back_to_the_link_speed_in_telemetry(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[LINE], line_rate=None, host_factor={"gpu02": 0.7})
    verdicts = evaluate(run, run.run_info())  # facts say speed_mbps 400000
    assert failed_hosts(verdicts) == {"gpu02"}


def test_latency_ceiling_absolute_and_relative(tmp_path: Path) -> None:
    checks = [{"metric": "lat_p99_us", "max": 3.0}, {"metric": "lat_p99_us", "max": "130% best_peer"}]
    run = runs.make_run(tmp_path / "r", H4, checks=checks, host_factor={"gpu04": 0.5})  # p99 = 4 µs
    verdicts = evaluate(run, run.run_info())
    assert failed_hosts(verdicts, "lat_p99_us <= 3") == {"gpu04"}
    assert failed_hosts(verdicts, "lat_p99_us <= 130% best_peer") == {"gpu04"}
    v = by(verdicts, "lat_p99_us <= 3")["gpu04"]
    assert v.value == pytest.approx(4.0, rel=0.03) and v.limit == 3.0 and "> limit 3" in v.message


def test_group_checks_judge_the_group_not_a_host(tmp_path: Path) -> None:
    group = [{"metric": "busbw_GBps", "sizes": "256M..", "min": "75% line_rate"}]
    ok = runs.make_run(tmp_path / "ok", H4, group_checks=group)
    verdicts = evaluate(ok, ok.run_info())
    g = [v for v in verdicts if v.test == "allreduce"]
    assert [(v.status, v.host) for v in g] == [("pass", None)]
    assert g[0].message.startswith("group of 4 hosts: within limits in all 2 cases")
    bad = runs.make_run(tmp_path / "bad", H4, group_checks=group, host_factor={"gpu02": 0.5})
    g = [v for v in evaluate(bad, bad.run_info()) if v.test == "allreduce"]
    assert [(v.status, v.host) for v in g] == [("fail", None)]


def test_missing_metric_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[{"metric": "lat_p999_us", "max": 9}])
    verdicts = evaluate(run, run.run_info())
    assert [v.message.split(":")[0] for v in verdicts if v.check != ROLLUP] == ["no lat_p999_us samples"]
    assert exit_code_for("complete", 0, verdicts) == EXIT_VERDICT_FAILED


def test_a_suite_without_checks_has_no_verdicts(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4)
    assert evaluate(run, run.run_info()) == []


def test_steps_that_could_not_run_fail_the_host_rollup(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[PEER], failed_step_host="gpu02")
    verdicts = evaluate(run, run.run_info())
    roll = by(verdicts, ROLLUP)
    assert roll["gpu02"].status == "fail" and "1 step could not run" in roll["gpu02"].message
    assert exit_code_for("partial", 1, verdicts) == EXIT_STEPS_FAILED  # 3 wins over 1


def test_preflight_failures_count_in_rollups(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[PEER])
    run.write_json("telemetry/preflight.json", [
        {"check": "preflight.pcie_nic", "status": "fail", "message": "x8 of x16", "host": "gpu01"},
        {"check": "preflight.mtu", "status": "pass", "message": "9000", "host": "gpu02"}])
    roll = by(evaluate(run, run.run_info()), ROLLUP)  # default preflight: warn
    assert roll["gpu01"].status == "warn" and "preflight failed: preflight.pcie_nic" in roll["gpu01"].message
    enforce = runs.make_run(tmp_path / "e", H4, checks=[PEER], settings={"preflight": "enforce"})
    enforce.write_json("telemetry/preflight.json", [
        {"check": "preflight.pcie_nic", "status": "fail", "message": "x8 of x16", "host": "gpu01"}])
    assert by(evaluate(enforce, enforce.run_info()), ROLLUP)["gpu01"].status == "fail"


def test_baseline_by_tag_and_latest_pass(tmp_path: Path) -> None:
    check = [{"metric": "msg_rate_mpps", "sizes": "4K..64K", "min": "95% baseline"}]
    golden = runs.make_run(tmp_path / "n1-golden", H4, checks=check, started=runs.T0)
    runs.finish(golden)
    Catalog(tmp_path).tag("n1-golden", ["golden"])
    later = runs.make_run(tmp_path / "n2", H4, checks=check, started=runs.T0 + runs.DAY, peak=380.0)
    runs.finish(later)  # no baseline given: the policy default "golden"
    assert later.run_info()["baseline_run"] == "n1-golden"
    assert check_baseline_ref("golden", "acceptance", tmp_path) == "n1-golden"
    assert check_baseline_ref("latest-pass", "acceptance", tmp_path) == "n2"
    with pytest.raises(UsageError, match="no run tagged 'bronze'"):
        check_baseline_ref("bronze", "acceptance", tmp_path)
    # a new shipment (other hosts) 20% slower than the golden run: every host fails
    slow = runs.make_run(tmp_path / "n3", ["node1", "node2", "node3"], checks=check, peak=288.0,
                         started=runs.T0 + 2 * runs.DAY)
    info = slow.run_info()
    info["baseline"] = "golden"
    verdicts = evaluate(slow, info)
    assert failed_hosts(verdicts) == {"node1", "node2", "node3"}
    assert "of baseline" in by(verdicts, "msg_rate_mpps >= 95% baseline [4K..64K]")["node1"].message
    info["baseline"] = "latest-pass"  # n2, the faster night: still failing
    assert failed_hosts(evaluate(slow, info)) == {"node1", "node2", "node3"}


def test_no_baseline_yet_warns_and_passes(tmp_path: Path) -> None:
    check = [{"metric": "msg_rate_mpps", "min": "95% baseline"}]
    run = runs.make_run(tmp_path / "first", H4, checks=check)
    verdicts = evaluate(run, run.run_info())
    assert [(v.status, v.message[:16]) for v in verdicts if v.check != ROLLUP] == [("warn", "no baseline run ")]
    assert exit_code_for("complete", 0, verdicts) == EXIT_OK


def test_console_summary_names_failed_and_passed_hosts(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "r", H4, checks=[PEER], host_factor={"gpu03": 0.5})
    lines = summary_lines(evaluate(run, run.run_info()))
    assert lines == ["acceptance: FAIL (1 failed checks of 4)", "  hosts FAILED: gpu03",
                     "  hosts passed: gpu01, gpu02, gpu04"]


def test_message_rate_against_the_nics_rated_figure(tmp_path: Path) -> None:
    """Known truth: at 64 KiB every pair moves 360 * 65536 / (65536 + 4096) Gbit/s, i.e. 0.6429 Mpps;
    gpu03's pairs half of it. Rated 0.7 Mpps, 85% of it is 0.595: gpu03 fails, the others pass."""
    check = {"metric": "msg_rate_mpps", "sizes": "64K", "min": "85% nic_msg_rate"}
    run = runs.make_run(tmp_path / "r", H4, checks=[check], host_factor={"gpu03": 0.5}, msg_rate=0.7, noise=0.0)
    verdicts = evaluate(run, run.run_info())
    mine = by(verdicts, "msg_rate_mpps >= 85% nic_msg_rate [64K]")
    assert failed_hosts(verdicts) == {"gpu03"} and set(mine) == set(H4)
    rate = 360 * 65536 / (65536 + 4096) * 1e3 / 8 / 65536
    assert mine["gpu01"].value == pytest.approx(rate) and mine["gpu01"].limit == pytest.approx(0.595)
    assert mine["gpu03"].value == pytest.approx(rate / 2) and "rated 0.7 Mpps" in mine["gpu03"].message
    unrated = runs.make_run(tmp_path / "u", H4, checks=[check])
    fails = [v for v in evaluate(unrated, unrated.run_info()) if v.check.startswith("msg_rate_mpps")]
    assert {v.host for v in fails if v.status == "fail"} == set(H4)
    assert all("set nic_msg_rate_mpps in the inventory" in v.message for v in fails)
