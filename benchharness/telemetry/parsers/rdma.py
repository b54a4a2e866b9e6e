"""RDMA tools: ``ibstat``, ``ibv_devinfo -v``, ``rdma link`` / ``rdma stat -j``, ``ibdev2netdev -v``."""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import (
    is_noise,
    strip_ansi,
    to_float,
    to_int,
    undecorate,
    unreadable,
)

#: A node's header: ``CA 'mlx5_0'`` (``Switch``, ``Router``, ``iWARP RNIC`` for other node types,
#: infiniband-diags ibstat.c ``ca_dump``), or ``CA: 'mlx4_0'`` before the one port of ``ibstat CA PORT``,
#: whose lines are not indented.
_IBSTAT_NODE = re.compile(r"^(?P<type>CA|Switch|Router|iWARP RNIC)(?P<alone>:)? '(?P<name>[^']+)'")  # a paste may annotate it
_IBSTAT_CA_KEYS = {"Number of ports": "num_ports", "Firmware version": "fw_ver", "Hardware version": "hw_ver",
                   "Node GUID": "node_guid", "System image GUID": "sys_image_guid"}
_IBSTAT_PORT_KEYS = {"State": "state", "Physical state": "phys_state", "Rate": "rate_gbps",
                     "Effective speed": "effective_speed_gbps", "Base lid": "lid", "LMC": "lmc",
                     "SM lid": "sm_lid", "Port GUID": "port_guid", "Link layer": "link_layer",
                     "Capability mask": "capability_mask"}


#: An ``ibstat`` command line (after a prompt, ``sudo``, or alone): its options say what follows.
_IBSTAT_CMD = re.compile(r"(?:^|[\s$#>\]])(?:sudo\s+)?ibstat(?P<args>(?:\s+[^\s|;&<>]+)*)\s*(?:[|;&<>].*)?$")
_BARE_NAME = re.compile(r"^[A-Za-z][\w.-]*$")  # ibstat -l: one CA name a line (mlx5_0, mlx5_bond_0, rocep1s0f0)
_BARE_GUID = re.compile(r"^0x[0-9a-fA-F]{16}$")  # ibstat -p: one port GUID a line, "0x%016" PRIx64
_IBDIAG_NOTE = re.compile(r"^\s*(?:ibwarn|ibpanic|ibstat|ibdebug):")  # infiniband-diags' own messages


def _ibstat_command(line: str) -> dict[str, Any] | None:
    """The options of an ``ibstat ...`` command line: ``list`` (-l), ``ports`` (-p), ``ca`` (CA_NAME)."""
    m = _IBSTAT_CMD.search(line)
    if not m:
        return None
    words = m.group("args").split()
    flags = "".join(w[1:] for w in words if re.fullmatch(r"-[A-Za-z]+", w))
    named = [w for w in words if not w.startswith("-")]
    return {"list": "l" in flags or "--list_of_cas" in words, "ports": "p" in flags or "--port_list" in words,
            "ca": named[0] if named else None}


def parse_ibstat(text: str) -> list[dict[str, Any]]:
    """``ibstat``: CAs with type, firmware, GUIDs and ports (state, physical state, rate Gb/s, lid).

    Also read: ``ibstat -s`` (CAs without ports), ``ibstat CA PORT`` (``CA: 'name'`` then the port's
    lines without indent), ``Rate: 40 (FDR10)``, rdma-core 60's ``Effective speed:`` line,
    ``Switch``/``Router`` node headers, ``ibstat -l`` (one CA name a line: ``{"device", "ports": []}``
    each) and ``ibstat -p [CA]`` (one port GUID a line: ``{"device": CA or None, "port_guid"}`` each).
    The listings are read after their command line, or as the whole text when it holds nothing else."""
    cas: list[dict[str, Any]] = []
    ca: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    command: dict[str, Any] | None = None  # the last ibstat command line's options
    listed: list[dict[str, Any]] = []  # names / GUIDs after an "ibstat -l" / "-p" line
    bare: list[tuple[str, str]] = []  # ("name" | "guid", value) outside any CA, no command line seen
    other = False  # a line that is neither a CA's, a listing's, a prompt nor a diags message
    for raw in strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _unbold(raw).strip()
        m = _IBSTAT_NODE.match(line)
        if not m:
            cmd = _ibstat_command(line) if "ibstat" in line else None
            if cmd is not None:
                command, ca, port = cmd, None, None
                continue
        if not line or is_noise(raw) or _IBDIAG_NOTE.match(line) or line.startswith(("```", "~~~")):
            continue
        if m:
            ca = {"device": m.group("name"), "ports": []}
            if m.group("type") != "CA":
                ca["node_type"] = m.group("type")
            cas.append(ca)
            port, command = None, None
            continue
        if ca is None:
            if command is not None and (command["list"] or command["ports"]):
                if command["ports"] and _BARE_GUID.match(line):
                    listed.append({"device": command["ca"], "port_guid": line})
                    continue
                if command["list"] and _BARE_NAME.match(line):
                    listed.append({"device": line, "ports": []})
                    continue
                command = None  # the listing ended: what follows is another command's
            if command is None and not listed:
                if _BARE_GUID.match(line):
                    bare.append(("guid", line))
                elif _BARE_NAME.match(line) and line != "ibstat":
                    bare.append(("name", line))
                else:
                    other = True
            continue
        if ":" not in line:
            continue
        m = re.match(r"^Port (\d+):$", line)
        if m:
            port = {"port": int(m.group(1))}
            ca["ports"].append(port)
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if port is None:
            if key in _IBSTAT_CA_KEYS or key.endswith(" type"):
                name = _IBSTAT_CA_KEYS.get(key, "ca_type")
                ca[name] = to_int(value) if name == "num_ports" else _hex_token(value)
        elif key in _IBSTAT_PORT_KEYS:
            name = _IBSTAT_PORT_KEYS[key]
            if name in ("rate_gbps", "effective_speed_gbps"):
                port[name] = to_float(value)
                if name == "rate_gbps" and "FDR10" in value:
                    port["fdr10"] = True
            elif name in ("lid", "lmc", "sm_lid"):
                port[name] = to_int(value)
            else:
                port[name] = _hex_token(value)
    if listed:
        return listed + cas
    if not cas and bare and not other and len({kind for kind, _ in bare}) == 1:
        return [{"device": None, "port_guid": value} if kind == "guid" else {"device": value, "ports": []}
                for kind, value in bare]
    return cas


def _hex_token(value: str) -> str:
    """A GUID or mask (``0x248a0703005d07f1``) without what a paste appended to it (an arrow and a
    note); any other value as printed."""
    m = re.match(r"^(0x[0-9a-fA-F]+)(?![0-9a-fA-F])", value)
    return m.group(1) if m else value


def _paren_code(value: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*?)\s*\((\d+)\)\s*$", value)
    return (m.group(1), int(m.group(2))) if m else (value, None)


#: A port's lines (libibverbs/examples/devinfo.c ``print_hca_cap``, the ``port:`` block).
_PORT_KEYS = frozenset({"state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer",
                        "max_msg_sz", "port_cap_flags", "port_cap_flags2", "max_vl_num", "bad_pkey_cntr",
                        "qkey_viol_cntr", "sm_sl", "pkey_tbl_len", "gid_tbl_len", "subnet_timeout",
                        "init_type_reply", "active_width", "active_speed", "effective_speed", "phys_state"})
#: A device's first lines (the same function, before ``-v``'s capability lines).
_DEVICE_KEYS = frozenset({"transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id",
                          "hw_ver", "board_id", "phys_port_cnt"})


#: A GID as ibv_devinfo prints it: 8 groups of 4 hex digits, or (rdma-core 28+, RoCE v2) the
#: compressed IPv6 form (``fe80::...``, ``::ffff:10.0.0.1``); ``, RoCE v2`` / ``, IB/RoCE v1`` after it.
_GID_VALUE = re.compile(r"^(?P<gid>[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?::\d{1,3}(?:\.\d{1,3}){3})?)"
                        r"(?:,\s*(?P<type>\S.*?))?\s*$")
_HCAS_FOUND = re.compile(r"^\s*(\d+) HCAs? found:\s*$")  # ibv_devinfo -l
_GID_LINE = re.compile(r"^\s*GID\[\s*(\d+)\]:\s*(.*?)\s*$")
_FULL_GID = re.compile(r"^\s*(?:[0-9a-fA-F]{4}:){7}[0-9a-fA-F]{4}\b")
_KEY = re.compile(r"^[A-Za-z_][\w .()/-]*$")


def _unbold(line: str) -> str:
    """A line without the Markdown emphasis a paste put around it (``**GID[ 14]: ...``)."""
    body = line.lstrip()
    if not body.startswith("**") and not body.rstrip().endswith("**"):
        return line
    indent = line[:len(line) - len(body)]
    return indent + re.sub(r"^\*\*|\*\*\s*$", "", body.rstrip())


def parse_ibv_devinfo(text: str) -> list[dict[str, Any]]:
    """``ibv_devinfo [-v]``: devices, their attributes, ports (state, MTUs, width x speed) and GIDs.

    Also read: excerpts without ``hca_id`` or ``port:`` lines (grep, ``...`` elisions), MLNX_OFED's
    ``Device ports:`` line, ``Failed to open device`` lines around devices, Markdown bold around a
    line, and a GID whose value a mail or terminal wrapped onto the next line. A GID value with no
    ``GID[n]:`` line before it is an error naming that line."""
    devices: list[dict[str, Any]] = []
    dev: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    pending_gid: tuple[int, int, str] | None = None  # (index, line number, line) of a GID[n]: with no value
    lines = undecorate(text).split("\n")  # prompts blanked, not dropped: errors name the file's line

    def add_gid(index: int, value: str, no: int, line: str) -> None:
        nonlocal port
        m = _GID_VALUE.match(value)
        if not m:
            raise unreadable(no, line, f"GID[{index}] is not a GID")
        if port is None:  # GIDs after an elision that dropped the "port:" line
            port = {"port": None, "gids": []}
            assert dev is not None
            dev["ports"].append(port)
        port["gids"].append({"index": index, "gid": m.group("gid"), "type": m.group("type")})

    listing: int | None = None  # names still due after "ibv_devinfo -l"'s "N HCAs found:"
    listed_at = (0, "")
    for no, raw in enumerate(lines, 1):
        line = _unbold(raw)
        m = _HCAS_FOUND.match(line)
        if m:
            listing, listed_at = int(m.group(1)), (no, line)
            continue
        if listing:
            if re.fullmatch(r"\s+\S+\s*", line):
                devices.append({"device": line.strip(), "ports": []})
                listing -= 1
                continue
            if line.strip():
                raise unreadable(listed_at[0], listed_at[1], f"{listing} of the devices it counts are missing")
            continue
        m = re.match(r"^hca_id:\s*(\S+)", line.strip())
        if m:
            dev = {"device": m.group(1), "ports": []}
            devices.append(dev)
            port, pending_gid = None, None
            continue
        if pending_gid is not None and line.strip():
            index, at, held = pending_gid
            pending_gid = None
            if _GID_VALUE.match(line.strip()):
                add_gid(index, line.strip(), no, line)
                continue
            raise unreadable(at, held, f"GID[{index}] has no value")
        if dev is None:
            # An excerpt without its hca_id: from a "port: N" line, a device's lines, or port lines
            # (a grep's, or a quote that starts inside a port block), the port's number unknown.
            first = re.match(r"^\s*(\w+):\s*\S", line)
            if re.match(r"^\s*port:\s*\d+\s*$", line) or (first and first.group(1) in _DEVICE_KEYS):
                dev = {"device": None, "ports": []}
                devices.append(dev)
            elif first and first.group(1) in _PORT_KEYS:
                port = {"port": None, "gids": []}
                dev = {"device": None, "ports": [port]}
                devices.append(dev)
            else:
                continue
        m = re.match(r"^\s*port:\s*(\d+)\s*$", line)  # unindented where a paste lost the tabs
        if m:
            port = {"port": int(m.group(1)), "gids": []}
            dev["ports"].append(port)
            continue
        m = _GID_LINE.match(line)
        if m:
            if m.group(2):
                add_gid(int(m.group(1)), m.group(2), no, line)
            else:
                pending_gid = (int(m.group(1)), no, line)
            continue
        if (_GID_VALUE.match(line.strip()) and "::" in line) or _FULL_GID.match(line):
            raise unreadable(no, line, "a GID value without its GID[n]: line")
        key, sep, value = line.strip().partition(":")
        if not sep or not value.strip() or not _KEY.match(key.strip()) or key.strip() == "Unknown flags":
            continue
        key, value = key.strip(), value.strip()
        if port is None and key in _PORT_KEYS:  # a grep excerpt kept the port's lines, not "port: N"
            port = {"port": None, "gids": []}
            dev["ports"].append(port)
        target = port if port is not None else dev
        if key in ("state", "phys_state"):
            name, code = _paren_code(value)
            target[key] = name
            target[f"{key}_code"] = code
        elif key in ("max_mtu", "active_mtu"):
            target[key] = to_int(_paren_code(value)[0])
        elif key == "max_vl_num":  # "8 (4)"; RoCE ports: "invalid value (0)", kept as printed
            name = _paren_code(value)[0]
            target[key] = int(name) if name.isdigit() else value
        elif key == "active_width":
            target["active_width"] = to_int(_paren_code(value)[0].rstrip("X"))
        elif key in ("active_speed", "effective_speed"):  # "100.0 Gbps (64)"; rdma-core 60: "400.0 Gbps"
            target[f"{key}_gbps"] = to_float(value)
        elif key in ("transport",):
            target[key] = _paren_code(value)[0]
        else:
            target[key] = to_int(value) if re.fullmatch(r"\d+", value) else value
    if listing:
        raise unreadable(listed_at[0], listed_at[1], f"{listing} of the devices it counts are missing")
    if pending_gid is not None:
        index, at, held = pending_gid
        raise unreadable(at, held, f"GID[{index}] has no value")
    for dev in devices:
        for port in dev["ports"]:
            if port.get("active_width") and port.get("active_speed_gbps"):
                port["rate_gbps"] = port["active_width"] * port["active_speed_gbps"]
        _flag_cut(dev, last=dev is devices[-1])
    return devices


#: The lines every libibverbs ``ibv_devinfo`` prints first in a port block, in this order.
_PORT_HEAD = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc")


def _flag_cut(dev: dict[str, Any], last: bool) -> None:
    """``cut: true`` on a port whose ``port: N`` line has none of the port's lines after it (a
    ``| head`` or a quote that stops there; devinfo.c prints ``state:`` ... after every ``port:``
    line), on the text's last port when its lines stop inside the six every libibverbs prints
    (state .. port_lmc, in that order: a grep's pick is no such run), and on their device; on the
    text's last device when it stops inside the device's header lines (its ``hca_id:`` and some of
    transport .. hw_ver, no ``phys_port_cnt:``, no port). Old libibverbs printed no ``link_layer:``:
    a port that ends at ``port_lmc:`` is whole."""
    for i, port in enumerate(dev["ports"]):
        seen = [k for k in port if k in _PORT_KEYS]
        if (port["port"] is not None and not port["gids"] and not seen) or \
                (last and i == len(dev["ports"]) - 1 and seen and len(seen) < len(_PORT_HEAD)
                 and seen == list(_PORT_HEAD[:len(seen)])):
            port["cut"] = True
            dev["cut"] = True
    if last and dev["device"] is not None and not dev["ports"] and "phys_port_cnt" not in dev \
            and any(k in dev for k in _DEVICE_KEYS):
        dev["cut"] = True


def _rdma_entry(fields: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"device": fields.pop("ifname", None), "port": to_int(fields.pop("port", None))}
    fields.pop("ifindex", None)
    counters = {k: v for k, v in fields.items()
                if isinstance(v, int) and not isinstance(v, bool) and k not in _COUNTER_ATTRS}
    for key in counters:
        fields.pop(key)
    entry.update(fields)
    if counters:
        entry["counters"] = counters
    return entry


_LINK_ATTRS = ("lid", "sm_lid", "lmc", "port")
#: Numbers of ``rdma statistic qp show`` that say which counter and process, not what was counted.
_COUNTER_ATTRS = frozenset({"cntn", "pid"})
#: ``rdma statistic qp show``'s line after the counters: the QPs bound to the counter (stat.c).
_LQPN = re.compile(r"^LQPN:\s*<(?P<qpns>[\d,\s]*)>$")
#: ``rdma statistic [qp] mode [supported]`` records: what a port counts, no figures (stat.c).
_MODE_WORDS = ("mode", "supported", "optional-counters")


def _rdma_json(text: str) -> list[dict[str, Any]] | None:
    if not text.startswith(("[", "{")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return [_rdma_entry(dict(item)) for item in (data if isinstance(data, list) else [data])]


_RECORD = re.compile(r"^(?:(?:link|dev)\s+|\d+/\d+:\s+)(?P<dev>[^\s/]+)/(?P<port>\d+):?(?=\s|$)")
_INT = re.compile(r"^-?\d+$")


def _pairs(pieces: list[tuple[str, bool, int]]) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """Fields from ``name value`` tokens that may run over several lines.

    A piece is (token, glued, line): ``glued`` when it starts a line that follows one ending in a
    non-blank, as a terminal wraps a long line mid-word. A name never is a number, so a number where
    a name is due continues the value before it, and a non-number where a number is due continues
    the name (``rx_atomic_req`` + ``uests``); a line broken between words reads the same either way.
    """
    fields: dict[str, Any] = {}
    problems: list[tuple[str, int]] = []
    name: str | None = None
    where = 0
    last: str | None = None
    for token, glued, line in pieces:
        if token.endswith(":") and name is None:  # ``Optional-set:`` label
            continue
        if name is None:
            if glued and _INT.match(token) and last is not None and isinstance(fields.get(last), int):
                fields[last] = int(f"{fields[last]}{token}")
                continue
            name, where = token, line
            continue
        if glued and not _INT.match(token) and not re.match(r"^\d", token):
            name += token
            continue
        fields[name] = int(token) if _INT.match(token) and name not in _LINK_ATTRS else token
        last, name = name, None
    if name is not None:
        problems.append((name, where))
    return fields, problems


def _mode_fields(words: list[str]) -> dict[str, Any]:
    """``mode qp auto type on`` -> ``{"mode": "qp auto type on"}``; ``[supported] optional-counters a,b``
    -> ``{"[supported_]optional_counters": ["a", "b"]}``."""
    if words[0] == "mode":
        return {"mode": " ".join(words[1:])}
    if words[0] == "qp":  # iproute2 5.3: "2/1: mlx5_2/1: qp auto type on"
        return {"mode": " ".join(words)}
    key = "supported_optional_counters" if words[0] == "supported" else "optional_counters"
    names = words[2:] if words[0] == "supported" else words[1:]
    return {key: [n for n in ",".join(names).split(",") if n]}


def _text_records(text: str, spans: list[tuple[int, int]] | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """``(line number, header line, fields)`` per ``link DEV/PORT ...`` record of ``rdma`` text;
    ``spans`` gets each record's first and last line number."""
    records: list[tuple[int, str, dict[str, Any]]] = []
    last = 0
    pieces: list[tuple[str, bool, int]] = []
    header: tuple[int, str, str, str] | None = None
    lqpn: list[int] | None = None
    lines = text.split("\n")
    prev_open = False  # the previous line ended in a non-blank (a wrap may glue to it)

    def close() -> None:
        if header is None:
            return
        line_no, line, dev, port = header
        words = [t for t, _glued, _no in pieces]
        if words and (words[0] in _MODE_WORDS or words[:2] == ["qp", "auto"]):
            records.append((line_no, line, {"ifname": dev, "port": port, **_mode_fields(words)}))
            if spans is not None:
                spans.append((line_no, last))
            return
        fields, dangling = _pairs(pieces)
        if lqpn is not None:
            fields["lqpn"] = lqpn
        if dangling:
            name, at = dangling[0]
            raise unreadable(at, lines[at - 1], f"counter {name!r} of {dev}/{port} has no value")
        records.append((line_no, line, {"ifname": dev, "port": port, **fields}))
        if spans is not None:
            spans.append((line_no, last))

    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        m = _RECORD.match(line.strip()) if line.strip() else None
        if m:
            close()
            header, lqpn = (no, line, m.group("dev"), m.group("port")), None
            rest = line.strip()[m.end():]
            pieces = [(t, False, no) for t in rest.split()]
            prev_open = bool(rest.strip())
            last = no
            continue
        if header is None:
            continue
        if not line.strip():
            close()
            header, pieces = None, []
            continue
        lq = _LQPN.match(line.strip())
        if lq:
            lqpn = [int(q) for q in re.split(r"[,\s]+", lq.group("qpns")) if q]
            prev_open, last = False, no
            continue
        tokens = line.split()
        glued = prev_open and not line[:1].isspace()
        pieces += [(t, glued and i == 0, no) for i, t in enumerate(tokens)]
        prev_open = True
        last = no
    close()
    return records


#: ``rdma dev [show]`` and ``rdma resource [show]`` (iproute2 rdma/dev.c, rdma/res.c): one record per
#: device, ``IDX: DEV: name value ...``; ``dev show -d`` adds an indented ``caps: <A, B, ...>`` line.
#: (``rdma resource show qp|cq|mr ...`` lists objects, not devices: not read here.)
_DEV_RECORD = re.compile(r"^(?P<index>\d+):\s+(?P<dev>[^\s/:]+):(?=\s+(?:node_type|fw|node_guid|sys_image_guid"
                         r"|pd|cq|qp|cm_id|mr|ctx|srq)\s)")  # not ip's "1: lo: <LOOPBACK,UP> mtu ..."
_CAPS = re.compile(r"\bcaps:\s*<([^>]*)>")


def _dev_records(text: str) -> list[dict[str, Any]]:
    """``rdma dev`` / ``rdma resource`` records: ``{"device", "index", <text fields>, "resources":
    {name: count}, "caps": [...]}``, one per device (a paste of both commands merges by device)."""
    lines = text.split("\n")
    found: dict[str, dict[str, Any]] = {}
    n = 0
    while n < len(lines):
        m = _DEV_RECORD.match(lines[n].strip())
        if not m:
            n += 1
            continue
        no, body = n + 1, lines[n].strip()[m.end():]
        n += 1
        # ``dev show -d`` puts caps on indented lines; a terminal or a mail wraps a long record
        # onto the next line: both run to the next record or blank line.
        while n < len(lines) and lines[n].strip() \
                and not _DEV_RECORD.match(lines[n].strip()) and not _RECORD.match(lines[n].strip()):
            body += " " + lines[n].strip()
            n += 1
        entry = found.setdefault(m.group("dev"), {"device": m.group("dev"), "index": int(m.group("index"))})
        caps = _CAPS.search(body)
        if caps:
            entry["caps"] = [c.strip() for c in caps.group(1).split(",") if c.strip()]
            body = body[:caps.start()] + body[caps.end():]
        fields, dangling = _pairs([(t, False, no) for t in body.split()])
        if dangling:
            raise unreadable(no, lines[no - 1], f"{dangling[0][0]!r} of {m.group('dev')} has no value")
        for key, value in fields.items():
            if isinstance(value, int):  # resource summary: pd 2 cq 3 qp 1 ...
                entry.setdefault("resources", {})[key] = value
            else:
                entry[key] = value
    return list(found.values())


def parse_rdma(text: str) -> dict[str, Any]:
    """``rdma link [-j]``, ``rdma stat[istic] [show] [-j|-p]`` (iproute2 4.x ``IDX/PORT: DEV/PORT:``
    lines, MLNX_OFED's ``/opt/mellanox/iproute2``, ``Optional-set:`` counters, lines a terminal or a
    mail wrapped, ``> `` quotes): ``ports`` with state/netdev and/or counters; ``rdma dev [show] [-d]``
    and ``rdma resource [show]`` (``IDX: DEV: ...``): ``devices`` with node type, firmware, GUIDs,
    caps and resource counts (``pd``, ``cq``, ``qp`` ...)."""
    text = undecorate(text).strip()
    from_json = _rdma_json(text)
    entries = from_json if from_json is not None else [_rdma_entry(f) for _no, _line, f in _text_records(text)]
    ports: list[dict[str, Any]] = []
    qp_counters: list[dict[str, Any]] = []
    for entry in entries:
        for key in ("lid", "sm_lid", "lmc"):
            if key in entry:
                entry[key] = to_int(entry[key])
        (qp_counters if "cntn" in entry else ports).append(entry)
    out: dict[str, Any] = {"ports": ports}
    if qp_counters:
        out["qp_counters"] = qp_counters
    devices = _dev_records(text) if from_json is None else []
    if devices:
        out["devices"] = devices
    return out


def _counter_key(entry: dict[str, Any], name: str) -> str:
    """``ib_hw:<dev>/<port>:<name>`` for a port's counter; a QP counter of ``rdma statistic qp show``
    (a part of the port's traffic, not its total): ``ib_hw_qp:<dev>/<port>/<cntn>:<name>``."""
    if "cntn" in entry:
        return f"ib_hw_qp:{entry['device']}/{entry['port']}/{entry['cntn']}:{name}"
    return f"ib_hw:{entry['device']}/{entry['port']}:{name}"


def counters_of(lines: list[str]) -> tuple[dict[str, int], set[int]]:
    """``(counters, indices of the lines read)`` of ``rdma statistic show`` records among other lines."""
    spans: list[tuple[int, int]] = []
    counters: dict[str, int] = {}
    for _no, _line, fields in _text_records("\n".join(lines), spans):
        entry = _rdma_entry(fields)
        for name, value in (entry.get("counters") or {}).items():
            counters[_counter_key(entry, name)] = value
    return counters, {i - 1 for first, end in spans for i in range(first, end + 1)}


def parse_rdma_statistic(text: str) -> dict[str, int]:
    """``rdma statistic show`` (any form ``parse_rdma`` reads) as snapshot counters named as the
    health verdicts name them: ``ib_hw:<dev>/<port>:<counter>`` (the port's ``hw_counters``);
    ``rdma statistic qp show``'s per-QP counters as ``ib_hw_qp:<dev>/<port>/<cntn>:<counter>``.
    ``rdma statistic [qp] mode`` records between them say what is counted and hold no figure."""
    clean = undecorate(text).strip()
    counters: dict[str, int] = {}
    from_json = _rdma_json(clean)
    if from_json is not None:
        entries = [(0, "", e) for e in from_json]
    else:
        entries = [(no, line, _rdma_entry(f)) for no, line, f in _text_records(clean)]
    for no, line, entry in entries:
        found = entry.get("counters") or {}
        described = any(k in entry for k in ("state", "mode", "optional_counters", "supported_optional_counters"))
        if not found and from_json is None and not described:
            raise unreadable(no, line, f"{entry['device']}/{entry['port']} lists no counters")
        for name, value in found.items():
            counters[_counter_key(entry, name)] = value
    return counters


#: One ``ibdev2netdev`` line (mlnx-tools ``ofed_scripts/ibdev2netdev``): ``DEV port P ==> NETDEV (State)``,
#: with ``-v`` ``PCI DEV (MTdevid - partid) description fw FW port P (IBSTATE) ==> NETDEV (State)``
#: (``partid`` padded to 11 columns, ``NA`` where the VPD is unreadable; the description as long as
#: the VPD's, an empty PCI address where none is found); the old style (no ``dev_id`` files):
#: ``DEV port P <===> NETDEV``.
_IBDEV = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4,5}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+)?(?P<dev>\S+)\s+"
    r"(?:\((?P<part>[^)]*)\)\s+(?P<desc>.*?)\s*\bfw\s+(?P<fw>\S+)\s+)?"
    r"port\s+(?P<port>\d+)(?:\s+\(\s*(?P<ibstate>[A-Za-z_]+)\s*\))?\s+"
    r"(?:==>\s+(?P<netdev>\S+)\s+\(\s*(?P<state>[^)]*?)\s*\)|<===>\s+(?P<old_netdev>\S+))"
)
#: The start of a ``-v`` line (PCI address, device, ``(MT... -``): a paste that wrapped it goes on
#: on the next line(s).
_IBDEV_V_START = re.compile(r"^[0-9a-fA-F]{4,5}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d\s+\S+\s+\(")
#: A line that says it maps a device's port to a netdev: one the pattern cannot read is an error.
_IBDEV_LIKE = re.compile(r"\bport\b.*(?:==>|<===>)\s*\S")


def _ibdev_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of ``ibdev2netdev`` output, a ``-v`` line that a terminal or a mail
    wrapped joined again (up to three pieces, while no ``==>`` has been seen)."""
    lines = undecorate(text).split("\n")
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line, no = lines[i].strip(), i + 1
        i += 1
        if _IBDEV_V_START.match(line) and "==>" not in line:
            pieces = [line]
            while i < len(lines) and len(pieces) < 3 and lines[i].strip() and "==>" not in pieces[-1] \
                    and not _IBDEV_V_START.match(lines[i].strip()):
                pieces.append(lines[i].strip())
                i += 1
            line = " ".join(pieces)
        out.append((no, line))
    return out


def parse_ibdev2netdev(text: str) -> list[dict[str, Any]]:
    """``ibdev2netdev [-v]``: RDMA device/port to netdev, with PCI address, firmware and states.

    ``-v``'s ``(MT4129 - MCX75310AAS-NEAT)`` gives ``part`` as printed (padding removed) and its two
    halves, ``hca_type`` and ``part_number`` (None where the script printed ``NA`` or nothing). A line
    that maps a port to a netdev in a form not read here is an error naming it."""
    out: list[dict[str, Any]] = []
    for no, line in _ibdev_lines(text):
        m = _IBDEV.match(line)
        if not m:
            if _IBDEV_LIKE.search(line) and not line.lstrip().startswith("#"):
                raise unreadable(no, line, "an ibdev2netdev line whose device, port or netdev cannot be read")
            continue
        netdev = m.group("netdev") or m.group("old_netdev")
        entry: dict[str, Any] = {"device": m.group("dev"), "port": int(m.group("port")), "netdev": netdev,
                                 "netdev_state": m.group("state") if m.group("netdev") else None}
        for key in ("pci", "desc", "fw", "ibstate"):
            if m.group(key):
                entry[{"pci": "pci_address", "ibstate": "port_state",
                       "desc": "description", "fw": "fw_ver"}[key]] = m.group(key)
        if m.group("part") is not None:
            part = re.sub(r"\s+", " ", m.group("part")).strip()
            entry["part"] = part
            hca, _sep, number = part.partition(" - ")
            entry["hca_type"] = None if hca.strip() in ("", "NA") else hca.strip()
            entry["part_number"] = None if number.strip() in ("", "NA") else number.strip()
        out.append(entry)
    return out


PARSERS = {"ibstat": parse_ibstat, "ibv_devinfo": parse_ibv_devinfo, "rdma": parse_rdma,
           "rdma-statistic": parse_rdma_statistic, "ibdev2netdev": parse_ibdev2netdev}
READS = {
    "ibstat": "ibstat [-s] [CA [PORT]], ibstat -l (CA names), ibstat -p [CA] (port GUIDs) (infiniband-diags 1.6 / "
              "rdma-core 2x-6x, MLNX_OFED and inbox; mlx4/mlx5 CA, VF, ConnectX-3..7 Ethernet and IB ports SDR..NDR, "
              "FDR10, Effective speed; the unindented CA: 'x' form of ibstat CA PORT; quotes cut inside a CA)",
    "ibv_devinfo": "ibv_devinfo [-v] [-d DEV] [-i PORT] and -l (libibverbs rdma-core 2x-6x and MLNX_OFED 4.x "
                   "experimental verbs, and libibverbs 1.1 without link_layer; mlx4/mlx5 (ConnectX-3..7, VFs, LAG "
                   "bonds)/irdma/bnxt_re/rxe/efa; GID types and compressed RoCE v2 GIDs, effective_speed), also "
                   "grepped port lines, quotes that start inside a device or port block (device/port null) and "
                   "pastes that lost their indent; a listing that stops at a port line (| head) or inside a port's "
                   "or device's first lines is flagged cut: true",
    "rdma": "rdma link [show] [-d] [-j], rdma statistic show [-j|-p], rdma statistic qp show (QP counters: cntn, "
            "pid, comm, LQPN), rdma statistic [qp] mode [supported] (optional counters), rdma dev [show] [-d], "
            "rdma resource [show] (iproute2 4.16+, MLNX_OFED /opt/mellanox/iproute2)",
    "rdma-statistic": "rdma [-p] statistic show [link DEV/PORT] [-j|-p] (iproute2 5.3+ and MLNX_OFED's; mlx5 and "
                      "AWS EFA hw_counters; Optional-set and "
                      "optional-counters; wrapped or quoted pastes; mode records skipped) -> ib_hw:DEV/PORT:counter; "
                      "rdma statistic qp show -> ib_hw_qp:DEV/PORT/CNTN:counter",
    "ibdev2netdev": "ibdev2netdev [-v] (MLNX_OFED / DOCA-OFED / OFED-internal mlnx-tools; ConnectX-4..7, IGX, "
                    "BlueField-3 SuperNIC, VFs): DEV port N ==> netdev (Up|Down), also after column -t and with "
                    "comments; -v with PCI address, (MTxxxx - part number) as hca_type/part_number (NA: none), "
                    "VPD description however padded, firmware and port state, lines a terminal wrapped; the "
                    "old style DEV port N <===> netdev",
}
