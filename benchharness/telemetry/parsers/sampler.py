"""Output of ``sampler.py``: JSON lines during a step, or one ``--snapshot`` document."""

from __future__ import annotations

import json
from typing import Any

from benchharness.telemetry.counters import parse_snapshot


def parse_sampler_output(text: str) -> list[dict[str, Any]]:
    """Every complete JSON line; a line cut short by SIGKILL or a full disk is skipped."""
    lines: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and "ts" in item:
            lines.append(item)
    return lines


PARSERS = {"sampler": parse_sampler_output, "counters-snapshot": parse_snapshot}
