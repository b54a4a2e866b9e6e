"""``ethtool -m DEV``: transceiver identity and diagnostics (SFP SFF-8472, QSFP SFF-8636, QSFP-DD CMIS).

Per-lane powers are kept in mW and in dBm as ethtool prints both; ``-inf dBm`` (no light) is None.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, snake, to_float, unreadable
from benchharness.telemetry.parsers._ports import ethtool_command, per_port

_LANE = re.compile(r"\s*\((?:Channel|Chan|Lane)\s*(\d+)\)\s*")
_POWER = re.compile(r"([-\d.]+)\s*mW\s*/\s*([-\w.]+)\s*dBm")
_IDENTITY = {
    "Identifier": "identifier", "Vendor name": "vendor_name", "Vendor PN": "vendor_pn",
    "Vendor SN": "vendor_sn", "Vendor rev": "vendor_rev", "Transceiver type": "transceiver_type",
    "Connector": "connector", "Date code": "date_code", "Module State": "module_state",
}


#: per-lane status lines of ethtool 6.4+ (module-common.c): "None" or "[ Yes, No, ... ]" per lane
_LANE_STATUS = frozenset({"rx loss of signal", "tx loss of signal", "rx loss of lock", "tx loss of lock",
                          "tx fault", "tx adaptive eq fault"})


def _form_factor(identifier: str) -> str | None:
    for token, name in (("QSFP-DD", "QSFP-DD"), ("OSFP", "OSFP"), ("QSFP28", "QSFP28"),
                        ("QSFP+", "QSFP+"), ("QSFP", "QSFP"), ("SFP", "SFP")):
        if token in identifier:
            return name
    return None


def _power(value: str) -> tuple[float | None, float | None]:
    m = _POWER.search(value)
    if not m:
        return None, None
    dbm = to_float(m.group(2))
    return float(m.group(1)), dbm


def parse_module(text: str) -> dict[str, Any]:
    """Temperature (°C), voltage (V), per-lane bias (mA) and TX/RX power, alarm/warning flags, and
    the lane status lines as ``lane_status`` (name -> one boolean per lane: ethtool 6.4+'s ``Rx loss
    of signal : [ Yes, No, ... ]``, ``[]`` for ``None``; older ``(Lane N) : Yes`` lines; a module's
    single ``Yes``/``No``; a status with a Yes is also in ``alarms_on``). A later show of the module (a grep run after a link change) replaces the
    earlier's values. Text without any module line is an error naming its first line."""
    out: dict[str, Any] = {"lanes": [], "flags": {}, "alarms_on": [], "lane_status": {}}
    lanes: dict[int, dict[str, Any]] = {}
    read = False  # any line of the module's
    last: str | None = None  # the identity field of the line before
    for line in clean_text(text).splitlines():
        key, sep, value = line.partition(" : ")
        if not sep:
            key, sep, value = line.partition(":")
            if not sep:
                # A long value a mail or terminal wrapped: "0x18 (QSFP-DD Double Density" and
                # "8X Pluggable Transceiver (INF-8628))" on the next line, parentheses still open.
                held = out.get(last) if last else None
                if last and isinstance(held, str) and held.count("(") > held.count(")") and line.strip():
                    out[last] = f"{held} {line.strip()}"
                last = None
                continue
        last = None
        key, value = key.strip(), value.strip()
        lane_m = _LANE.search(key)
        lane = int(lane_m.group(1)) if lane_m else None
        base = _LANE.sub(" ", key).strip()
        low = base.lower()
        if base in _IDENTITY:
            # SFF-8636 may print several "Transceiver type" lines (the first is the type); any other
            # identity line shown again is a later show of the module, which replaces the earlier
            if base != "Transceiver type" or _IDENTITY[base] not in out:
                out[_IDENTITY[base]] = value
                last = _IDENTITY[base]
            read = True
        elif low in _LANE_STATUS:
            name = snake(base)
            said = value.strip().lower()
            if value.startswith("["):  # ethtool 6.4+: "[ Yes, No, ... ]", one per lane
                states = [v.strip().lower() == "yes" for v in value.strip("[] ").split(",")]
            elif said in ("yes", "no") and lane:  # older ethtool: "Rx loss of lock (Lane 3) : Yes"
                states = list(out["lane_status"].get(name, []))
                states += [False] * (lane - len(states))
                states[lane - 1] = said == "yes"
            elif said in ("yes", "no"):  # SFP and older QSFP: one status for the module
                states = [said == "yes"]
            else:  # "None": no lane has it
                states = []
            out["lane_status"][name] = states
            if name in out["alarms_on"]:
                out["alarms_on"].remove(name)
            if any(states):
                out["alarms_on"].append(name)
            read = True
        elif low == "module temperature":
            out["temperature_c"] = to_float(value)
        elif low == "module voltage":
            out["voltage_v"] = to_float(value)
        elif "threshold" in low:
            if low.startswith("module temperature high"):
                kind = "alarm" if "alarm" in low else "warning"
                out[f"temperature_high_{kind}_c"] = to_float(value)
        elif value in ("On", "Off") and ("alarm" in low or "warning" in low):
            name = snake(base) + (f"_lane{lane}" if lane else "")
            out["flags"][name] = value == "On"
            if value == "On":
                out["alarms_on"].append(name)
        elif "bias current" in low:
            lanes.setdefault(lane or 1, {})["tx_bias_ma"] = to_float(value)
        elif "output power" in low or "transmit avg optical power" in low:
            mw, dbm = _power(value)
            lanes.setdefault(lane or 1, {}).update({"tx_power_mw": mw, "tx_power_dbm": dbm})
        elif "rcvr signal" in low or "receiver signal" in low:
            mw, dbm = _power(value)
            lanes.setdefault(lane or 1, {}).update({"rx_power_mw": mw, "rx_power_dbm": dbm})
    if not (read or lanes or out["flags"] or any(k in out for k in ("temperature_c", "voltage_v"))) \
            and text.strip():
        lines = text.splitlines()
        first = next(i for i, line in enumerate(lines) if line.strip())
        raise unreadable(first + 1, lines[first], "no ethtool -m module line")
    out["form_factor"] = _form_factor(out.get("identifier", ""))
    out["lanes"] = [{"lane": n, **lanes[n]} for n in sorted(lanes)]
    return out


READS = {"ethtool-m": "ethtool -m|--module-info DEV (ethtool 4.x-6.x): SFP/SFP28 (SFF-8472), QSFP+/QSFP28 "
                        "(SFF-8636) and QSFP-DD (CMIS 4.0) identity, temperature, voltage, per-lane bias and "
                        "TX/RX power (mW and dBm, -inf -> none), alarm/warning flags, CMIS Module State, ethtool 6.4+ per-lane "
                        "Rx/Tx loss of signal / loss of lock / Tx fault lines (None or [ Yes, No, ... ], 16-lane "
                        "two-bank modules); picked, grepped or elided lines, mail-wrapped values, several shows (the "
                        "last); text without a module line refused"}

PARSERS = {"ethtool-m": per_port(parse_module, ethtool_command("-m|--dump-module-eeprom|--module-info"))}
