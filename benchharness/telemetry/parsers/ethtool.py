"""``ethtool DEV`` (link settings), ``ethtool -i DEV`` (driver info), ``ethtool -S DEV`` (statistics)."""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, to_int
from benchharness.telemetry.parsers._counter_names import highlights


def parse_settings(text: str) -> dict[str, Any]:
    """Speed (``speed_mbps``, None when ``Unknown!``), duplex, port, link detected, link modes."""
    out: dict[str, Any] = {"netdev": None, "supported_link_modes": [], "advertised_link_modes": []}
    text = clean_text(text)
    m = re.search(r"^Settings for (\S+?):", text, re.MULTILINE)
    if m:
        out["netdev"] = m.group(1)
    current_list: str | None = None
    for line in text.splitlines():
        if ":" not in line:
            if current_list and line.strip():
                out[current_list].extend(line.split())
            continue
        key, _, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        current_list = None
        if key in ("Supported link modes", "Advertised link modes"):
            current_list = "supported_link_modes" if key.startswith("Supported") else "advertised_link_modes"
            if value and value != "Not reported":
                out[current_list].extend(value.split())
        elif key == "Speed":
            out["speed_raw"] = value
            m = re.match(r"(\d+)\s*Mb/s", value)
            out["speed_mbps"] = int(m.group(1)) if m else None
        elif key == "Duplex":
            out["duplex"] = None if value.startswith("Unknown") else value
        elif key == "Lanes":
            out["lanes"] = to_int(value)
        elif key == "Port":
            out["port"] = value
        elif key == "Auto-negotiation":
            out["autoneg"] = value == "on"
        elif key == "Link detected":
            out["link_detected"] = value == "yes"
        elif key in ("Active FEC encoding", "Configured FEC encodings"):
            out["fec_active" if key.startswith("Active") else "fec_configured"] = value
    return out


def parse_driver_info(text: str) -> dict[str, Any]:
    """``ethtool -i``: driver, versions, bus address; firmware split from its PSID in parentheses."""
    out: dict[str, Any] = {}
    for line in clean_text(text).splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().replace("-", "_"), value.strip()
        if key.startswith("supports_"):
            out[key] = {"yes": True, "no": False}.get(value)  # an empty value is unknown, not "no"
        else:
            out[key] = value or None
    fw = out.get("firmware_version") or ""
    m = re.match(r"^(\S+)\s+\((.+)\)$", fw)
    if m:
        out["firmware"], out["psid"] = m.group(1), m.group(2)
    else:
        out["firmware"] = fw or None
    return out


def parse_stats(text: str) -> dict[str, Any]:
    """``ethtool -S``: every counter as an int, and a ``highlights`` summary (PFC, discards ...).

    Counter lines are indented under ``NIC statistics:``; saved copies often lose the header and the
    indentation, so unindented ``name: number`` lines count too.
    """
    counters: dict[str, int] = {}
    for line in clean_text(text).splitlines():
        m = re.match(r"^\s*(\S.*?):\s+(-?\d+)\s*$", line)
        if m:
            counters[m.group(1)] = int(m.group(2))
    return {"counters": counters, "highlights": highlights(counters)}


PARSERS = {"ethtool": parse_settings, "ethtool-i": parse_driver_info, "ethtool-S": parse_stats}
