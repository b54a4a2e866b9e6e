"""``ethtool DEV`` (link settings), ``-i`` (driver info), ``-S`` (statistics), and the NIC's
configuration: ``-k`` (offloads), ``-l`` (channels), ``-x`` (RSS indirection table, key and hash
function), ``-n ... rx-flow-hash`` (the header fields RSS hashes per flow type), ``-g`` (rings) and
``-c`` (interrupt coalescing)."""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import (
    STATS_COMMAND,
    clean_text,
    is_noise,
    snake,
    stats_commands,
    strip_ansi,
    to_int,
    undecorate,
    unreadable,
)
from benchharness.telemetry.parsers._counter_names import highlights
from benchharness.telemetry.parsers._ports import ethtool_command, per_port

#: list-valued lines of ``ethtool DEV`` (each may continue on indented lines without a colon)
_SETTING_LISTS = {"Supported link modes": "supported_link_modes", "Advertised link modes": "advertised_link_modes",
                  "Supported FEC modes": "supported_fec_modes", "Advertised FEC modes": "advertised_fec_modes",
                  "Link partner advertised link modes": "partner_link_modes",
                  "Link partner advertised FEC modes": "partner_fec_modes"}
#: ``ethtool --json DEV`` (ethtool 5.10+ over netlink): its keys -> the text form's fields
_JSON_LISTS = {"supported-link-modes": "supported_link_modes", "advertised-link-modes": "advertised_link_modes",
               "supported-fec-modes": "supported_fec_modes", "advertised-fec-modes": "advertised_fec_modes",
               "link-partner-advertised-link-modes": "partner_link_modes",
               "link-partner-advertised-fec-modes": "partner_fec_modes"}
_SETTING_KEYS = frozenset({"Speed", "Duplex", "Lanes", "Port", "Auto-negotiation", "Link detected",
                           "Active FEC encoding", "Configured FEC encodings", "Supported ports", "Transceiver"})


def parse_settings(text: str) -> dict[str, Any]:
    """Speed (``speed_mbps``, None when ``Unknown!``), lanes, duplex (None when ``Unknown! (255)``),
    port, autoneg, link detected, supported / advertised / link-partner link and FEC modes
    (``Not reported`` -> ``[]``), and ``--show-fec``'s lines: ``Active FEC encoding``, the configured
    encodings (``Configured FEC encodings:`` of ioctl ethtool, ``Supported/Configured FEC
    encodings:`` of netlink ethtool) and, with ``-I``, its ``Statistics:`` block as ``fec_stats``
    (``corrected_blocks``, ``uncorrectable_blocks``, the 6.18 ``fec_symbol_err_N[_to_M]`` histogram
    bins) with per-lane values (``[ per_lane: a, b ]`` or older ``Lane N: v`` lines) in
    ``fec_stats_lanes``.

    A pasted session that shows the port more than once (``grep -A 3 'Speed: '`` before and after an
    ``ethtool -s``) reads as its last show. Text without any settings line is an error naming its
    first line."""
    if _json_start(text) is not None:
        return _settings_json(text)
    out: dict[str, Any] = {"netdev": None, "supported_link_modes": [], "advertised_link_modes": []}
    text = clean_text(text)
    m = re.search(r"^\s*(?:Settings|FEC parameters) for (\S+?):", text, re.MULTILINE)
    if m:
        out["netdev"] = m.group(1)
    current_list: str | None = None
    stats: dict[str, int] | None = None  # inside --show-fec's "Statistics:" block
    stat: str | None = None  # the statistic whose "Lane N:" lines follow
    seen = False
    for line in text.splitlines():
        if stats is not None:
            fm = re.match(r"^\s+([A-Za-z][\w-]*):\s*(\d+)(?:\s*\[\s*per_lane:\s*([\d,\s]+)\])?\s*$", line)
            if fm:
                stat = fm.group(1)
                stats[stat] = int(fm.group(2))
                if fm.group(3):
                    out["fec_stats_lanes"][stat] = [int(v) for v in fm.group(3).replace(",", " ").split()]
                continue
            lm = re.match(r"^\s+Lane\s+(\d+):\s*(\d+)\s*$", line)
            if lm and stat:
                out["fec_stats_lanes"].setdefault(stat, []).append(int(lm.group(2)))
                continue
            stats = stat = None  # anything else (a prompt, the next show) ends the block
        if ":" not in line:
            if current_list and line.strip() and line[:1].isspace():
                out[current_list].extend(line.split())
            continue
        key, _, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        current_list = None
        if key in _SETTING_LISTS:
            seen = True
            current_list = _SETTING_LISTS[key]
            out[current_list] = []  # a later show replaces an earlier one
            if value and value != "Not reported":
                out[current_list].extend(value.split())
            continue
        if key in _SETTING_KEYS or key in _FEC_CONFIGURED:
            seen = True
        if key == "Speed":
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
        elif key == "Active FEC encoding":
            out["fec_active"] = value
        elif key in _FEC_CONFIGURED:
            out["fec_configured"] = value
        elif key == "Statistics" and not value and out.get("fec_active") is not None:
            stats = out["fec_stats"] = {}
            out["fec_stats_lanes"] = {}
    if not seen and text.strip():
        first = next(line for line in text.splitlines() if line.strip())
        raise unreadable(text.splitlines().index(first) + 1, first, "no ethtool link settings line")
    return out


#: the ``--show-fec`` line naming the configured encodings: ioctl ethtool (and its first releases),
#: netlink ethtool 5.x, and ``Supported/Configured`` (ethtool 6.x, both paths)
_FEC_CONFIGURED = frozenset({"Configured FEC encodings", "FEC encodings", "Supported/Configured FEC encodings"})


def _json_start(text: str) -> int | None:
    """Index of the line that opens an ``ethtool --json`` document (``[ {`` on one line, or ``[``
    alone before ``{`` as ``jq`` prints it), None when the text holds none."""
    if '"ifname"' not in text:
        return None
    lines = undecorate(text).splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*\[\s*\{", line):
            return i
        if re.match(r"^\s*\[\s*$", line):
            following = next((ln for ln in lines[i + 1:] if ln.strip()), "")
            if re.match(r"^\s*\{", following):
                return i
    return None


def _json_devices(text: str) -> tuple[list[dict[str, Any]], str, int]:
    """The device objects of an ``ethtool --json`` document, its opening line and number. A mail's
    quote marks, the command line and a ``[sudo] password`` prompt around it are passed over; a
    string a mail wrapped across lines (``"1000baseT/`` + ``Full"``) is joined again."""
    lines = undecorate(text).splitlines()
    start = _json_start(text)
    assert start is not None
    end = max((i for i, line in enumerate(lines)
               if i >= start and (re.search(r"\}\s*\]\s*$", line) or re.match(r"^\s*\]\s*$", line))),
              default=len(lines) - 1)
    body = lines[start:end + 1]
    try:
        data = json.loads("\n".join(body))
    except json.JSONDecodeError:
        try:  # wrapped lines: newlines only ever stand between tokens or inside a cut string
            data = json.loads("".join(body))
        except json.JSONDecodeError as exc:
            raise unreadable(start + 1, lines[start], f"ethtool --json output that is not JSON ({exc.msg})") from exc
    devices = [d for d in (data if isinstance(data, list) else [data]) if isinstance(d, dict)]
    if not devices:
        raise unreadable(start + 1, lines[start], "ethtool --json output without a device object")
    return devices, lines[start], start + 1


def _settings_json(text: str) -> dict[str, Any]:
    """``ethtool --json DEV`` (5.10+) or ``ethtool --json [-I] --show-fec DEV`` (``config`` /
    ``active`` lists, ``statistics`` with ``total`` / ``lanes`` and the ``hist`` bins): a list of one
    object per device (the last one read)."""
    dev = _json_devices(text)[0][-1]
    out: dict[str, Any] = {"netdev": dev.get("ifname"), "supported_link_modes": [], "advertised_link_modes": []}
    for key, name in _JSON_LISTS.items():
        if key in dev:
            out[name] = list(dev[key] or [])
    speed = dev.get("speed")
    if "speed" in dev or "duplex" in dev or any(key in dev for key in _JSON_LISTS) or "config" not in dev:
        out["speed_mbps"] = speed if isinstance(speed, int) and 0 < speed < 0xFFFFFFFF else None
    if "duplex" in dev:
        duplex = dev["duplex"]
        out["duplex"] = None if not duplex or str(duplex).startswith("Unknown") else duplex
    if "lanes" in dev:
        out["lanes"] = to_int(dev["lanes"])
    for key, name in (("port", "port"), ("auto-negotiation", "autoneg"), ("link-detected", "link_detected")):
        if key in dev:
            out[name] = dev[key]
    for key, name in (("config", "fec_configured"), ("active", "fec_active")):
        if key in dev:
            value = dev[key]
            out[name] = " ".join(str(v) for v in value) if isinstance(value, list) else value
    if isinstance(dev.get("statistics"), dict):
        stats: dict[str, int] = {}
        lanes: dict[str, list[int]] = {}
        for key, value in dev["statistics"].items():
            if isinstance(value, dict) and isinstance(value.get("total"), int):
                stats[key] = value["total"]
                if isinstance(value.get("lanes"), list):
                    lanes[key] = [int(v) for v in value["lanes"]]
            elif key == "hist" and isinstance(value, list):
                for b in (b for b in value if isinstance(b, dict) and isinstance(b.get("total"), int)):
                    low, high = b.get("bin_low"), b.get("bin_high")
                    name = f"fec_symbol_err_{low}" + (f"_to_{high}" if high != low else "")
                    stats[name] = b["total"]
                    if isinstance(b.get("lanes"), list):
                        lanes[name] = [int(v) for v in b["lanes"]]
        out["fec_stats"], out["fec_stats_lanes"] = stats, lanes
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
    indentation, so unindented ``name: number`` lines count too, and section titles pasted between
    them (the ionic documentation's ``Driver port specific::``) are passed over. Per-queue counters
    (``[3]: rx_discards``, ``rx_0_dropped``, ``rx_dropped_pkt[0]``, ``queue_0_...``) are kept among
    the counters and left out of the highlights, whose sums are port-wide. A name the driver prints
    twice (virtio's 32-character names cut to the same text) keeps its first value. Text without
    any counter is an error naming its first line. The port an ``ethtool -S DEV`` command line
    names is ``netdev``; several ports pasted one after another give ``netdevs``, one each. One
    port's outputs pasted one after another (before and after a run, two kernels: each opens with
    ``NIC statistics:`` or its command line) stay apart: ``snapshots``, one per output in order
    (``line``: where it opens, its ``counters`` and ``highlights``), the top-level ``counters`` and
    ``highlights`` being the last output's (never a merge of both)."""
    counters: dict[str, int] = {}
    if _json_start(text) is not None:
        for dev in _json_devices(text)[0]:
            _flatten_stats(dev, "", counters)
        if counters:
            return {"counters": counters, "highlights": highlights(counters)}
        _, line, number = _json_devices(text)
        raise unreadable(number, line, "ethtool --json -S output without a counter")
    commands = stats_commands(text)
    raw = text.replace("\r\n", "\n").split("\n")
    shows: list[tuple[int, dict[str, int]]] = [(1, counters)]
    for number, line in enumerate(raw, 1):
        if line.strip() == "NIC statistics:" or STATS_COMMAND.search(line):
            if shows[-1][1]:
                shows.append((number, {}))  # the next output: its counters apart from the last
            else:
                shows[-1] = (number, shows[-1][1])
            continue
        if is_noise(line):
            continue
        m = re.match(r"^\s*(\S.*?):\s+(-?\d+)\s*$", strip_ansi(line))
        if m:
            shows[-1][1].setdefault(m.group(1), int(m.group(2)))
    shows = [(number, found) for number, found in shows if found]
    if not shows and text.strip():
        first = next((i, line) for i, line in enumerate(raw, 1) if line.strip())
        raise unreadable(first[0], first[1], "no ethtool -S counter line")
    named = {"netdev": commands[0][1]} if commands else {}
    if len(shows) < 2:
        return {**named, "counters": counters, "highlights": highlights(counters)}
    last = shows[-1][1]
    return {**named, "counters": last, "highlights": highlights(last),
            "snapshots": [{"line": number, "counters": found, "highlights": highlights(found)}
                          for number, found in shows]}


def _flatten_stats(obj: dict[str, Any], prefix: str, counters: dict[str, int]) -> None:
    """``ethtool --json -S``: the names the text form prints. A standard group's object
    (``"eth-phy": {"SymbolErrorDuringCarrier": 1}``) -> ``eth-phy-SymbolErrorDuringCarrier``; an
    RMON histogram (``"pktsNtoM"`` / ``"rx-pktsNtoM"``: ``{low, high, val}`` buckets) ->
    ``rmon[-rx]-etherStatsPkts64Octets`` / ``128to255Octets`` / ``1024toMaxOctets``; driver
    counters keep their names."""
    for key, value in obj.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            counters.setdefault(prefix + key, value)
        elif isinstance(value, dict) and not prefix:
            _flatten_stats(value, f"{key}-", counters)
        elif isinstance(value, list) and key.endswith("pktsNtoM"):
            side = key[:-len("pktsNtoM")]  # "", "rx-", "tx-"
            for bucket in (b for b in value if isinstance(b, dict) and isinstance(b.get("val"), int)):
                low, high = bucket.get("low") or 0, bucket.get("high") or 0
                size = f"{low}to{high}" if low and high else (str(high) if high else f"{low}toMax")
                counters.setdefault(f"{prefix}{side}etherStatsPkts{size}Octets", bucket["val"])


def _netdev(text: str, heading: str) -> str | None:
    m = re.search(rf"^\s*{heading} (?:for )?(\S+?):?\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


def _value(text: str) -> int | str | None:
    """``4096`` -> 4096 (a note pasted after the number is left out), ``n/a`` -> None, anything
    else as printed (``off``)."""
    text = text.strip()
    m = re.match(r"^(-?\d+)(?:\s|$)", text)
    if m:
        return int(m.group(1))
    return None if text.lower() in ("n/a", "") else text


def parse_features(text: str) -> dict[str, Any]:
    """``ethtool -k``: each feature on/off, the ``[fixed]`` ones (the driver cannot change them)
    and ``[requested on]`` wishes the device could not grant. Old ``Offload parameters for``
    output and grepped excerpts read the same way."""
    text = undecorate(text)
    features: dict[str, bool] = {}
    fixed: list[str] = []
    requested: dict[str, bool] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([A-Za-z0-9][\w-]*(?: [\w-]+)*):\s+(on|off)(?:\s+\[(fixed|requested (?:on|off))\])?\s*$",
                     line)
        if not m:
            continue
        name = m.group(1).replace(" ", "-")
        features[name] = m.group(2) == "on"
        if m.group(3) == "fixed":
            fixed.append(name)
        elif m.group(3):
            requested[name] = m.group(3).endswith("on")
    return {"netdev": _netdev(text, "(?:Features|Offload parameters)"), "features": features,
            "fixed": fixed, "requested": requested}


#: ``ethtool -g`` lines printed only under ``Current hardware settings:`` (netlink/rings.c): read
#: there when a ``grep`` left the section title out
_CURRENT_ONLY = frozenset({"rx_buf_len", "cqe_size", "tx_push", "rx_push", "tcp_data_split"})


def _sections(text: str) -> dict[str, dict[str, Any]]:
    """``Pre-set maximums:`` / ``Current hardware settings:`` blocks of ``-l`` and ``-g``."""
    out: dict[str, dict[str, Any]] = {"max": {}, "current": {}}
    section: str | None = None
    for line in text.splitlines():
        if re.match(r"^\s*Pre-set maximums:", line):
            section = "max"
        elif re.match(r"^\s*Current hardware settings:", line):
            section = "current"
        elif ":" in line and not re.match(r"^\s*(?:Ring|Channel) parameters for ", line):
            key, _, value = line.partition(":")
            name = snake(key)
            if section or name in _CURRENT_ONLY:
                out[section or "current"][name] = _value(value)
    return out


def parse_channels(text: str) -> dict[str, Any]:
    """``ethtool -l``: RX/TX/Other/Combined channels, maximum and current (None: ``n/a``)."""
    text = undecorate(text)
    return {"netdev": _netdev(text, "Channel parameters"), **_sections(text)}


def parse_rings(text: str) -> dict[str, Any]:
    """``ethtool -g``: ring sizes (rx, tx, rx_mini, rx_jumbo ...), maximum and current."""
    text = undecorate(text)
    return {"netdev": _netdev(text, "Ring parameters"), **_sections(text)}


def parse_coalesce(text: str) -> dict[str, Any]:
    """``ethtool -c``: adaptive RX/TX, CQE mode and every ``rx-usecs``-like setting (None: ``n/a``)."""
    text = undecorate(text)
    out: dict[str, Any] = {"netdev": _netdev(text, "Coalesce parameters"), "settings": {}}
    for line in text.splitlines():
        pair = re.match(r"^\s*(Adaptive|CQE mode)\s+RX:\s*(\S+)\s+TX:\s*(\S+)", line)
        if pair:
            key = snake(pair.group(1))
            for side, value in (("rx", pair.group(2)), ("tx", pair.group(3))):
                out[f"{key}_{side}"] = {"on": True, "off": False}.get(value)
            continue
        m = re.match(r"^\s*([a-z][\w-]*):\s*(\S+)\s*$", line)
        if m:
            out["settings"][m.group(1)] = _value(m.group(2))
    return out


#: a row of the indirection table left out of a paste: ``...``, ``…``, ``[...]``, ``[...snip...]``
_ELIDED = re.compile(r"\[?\s*(?:\.{3}|…)\s*(?:snip(?:ped)?\s*(?:\.{3}|…)?\s*)?\]?")


def parse_rss(text: str) -> dict[str, Any]:
    """``ethtool -x``: the RX flow hash indirection table (entry -> ring), the rings it spreads
    over, the RSS hash key (hex) and the hash function in use. Rows elided as ``...`` leave
    ``elided`` true (``...``, or ``[...snip...]`` in a mail): the table's size and rings are then a
    lower bound. Mail quote marks (``> ``) are read through; a paste that shows the table more than
    once (before and after an ``ethtool -L`` / ``-X``) reads as its last show."""
    text = undecorate(text)
    out: dict[str, Any] = {"netdev": None, "rx_rings": None, "table": [], "elided": False, "key": None,
                           "hash_function": None, "functions": {}}
    part = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("RX flow hash indirection table"):
            part = "table"
            m = re.search(r"indirection table for (\S+) with (\d+) RX ring", stripped)
            if m:
                out["netdev"], out["rx_rings"] = m.group(1), int(m.group(2))
            out.update(table=[], elided=False, key=None, functions={})  # a later show replaces an earlier one
        elif stripped.startswith("RSS hash key:"):
            part = "key"
        elif stripped.startswith("RSS hash function:"):
            part = "function"
        elif stripped.startswith("RSS input transformation:"):
            part = None
        elif part == "table" and re.match(r"^\d+:(\s+\d+)+$", stripped):
            out["table"].extend(int(v) for v in stripped.split(":", 1)[1].split())
        elif part == "table" and _ELIDED.fullmatch(stripped):
            out["elided"] = True
        elif part == "key" and re.fullmatch(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})*", stripped):
            out["key"] = stripped.lower()
        elif part == "function" and (fm := re.match(r"^([\w-]+):\s*(on|off)$", stripped)):
            out["functions"][fm.group(1)] = fm.group(2) == "on"
    on = [name for name, state in out["functions"].items() if state]
    out["hash_function"] = on[0] if len(on) == 1 else None
    out["table_size"] = len(out["table"]) or None
    out["rings_used"] = sorted(set(out["table"]))
    return out


#: ``ethtool -n DEV rx-flow-hash TYPE``: the flow type's heading -> ethtool's name for it
FLOW_TYPES = {"TCP over IPV4": "tcp4", "UDP over IPV4": "udp4", "SCTP over IPV4": "sctp4",
              "IPSEC AH/ESP over IPV4": "ah4", "TCP over IPV6": "tcp6", "UDP over IPV6": "udp6",
              "SCTP over IPV6": "sctp6", "IPSEC AH/ESP over IPV6": "ah6"}
#: each field line ethtool prints (``unparse_rxfhashopts``) -> its letter in ``ethtool -N ... rx-flow-hash``
HASH_FIELDS = {"L2DA": "m", "VLAN tag": "v", "L3 proto": "t", "IP SA": "s", "IP DA": "d",
               "L4 bytes 0 & 1 [TCP/UDP src port]": "f", "L4 bytes 2 & 3 [TCP/UDP dst port]": "n",
               "GTP TEID": "e"}
_LETTER_ORDER = "mvtsdfne"


def parse_rx_flow_hash(text: str) -> dict[str, Any]:
    """``ethtool -n DEV rx-flow-hash tcp4|udp4|tcp6|udp6``: per flow type, the header fields its RSS
    hash uses, their ``ethtool -N`` letters (``sdfn``: IP SA, IP DA, L4 bytes 0-1 and 2-3, the
    ports), and ``l4`` (whether the ports take part). ``None`` (no field) and ``All matching flows
    discarded on RX`` read as no fields; a field line ethtool added later is kept as ``?``."""
    out: dict[str, Any] = {}
    current: dict[str, Any] | None = None
    for line in undecorate(text).splitlines():
        stripped = line.strip()
        m = re.match(r"^(.+? flows)(?: use these fields for computing Hash flow key:| - All matching flows "
                     r"discarded on RX)\s*$", stripped)
        if m:
            name = m.group(1).removesuffix(" flows")
            current = {"flow_type": FLOW_TYPES.get(name, name), "fields": [], "letters": "",
                       "discard": "discarded" in stripped, "l4": False}
            out[current["flow_type"]] = current
            continue
        if current is None or not stripped or stripped.startswith(("#", "$", "ethtool ", "For RSS context")):
            continue
        if stripped == "None":
            continue
        if stripped in HASH_FIELDS or re.match(r"^[A-Z][\w ]+( \[[\w/ ]+\])?$", stripped):
            current["fields"].append(stripped)
        else:
            current = None  # anything else ends the block (a prompt, the next command)
    for entry in out.values():
        letters = [HASH_FIELDS.get(f, "?") for f in entry["fields"]]
        entry["letters"] = "".join(sorted(letters, key=lambda c: _LETTER_ORDER.find(c) if c in _LETTER_ORDER else len(_LETTER_ORDER)))
        entry["l4"] = "f" in letters and "n" in letters
    return out


#: ``ethtool -a`` lines (ethtool.c ``dump_pause`` and netlink/pause.c) -> fields
_PAUSE_KEYS = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx", "rx negotiated": "rx_negotiated",
               "tx negotiated": "tx_negotiated"}
#: a heading of another ethtool show (``Settings for``, ``Ring parameters for`` ...): the pause block ends
_OTHER_SHOW = re.compile(r"^\s*(?!Pause parameters)[A-Z][\w /-]* (?:for|of) \S+?:\s*$")


_PAUSE_COMMAND = ethtool_command("-a|--show-pause")


def _on_off(value: str) -> bool | None:
    return {"on": True, "off": False}.get(value.strip().lower())


def parse_pause(text: str) -> dict[str, Any]:
    """``ethtool -a|--show-pause DEV``: ``autoneg``, ``rx``, ``tx`` (on/off as booleans, ``n/a`` ->
    None), ``rx_negotiated`` / ``tx_negotiated`` (printed when autonegotiation is on), and with
    ``-I|--include-statistics`` (netlink ethtool 5.13+) the ``Statistics:`` block as ``stats``
    (``tx_pause_frames``, ``rx_pause_frames``, as printed). ``ethtool --json -a`` (5.10+:
    ``autonegotiate``, ``rx``, ``tx``, ``negotiated`` {rx, tx}, ``statistics``) reads the same.

    Only the lines of the ``Pause parameters for DEV:`` block are read: another show pasted before
    or after it (``ethtool DEV``, ``-g``, standard stats) is left out; the last of several pause
    shows is the answer. ``Cannot get device pause settings: ...`` (the driver has no pause
    support) gives ``error`` and ``not_supported``; text with neither pause lines nor that message
    is an error naming its first line."""
    if _json_start(text) is not None:
        return _pause_json(text)
    lines = clean_text(text).splitlines()
    out: dict[str, Any] = {"netdev": None}
    inside = not any(re.match(r"^\s*Pause parameters for ", line) for line in lines)
    seen = False
    stats: dict[str, int] | None = None
    for line in lines:
        heading = re.match(r"^\s*Pause parameters for (\S+?):\s*$", line)
        if heading:
            # a later show replaces an earlier one; an error line stderr put before the heading is its
            carried: dict[str, Any] = {k: out[k] for k in ("error", "not_supported")
                                       if k in out and out["netdev"] is None}
            out = {"netdev": heading.group(1), **carried}
            inside, stats = True, None
            continue
        error = re.match(r"^\s*(Cannot get device pause settings:?\s*(.*))$", line)
        if error:
            out["error"] = error.group(1).strip()
            out["not_supported"] = "not supported" in error.group(2).lower()
            seen = True
            continue
        command = re.search(r"\bethtool\s+\S", line)
        if _OTHER_SHOW.match(line) or (command and not _PAUSE_COMMAND.search(line)):
            inside, stats = False, None  # the next show of this paste
            continue
        if command:
            inside, stats = True, None
            continue
        if not inside:
            continue
        if stats is not None:
            sm = re.match(r"^\s+([a-z][\w-]*):\s*(\d+)\s*$", line)
            if sm:
                stats[sm.group(1)] = int(sm.group(2))
                continue
            stats = None
        key, sep, value = line.partition(":")
        name = _PAUSE_KEYS.get(key.strip().lower()) if sep else None
        if name:
            out[name] = _on_off(value)
            seen = True
        elif sep and key.strip() == "Statistics" and not value.strip():
            stats = out["stats"] = {}
    if not seen and text.strip():
        first = next((i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip())
        raise unreadable(first[0], first[1], "no ethtool -a pause line")
    return out


def _pause_json(text: str) -> dict[str, Any]:
    """``ethtool --json [-I] -a DEV``: the last device object."""
    dev = _json_devices(text)[0][-1]
    out: dict[str, Any] = {"netdev": dev.get("ifname")}
    for key, name in (("autonegotiate", "autoneg"), ("rx", "rx"), ("tx", "tx")):
        if isinstance(dev.get(key), bool):
            out[name] = dev[key]
    negotiated = dev.get("negotiated")
    if isinstance(negotiated, dict):
        for side in ("rx", "tx"):
            if isinstance(negotiated.get(side), bool):
                out[f"{side}_negotiated"] = negotiated[side]
    if isinstance(dev.get("statistics"), dict):
        out["stats"] = {k: v for k, v in dev["statistics"].items() if isinstance(v, int) and not isinstance(v, bool)}
    if len(out) == 1:
        _, line, number = _json_devices(text)
        raise unreadable(number, line, "ethtool --json -a output without a pause setting")
    return out


READS = {
    "ethtool": "ethtool DEV (ethtool 4.x-6.x, ioctl or netlink; e1000, virtio, mtk_eth, fbnic, mlxsw 100G/400G switch ports "
               "with Lanes, phylink): speed (Unknown! -> none), lanes, duplex, port, autoneg, link detected, supported / "
               "advertised / link-partner link and FEC modes (wrapped continuation lines, Not reported, a block printed "
               "twice: the last); ethtool [-I] --show-fec DEV: Configured / Supported/Configured FEC encodings (ice E810, "
               "fbnic), Active FEC encoding, -I Statistics (corrected / uncorrectable blocks, the 6.18 fec_symbol_err "
               "histogram, per-lane values); grep excerpts, prompts, several shows (the last); ethtool --json DEV (5.10+) "
               "and --json --show-fec (config / active / statistics with hist bins), mail-quoted or wrapped",
    "ethtool-a": "ethtool -a|--show-pause DEV [-I|--include-statistics] (ioctl and netlink ethtool 3.x-6.x; ice, nfp, "
                 "hibmcge ...): Autonegotiate / RX / TX, RX/TX negotiated, the Statistics block (tx_pause_frames, "
                 "rx_pause_frames); ethtool --json -a (5.10+); the pause block alone out of a paste with other "
                 "shows; Cannot get device pause settings -> error, not_supported",
    "ethtool-i": "ethtool -i DEV (mlx5_core and mlx4_en with firmware (PSID), fsl_dpaa2_eth, any driver's key: value form): "
                 "driver, version, firmware and PSID, bus-info, supports-* flags",
    "ethtool-S": "ethtool -S DEV (mlx5_core, ice, bnxt_en, bnx2x, ena, gve, ionic, virtio_net ...): every counter, "
                 "with or without the NIC statistics: header and indentation; per-queue names ([N]: x, rx_0_x, "
                 "x[N], queue_N_x) kept out of the port-wide highlights (pause / PFC rx_prioN_pause, discards); "
                 "ethtool -S DEV --groups eth-phy|eth-mac|eth-ctrl|rmon / --all-groups (5.13+: Stats for / Standard "
                 "stats for, group-Name lines, fbnic); ethtool --json -S (a device object per group, the rmon "
                 "pktsNtoM buckets; jq-printed) read with the text form's names",
    "ethtool-k": "ethtool -k DEV (Features for / old Offload parameters for): on/off, [fixed], [requested on]; "
                 "grep excerpts, mail quotes, Markdown fences",
    "ethtool-l": "ethtool -l DEV: RX/TX/Other/Combined, pre-set maximums and current (n/a -> none); prompts, quotes",
    "ethtool-g": "ethtool -g DEV (ethtool 5.x-6.x; e1000e, bnxt_en, idpf, virtio): ring sizes, maximum and current, newer fields (RX Buf Len, "
                 "CQE Size, TX/RX Push, TCP data split, HDS thresh), grepped lines without their section",
    "ethtool-c": "ethtool -c DEV: Adaptive RX/TX, CQE mode RX/TX (netlink ethtool 5.13+), every rx-/tx- setting "
                 "(n/a -> none); blank lines between rows, mail quotes",
    "ethtool-x": "ethtool -x DEV (i40e, ixgbe, sfc; ice's hash function block): RX flow hash indirection table (rows elided "
                 "as ... / [...snip...] flagged), rings used, RSS hash key, hash function on/off; several shows (the last)",
    "ethtool-rx-flow-hash": "ethtool -n|--show-ntuple DEV rx-flow-hash tcp4|udp4|tcp6|udp6|...: the hashed header "
                            "fields per flow type and their -N letters (sdfn)",
}

def _heading(title: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*(?:{title}) (?:for )?(\S+?):?(?:\s+with\b.*)?\s*$")


# several ports' outputs in one paste are read port by port (``_ports.per_port``)
PARSERS = {
    "ethtool": per_port(parse_settings, ethtool_command(""), _heading("Settings|FEC parameters")),
    "ethtool-a": per_port(parse_pause, ethtool_command("-a|--show-pause"), _heading("Pause parameters")),
    "ethtool-i": per_port(parse_driver_info, ethtool_command("-i|--driver")),
    "ethtool-S": per_port(parse_stats, STATS_COMMAND),
    "ethtool-k": per_port(parse_features, ethtool_command("-k|--show-features|--show-offload"),
                          _heading("Features|Offload parameters")),
    "ethtool-l": per_port(parse_channels, ethtool_command("-l|--show-channels"), _heading("Channel parameters")),
    "ethtool-x": per_port(parse_rss, ethtool_command("-x|--show-rxfh-indir|--show-rxfh"),
                          _heading("RX flow hash indirection table")),
    "ethtool-g": per_port(parse_rings, ethtool_command("-g|--show-ring"), _heading("Ring parameters")),
    "ethtool-c": per_port(parse_coalesce, ethtool_command("-c|--show-coalesce"), _heading("Coalesce parameters")),
    "ethtool-rx-flow-hash": per_port(parse_rx_flow_hash, ethtool_command("-n|-u|--show-nfc|--show-ntuple")),
}
