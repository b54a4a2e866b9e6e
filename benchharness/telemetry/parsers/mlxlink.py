"""``mlxlink -d DEV [-m] [-c] [--show_...]`` (NVIDIA MFT 4.x): link state, speed, FEC, module info,
BER counters (per-lane figures such as ``Raw Physical Errors Per Lane`` also as ``lanes``: a list per lane), and mlxlink's own refusals
(``-E- "--show_ber_monitor" option is not supported for HCA``: ``errors`` and ``not_supported``,
never read as a clean link). Pasted forms: several devices one after another under ``=== name ===``
banners (a shell loop) give ``devices``; a ``grep`` excerpt that lost the ``----`` rule under a
section title still puts its lines in that section.

``mlxlink ... --json`` prints one document: ``{"result": {"output": {section: {key: value}}},
"status": {"code", "message"}}`` (MFT's ``mlxlinkRecord``: a ``{"mask", "values"}`` object for a
speed mask, a list for per-lane figures). It gives the same fields as the text, read from the same
sections; a non-zero status code and a ``warning`` are kept in ``errors``. A document cut short (a
paste that stops inside it) is read up to its last complete line and flagged ``truncated``; a
document broken anywhere else is an error naming the line."""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, snake, to_float, to_int, unreadable


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


_BANNER = re.compile(r"^\s*={3,}\s*(\S.*?)\s*={3,}\s*$")
_TITLE = re.compile(r"^[A-Z][\w()/.-]*(?: [\w()/.-]+)* (?:Info|Information|Counters|Histogram)(?: \(\w+\))?$"
                    r"|^Histogram of .+$|^(?:Errors|Warnings)$")
#: mlxlink's own sections of messages (``Errors`` / ``------`` then one message a line, no `` : ``).
_MESSAGES = ("Errors", "Warnings")
#: ``8G-Gen 3 (16G-Gen 4)``: the PCIe speed in use, then the one enabled (``--port_type PCIE``).
_PCIE_SPEED = re.compile(r"^\s*([\d.]+)G(?:-Gen\s*(\d+))?(?:\s*\(\s*([\d.]+)G(?:-Gen\s*(\d+))?\s*\))?")
_PCIE_WIDTH = re.compile(r"^\s*(\d+)X(?:\s*\(\s*(\d+)X\s*\))?", re.IGNORECASE)
_NUMBER_LIST = re.compile(r"^\s*(?:-?[\d.]+|N/A)(?:\s*,\s*(?:-?[\d.]+|N/A))+\s*$")
_BER = re.compile(r"^\s*(\d+(?:\.\d+)?)E(-?\d+)\s*$", re.IGNORECASE)
_REFUSED = re.compile(r'"?(--?[\w-]+)"?\s+(?:option|flag)\s+is\s+not\s+supported', re.IGNORECASE)
_LANES = re.compile(r"^\d+(?:\s*,\s*\d+)+$")


def parse_mlxlink(text: str) -> dict[str, Any]:
    """Sections as ``sections[name][key]`` plus the figures a report needs at the top level; a paste
    of several devices under ``=== name ===`` banners: ``{"devices": [{"device": name, ...}]}``."""
    lines = clean_text(text).splitlines()
    if any(line.lstrip().startswith("{") for line in lines):
        return _parse_json(lines)
    starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _BANNER.match(line))]
    if len(starts) < 2:
        return _parse_one(lines)
    devices = []
    for n, (i, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        device = _parse_one(lines[i + 1:end])
        # a script's other banners ("=== MST Status ===", "=== VF Status Check ===") hold no mlxlink output
        if device["sections"] or any(e.startswith("-E-") or not e.startswith("-W-") for e in device.get("errors", [])):
            devices.append({"device": name, **device})
    if not devices:
        return _parse_one(lines)
    return {"devices": devices}


def _parse_one(lines: list[str]) -> dict[str, Any]:
    sections: dict[str, dict[str, str]] = {}
    errors: list[str] = []
    current = "General"
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and (re.fullmatch(r"-{3,}", nxt.strip()) or _TITLE.match(line.strip())):
            current = line.strip()
            continue
        if re.match(r"^\s*-[EW]-\s", line):
            errors.append(line.strip())
            continue
        if current in _MESSAGES and line.strip() and not re.fullmatch(r"-{3,}", line.strip()):
            errors.append(line.strip())  # "Showing Eye via SLRG raised the following exception: ..."
            continue
        # mlxlink pads every key and separates it from the value with " : "
        key, sep, value = line.rstrip().partition(" : ") if " : " in line else line.rstrip().partition(" :")
        if sep and key.strip() and not re.fullmatch(r"-{3,}", line.strip()):
            sections.setdefault(current, {})[key.strip()] = value.strip()
    return _summary(sections, errors)


def _summary(sections: dict[str, dict[str, str]], errors: list[str]) -> dict[str, Any]:
    """The figures a report needs, from ``sections[title][key]`` as the text form prints them."""

    def get(section: str, key: str) -> str | None:
        found = sections.get(section, {}).get(key)
        if found is None and section == "Operational Info":  # a grep excerpt without its section title
            found = sections.get("General", {}).get(key)
        return found

    op = "Operational Info"
    out: dict[str, Any] = {
        "state": get(op, "State"), "physical_state": get(op, "Physical state"),
        "speed": get(op, "Speed"), "width": get(op, "Width"), "fec": get(op, "FEC"),
        "auto_negotiation": get(op, "Auto Negotiation"), "sections": sections,
    }
    out["speed_gbps"] = _speed_gbps(out["speed"], out["width"])
    if errors:
        out["errors"] = errors
        out["not_supported"] = [m.group(1) for e in errors if (m := _REFUSED.search(e))]
    out["firmware"] = get("Tool Information", "Firmware Version")
    module = sections.get("Module Info")
    if module:
        mod: dict[str, Any] = {
            "identifier": module.get("Identifier"), "cable_type": module.get("Cable Type"),
            "vendor_name": module.get("Vendor Name"), "vendor_pn": module.get("Vendor Part Number"),
            "vendor_sn": module.get("Vendor Serial Number"), "fw_version": module.get("FW Version"),
        }
        for key, name in (("Compliance", "compliance"), ("Cable Technology", "cable_technology"),
                          ("Module State", "module_state"), ("Transfer Distance [m]", "length_m")):
            if key in module:
                mod[name] = to_int(module[key]) if name == "length_m" else module[key]
        for key, value in module.items():  # MFT 4.2x+: "Rx LOS [per lane] : 1,0,1,1", "SNR Media Lanes [dB]"
            if ("[per lane]" in key or "Lanes [dB]" in key) and _NUMBER_LIST.match(value):
                mod.setdefault("per_lane", {})[snake(key.replace("[per lane]", ""))] = _numbers(value)
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
        for key, value in ber.items():
            if _LANES.match(value):  # one figure per lane: "Raw Physical Errors Per Lane : 3183333,242074"
                out.setdefault("lanes", {})[snake(key)] = [int(v) for v in value.split(",")]
            m = _BER.match(value)
            if m and key.rstrip().endswith("BER"):  # "1E-8"; "15E-255" is mlxlink's "no error seen"
                out.setdefault("ber", {})[snake(key)] = float(f"{m.group(1)}e{m.group(2)}")
    pcie = _pcie(sections)
    if pcie:
        out["pcie"] = pcie
    for title, members in sections.items():
        if title.upper().startswith("EYE OPENING INFO"):  # per-lane grades, eye height / phase, FOM
            eye = {snake(k): _numbers(v) for k, v in members.items() if _NUMBER_LIST.match(v)}
            scalars = {snake(k): v for k, v in members.items() if not _NUMBER_LIST.match(v)}
            out.setdefault("eye", {}).update({**scalars, **eye})
    return out


def _numbers(value: str) -> list[int | float | None]:
    """``1848,  2220, N/A`` -> [1848, 2220, None]."""
    out: list[int | float | None] = []
    for part in value.split(","):
        number = to_float(part)
        out.append(None if number is None else int(number) if number == int(number) and "." not in part else number)
    return out


def _pcie(sections: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    """``mlxlink --port_type PCIE``: the link in use against the one enabled, the device status, and
    the management counters (``dl down``, ``RX Errors``, ``CRC Error tlp``, ...)."""
    info = sections.get("PCIe Operational (Enabled) Info")
    if info is None:
        return None
    out: dict[str, Any] = {}
    m = _PCIE_SPEED.match(info.get("Link Speed Active (Enabled)", ""))
    if m:
        out["speed_gts"], out["gen"] = float(m.group(1)), to_int(m.group(2))
        if m.group(3):
            out["enabled_speed_gts"], out["enabled_gen"] = float(m.group(3)), to_int(m.group(4))
    m = _PCIE_WIDTH.match(info.get("Link Width Active (Enabled)", ""))
    if m:
        out["width"] = int(m.group(1))
        if m.group(2):
            out["enabled_width"] = int(m.group(2))
    if "enabled_speed_gts" in out or "enabled_width" in out:
        out["downgraded"] = out.get("speed_gts", 0) < out.get("enabled_speed_gts", 0) \
            or out.get("width", 0) < out.get("enabled_width", 0)
    if "Device Status" in info:
        out["device_status"] = info["Device Status"]
    for title, members in sections.items():
        if title.startswith("Management PCIe"):
            for key, value in members.items():
                out.setdefault("counters", {})[snake(key)] = to_int(value) if re.fullmatch(r"\d+", value) else value
    return out


def _close_cut(body: str) -> str | None:
    """A JSON document cut short, closed after its last complete member; None when it cannot be."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in body:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
    if in_string or not stack:
        return None
    body = re.sub(r'(?:,\s*"(?:[^"\\]|\\.)*"\s*:)?\s*,?\s*$', "", body)  # a dangling comma or key
    return body + "".join(reversed(stack))


def _flat(value: Any) -> str:
    """A JSON member as the text form prints it: ``mask (v1,v2)`` and per-lane lists ``a,b``."""
    if isinstance(value, dict) and "mask" in value:
        values = value.get("values")
        shown = ",".join(str(v) for v in values) if isinstance(values, list) else ""
        return f"{value['mask']} ({shown})" if shown else str(value["mask"])
    if isinstance(value, list):
        return ",".join(_flat(v) for v in value)
    if isinstance(value, dict) and set(value) == {"values"}:  # per-lane figures: {"values": ["30", "10"]}
        return _flat(value["values"])
    if isinstance(value, dict):
        return json.dumps(value)
    return "" if value is None else str(value)


def _parse_json(lines: list[str]) -> dict[str, Any]:
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("{"))
    for n, line in enumerate(lines[:start]):  # only the command echo and blank lines may come first
        if line.strip() and "mlxlink" not in line:
            raise unreadable(n + 1, line, "not mlxlink --json output")
    while len(lines) > start and not lines[-1].strip():
        lines = lines[:-1]
    body = "\n".join(lines[start:])
    truncated = False
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as err:
        if err.pos < len(body.rstrip()):  # broken inside, not cut at the end
            raise unreadable(start + err.lineno, lines[start + err.lineno - 1], f"invalid JSON ({err.msg})") from None
        closed: str | None = None
        for keep in (len(lines), len(lines) - 1):  # the last line itself may be cut
            closed = _close_cut("\n".join(lines[start:keep]))
            if closed is not None:
                try:
                    doc = json.loads(closed)
                    break
                except json.JSONDecodeError:
                    closed = None
        if closed is None:
            raise unreadable(len(lines), lines[-1], "JSON document cut and not readable") from None
        truncated = True
    if not isinstance(doc, dict):
        raise unreadable(start + 1, lines[start], "not an mlxlink JSON document")
    result = doc.get("result")
    output = result.get("output") if isinstance(result, dict) else None
    if not isinstance(output, dict):
        output = {}
    sections = {title: {k: _flat(v) for k, v in members.items()}
                for title, members in output.items() if isinstance(members, dict)}
    errors: list[str] = []
    status = doc.get("status")
    if isinstance(status, dict) and status.get("code") not in (None, 0, "0"):
        errors.append(f"status {status.get('code')}: {status.get('message', '')}".strip())
    warning = doc.get("warning")
    if warning:
        errors.extend(str(w) for w in (warning if isinstance(warning, list) else [warning]))
    if not sections and not errors:
        raise unreadable(start + 1, lines[start], "no result.output sections in the JSON document")
    out = _summary(sections, errors)
    out["format"] = "json"
    if isinstance(status, dict):
        out["status"] = {"code": status.get("code"), "message": status.get("message")}
    if truncated:
        out["truncated"] = True
    return out


PARSERS = {"mlxlink": parse_mlxlink}
READS = {"mlxlink": "mlxlink -d DEV [-p N] [-m] [-c] [-e] [--show_ber_monitor ...] (MFT 4.1x-4.35; ConnectX-4 to "
                    "ConnectX-7, BlueField, switch ports; IB SDR-XDR and Ethernet 1G-400G): sections, Module Info "
                    "(DDM values with thresholds, per-lane LOS/SNR, MFT 4.2x+ fields), BER counters per lane and as "
                    "numbers (15E-255 = none seen), EYE Opening Info per lane; --port_type PCIE: link in use vs "
                    "enabled (Gen, width, downgraded), Device Status, management counters; -E- answers and the "
                    "'Errors' section; grep excerpts without their rules; several devices under '=== name ===' "
                    "banners (a script's other banners left out); --json documents (mask/values members, cut short)"}
