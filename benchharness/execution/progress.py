"""Progress of a run on the terminal: a bar that redraws in place on a TTY, plain lines elsewhere."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from benchharness.execution.events import StepEvent


class Progress:
    """Watches the runner's step events: one line per finished step in logs, a bar on a terminal."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._drawn = False
        self._running: dict[str, None] = {}

    def __call__(self, event: StepEvent) -> None:
        if event.kind == "started":
            self._running[event.step.id] = None
            if self.tty:
                self._bar(event, f"running {', '.join(self._running)}")
            return
        self._running.pop(event.step.id, None)
        if not self.tty:
            print(event.line(), file=self.stream, flush=True)
            return
        if event.status != "ok":  # a failure stays on screen, above the bar
            self._clear()
            print(event.line(), file=self.stream, flush=True)
        self._bar(event, f"round {event.round}/{event.rounds} {event.step.id} {event.status}")
        if event.done >= event.total:
            self._clear(newline=True)

    def _bar(self, event: StepEvent, rest: str) -> None:
        cols = shutil.get_terminal_size((80, 20)).columns
        width = max(10, min(40, cols - 60))
        filled = width * event.done // max(event.total, 1)
        text = f"[{'#' * filled}{'.' * (width - filled)}] {event.done}/{event.total} {rest}"
        self.stream.write("\r" + text[: cols - 1].ljust(cols - 1))
        self.stream.flush()
        self._drawn = True

    def _clear(self, newline: bool = False) -> None:
        if self._drawn:
            self.stream.write("\n" if newline else "\r\x1b[2K")
            self.stream.flush()
            self._drawn = False
