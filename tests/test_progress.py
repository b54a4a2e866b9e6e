"""The progress display: a redrawn bar on a terminal, plain lines in logs."""

from __future__ import annotations

import io

from benchharness.progress import Progress


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    show = Progress(out, tty=False)
    show("[1/2] round 1/2 0000-tcp-h1-h2-r0 ok")
    show("[2/2] round 2/2 0001-tcp-h2-h3-r0 failed unreachable: h3: refused")
    assert out.getvalue().splitlines() == ["[1/2] round 1/2 0000-tcp-h1-h2-r0 ok",
                                           "[2/2] round 2/2 0001-tcp-h2-h3-r0 failed unreachable: h3: refused"]


def test_bar_redraws_in_place_and_failures_stay_on_screen() -> None:
    out = io.StringIO()
    show = Progress(out, tty=True)
    show("[1/4] round 1/4 0000-tcp-h1-h2-r0 ok")
    show("[2/4] round 2/4 0001-tcp-h2-h3-r0 failed crashed: client was killed by SIGSEGV")
    show("[4/4] round 4/4 0003-tcp-h1-h2-r0 ok")
    text = out.getvalue()
    assert "\r[##########" in text and "] 1/4 " in text
    assert "0001-tcp-h2-h3-r0 failed crashed: client was killed by SIGSEGV\n" in text  # kept as a line
    assert text.endswith("\n")  # the finished bar leaves the cursor on a new line
