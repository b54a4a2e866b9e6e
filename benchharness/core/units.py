"""Sizes, rates and durations as people write them in suites: ``128K``, ``8..8G x2``, ``2gbit``.

Sizes use the binary multipliers the tools themselves use (perftest, nccl-tests and iperf3 all
read ``K`` as 1024).
"""

from __future__ import annotations

import re

_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20,
               "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
               "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*$", re.IGNORECASE)
_RATE_UNITS = {"": 1, "BIT": 1, "K": 1e3, "KBIT": 1e3, "M": 1e6, "MBIT": 1e6, "G": 1e9, "GBIT": 1e9,
               "T": 1e12, "TBIT": 1e12}
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?(?:BIT)?)(?:/S|PS)?\s*$", re.IGNORECASE)


def parse_size(value: str | int) -> int:
    """Bytes in ``value``: an int, or a string like ``64``, ``128K``, ``4MiB``, ``1G``."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must not be negative: {value}")
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {value!r} (use e.g. 64, 128K, 4M, 1G)")
    number, unit = float(m.group(1)), m.group(2).upper()
    result = number * _SIZE_UNITS[unit]
    if result != int(result):
        raise ValueError(f"size is not a whole number of bytes: {value!r}")
    return int(result)


def format_size(n: int) -> str:
    """Shortest exact binary form: 1024 -> ``1K``, 1536 -> ``1536``."""
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def size_range(spec: str) -> list[int]:
    """Expand ``8..8G x2`` (geometric) or ``1K..4K +1K`` (arithmetic) into byte sizes."""
    m = re.match(r"^\s*(\S+?)\s*\.\.\s*(\S+?)\s*(?:([x*+])\s*(\S+))?\s*$", spec)
    if not m:
        raise ValueError(f"not a size range: {spec!r} (use e.g. '8..8G x2')")
    start, stop = parse_size(m.group(1)), parse_size(m.group(2))
    op, step_text = m.group(3) or "x", m.group(4) or "2"
    if stop < start:
        raise ValueError(f"size range runs backwards: {spec!r}")
    sizes: list[int] = []
    if op in "x*":
        factor = float(step_text)
        if factor <= 1:
            raise ValueError(f"size range factor must be > 1: {spec!r}")
        current = start
        while current <= stop:
            sizes.append(current)
            nxt = int(current * factor)
            current = nxt if nxt > current else current + 1
            if start == 0 and current == 0:
                current = 1
    else:
        inc = parse_size(step_text)
        if inc <= 0:
            raise ValueError(f"size range step must be > 0: {spec!r}")
        sizes = list(range(start, stop + 1, inc))
    if not sizes:
        raise ValueError(f"size range is empty: {spec!r}")
    return sizes


def parse_rate(value: str | int | float) -> float:
    """Bits per second in ``value``: ``2gbit``, ``400G``, ``100M``, or a number."""
    if isinstance(value, bool):
        raise ValueError(f"not a rate: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _RATE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a rate: {value!r} (use e.g. 2gbit, 400G, 100M)")
    return float(m.group(1)) * _RATE_UNITS[m.group(2).upper()]


def parse_duration(value: str | int | float) -> float:
    """Seconds in ``value``: ``5``, ``2.5s``, ``100ms``, ``2m``."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", str(value))
    if not m:
        raise ValueError(f"not a duration: {value!r} (use e.g. 5, 2.5s, 100ms)")
    factor = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
    return float(m.group(1)) * factor
