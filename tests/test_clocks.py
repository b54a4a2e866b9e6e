"""Clients that start at one agreed instant: clock offsets, the host-side waiter, its mark."""

from __future__ import annotations

import subprocess
import time

import pytest

from benchharness.execution import clocks


def test_offset_is_the_host_clock_against_the_round_trip_midpoint() -> None:
    calls = iter([0.30, 0.02, 0.10])  # round trips of the three tries

    def host_clock() -> str:
        rtt = next(calls)
        time.sleep(rtt)
        return f"{time.time() - rtt / 2 + 100.0:.6f}\n"  # a host 100 s ahead, read mid-way

    found = clocks.measure_offset(host_clock)
    assert found.offset_s == pytest.approx(100.0, abs=0.02)
    assert 0.02 <= found.rtt_s < 0.1  # the shortest round trip wins


def test_a_clock_without_nanoseconds_is_refused() -> None:
    with pytest.raises(ValueError):
        clocks.measure_offset(lambda: "%s.N\n")  # busybox date prints the format back


def test_waiter_starts_the_command_at_the_instant_and_marks_it() -> None:
    at = time.time() + 0.6
    res = subprocess.run([*clocks.start_at_argv(at), "sh", "-c", "echo out; echo err >&2"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and res.stdout == "out\n"
    started, rest = clocks.split_start_mark(res.stderr)
    assert started is not None and started >= at - 0.01  # never before the agreed instant
    assert rest == "err\n"


def test_waiter_in_the_past_starts_at_once_and_passes_arguments_untouched() -> None:
    res = subprocess.run([*clocks.start_at_argv(time.time() - 5), "printf", "%s|", "a b", "$HOME", "'"],
                         capture_output=True, text=True, timeout=30)
    assert res.stdout == "a b|$HOME|'|"
    assert clocks.split_start_mark(res.stderr)[0] is not None


def test_no_mark_leaves_stderr_alone() -> None:
    assert clocks.split_start_mark("warning: x\n") == (None, "warning: x\n")
    assert clocks.lead_time_s(8, 0.001) == pytest.approx(0.3 + 8 * 0.03)
