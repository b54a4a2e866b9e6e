"""Node power as a BMC reports it: ``ipmitool dcmi power reading``, ``ipmitool sdr`` lines in Watts,
and Redfish's Chassis EnvironmentMetrics / Power documents. Pure functions over captured text or
JSON; each returns watts with where they came from, or None when the BMC gave no reading (a BMC
without a power sensor says "not available", never 0 W)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PowerReading:
    """One node power reading: watts and the BMC field or sensor that gave them."""

    watts: float
    source: str


_DCMI_FIELDS = {
    "instantaneous power reading": "instant_w",
    "minimum during sampling period": "min_w",
    "maximum during sampling period": "max_w",
    "average power reading over sample period": "avg_w",
}


def parse_dcmi(text: str) -> dict[str, Any]:
    """The fields of ``ipmitool dcmi power reading`` (``instant_w``, ``min_w``, ``max_w``, ``avg_w``
    in watts, ``state``: activated / deactivated)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        name = key.strip().lower()
        if name in _DCMI_FIELDS:
            m = re.match(r"\s*(-?\d+(?:\.\d+)?)\s*Watts", value)
            if m:
                out[_DCMI_FIELDS[name]] = float(m.group(1))
        elif name.startswith("power reading state is"):
            out["state"] = value.strip().split()[0].lower() if value.strip() else ""
    return out


def dcmi_reading(text: str) -> PowerReading | None:
    """The instantaneous reading of ``dcmi power reading``; None without one, or when every figure
    is 0 W with the reading deactivated (a BMC whose power sensor is not configured)."""
    fields = parse_dcmi(text)
    watts = fields.get("instant_w")
    if watts is None:
        return None
    figures = [fields.get(k) for k in ("instant_w", "min_w", "max_w", "avg_w") if fields.get(k) is not None]
    if fields.get("state") == "deactivated" and not any(figures):
        return None
    return PowerReading(watts, "dcmi")


def sdr_watts(text: str) -> list[tuple[str, float]]:
    """(sensor name, watts) of the ``ipmitool sdr`` / ``sdr type Current`` / ``sdr elist`` lines whose
    reading is in Watts (``Pwr Consumption | 77h | ok | 7.1 | 98 Watts``); "No Reading" lines are left out."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 2:
            continue
        m = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s+Watts", cells[-1]) or re.fullmatch(r"(-?\d+(?:\.\d+)?)\s+Watts", cells[1])
        if m and cells[0]:
            out.append((cells[0], float(m.group(1))))
    return out


_NODE = re.compile(r"pwr consumption|system level|total.*power|sys.*pw|node.*power|platform.*power|"
                   r"power consumption|system power", re.IGNORECASE)
_SUPPLY_IN = re.compile(r"^(ps|psu)\s*\d+.*(in\b|input|pin\b)", re.IGNORECASE)


def sdr_reading(text: str) -> PowerReading | None:
    """Node power from sdr lines in Watts: a whole-node sensor ("Pwr Consumption", "System Level",
    "Total Power" ...), else the sum of the supplies' input power ("PS1 Power In" ...), else the one
    Watts sensor when there is just one; None otherwise."""
    sensors = sdr_watts(text)
    node = [(n, w) for n, w in sensors if _NODE.search(n)]
    if node:
        return PowerReading(node[0][1], f"sdr:{node[0][0]}")
    supplies = [(n, w) for n, w in sensors if _SUPPLY_IN.search(n)]
    if supplies:
        return PowerReading(sum(w for _, w in supplies), "sdr:" + "+".join(n for n, _ in supplies))
    if len(sensors) == 1:
        return PowerReading(sensors[0][1], f"sdr:{sensors[0][0]}")
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def redfish_environment_reading(doc: Mapping[str, Any]) -> PowerReading | None:
    """``PowerWatts.Reading`` of a Chassis ``EnvironmentMetrics`` resource (Redfish 2020.4 and later)."""
    watts = _number((doc.get("PowerWatts") or {}).get("Reading"))
    return PowerReading(watts, "redfish:EnvironmentMetrics.PowerWatts") if watts is not None else None


def redfish_power_reading(doc: Mapping[str, Any]) -> PowerReading | None:
    """The first ``PowerControl[].PowerConsumedWatts`` of a Chassis ``Power`` resource (deprecated in
    favour of PowerSubsystem / EnvironmentMetrics, still what most BMCs serve)."""
    for i, control in enumerate(doc.get("PowerControl") or []):
        watts = _number(control.get("PowerConsumedWatts")) if isinstance(control, Mapping) else None
        if watts is not None:
            return PowerReading(watts, f"redfish:Power.PowerControl[{i}].PowerConsumedWatts")
    return None


def redfish_supply_input(docs: list[Mapping[str, Any]]) -> PowerReading | None:
    """The sum of ``InputPowerWatts.Reading`` over PowerSubsystem power supply ``Metrics`` resources."""
    values = [_number((d.get("InputPowerWatts") or {}).get("Reading")) for d in docs]
    found = [v for v in values if v is not None]
    return PowerReading(sum(found), "redfish:PowerSubsystem.PowerSupplies.InputPowerWatts") if found else None


def _reading(reading: PowerReading | None) -> dict[str, Any]:
    return {"watts": reading.watts, "source": reading.source} if reading else {"watts": None, "source": None}


def parse_dcmi_text(text: str) -> dict[str, Any]:
    """``bench parse ipmitool-dcmi``: the fields and the node reading they give (``watts`` None for
    a BMC whose power sensor is not configured); a reading line without Watts names its line."""
    for no, line in enumerate(text.splitlines(), 1):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in _DCMI_FIELDS and not re.match(r"\s*-?\d+(?:\.\d+)?\s*Watts", value):
            from benchharness.telemetry.parsers._common import unreadable

            raise unreadable(no, line, "a DCMI power figure that is not 'N Watts'")
    fields = parse_dcmi(text)
    return {**fields, **_reading(dcmi_reading(text))} if fields else {}


def parse_sdr_text(text: str) -> dict[str, Any]:
    """``bench parse ipmitool-sdr``: every sensor reading in Watts and the node power they give."""
    sensors = sdr_watts(text)
    return {"sensors": [{"sensor": n, "watts": w} for n, w in sensors], **_reading(sdr_reading(text))} \
        if sensors else {}


def parse_redfish_text(text: str) -> dict[str, Any]:
    """``bench parse redfish-power``: a Chassis ``Power``, ``EnvironmentMetrics`` or power supply
    ``Metrics`` document (as ``curl`` prints it; the first JSON object of the text)."""
    import json

    start = text.find("{")
    if start < 0:
        return {}
    try:
        doc = json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError as exc:
        line = text.count("\n", 0, start) + 1
        raise ValueError(f"line {line}: not a whole Redfish JSON document: {exc}") from None
    if not isinstance(doc, Mapping):
        return {}
    kind = str(doc.get("@odata.type", "")).split(".")[0].lstrip("#") or None
    reading = redfish_power_reading(doc) or redfish_environment_reading(doc) or redfish_supply_input([doc])
    return {"resource": kind, **_reading(reading)} if kind or reading else {}


PARSERS = {"ipmitool-dcmi": parse_dcmi_text, "ipmitool-sdr": parse_sdr_text, "redfish-power": parse_redfish_text}
READS = {
    "ipmitool-dcmi": "ipmitool [-I lanplus ...] dcmi power reading (ipmitool 1.8.x; Supermicro, Dell, OpenBMC): "
                     "instantaneous / minimum / maximum / average Watts and the reading state; all 0 W and "
                     "deactivated is no reading, never 0 W",
    "ipmitool-sdr": "ipmitool sdr [list|elist [full]] / sdr type Current|Power Supply (ipmitool 1.8.x): sensors "
                    "read in Watts, and the node's power (a whole-node sensor, else the supplies' input)",
    "redfish-power": "Redfish Chassis Power (PowerControl[].PowerConsumedWatts), EnvironmentMetrics "
                     "(PowerWatts.Reading, 2020.4+) or PowerSupply Metrics (InputPowerWatts) JSON, as curl prints it",
}
