"""Threshold expressions and checks as suites write them; pure parsing, no measurement.

A check in a suite (``checks:`` under a test)::

    - metric: bw_avg_gbps
      sizes: "64K..8M"          # optional: a size range, one size, "1M.." or "..64K"
      min: 90% line_rate        # a number, or N% of line_rate | best_peer | baseline
      max: 4.2                  # at most this (latency); min and max may both be given
      stat: median              # over repetitions: median (default), mean, min, max
      where: {direction: forward}   # optional: only samples with these labels
      regression: true          # also compare with the recent nights (see regression.py)
      name: rdma write line rate    # optional: shown in reports and JUnit

A threshold is an absolute number in the metric's own unit (``370`` for ``bw_avg_gbps``) or a
share of a reference: ``line_rate`` (the hosts' NIC line rate; bandwidth metrics only),
``best_peer`` (the best value of the same case in the same run), ``baseline`` (the same case in
a baseline run), ``nic_msg_rate`` (the NIC's rated message rate, inventory ``nic_msg_rate_mpps``;
``…_mpps`` metrics only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchharness.core.units import format_size, parse_size

REFERENCES = ("line_rate", "best_peer", "baseline", "nic_msg_rate")
_ALIASES = {"line_rate": "line_rate", "linerate": "line_rate", "line": "line_rate",
            "best_peer": "best_peer", "bestpeer": "best_peer", "best": "best_peer", "peer": "best_peer",
            "baseline": "baseline", "base": "baseline",
            "nic_msg_rate": "nic_msg_rate", "msg_rate": "nic_msg_rate", "rated_msg_rate": "nic_msg_rate"}
STATS = ("median", "mean", "min", "max")
CHECK_KEYS = ("name", "metric", "sizes", "min", "max", "stat", "where", "regression")
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SHARE_RE = re.compile(rf"^\s*({_NUMBER})\s*%\s*(?:of\s+)?([A-Za-z_-]+)\s*$")
_FACTOR_RE = re.compile(rf"^\s*(?:x|×)?\s*({_NUMBER})\s*(?:x|×|\*)\s*([A-Za-z_-]+)\s*$")


class CheckError(ValueError):
    """A malformed check; ``key`` names the offending key (for the file:line of the error)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Threshold:
    """An absolute limit (``reference`` None) or ``factor`` times a reference value."""

    value: float
    reference: str | None = None
    text: str = ""

    def limit(self, reference_value: float | None) -> float | None:
        """The limit in the metric's unit; None when a needed reference is unknown."""
        if self.reference is None:
            return self.value
        if reference_value is None:
            return None
        return self.value * reference_value

    def describe(self) -> str:
        if self.reference is None:
            return f"{self.value:g}"
        return f"{self.value * 100:g}% {self.reference}"


def parse_threshold(value: Any) -> Threshold:
    """``370`` / ``"4.2"`` (absolute), ``"90% line_rate"``, ``"95% baseline"``, ``"0.9 x best_peer"``."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a threshold: {value!r}")
    if isinstance(value, int | float):
        return Threshold(float(value), None, str(value))
    text = str(value).strip()
    if re.fullmatch(_NUMBER, text):
        return Threshold(float(text), None, text)
    m = _SHARE_RE.match(text)
    factor = float(m.group(1)) / 100.0 if m else None
    if not m:
        m = _FACTOR_RE.match(text)
        factor = float(m.group(1)) if m else None
    if not m or factor is None:
        raise ValueError(f"not a threshold: {text!r}; use a number (370), or a share such as "
                         f"'90% line_rate', '95% baseline', '90% best_peer'")
    ref = _ALIASES.get(m.group(2).lower().replace("-", "_"))
    if ref is None:
        raise ValueError(f"unknown reference {m.group(2)!r} in {text!r}; use one of {', '.join(REFERENCES)}")
    if factor <= 0:
        raise ValueError(f"a share must be positive: {text!r}")
    return Threshold(factor, ref, text)


def parse_sizes(value: Any) -> tuple[int | None, int | None]:
    """An inclusive byte range: ``"64K..8M"``, ``"1M.."``, ``"..64K"`` or one size ``"8M"``."""
    if isinstance(value, bool):
        raise ValueError(f"not a size range: {value!r}")
    if isinstance(value, int):
        return parse_size(value), parse_size(value)
    text = str(value).strip()
    if ".." not in text:
        n = parse_size(text)
        return n, n
    lo_text, hi_text = (p.strip() for p in text.split("..", 1))
    lo = parse_size(lo_text) if lo_text else None
    hi = parse_size(hi_text) if hi_text else None
    if lo is None and hi is None:
        raise ValueError(f"not a size range: {text!r} (use e.g. 64K..8M)")
    if lo is not None and hi is not None and hi < lo:
        raise ValueError(f"size range runs backwards: {text!r}")
    return lo, hi


def format_sizes(sizes: tuple[int | None, int | None] | None) -> str:
    """``64K..8M`` back from a parsed range ('' for none)."""
    if sizes is None:
        return ""
    lo, hi = sizes
    if lo is not None and lo == hi:
        return format_size(lo)
    return f"{format_size(lo) if lo is not None else ''}..{format_size(hi) if hi is not None else ''}"


@dataclass(frozen=True)
class Check:
    """One validated check of a test: a metric, an optional size range, and its bounds."""

    metric: str
    name: str
    minimum: Threshold | None = None
    maximum: Threshold | None = None
    sizes: tuple[int | None, int | None] | None = None
    stat: str = "median"
    where: Mapping[str, Any] = field(default_factory=dict)
    regression: bool = False

    def bounds(self) -> list[tuple[str, Threshold]]:
        """``[(">=", min), ("<=", max)]`` for the bounds that are set."""
        out = []
        if self.minimum is not None:
            out.append((">=", self.minimum))
        if self.maximum is not None:
            out.append(("<=", self.maximum))
        return out

    def label(self, op: str, threshold: Threshold) -> str:
        """A bound's name, e.g. ``bw_avg_gbps >= 90% line_rate [64K..8M]`` (or the check's name)."""
        sizes = f" [{format_sizes(self.sizes)}]" if self.sizes else ""
        text = f"{self.metric} {op} {threshold.describe()}{sizes}"
        if self.name:
            return f"{self.name} ({text})" if len(self.bounds()) > 1 else self.name
        return text

    def size_ok(self, size: Any) -> bool:
        """Whether a sample of this byte size is inside the check's range (no range: every size)."""
        if self.sizes is None:
            return True
        if size is None or isinstance(size, bool):
            return False
        try:
            n = float(size)
        except (TypeError, ValueError):
            return False
        lo, hi = self.sizes
        return (lo is None or n >= lo) and (hi is None or n <= hi)

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether a sample belongs to this check (size range and ``where`` labels)."""
        if not self.size_ok(record.get("size_bytes")):
            return False
        for key, want in self.where.items():
            have = record.get(key)
            wanted = want if isinstance(want, list) else [want]
            if not any(have == w or str(have) == str(w) for w in wanted):
                return False
        return True


def parse_check(raw: Mapping[str, Any]) -> Check:
    """A validated Check from its suite mapping; CheckError names the offending key."""
    from benchharness.core.metrics import gbps_factor, is_metric_name

    if not isinstance(raw, Mapping):
        raise CheckError(None, "each check must be a mapping with metric: and min: or max:")
    for key in raw:
        if key not in CHECK_KEYS:
            raise CheckError(str(key), f"unknown key {key!r} in a check; allowed: {', '.join(CHECK_KEYS)}")
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise CheckError("metric" if "metric" in raw else None,
                         "a check needs metric: (e.g. bw_avg_gbps, lat_p99_us, busbw_GBps)")
    metric = metric.strip()
    if not is_metric_name(metric):
        raise CheckError("metric", f"{metric!r} is not a metric name (metric names end in their unit, "
                                   f"e.g. bw_avg_gbps, busbw_GBps, lat_p99_us, msg_rate_mpps)")
    bounds: dict[str, Threshold] = {}
    for key in ("min", "max"):
        if key in raw:
            try:
                bounds[key] = parse_threshold(raw[key])
            except ValueError as exc:
                raise CheckError(key, f"{key}: {exc}") from exc
            if bounds[key].reference == "line_rate" and gbps_factor(metric) is None:
                raise CheckError(key, f"{key}: a line-rate share needs a bandwidth metric "
                                      f"(…_gbps, …_GBps), not {metric}")
            if bounds[key].reference == "nic_msg_rate" and not metric.endswith("_mpps"):
                raise CheckError(key, f"{key}: a share of the NIC's rated message rate needs a packet-rate "
                                      f"metric (…_mpps, e.g. msg_rate_mpps), not {metric}")
    if not bounds:
        raise CheckError(None, f"check on {metric} needs min: or max:")
    sizes = None
    if raw.get("sizes") is not None:
        try:
            sizes = parse_sizes(raw["sizes"])
        except ValueError as exc:
            raise CheckError("sizes", f"sizes: {exc}") from exc
    stat = str(raw.get("stat", "median"))
    if stat not in STATS:
        raise CheckError("stat", f"stat: {stat!r} is not one of {', '.join(STATS)}")
    where = raw.get("where") or {}
    if not isinstance(where, Mapping) or not all(
            isinstance(v, str | int | float | bool | list) for v in where.values()):
        raise CheckError("where", "where: must map labels to a value or a list of values, "
                                  "e.g. {direction: forward}")
    regression = raw.get("regression", False)
    if not isinstance(regression, bool):
        raise CheckError("regression", f"regression: must be true or false, not {regression!r}")
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise CheckError("name", f"name: must be text, not {name!r}")
    return Check(metric, name.strip(), bounds.get("min"), bounds.get("max"), sizes, stat,
                 dict(where), regression)


POLICY_KEYS = ("baseline", "regression")
REGRESSION_KEYS = ("window", "min_history", "k", "min_change", "status")


@dataclass(frozen=True)
class Policy:
    """How checks become the run's verdict (the suite's top-level ``verdicts:`` mapping)::

        verdicts:
          baseline: golden          # default baseline= for "N% baseline" checks
          regression: {window: 10, min_history: 5, k: 4, min_change: 5%, status: fail}
    """

    baseline: str = "golden"
    window: int = 10
    min_history: int = 5
    k: float = 4.0
    min_change: float = 0.05
    regression_status: str = "fail"


def _share(value: Any) -> float:
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100.0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a share: {value!r}")
    return float(value)


def parse_policy(raw: Any) -> Policy:
    """A validated Policy from the suite's ``verdicts:`` mapping (None: the defaults)."""
    if raw is None:
        return Policy()
    if not isinstance(raw, Mapping):
        raise CheckError(None, "verdicts: must be a mapping (baseline, regression)")
    for key in raw:
        if key not in POLICY_KEYS:
            raise CheckError(str(key), f"verdicts: unknown key {key!r}; allowed: {', '.join(POLICY_KEYS)}")
    baseline = raw.get("baseline", "golden")
    if not isinstance(baseline, str) or not baseline.strip():
        raise CheckError("baseline", "verdicts: baseline must be a tag, latest-pass, latest or a run id")
    reg = raw.get("regression") or {}
    if not isinstance(reg, Mapping):
        raise CheckError("regression", "verdicts: regression must be a mapping, e.g. {window: 10, k: 4}")
    for key in reg:
        if key not in REGRESSION_KEYS:
            raise CheckError("regression", f"verdicts: regression: unknown key {key!r}; "
                                           f"allowed: {', '.join(REGRESSION_KEYS)}")
    try:
        window = int(reg.get("window", 10))
        min_history = int(reg.get("min_history", 5))
        k = float(reg.get("k", 4.0))
        min_change = _share(reg.get("min_change", 0.05))
    except (TypeError, ValueError) as exc:
        raise CheckError("regression", f"verdicts: regression: {exc}") from exc
    status = reg.get("status", "fail")
    if min_history < 3 or window < min_history or k <= 0 or not 0 <= min_change < 1 \
            or status not in ("fail", "warn"):
        raise CheckError("regression", "verdicts: regression needs min_history >= 3, window >= min_history, "
                                       "k > 0, 0 <= min_change < 1 and status fail or warn")
    return Policy(baseline.strip(), window, min_history, k, min_change, str(status))


def check_to_data(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A check mapping as plain JSON-able data (for the run's suite snapshot)."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping):
            out[str(key)] = {str(k): (list(v) if isinstance(v, list) else v) for k, v in value.items()}
        else:
            out[str(key)] = value
    return out
