"""RoCE QoS settings of a NIC: PFC per priority, trust mode, ECN (what lossless RoCE needs).

``mlnx_qos -i NETDEV`` (MLNX_OFED / mlnx-tools), ``dcb [-j] pfc show dev NETDEV`` (iproute2) and the
mlx5 ECN switches in sysfs (``/sys/class/net/NETDEV/ecn/roce_{np,rp}/enable/<prio>``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from benchharness.telemetry.parsers._common import undecorate

# mlnx_qos prints each on its own line; a page that lost its line breaks runs them together
# ("Priority trust state: pcpdefault priority:", "PFC configuration:        priority    0 ...")
_TRUST = re.compile(r"Priority trust state:[ \t]*(?:(dscp|pcp|none)|(\S+))")
_DCBX = re.compile(r"DCBX mode:[ \t]*(?:(OS controlled|Firmware controlled)|(\S[^\n]*?))[ \t]*(?:\n|$)")
_PFC_ROWS = re.compile(r"\bpriority((?:[ \t]+\d)+)\s*enabled((?:[ \t]+[01])+)")
_MAP = re.compile(r"(\d+):(\w+)")


def _last_of(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = list(pattern.finditer(text))
    return found[-1] if found else None


def parse_mlnx_qos(text: str) -> dict[str, Any]:
    """``{"trust": "dscp"|"pcp"|None, "dcbx": ..., "pfc_enabled": [priorities]}``. A pasted session
    with several shows (``--trust dscp`` then ``--pfc ...``, each printing the state) reads as its
    last show. ``Priority trust state: none`` (the device cannot say) is None. ValueError when the
    text holds no PFC configuration, naming the ``PFC configuration:`` line when its priority /
    enabled rows are missing."""
    text = undecorate(text)
    rows = _last_of(_PFC_ROWS, text)
    if rows is None:
        lines = text.splitlines()
        head = next((i for i, line in enumerate(lines) if "PFC configuration:" in line), None)
        if head is not None:
            raise ValueError(f"line {head + 1}: mlnx_qos PFC configuration without its priority/enabled rows: "
                             f"{lines[head].strip()!r}")
        raise ValueError("no 'PFC configuration' priority/enabled rows in the mlnx_qos output")
    order = [int(p) for p in rows.group(1).split()]
    flags = [v == "1" for v in rows.group(2).split()]
    trust, dcbx = _last_of(_TRUST, text), _last_of(_DCBX, text)
    trust_value = (trust.group(1) or trust.group(2)) if trust else None
    return {"trust": None if trust_value in (None, "none") else trust_value,
            "dcbx": (dcbx.group(1) or dcbx.group(2)) if dcbx else None,
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
    if '"prio_pfc"' in text:
        return _dcb_pfc_json(text)
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


def _dcb_pfc_json(text: str) -> dict[str, Any]:
    """``dcb -j [-p] [-s] pfc show dev X`` (iproute2 dcb/dcb_pfc.c): one object with ``pfc_cap``,
    ``macsec_bypass``, ``delay``, ``prio_pfc`` (eight booleans, priority 0 first) and with ``-s``
    ``requests`` / ``indications`` (eight counts). The last object of a pasted session is read;
    prompts, ``| jq`` command lines and mail quote marks around it are passed over."""
    lines = undecorate(text).splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("{")]
    for start in reversed(starts):
        body = "\n".join(lines[start:])
        try:
            data, _ = json.JSONDecoder().raw_decode(body.lstrip())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("prio_pfc"), list):
            break
    else:
        head = next((i for i, line in enumerate(lines) if '"prio_pfc"' in line), 0)
        raise ValueError(f"line {head + 1}: dcb -j pfc output that is not JSON: {lines[head].strip()!r}")
    out: dict[str, Any] = {"pfc_enabled": [p for p, on in enumerate(data["prio_pfc"]) if on is True]}
    for key in ("pfc_cap", "delay"):
        out[key] = data[key] if isinstance(data.get(key), int) else None
    for key in ("requests", "indications"):
        counts = data.get(key)
        out[key] = {p: n for p, n in enumerate(counts) if isinstance(n, int)} if isinstance(counts, list) else None
    if isinstance(data.get("macsec_bypass"), bool):
        out["macsec_bypass"] = data["macsec_bypass"]
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


READS = {
    "mlnx_qos": "mlnx_qos -i DEV [--trust|--pfc ...] (MLNX_OFED 4.x / mlnx-tools, ConnectX mlx5): trust "
                "(pcp/dscp), DCBX mode, PFC enabled priorities; excerpts "
                "without trust/DCBX lines, set -x traces with several shows (the last)",
    "dcb-pfc": "dcb [-s] pfc show dev DEV (iproute2 5.11+): pfc-cap, prio-pfc (pg-pfc of the first patch), delay, "
               "requests/indications per priority; sessions with dcb pfc set between shows (the last); dcb -j [-p] "
               "[-s] pfc show (JSON per iproute2 dcb_pfc.c: pfc_cap, macsec_bypass, delay, prio_pfc booleans, "
               "requests / indications lists)",
}

PARSERS = {"mlnx_qos": parse_mlnx_qos, "dcb-pfc": parse_dcb_pfc}
