"""Fabric health under load: sustained bandwidth and heat judged per step (pure functions).

Limits of a test's ``health:`` block beside the counter limits of ``telemetry/health.py``::

    health:
      degradation: 5%            # bandwidth of the last third of a sustained step vs its first third
      sustained_s: 60            # a step shorter than this is not judged for degradation (default 60)
      temp_peak_c: 85            # hottest reading of any NIC / transceiver / GPU sensor in the step
      temp_slope_c_per_min: 2    # least-squares slope of a sensor over the step, degrees C per minute
      throttle: none             # no clock throttle reason active (nvidia-smi / amd-smi), or
                                 # "thermal": only thermal and power-brake reasons count
      cpu_s_per_gb: 2            # CPU-seconds a host spends per GB its NICs move (telemetry/cpu_cost.py)
      cpu_vs_peers: 1.5          # a host's CPU-s/GB over the test vs the median of its peers'
      busiest_core_pct: 90       # busy share of the host's busiest core over a step, percent

``degradation`` reads interval samples: (start, end, Gbit/s) rows, the tool's own (iperf3 ``-i``)
or the counter series' bytes per interval (``telemetry/series.py``). The thirds are thirds of the
step's covered time; each interval counts in the third its midpoint falls in, weighted by length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.units import parse_duration

CPU_LIMITS = ("cpu_s_per_gb", "cpu_vs_peers", "busiest_core_pct")
LOAD_KEYS = ("degradation", "sustained_s", "temp_peak_c", "temp_slope_c_per_min", "throttle", *CPU_LIMITS)
#: Keys that are limits (``sustained_s`` only qualifies ``degradation``).
LOAD_LIMITS = ("degradation", "temp_peak_c", "temp_slope_c_per_min", "throttle", *CPU_LIMITS)
LABELS = {"degradation": "degradation", "temp_peak_c": "temperature peak",
          "temp_slope_c_per_min": "temperature slope", "throttle": "throttle",
          "cpu_s_per_gb": "CPU per GB", "cpu_vs_peers": "CPU per GB vs peers", "busiest_core_pct": "busiest core"}
DEFAULT_SUSTAINED_S = 60.0
THROTTLE_MODES = ("none", "thermal")
#: Fewer interval samples than this in a third: too few to call a trend.
MIN_PER_THIRD = 2


def parse_load(key: str, value: Any) -> Any:
    """One validated load limit (ValueError with the reason); shares as fractions, seconds as floats."""
    if key == "throttle":
        text = str(value).strip().lower() if value is not None and not isinstance(value, bool) else ""
        if value is False:
            text = "none"  # YAML reads a bare "no" / "off" as false
        if text not in THROTTLE_MODES:
            raise ValueError(f"throttle must be one of {', '.join(THROTTLE_MODES)}, not {value!r}")
        return text
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{key} must be a number, not {value!r}")
    text = str(value).strip()
    if key == "busiest_core_pct":
        text = text.removesuffix("%")
    if key == "sustained_s":
        seconds = parse_duration(value)
        if seconds <= 0:
            raise ValueError(f"sustained_s must be positive seconds, not {value!r}")
        return float(seconds)
    try:
        number = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number{' or a share like 5%' if key == 'degradation' else ''}, "
                         f"not {value!r}") from None
    if math.isnan(number) or (number < 0 and key != "temp_slope_c_per_min"):
        raise ValueError(f"{key} must not be negative: {value!r}")
    if key == "busiest_core_pct" and not 0 < number <= 100:
        raise ValueError(f"busiest_core_pct is a percent of one core (0..100), not {value!r}")
    if key == "cpu_vs_peers" and number <= 1:
        raise ValueError(f"cpu_vs_peers is a ratio to the peers' median above 1 (e.g. 1.5), not {value!r}")
    if key == "degradation" and number >= 1:
        raise ValueError(f"degradation is a share of the first third's bandwidth (0..100%), not {value!r}")
    return number


# ---------------------------------------------------------------- sustained bandwidth

@dataclass(frozen=True)
class Thirds:
    """Bandwidth of the first and last third of a step's interval samples."""

    first_gbps: float
    last_gbps: float
    n_first: int
    n_last: int
    seconds: float  # covered span, first start to last end

    @property
    def drop(self) -> float:
        """Share lost from the first third to the last (negative: it got faster)."""
        return 1.0 - self.last_gbps / self.first_gbps if self.first_gbps > 0 else 0.0


def thirds(rows: Sequence[tuple[float, float, float]]) -> Thirds | None:
    """First and last third of ``(t_start, t_end, gbps)`` rows, time-weighted; None when a third
    holds fewer than ``MIN_PER_THIRD`` intervals (too short a step or too coarse a series)."""
    rows = [(a, b, v) for a, b, v in rows if b > a and math.isfinite(v)]
    if not rows:
        return None
    lo, hi = min(a for a, _, _ in rows), max(b for _, b, _ in rows)
    span = hi - lo
    first = [(b - a, v) for a, b, v in rows if (a + b) / 2 < lo + span / 3]
    last = [(b - a, v) for a, b, v in rows if (a + b) / 2 >= hi - span / 3]
    if len(first) < MIN_PER_THIRD or len(last) < MIN_PER_THIRD:
        return None

    def mean(part: list[tuple[float, float]]) -> float:
        return sum(w * v for w, v in part) / sum(w for w, _ in part)

    return Thirds(mean(first), mean(last), len(first), len(last), span)


# ---------------------------------------------------------------- heat

def slope_per_min(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of ``(seconds, value)`` points, per minute; None under two distinct times."""
    pts = [(t, v) for t, v in points if math.isfinite(t) and math.isfinite(v)]
    if len(pts) < 2:
        return None
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    sxx = sum((t - mt) ** 2 for t, _ in pts)
    if sxx <= 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in pts) / sxx * 60.0


@dataclass(frozen=True)
class Heat:
    """One sensor over one step: its peak and its least-squares slope."""

    sensor: str
    kind: str  # nic | transceiver | gpu | other
    peak_c: float
    slope_c_per_min: float | None
    first_c: float
    last_c: float
    n: int


def sensor_kind(name: str) -> str:
    """What a sampler sensor name measures: ``gpu``, ``transceiver``, ``nic`` or ``other``."""
    low = name.lower()
    if low.startswith("gpu") or "amdgpu" in low or "/gpu" in low:
        return "gpu"
    if "module" in low or "transceiver" in low or "sfp" in low or "qsfp" in low or "cable" in low:
        return "transceiver"
    if any(k in low for k in ("mlx5", "mlx4", "bnxt", "ice", "i40e", "irdma", "nic", "asic")):
        return "nic"
    return "other"


def heat(series: dict[str, list[tuple[float, float]]]) -> list[Heat]:
    """Peak and slope of each sensor's ``(seconds, °C)`` points (sensor name -> points)."""
    out = []
    for name, pts in sorted(series.items()):
        pts = sorted(p for p in pts if math.isfinite(p[1]))
        if not pts:
            continue
        out.append(Heat(name, sensor_kind(name), max(v for _, v in pts), slope_per_min(pts),
                        pts[0][1], pts[-1][1], len(pts)))
    return out


# ---------------------------------------------------------------- throttle

#: Reasons that mean the chip slowed itself for heat or a power brake, by their words in
#: nvidia-smi and amd-smi output (``HW Thermal Slowdown``, ``HW Power Brake Slowdown`` and its
#: counter ``HW Power Braking``, ``PROCHOT``, ``SOCKET_THERMAL`` ...); a power cap (``SW Power
#: Cap``, AMD ``PPT``) is the chip holding its budget.
_THERMAL_WORDS = ("thermal", "power brak", "prochot", "thm", "hw slowdown")


def is_thermal(reason: str) -> bool:
    """Whether a throttle reason is about heat or power (as opposed to idle, app clocks, sync boost)."""
    low = reason.lower()
    return any(w in low for w in _THERMAL_WORDS)


def throttled(active: Sequence[str], mode: str) -> list[str]:
    """The active reasons that break ``throttle: mode`` (``none``: any but idle; ``thermal``: thermal/power)."""
    benign = ("idle", "applications clocks setting", "application clocks", "display clock", "sync boost")
    real = [r for r in active if not any(b in r.lower() for b in benign)]
    return [r for r in real if is_thermal(r)] if mode == "thermal" else real
