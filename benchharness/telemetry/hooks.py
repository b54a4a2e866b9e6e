"""Which observers watch a run's steps (telemetry samplers, counters), from the suite's settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Seconds between the samplers' transceiver reads (``ethtool -m``) when a suite does not say.
MODULE_INTERVAL = 10.0
#: Seconds between BMC node power reads (``telemetry/power.py``) when a suite does not say: most
#: BMCs refresh their power sensor about once a second (docs/power.md).
POWER_INTERVAL = 1.0


def observers_for(suite: Any, overrides: Mapping[str, str]) -> list[Any]:
    """Observers for a run of ``suite``: telemetry unless ``telemetry: off``, with BMC node power
    (``power_interval``; hosts whose inventory names a BMC)."""
    settings = getattr(suite, "settings", {}) or {}
    mode = settings.get("telemetry", "on")
    if mode == "off":
        return []
    from benchharness.telemetry.collect import TelemetryObserver
    from benchharness.telemetry.power import PowerObserver

    power = PowerObserver(interval=float(settings.get("power_interval", POWER_INTERVAL) or 0.0))
    return [power, TelemetryObserver(interval=float(settings.get("telemetry_interval", 1.0)),
                              per_step=mode == "on",
                              counters_every=float(settings.get("counters_interval") or 0.0),
                              module_every=float(settings.get("module_interval", MODULE_INTERVAL) or 0.0))]
