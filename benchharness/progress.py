"""Progress of a run on the terminal: a bar that redraws in place on a TTY, plain lines elsewhere."""

from __future__ import annotations

import re
import shutil
import sys
from typing import TextIO

_COUNT = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)$")


class Progress:
    """Callable the runner reports each finished step to (``[done/total] round r/R step status``)."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._drawn = False

    def __call__(self, line: str) -> None:
        m = _COUNT.match(line)
        if not self.tty or not m:
            self._clear()
            print(line, file=self.stream, flush=True)
            return
        done, total, rest = int(m.group(1)), int(m.group(2)), m.group(3)
        if not rest.endswith(" ok"):  # a failure stays on screen, above the bar
            self._clear()
            print(line, file=self.stream, flush=True)
        width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 60))
        filled = width * done // max(total, 1)
        text = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {rest}"
        cols = shutil.get_terminal_size((80, 20)).columns
        self.stream.write("\r" + text[: cols - 1].ljust(cols - 1))
        self.stream.flush()
        self._drawn = True
        if done >= total:
            self._clear(newline=True)

    def _clear(self, newline: bool = False) -> None:
        if self._drawn:
            self.stream.write("\n" if newline else "\r\x1b[2K")
            self.stream.flush()
            self._drawn = False
