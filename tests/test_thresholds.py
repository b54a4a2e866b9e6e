"""Threshold expressions, checks and the suite's ``checks:`` / ``verdicts:`` validation (file:line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.config.suites import load_suite
from benchharness.config.thresholds import (
    CheckError,
    Threshold,
    parse_check,
    parse_policy,
    parse_sizes,
    parse_threshold,
)
from benchharness.core.errors import ConfigError


@pytest.mark.parametrize(("text", "value", "reference"), [
    (370, 370.0, None),
    ("4.2", 4.2, None),
    ("90% line_rate", 0.9, "line_rate"),
    ("95 % of baseline", 0.95, "baseline"),
    ("90%best-peer", 0.9, "best_peer"),
    ("0.9 x best_peer", 0.9, "best_peer"),
    ("130% best_peer", 1.3, "best_peer"),
])
def test_thresholds_parse_to_a_factor_and_a_reference(text: object, value: float, reference: str | None) -> None:
    th = parse_threshold(text)
    assert th.value == pytest.approx(value) and th.reference == reference


@pytest.mark.parametrize("text", ["fast", "90% of the wind", "-5% baseline", True, None, "90 line_rate"])
def test_bad_thresholds_are_refused(text: object) -> None:
    with pytest.raises(ValueError):
        parse_threshold(text)


def test_limits_scale_the_reference_or_stand_alone() -> None:
    assert Threshold(370.0).limit(None) == 370.0
    assert parse_threshold("90% line_rate").limit(50.0) == pytest.approx(45.0)
    assert parse_threshold("95% baseline").limit(None) is None  # no baseline: not judged


def test_size_ranges_are_inclusive_and_open_ended() -> None:
    assert parse_sizes("64K..8M") == (65536, 8 << 20)
    assert parse_sizes("1M..") == (1 << 20, None)
    assert parse_sizes("..64K") == (None, 65536)
    assert parse_sizes("8M") == (8 << 20, 8 << 20)
    with pytest.raises(ValueError, match="backwards"):
        parse_sizes("8M..64K")


def test_a_check_selects_samples_by_size_and_labels() -> None:
    check = parse_check({"metric": "bw_avg_gbps", "sizes": "64K..8M", "min": "90% line_rate",
                         "where": {"direction": ["forward", "reverse"], "bidir": False}})
    base = {"direction": "forward", "bidir": False}
    assert check.matches({**base, "size_bytes": 65536})
    assert check.matches({**base, "size_bytes": 8 << 20})
    assert not check.matches({**base, "size_bytes": 4096})
    assert not check.matches({**base, "size_bytes": 65536, "bidir": True})
    assert not check.matches({"direction": "forward", "bidir": False})  # no size: not in a range
    assert check.label(">=", check.minimum) == "bw_avg_gbps >= 90% line_rate [64K..8M]"  # type: ignore[arg-type]


@pytest.mark.parametrize(("raw", "key", "match"), [
    ({"metric": "bandwidth", "min": 1}, "metric", "not a metric name"),
    ({"metric": "lat_p99_us", "max": "90% line_rate"}, "max", "bandwidth metric"),
    ({"metric": "bw_avg_gbps"}, None, "needs min: or max:"),
    ({"metric": "bw_avg_gbps", "min": 1, "sizes": "big"}, "sizes", "not a size"),
    ({"metric": "bw_avg_gbps", "min": 1, "stat": "p50"}, "stat", "not one of"),
    ({"metric": "bw_avg_gbps", "min": 1, "floor": 3}, "floor", "unknown key"),
    ({"metric": "bw_avg_gbps", "min": 1, "regression": "yes"}, "regression", "true or false"),
])
def test_bad_checks_name_the_key(raw: dict, key: str | None, match: str) -> None:
    with pytest.raises(CheckError, match=match) as err:
        parse_check(raw)
    assert err.value.key == key


def test_policy_defaults_and_validation() -> None:
    p = parse_policy({"baseline": "latest-pass", "regression": {"window": 14, "min_change": "3%"}})
    assert (p.baseline, p.window, p.min_history, p.k, p.min_change) == ("latest-pass", 14, 5, 4.0, 0.03)
    with pytest.raises(CheckError, match="min_history"):
        parse_policy({"regression": {"window": 2}})


SUITE = """\
description: x
verdicts:
  baseline: golden
tests:
  - name: bw
    tool: iperf3
    params: {protocol: tcp}
    checks:
      - metric: bw_avg_gbps
        min: 90% line_rate
      - metric: lat_p99_us
        max: 90% line_rate
"""


def test_suite_checks_are_validated_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SUITE)
    with pytest.raises(ConfigError) as err:
        load_suite(str(bad))
    assert str(err.value).startswith(f"{bad}:12: test 'bw': checks: max:")
    good = tmp_path / "good.yaml"
    good.write_text(SUITE.replace("      - metric: lat_p99_us\n        max: 90% line_rate\n",
                                  "      - metric: lat_p99_us\n        max: 4.2\n"))
    suite = load_suite(str(good))
    assert suite.verdicts == {"baseline": "golden"}
    assert suite.tests[0].checks == ({"metric": "bw_avg_gbps", "min": "90% line_rate"},
                                     {"metric": "lat_p99_us", "max": 4.2})


def test_suite_verdicts_policy_errors_point_at_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = SUITE.replace("max: 90% line_rate", "max: 4.2")
    bad.write_text(text.replace("  baseline: golden\n", "  baseline: golden\n  quorum: 3\n"))
    with pytest.raises(ConfigError, match=rf"^{bad}:4: verdicts: unknown key 'quorum'"):
        load_suite(str(bad))


def test_the_shipped_acceptance_suite_loads_with_line_rate_thresholds() -> None:
    suite = load_suite("acceptance")
    checks = [parse_check(c) for t in suite.tests for c in t.checks]
    tools = {t.tool for t in suite.tests}
    assert {"perftest", "iperf3", "collective"} <= tools
    assert suite.settings["preflight"] == "enforce"
    bandwidth = [c for c in checks if c.metric in ("bw_avg_gbps", "busbw_GBps")]
    assert any(c.minimum and c.minimum.reference == "line_rate" for c in bandwidth)
    assert any(c.maximum and c.metric.startswith("lat_p99") for c in checks)
    assert any(c.regression for c in checks)


def test_a_share_of_the_rated_message_rate_needs_a_packet_rate_metric() -> None:
    from benchharness.config.thresholds import CheckError, parse_check

    check = parse_check({"metric": "msg_rate_mpps", "min": "90% nic_msg_rate"})
    assert check.minimum is not None and check.minimum.reference == "nic_msg_rate"
    assert check.minimum.value == pytest.approx(0.9)
    with pytest.raises(CheckError, match="packet-rate metric"):
        parse_check({"metric": "bw_avg_gbps", "min": "90% nic_msg_rate"})
