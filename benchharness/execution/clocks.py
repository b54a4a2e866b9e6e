"""Host clocks and a start instant the hosts keep themselves.

Clients of one step (incast, one-to-many, all-to-all, staggered starts) must start together, not
one after another as SSH reaches each host. The controller measures every host's clock offset
(NTP-style: the host's ``date +%s.%N`` against the midpoint of the request's round trip, best of
a few tries), picks an instant a little ahead, and each client's command line waits on its host
until that instant in the host's own clock (``start_at_argv``) and prints when it really began
(``START_MARK``), which becomes the result's start time on the controller's clock.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

#: Printed on stderr by the waiter when the command starts: ``bench-started-at <epoch seconds>``.
START_MARK = "bench-started-at"
_MARK_LINE = re.compile(rf"^{START_MARK} (\d+(?:\.\d+)?)\n?", re.MULTILINE)
# sh + date + awk + sleep: on every host that runs the tools. `date +%s.%N` is GNU date's.
_WAITER = ('t="$1"; shift; now=$(date +%s.%N); '
           'd=$(awk -v t="$t" -v n="$now" \'BEGIN { d = t - n; if (d > 0) printf "%.6f", d; else print 0 }\'); '
           'sleep "$d"; printf \'%s %s\\n\' "' + START_MARK + '" "$(date +%s.%N)" >&2; exec "$@"')
TRIES = 3


@dataclass(frozen=True)
class ClockOffset:
    """How far a host's clock is ahead of the controller's (``offset_s``), within ``rtt_s / 2``."""

    offset_s: float
    rtt_s: float

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 6) for k, v in asdict(self).items()}


def measure_offset(read_host_clock: Callable[[], str], tries: int = TRIES) -> ClockOffset:
    """Offset of the clock that ``read_host_clock`` reads (it returns ``date +%s.%N`` output);
    the try with the shortest round trip wins. ValueError when the host prints no time."""
    best: ClockOffset | None = None
    for _ in range(tries):
        sent = time.time()
        text = read_host_clock()
        back = time.time()
        value = float(text.strip().split()[0])
        found = ClockOffset(value - (sent + back) / 2, back - sent)
        if best is None or found.rtt_s < best.rtt_s:
            best = found
    assert best is not None
    return best


def start_at_argv(host_instant: float) -> list[str]:
    """argv prefix that waits until ``host_instant`` (the host's own clock), marks, then execs."""
    return ["sh", "-c", _WAITER, "bench-start-at", f"{host_instant:.6f}"]


def split_start_mark(stderr: str) -> tuple[float | None, str]:
    """``(host start time, stderr without the mark)``: the waiter's line is not the tool's output."""
    found = _MARK_LINE.search(stderr)
    if found is None:
        return None, stderr
    return float(found.group(1)), stderr[:found.start()] + stderr[found.end():]


def lead_time_s(clients: int, max_rtt_s: float) -> float:
    """How far ahead the agreed instant lies: time to start every client over its connection."""
    return 0.3 + clients * max(0.03, 2 * max_rtt_s)
