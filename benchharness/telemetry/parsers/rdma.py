"""RDMA tools: ``ibstat``, ``ibv_devinfo -v``, ``rdma link`` / ``rdma stat -j``, ``ibdev2netdev -v``."""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, to_float, to_int


def parse_ibstat(text: str) -> list[dict[str, Any]]:
    """``ibstat``: CAs with type, firmware, GUIDs and ports (state, physical state, rate Gb/s, lid)."""
    cas: list[dict[str, Any]] = []
    ca: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for line in clean_text(text).splitlines():
        m = re.match(r"^CA '([^']+)'", line)
        if m:
            ca = {"device": m.group(1), "ports": []}
            cas.append(ca)
            port = None
            continue
        if ca is None or ":" not in line:
            continue
        m = re.match(r"^\s+Port (\d+):\s*$", line)
        if m:
            port = {"port": int(m.group(1))}
            ca["ports"].append(port)
            continue
        key, _, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        if port is None:
            names = {"CA type": "ca_type", "Number of ports": "num_ports", "Firmware version": "fw_ver",
                     "Hardware version": "hw_ver", "Node GUID": "node_guid",
                     "System image GUID": "sys_image_guid"}
            if key in names:
                ca[names[key]] = to_int(value) if key == "Number of ports" else value
        else:
            names = {"State": "state", "Physical state": "phys_state", "Rate": "rate_gbps",
                     "Base lid": "lid", "LMC": "lmc", "SM lid": "sm_lid", "Port GUID": "port_guid",
                     "Link layer": "link_layer", "Capability mask": "capability_mask"}
            if key in names:
                numeric = key in ("Rate", "Base lid", "LMC", "SM lid")
                port[names[key]] = (to_float(value) if key == "Rate" else to_int(value)) if numeric else value
    return cas


def _paren_code(value: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*?)\s*\((\d+)\)\s*$", value)
    return (m.group(1), int(m.group(2))) if m else (value, None)


def parse_ibv_devinfo(text: str) -> list[dict[str, Any]]:
    """``ibv_devinfo [-v]``: devices, their attributes, ports (state, MTUs, width x speed) and GIDs."""
    devices: list[dict[str, Any]] = []
    dev: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for line in clean_text(text).splitlines():
        m = re.match(r"^hca_id:\s*(\S+)", line)
        if m:
            dev = {"device": m.group(1), "ports": []}
            devices.append(dev)
            port = None
            continue
        if dev is None:
            # Port lines grepped out of ``ibv_devinfo -v`` (no hca_id, no port number).
            if not re.match(r"^\s*(state|phys_state|active_width|active_speed|active_mtu|link_layer):", line):
                continue
            port = {"port": None, "gids": []}
            dev = {"device": None, "ports": [port]}
            devices.append(dev)
        m = re.match(r"^\s+port:\s*(\d+)", line)
        if m:
            port = {"port": int(m.group(1)), "gids": []}
            dev["ports"].append(port)
            continue
        m = re.match(r"^\s+GID\[\s*(\d+)\]:\s*([^,\s]+)(?:,\s*(.+))?$", line)
        if m and port is not None:
            port["gids"].append({"index": int(m.group(1)), "gid": m.group(2), "type": m.group(3)})
            continue
        key, sep, value = line.strip().partition(":")
        if not sep or not value.strip():
            continue
        key, value = key.strip(), value.strip()
        target = port if port is not None else dev
        if key in ("state", "phys_state"):
            name, code = _paren_code(value)
            target[key] = name
            target[f"{key}_code"] = code
        elif key in ("max_mtu", "active_mtu"):
            target[key] = to_int(_paren_code(value)[0])
        elif key == "active_width":
            target["active_width"] = to_int(_paren_code(value)[0].rstrip("X"))
        elif key == "active_speed":
            target["active_speed_gbps"] = to_float(value)
        elif key in ("transport",):
            target[key] = _paren_code(value)[0]
        else:
            target[key] = to_int(value) if re.fullmatch(r"\d+", value) else value
    for dev in devices:
        for port in dev["ports"]:
            if port.get("active_width") and port.get("active_speed_gbps"):
                port["rate_gbps"] = port["active_width"] * port["active_speed_gbps"]
    return devices


def _rdma_entry(fields: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"device": fields.pop("ifname", None), "port": to_int(fields.pop("port", None))}
    fields.pop("ifindex", None)
    counters = {k: v for k, v in fields.items() if isinstance(v, int) and not isinstance(v, bool)}
    for key in counters:
        fields.pop(key)
    entry.update(fields)
    if counters:
        entry["counters"] = counters
    return entry


_LINK_ATTRS = ("lid", "sm_lid", "lmc", "port")


def _rdma_json(text: str) -> list[dict[str, Any]] | None:
    if not text.startswith(("[", "{")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return [_rdma_entry(dict(item)) for item in (data if isinstance(data, list) else [data])]


def _link_fields(tokens: list[str]) -> dict[str, Any] | None:
    """``[link] DEV/PORT[:] key value ...`` or iproute2 4.x ``IDX/PORT: DEV/PORT: key value ...``."""
    if not tokens or not (tokens[0] == "link" or re.fullmatch(r"\d+/\d+:", tokens[0])):
        return None
    tokens = tokens[1:]
    m = re.fullmatch(r"(\S+)/(\d+):?", tokens[0]) if tokens else None
    if not m:
        return None
    fields: dict[str, Any] = {"ifname": m.group(1), "port": m.group(2)}
    rest = tokens[1:]
    for key, value in zip(rest[0::2], rest[1::2], strict=False):
        numeric = re.fullmatch(r"\d+", value) and key not in _LINK_ATTRS
        fields[key] = int(value) if numeric else value
    return fields


def parse_rdma(text: str) -> dict[str, Any]:
    """``rdma link [-j]`` and ``rdma stat [show] [-j|-p]``: ``ports`` with state/netdev and/or counters."""
    text = clean_text(text).strip()
    from_json = _rdma_json(text)
    if from_json is not None:
        return {"ports": from_json}
    found: list[dict[str, Any]] = []
    for line in text.splitlines():
        tokens = line.split()
        fields = _link_fields(tokens)
        if fields is not None:
            found.append(fields)
        elif found and line[:1].isspace() and len(tokens) == 2 and re.fullmatch(r"\d+", tokens[1]):
            found[-1][tokens[0]] = int(tokens[1])  # ``rdma stat show -p``: one counter a line
    ports = []
    for fields in found:
        entry = _rdma_entry(fields)
        for key in ("lid", "sm_lid", "lmc"):
            if key in entry:
                entry[key] = to_int(entry[key])
        ports.append(entry)
    return {"ports": ports}


_IBDEV = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+)?(?P<dev>\S+)\s+"
    r"(?:\((?P<part>[^)]*)\)\s+(?P<desc>.*?)\s+fw\s+(?P<fw>\S+)\s+)?"
    r"port\s+(?P<port>\d+)(?:\s+\(\s*(?P<ibstate>[A-Z_]+)\s*\))?\s+==>\s+(?P<netdev>\S+)\s+\(\s*(?P<state>[^)]*?)\s*\)"
)


def parse_ibdev2netdev(text: str) -> list[dict[str, Any]]:
    """``ibdev2netdev [-v]``: RDMA device/port to netdev, with PCI address, firmware and states."""
    out: list[dict[str, Any]] = []
    for line in clean_text(text).splitlines():
        m = _IBDEV.match(line.strip())
        if not m:
            continue
        entry = {"device": m.group("dev"), "port": int(m.group("port")), "netdev": m.group("netdev"),
                 "netdev_state": m.group("state")}
        for key in ("pci", "part", "desc", "fw", "ibstate"):
            if m.group(key):
                entry[{"pci": "pci_address", "ibstate": "port_state", "part": "part",
                       "desc": "description", "fw": "fw_ver"}[key]] = m.group(key)
        out.append(entry)
    return out


PARSERS = {"ibstat": parse_ibstat, "ibv_devinfo": parse_ibv_devinfo, "rdma": parse_rdma,
           "ibdev2netdev": parse_ibdev2netdev}
