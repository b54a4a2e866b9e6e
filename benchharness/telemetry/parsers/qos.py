"""RoCE QoS settings of a NIC: PFC per priority, trust mode, ECN (what lossless RoCE needs).

``mlnx_qos -i NETDEV`` (MLNX_OFED / mlnx-tools), ``dcb pfc show dev NETDEV`` (iproute2) and the
mlx5 ECN switches in sysfs (``/sys/class/net/NETDEV/ecn/roce_{np,rp}/enable/<prio>``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_TRUST = re.compile(r"^\s*Priority trust state:\s*(\S+)", re.MULTILINE)
_DCBX = re.compile(r"^\s*DCBX mode:\s*(.+?)\s*$", re.MULTILINE)
_PFC_PRIO = re.compile(r"^\s*priority((?:\s+\d)+)\s*$", re.MULTILINE)
_PFC_ON = re.compile(r"^\s*enabled((?:\s+[01])+)\s*$", re.MULTILINE)
_MAP = re.compile(r"(\d+):(\w+)")


def parse_mlnx_qos(text: str) -> dict[str, Any]:
    """``{"trust": "dscp"|"pcp"|None, "dcbx": ..., "pfc_enabled": [priorities]}``; ValueError
    when the text holds no PFC configuration."""
    prios, enabled = _PFC_PRIO.search(text), _PFC_ON.search(text)
    if not prios or not enabled:
        raise ValueError("no 'PFC configuration' priority/enabled rows in the mlnx_qos output")
    order = [int(p) for p in prios.group(1).split()]
    flags = [v == "1" for v in enabled.group(1).split()]
    trust, dcbx = _TRUST.search(text), _DCBX.search(text)
    return {"trust": trust.group(1) if trust else None, "dcbx": dcbx.group(1) if dcbx else None,
            "pfc_enabled": sorted(p for p, on in zip(order, flags, strict=False) if on)}


#: A ``dcb ... pfc set`` command line in a pasted session: its ``prio-pfc`` map is what was asked
#: for, not what the device reports.
_DCB_SET = re.compile(r"^.*\bdcb\b(?:\s+-\S+)*\s+pfc\s+set\b.*$", re.MULTILINE)


def _last(pattern: str, text: str) -> re.Match[str] | None:
    matches = list(re.finditer(pattern, text))
    return matches[-1] if matches else None


def _mapping(text: str, key: str) -> dict[int, str] | None:
    found = _last(rf"(?:^|\s){key}((?:\s+\d+:\w+)+)", text)
    return {int(k): v for k, v in _MAP.findall(found.group(1))} if found else None


def parse_dcb_pfc(text: str) -> dict[str, Any]:
    """``dcb pfc show dev X``: ``{"pfc_enabled": [...], "pfc_cap": n, "delay": n, "requests":
    {prio: n}, "indications": {prio: n}}`` (``prio-pfc``, or ``pg-pfc`` of the first releases).
    In a pasted session (show, ``dcb pfc set``, show again) the set command lines are not output
    and the last show is the device's current state."""
    text = _DCB_SET.sub("", text)
    pfc = _mapping(text, "prio-pfc") or _mapping(text, "pg-pfc")
    if pfc is None:
        raise ValueError("no prio-pfc map in the dcb pfc output")
    out: dict[str, Any] = {"pfc_enabled": sorted(p for p, v in pfc.items() if v == "on")}
    for key, name in (("pfc-cap", "pfc_cap"), ("delay", "delay")):
        found = _last(rf"{key}\s+(\d+)", text)
        out[name] = int(found.group(1)) if found else None
    for key in ("requests", "indications"):
        counts = _mapping(text, key)
        out[key] = {p: int(v) for p, v in counts.items()} if counts else None
    return out


def ecn_from_sysfs(files: Mapping[str, str]) -> dict[str, list[int]]:
    """``{"np": [prios], "rp": [prios]}`` from ``roce_np/enable/<prio>`` -> "0"/"1" file texts:
    ECN marking answered (notification point) and reacted to (reaction point) per priority."""
    out: dict[str, list[int]] = {"np": [], "rp": []}
    for path, value in files.items():
        found = re.search(r"roce_(np|rp)/enable/(\d)$", path)
        if found and value.strip() == "1":
            out[found.group(1)].append(int(found.group(2)))
    return {k: sorted(v) for k, v in out.items()}


PARSERS = {"mlnx_qos": parse_mlnx_qos, "dcb-pfc": parse_dcb_pfc}
