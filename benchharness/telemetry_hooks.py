"""Which observers watch a run's steps (telemetry samplers, counters). None is required."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def observers_for(suite: Any, overrides: Mapping[str, str]) -> list[Any]:
    """Observers for a run of ``suite``."""
    return []
