"""The progress display: a redrawn bar on a terminal, plain lines in logs, from the runner's events."""

from __future__ import annotations

import io

from benchharness.core.model import Step
from benchharness.execution.events import StepEvent
from benchharness.execution.progress import Progress


def _finished(step_id: str, done: int, total: int, status: str = "ok", failure: str = "") -> StepEvent:
    step = Step(id=step_id, test="tcp", tool="iperf3", params={}, hosts=())
    return StepEvent("finished", step, done, total, round=done, rounds=total, status=status, failure=failure)


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    show = Progress(out, tty=False)
    show(StepEvent("started", Step(id="0000-tcp-h1-h2-r0", test="tcp", tool="iperf3", params={}, hosts=()),
                   0, 2, round=1, rounds=2))
    show(_finished("0000-tcp-h1-h2-r0", 1, 2))
    show(_finished("0001-tcp-h2-h3-r0", 2, 2, "failed", "unreachable: h3: refused"))
    assert out.getvalue().splitlines() == ["[1/2] round 1/2 0000-tcp-h1-h2-r0 ok",
                                           "[2/2] round 2/2 0001-tcp-h2-h3-r0 failed unreachable: h3: refused"]


def test_bar_redraws_in_place_and_failures_stay_on_screen() -> None:
    out = io.StringIO()
    show = Progress(out, tty=True)
    show(_finished("0000-tcp-h1-h2-r0", 1, 4))
    show(_finished("0001-tcp-h2-h3-r0", 2, 4, "failed", "crashed: client was killed by SIGSEGV"))
    show(_finished("0003-tcp-h1-h2-r0", 4, 4))
    text = out.getvalue()
    assert "\r[##########" in text and "] 1/4 " in text
    assert "0001-tcp-h2-h3-r0 failed crashed: client was killed by SIGSEGV\n" in text  # kept as a line
    assert text.endswith("\n")  # the finished bar leaves the cursor on a new line


def test_the_bar_names_the_steps_that_are_running() -> None:
    out = io.StringIO()
    show = Progress(out, tty=True)
    for step_id in ("0000-tcp-h1-h2-r0", "0001-tcp-h3-h4-r0"):
        show(StepEvent("started", Step(id=step_id, test="tcp", tool="iperf3", params={}, hosts=()),
                       0, 2, round=1, rounds=1))
    assert "0/2 running 0000-tcp-h1-h2-r0, 0001-tcp-h3-h4-r0" in out.getvalue()
