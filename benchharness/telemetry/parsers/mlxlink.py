"""``mlxlink -d DEV [-m] [-c]`` (NVIDIA MFT): link state, speed, FEC, module info and BER counters."""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, snake, to_float, to_int


def _values_and_range(value: str) -> tuple[list[float | None], list[float] | None]:
    """``1.209,1.316 [-10.41..5]`` -> ([1.209, 1.316], [-10.41, 5.0])."""
    m = re.match(r"^(.*?)\s*\[([-\d.]+)\.\.([-\d.]+)\]\s*$", value)
    body, limits = (m.group(1), [float(m.group(2)), float(m.group(3))]) if m else (value, None)
    return [to_float(v) for v in body.split(",") if v.strip()], limits


#: mlxlink names an InfiniBand speed by its 4x rate; the active width says how many lanes run.
_IB_4X_GBPS = {"IB-SDR": 10, "IB-DDR": 20, "IB-QDR": 40, "IB-FDR10": 40, "IB-FDR": 56, "IB-EDR": 100,
               "IB-HDR": 200, "IB-NDR": 400, "IB-XDR": 800}


def _speed_gbps(speed: str | None, width: str | None) -> int | float | None:
    """Port rate in Gb/s: Ethernet ``200G`` as printed; ``IB-NDR`` at ``Width 2x`` is 200 (NDR200)."""
    m = re.search(r"(\d+)G", speed or "")
    if m:
        return int(m.group(1))
    rate_4x = _IB_4X_GBPS.get(speed or "")
    lanes = re.fullmatch(r"(\d+)x", (width or "").strip())
    if rate_4x is None or not lanes:
        return rate_4x
    rate = rate_4x * int(lanes.group(1)) / 4
    return int(rate) if rate == int(rate) else rate


def parse_mlxlink(text: str) -> dict[str, Any]:
    """Sections as ``sections[name][key]`` plus the figures a report needs at the top level."""
    sections: dict[str, dict[str, str]] = {}
    current = "General"
    lines = clean_text(text).splitlines()
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"-{3,}", nxt.strip()):
            current = line.strip()
            continue
        # mlxlink pads every key and separates it from the value with " : "
        key, sep, value = line.rstrip().partition(" : ") if " : " in line else line.rstrip().partition(" :")
        if sep and key.strip() and not re.fullmatch(r"-{3,}", line.strip()):
            sections.setdefault(current, {})[key.strip()] = value.strip()

    def get(section: str, key: str) -> str | None:
        return sections.get(section, {}).get(key)

    op = "Operational Info"
    out: dict[str, Any] = {
        "state": get(op, "State"), "physical_state": get(op, "Physical state"),
        "speed": get(op, "Speed"), "width": get(op, "Width"), "fec": get(op, "FEC"),
        "auto_negotiation": get(op, "Auto Negotiation"), "sections": sections,
    }
    out["speed_gbps"] = _speed_gbps(out["speed"], out["width"])
    out["firmware"] = get("Tool Information", "Firmware Version")
    module = sections.get("Module Info")
    if module:
        mod: dict[str, Any] = {
            "identifier": module.get("Identifier"), "cable_type": module.get("Cable Type"),
            "vendor_name": module.get("Vendor Name"), "vendor_pn": module.get("Vendor Part Number"),
            "vendor_sn": module.get("Vendor Serial Number"), "fw_version": module.get("FW Version"),
        }
        for key, name in (("Temperature [C]", "temperature_c"), ("Voltage [mV]", "voltage_mv")):
            if key in module:
                values, limits = _values_and_range(module[key])
                mod[name] = values[0] if values else None
                mod[f"{name}_range"] = limits
        for key, name in (("Bias Current [mA]", "bias_ma"), ("Rx Power Current [dBm]", "rx_power_dbm"),
                          ("Tx Power Current [dBm]", "tx_power_dbm")):
            if key in module:
                values, limits = _values_and_range(module[key])
                mod[name], mod[f"{name}_range"] = values, limits
        out["module"] = mod
    ber = sections.get("Physical Counters and BER Info")
    if ber:
        out["counters"] = {snake(k): (to_int(v) if re.fullmatch(r"\d+", v) else v) for k, v in ber.items()}
    return out


PARSERS = {"mlxlink": parse_mlxlink}
