"""Metric names and what their unit suffix says: the unit, the direction of better, the factor
to Gbit/s. A numeric sample field whose name ends in a unit suffix is a metric."""

from __future__ import annotations

METRIC_SUFFIXES = ("_gbps", "_GBps", "_MBps", "_Mbps", "_us", "_ms", "_ns", "_mpps", "_pct", "_tool")
EXTRA_METRICS = frozenset({"retransmits", "wrong", "errors", "bytes", "bytes_sent", "packets", "lost_packets"})
#: Bandwidth metrics and their factor to Gbit/s.
BANDWIDTH = {"_gbps": 1.0, "_GBps": 8.0, "_MBps": 8e-3, "_Mbps": 1e-3}
_UNITS = {"_gbps": "Gbit/s", "_GBps": "GB/s", "_MBps": "MB/s", "_Mbps": "Mbit/s", "_us": "µs",
          "_ms": "ms", "_ns": "ns", "_mpps": "Mpps", "_pct": "%"}
_LOWER_IS_BETTER = ("lat_", "time_", "_us", "_ms", "_ns", "loss", "lost_", "jitter", "retrans", "cpu_",
                    "wrong", "errors")


def is_metric_name(name: str) -> bool:
    """Whether a (numeric) column name is a metric by its unit suffix."""
    return name in EXTRA_METRICS or name.endswith(METRIC_SUFFIXES)


def unit_of(metric: str) -> str:
    """Display unit of a metric: ``busbw_GBps`` -> ``GB/s``."""
    base = metric[: -len("_tool")] if metric.endswith("_tool") else metric
    for suffix, unit in _UNITS.items():
        if base.endswith(suffix):
            return unit + (" (tool)" if metric.endswith("_tool") else "")
    return ""


def higher_is_better(metric: str) -> bool:
    """Bandwidth and rates: higher wins; latency, time, loss, jitter, CPU: lower wins."""
    if metric.endswith(tuple(BANDWIDTH)) or metric.endswith("_mpps"):
        return True
    return not any(tag in metric for tag in _LOWER_IS_BETTER)


def gbps_factor(metric: str) -> float | None:
    """Factor to Gbit/s for a bandwidth metric, else None."""
    for suffix, factor in BANDWIDTH.items():
        if metric.endswith(suffix):
            return factor
    return None
