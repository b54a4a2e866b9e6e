"""Regression detection across nights: robust step test, trend test, and stored run series."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from benchharness.analysis import regression
from benchharness.cli.history import history_lines
from benchharness.report.trend import render_trend
from benchharness.results.catalog import Catalog, register_run

_spec = importlib.util.spec_from_file_location("acc_runs", Path(__file__).parent / "fixtures" / "acceptance" / "runs.py")
assert _spec and _spec.loader
runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runs)

H3 = ["n1", "n2", "n3"]
# Only the regression part can fail: the bound is far below any value.
WATCH = {"metric": "bw_avg_gbps", "sizes": "1M..8M", "min": 1, "regression": True}
POLICY = {"regression": {"window": 10, "min_history": 5, "k": 4, "min_change": "5%"}}


def test_a_step_down_is_flagged_against_robust_history() -> None:
    rng = random.Random(3)
    history = [360 * (1 + rng.gauss(0, 0.01)) for _ in range(10)]
    history[4] = 250.0  # one bad night in the history moves neither median nor MAD
    f = regression.check(history, 320.0)
    assert f.flagged and f.kind == "step" and f.change == pytest.approx(-0.11, abs=0.01)
    assert f.center == pytest.approx(360, rel=0.01) and "beyond 4σ and 5%" in f.message
    assert not regression.check(history, 352.0).flagged  # -2%: beyond noise, but below min_change
    # latency: up is worse
    lat = [2.0 * (1 + rng.gauss(0, 0.01)) for _ in range(8)]
    assert regression.check(lat, 2.4, higher_is_better=False).flagged
    assert not regression.check(lat, 1.6, higher_is_better=False).flagged  # faster is no regression


def test_a_noisy_flat_series_is_never_flagged() -> None:
    rng = random.Random(11)
    series = [100 * (1 + rng.gauss(0, 0.03)) for _ in range(60)]  # 3% noise, no change
    findings = regression.flags(series)
    assert [f.kind for f in findings[:5]] == ["short"] * 5
    assert not any(f.flagged for f in findings)


def test_a_slow_decline_inside_the_noise_is_flagged_as_a_trend() -> None:
    rng = random.Random(5)
    series = [100 * (1 - 0.012 * i) * (1 + rng.gauss(0, 0.004)) for i in range(12)]  # -1.2% a night
    f = regression.check(series[:-1], series[-1])
    assert f.flagged and f.kind == "trend" and "Mann-Kendall" in f.message
    step_only = regression.check(series[-11:-1], series[-1], z=99.0)  # the step test alone misses it
    assert not step_only.flagged


def test_too_little_history_is_said_so() -> None:
    f = regression.check([1.0, 1.0], 0.5)
    assert not f.flagged and f.kind == "short" and f.message == "only 2 earlier nights (needs 5)"


def _nights(root: Path, values: list[float], nic: str = "CX7") -> list:
    out = []
    for i, peak in enumerate(values):
        run = runs.make_run(root / f"night{i:02d}", H3, checks=[WATCH], verdicts=POLICY, peak=peak,
                            started=runs.T0 + i * runs.DAY, seed=i, noise=0.002, nic_model=nic)
        out.append((run, runs.finish(run)))
        register_run(run)
    return out


def regression_verdicts(verdicts: list) -> list:
    return [v for v in verdicts if v.check.startswith("bw_avg_gbps regression")]


def test_stored_runs_with_a_step_down_flag_the_night_of_the_drop(tmp_path: Path) -> None:
    rng = random.Random(7)
    values = [360 * (1 + rng.gauss(0, 0.01)) for _ in range(8)] + [320.0, 321.0]
    nights = _nights(tmp_path, values)
    first = regression_verdicts(nights[2][1])
    assert [(v.status, v.message) for v in first] == [
        ("info", "NIC CX7: too little history to compare (needs 5 earlier nights)")]
    assert [v.status for v in regression_verdicts(nights[7][1])] == ["pass"]
    drop = regression_verdicts(nights[8][1])
    assert [(v.status, v.host, v.test) for v in drop] == [("fail", None, "write-bw")]
    assert drop[0].message.startswith("NIC CX7: 2 of 2 cases regressed; worst at size=")
    assert "step:" in drop[0].message and drop[0].limit == pytest.approx(360, rel=0.03)
    assert nights[8][0].run_info()["exit_code"] == 1
    # the history shows the metric over nights and marks the drop
    lines = history_lines({"metric": "bw_avg_gbps", "nic": "CX7", "size": "8M"}, Catalog(tmp_path))
    assert lines[0] == "write-bw · bw_avg_gbps [Gbit/s] · size=8M bidir=False perftest_test=ib_write_bw · nic CX7"
    assert len(lines) == 11
    flagged = [line.split()[2] for line in lines[1:] if "REGRESSION" in line]
    assert flagged == ["night08", "night09"]  # flagged until the lower level dominates the window
    # trend report: the drop is in the flagged table and a chart is drawn
    out = render_trend(Catalog(tmp_path), tmp_path / "trend.html", "bw_avg_gbps", size=8 << 20)
    html = out.read_text()
    assert "night08" in html and "<svg" in html and "CX7" in html and "No night is flagged" not in html


def test_stored_noisy_flat_runs_are_not_flagged(tmp_path: Path) -> None:
    rng = random.Random(19)
    nights = _nights(tmp_path, [360 * (1 + rng.gauss(0, 0.02)) for _ in range(10)])
    assert all(v.status != "fail" for _, verdicts in nights for v in regression_verdicts(verdicts))
    assert [v.status for v in regression_verdicts(nights[-1][1])] == ["pass"]
    lines = history_lines({"metric": "bw_avg_gbps", "size": "1M"}, Catalog(tmp_path))
    assert not any("REGRESSION" in line for line in lines)
