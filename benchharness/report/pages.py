"""What every HTML page of the reports shares: the Jinja2 environment and its filters, time
formatting, and the atomic write."""

from __future__ import annotations

import datetime as dt
import math
import os
from functools import cache
from pathlib import Path
from typing import Any

from benchharness import __version__
from benchharness.report import charts

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> Any:
    """The Jinja2 environment (autoescape on for every template)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = charts.fmt
    env.filters["when"] = when
    env.filters["pct"] = lambda v: f"{v * 100:.1f}%" if finite(v) else "–"
    env.filters["ratio"] = lambda v: f"×{v:.3f}" if finite(v) else "–"
    env.globals["version"] = __version__
    return env


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def when(value: Any) -> str:
    """Epoch seconds or ISO text as ``2025-11-30 12:00:00 UTC``."""
    if value is None or value == "":
        return "–"
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value).replace("T", " ")


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    try:
        return dt.datetime.fromisoformat(str(value)).timestamp()
    except (TypeError, ValueError):
        return None


def duration(start: Any, end: Any) -> str:
    """``1h 02m 05s`` between two timestamps, or ``–``."""
    a, b = _epoch(start), _epoch(end)
    if a is None or b is None or b < a:
        return "–"
    secs = round(b - a)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s" if m else f"{s}s"


def write_html(text: str, out: Path) -> Path:
    """Write atomically (a half-written report never replaces a good one)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    return out
