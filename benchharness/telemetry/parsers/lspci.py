"""``lspci -vvv [-k]``: per device PCIe link capability and status, payload sizes (DevCap MaxPayload;
DevCtl MaxPayload / MaxReadReq), NUMA node, the kernel driver and modules, SR-IOV VF counts, and
whether the function is a Virtual Function. ``lspci -t[v]`` trees give each device's address, the
bridge above it and a bridge's bus range (which NIC and GPU share a switch).

The one reader of lspci's text: ``bench parse lspci`` and the probe's raw ``lspci -vvv -s BDF``
of each NIC (``device_of``, used by ``telemetry/nic_config.py``) both go through ``parse_lspci``.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.core.pcie import gen_of
from benchharness.telemetry.parsers._common import pcie_speed_gts, undecorate

# A device header: ``BDF class: name``. The domain is printed with at least 4 hex digits (a VMD
# domain has 5: ``10006:0a:00.0``); ``-P``/``-PP`` print the path of bridges before it
# (``16:01.0/17:00.0``, ``16:01.0/00.0``).
_BDF = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_HEADER = re.compile(rf"^({_BDF}(?:/(?:[0-9a-fA-F]{{2}}:)?[0-9a-fA-F]{{2}}\.[0-7])*)\s+(.+?):\s+(.*)$")
# Debian's reportbug / installation-report hardware summary prefixes each line with the command.
_PREFIX = re.compile(r"^lspci(?:\s+-[\w-]+)*:\s?")
#: DevSta error bits (pciutils >= 3.6 names, older ``UncorrErr`` / ``UnsuppReq`` spellings too).
_DEVSTA_ERRORS = ("CorrErr", "NonFatalErr", "UncorrErr", "FatalErr", "UnsupReq", "UnsuppReq")
#: The unindented rest of a wrapped header line: no "Field:" line, no ACS/flag line (``Stepping-``).
_NAME_TAIL = re.compile(r"^(?![A-Za-z][\w ./()#-]*:(?:\s|$))(?!.*\b\w+[+-](?:\s|$))\S.*$")
_FIELD = re.compile(r"^(?:\s+\S|[A-Za-z][\w ./()#-]*:(?:\s|$))")
_SPEED = re.compile(r"Speed\s+([0-9.]+GT/s|unknown)(?:\s*\(([^)]*)\))?", re.IGNORECASE)
_WIDTH = re.compile(r"Width\s+x(\d+)(?:\s*\(([^)]*)\))?")


def _link(line: str) -> dict[str, Any]:
    speed = _SPEED.search(line)
    width = _WIDTH.search(line)
    gts = pcie_speed_gts(speed.group(1)) if speed else None
    out: dict[str, Any] = {
        "speed_gts": gts,
        "gen": gen_of(gts),
        "width": int(width.group(1)) if width else None,
    }
    if speed and speed.group(1).lower() == "unknown":
        # a speed this pciutils has no name for (3.x before 3.7 prints a Gen5 card's 32GT/s so)
        out["speed_unknown"] = True
    notes = [m.group(2) for m in (speed, width) if m and m.group(2)]
    if notes:
        out["notes"] = notes
    return out


def parse_device(address: str | None, desc: tuple[str | None, str | None], body: list[str]) -> dict[str, Any]:
    """One device block of ``lspci -vvv`` (header already split off)."""
    dev: dict[str, Any] = {"address": address, "class": desc[0], "name": desc[1]}
    # lspci -nn: the class code after the class, [vendor:device] after the name
    m = re.fullmatch(r"(.*?)\s*\[([0-9a-fA-F]{4})\]", desc[0] or "")
    if m:
        dev["class"], dev["class_id"] = m.group(1), m.group(2).lower()
    ids = list(re.finditer(r"\s*\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]", desc[1] or ""))
    if ids:
        last = ids[-1]
        dev["name"] = (desc[1] or "")[:last.start()] + (desc[1] or "")[last.end():]
        dev["vendor_id"], dev["device_id"] = last.group(1).lower(), last.group(2).lower()
    if address and "/" in address:  # lspci -P / -PP: the path of bridges, then the device
        dev["path"], tail = address, address.rsplit("/", 1)[1]
        dev["address"] = tail if ":" in tail else address
    text = "\n".join(body)
    m = re.search(r"NUMA node:\s*(-?\d+)", text)
    dev["numa_node"] = int(m.group(1)) if m else None
    m = re.search(r"DevCap:\s*MaxPayload (\d+) bytes", text)
    dev["max_payload_cap_bytes"] = int(m.group(1)) if m else None
    m = re.search(r"MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes", text)
    dev["max_payload_bytes"] = int(m.group(1)) if m else None
    dev["max_read_req_bytes"] = int(m.group(2)) if m else None
    cap = re.search(r"\bLnkCap:\s*(.*)", text)
    sta = re.search(r"\bLnkSta:\s*(.*)", text)
    dev["link_cap"] = _link(cap.group(1)) if cap else None
    dev["link_sta"] = _link(sta.group(1)) if sta else None
    dev["downgraded"] = _downgraded(dev["link_cap"], dev["link_sta"])
    m = re.search(r"\bLnkCtl2:\s*Target Link Speed:\s*([0-9.]+GT/s)", text)
    if m:  # the speed the port is told to train to: below LnkCap's when set lower by hand or firmware
        dev["link_target_gts"] = pcie_speed_gts(m.group(1))
    vpd = {key: m.group(1).strip() for key, pattern in (("product_name", r"^\s*Product Name:\s*(\S.*)$"),
                                                           ("part_number", r"\[PN\] Part number:\s*(\S.*)$"))
           if (m := re.search(pattern, text, re.MULTILINE))}
    if vpd:  # the Vital Product Data capability (-vv as root): the board's own product name and part
        dev["vpd"] = vpd
    m = re.search(r"\bDevSta:\s*(.*)", text)
    if m:  # error bits the device has latched since they were last cleared
        flags = dict(re.findall(r"\b(\w+)([+-])(?=\s|$)", m.group(1)))
        dev["dev_sta_errors"] = [name for name in _DEVSTA_ERRORS if flags.get(name) == "+"]
    # the AER capability's status registers (-vv and up): the error bits latched since cleared,
    # masked or not (a masked bit is still set in UESta/CESta, it only raises no message)
    for key, field in (("aer_uncorrectable", "UESta"), ("aer_correctable", "CESta")):
        m = re.search(rf"\b{field}:\s*(.*)", text)
        if m:
            dev[key] = [name for name, sign in re.findall(r"\b(\w+)([+-])(?=\s|$)", m.group(1)) if sign == "+"]
    # present only when printed (lspci -k, the SR-IOV capability): absent is not "none"
    m = re.search(r"Kernel driver in use:\s*(\S+)", text)
    if m:
        dev["kernel_driver"] = m.group(1)
    m = re.search(r"Kernel modules:\s*(.+)", text)
    if m:
        dev["kernel_modules"] = [x.strip() for x in m.group(1).split(",") if x.strip()]
    m = re.search(r"Initial VFs:\s*(\d+),\s*Total VFs:\s*(\d+),\s*Number of VFs:\s*(\d+)", text)
    if m:
        dev["sriov"] = {"initial_vfs": int(m.group(1)), "total_vfs": int(m.group(2)), "num_vfs": int(m.group(3))}
    if re.search(r"\bVirtual Function\b", desc[1] or ""):
        dev["virtual_function"] = True
    return dev


def _downgraded(cap: dict[str, Any] | None, sta: dict[str, Any] | None) -> bool | None:
    """lspci's own ``(downgraded)``/``(ok)`` notes when it printed them, else LnkSta below LnkCap."""
    if not sta:
        return None
    notes = sta.get("notes", [])
    if any("downgraded" in n for n in notes):
        return True
    below = [
        sta[k] < cap[k] for k in ("speed_gts", "width")
        if cap and sta.get(k) is not None and cap.get(k) is not None
    ]
    if any(below):
        return True
    if below and any(x and x.get("speed_unknown") for x in (cap, sta)):
        return None  # the widths agree, but a speed lspci printed as "unknown" cannot be compared
    if below:
        return False
    # pciutils >= 3.11 marks a link at full capability "(ok)" on both figures.
    return False if len(notes) == 2 and all(n == "ok" for n in notes) else None


def _headerless(lines: list[str]) -> list[dict[str, Any]]:
    """``lspci -vvv | grep 'LnkCap\\|LnkSta'`` output: one device per LnkCap/LnkSta pair, no address."""
    groups: list[list[str]] = []
    seen: set[str] = set()
    pending: list[str] = []  # DevCap/DevCtl lines come before their device's LnkCap
    for line in lines:
        kind = "cap" if re.search(r"\bLnkCap:", line) else "sta" if re.search(r"\bLnkSta:", line) else None
        if kind and (not groups or kind in seen or (kind == "cap" and "sta" in seen)):
            groups.append(pending)
            pending, seen = [], set()
        if kind:
            seen.add(kind)
        if groups:
            groups[-1].append(line)
        if not groups or "sta" in seen:
            pending.append(line)
    return [parse_device(None, (None, None), body) for body in groups]


# ``lspci -t[v]`` (pciutils ls-tree.c): a host bus ``[DDDD:BB]`` (``[BB]`` before domains were
# printed), each device ``DD.F`` after ``+-``, ``\\-`` or ``--``, a bridge's buses after it
# (``-[SS]-`` or ``-[SS-EE]-``), its first device on the same line and the others below it in the
# same column; with -v the name of a device that is no bridge after two blanks.
_TREE_BUS = re.compile(r"\[(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2})(?:-([0-9a-fA-F]{2}))?\]")
_TREE_DEV = re.compile(r"(?<=[-+\\])([0-9a-fA-F]{2})\.([0-7])")
_TREE_MARK = re.compile(r"(?:^|[-+\\|\s])[-+\\]-(?:\[[0-9a-fA-F:]+(?:-[0-9a-fA-F]{2})?\]|[0-9a-fA-F]{2}\.[0-7])")


def _is_tree(line: str) -> bool:
    return bool(re.match(r"^\s*[-+\\|]", line) and _TREE_MARK.search(line))


def _tree(lines: list[str]) -> list[dict[str, Any]]:
    """``lspci -t`` / ``-tv`` / ``-tvnn``: every device with its address, the bridge above it
    (``upstream``), a bridge's ``secondary_bus``/``subordinate_bus``, and its name (-v).

    A device below the first line of a listing cut at its top has no known bus: it is kept with
    ``address`` None and ``device_function``."""
    devices: list[dict[str, Any]] = []
    bus_at: dict[int, tuple[str | None, str, str | None]] = {}  # column -> (domain, bus, bridge above)
    for line in lines:
        if not _is_tree(line):
            continue
        m = re.search(r"(?<=\.[0-7])  +(?=\S)", line)
        drawing, name = (line[:m.start()], line[m.end():].strip()) if m else (line.rstrip(), None)
        domain: str | None = None
        pending: tuple[str | None, str, str | None] | None = None  # a bus whose first device follows
        last: dict[str, Any] | None = None
        tokens = sorted([(t.start(), "bus", t) for t in _TREE_BUS.finditer(drawing)]
                        + [(t.start(), "dev", t) for t in _TREE_DEV.finditer(drawing)], key=lambda x: x[0])
        for col, kind, tok in tokens:
            if kind == "bus":
                if last is None:  # a host bus: [DDDD:BB]
                    domain = tok.group(1).lower() if tok.group(1) else None
                    pending = (domain, tok.group(2).lower(), None)
                else:  # the buses behind the bridge just read
                    last["secondary_bus"] = tok.group(2).lower()
                    last["subordinate_bus"] = (tok.group(3) or tok.group(2)).lower()
                    pending = (last["domain"], tok.group(2).lower(), last["address"])
                continue
            if pending is not None:
                bus_at[col] = pending
                pending = None
            where = bus_at.get(col)
            devfn = f"{tok.group(1).lower()}.{tok.group(2)}"
            dev: dict[str, Any] = {"address": None, "device_function": devfn, "domain": None, "upstream": None}
            if where is not None:
                dev["domain"] = where[0]
                dev["address"] = (f"{where[0]}:" if where[0] else "") + f"{where[1]}:{devfn}"
                dev["upstream"] = where[2]
            devices.append(dev)
            last = dev
        if last is not None and name is not None:
            desc = parse_device(None, (None, name), [])
            last["name"] = desc["name"]
            for key in ("vendor_id", "device_id", "virtual_function"):
                if key in desc:
                    last[key] = desc[key]
    for dev in devices:
        dev["bridge"] = "secondary_bus" in dev
        if dev["address"] is None:
            dev["cut"] = True  # the listing starts below this device's bus
    return devices


def parse_lspci(text: str) -> list[dict[str, Any]]:
    """Every device in ``lspci -vvv`` output, with ``link_cap``/``link_sta`` and ``downgraded``.

    Output grepped down to its LnkCap/LnkSta lines (no device headers) gives one device per pair
    with ``address`` None.
    """
    devices: list[dict[str, Any]] = []
    current: tuple[str, tuple[str, str]] | None = None
    body: list[str] = []
    lines = [_PREFIX.sub("", line) for line in undecorate(text).split("\n")]
    if not any(_HEADER.match(ln) and not ln[:1].isspace() for ln in lines):
        if any(_is_tree(ln) for ln in lines):
            return _tree(lines)
        return _headerless(lines)
    for line in lines:
        m = _HEADER.match(line)
        if m and not line[:1].isspace():
            if current:
                devices.append(parse_device(current[0], current[1], body))
            current, body = (m.group(1), (m.group(2), m.group(3))), []
        elif current:
            if len(body) == 1 and _NAME_TAIL.match(body[0]) and _FIELD.match(line):
                # a device name a mail or terminal wrapped: its tail on the line after the header,
                # unindented and no "Field:" line, with the device's fields going on after it
                current = (current[0], (current[1][0], f"{current[1][1].rstrip()} {body.pop().strip()}"))
            body.append(line)
    if current:
        devices.append(parse_device(current[0], current[1], body))
    return devices


def device_of(text: str) -> dict[str, Any] | None:
    """The one device of ``lspci -vvv -s BDF`` output (None when lspci printed none)."""
    devices = parse_lspci(text)
    return devices[0] if devices else None


PARSERS = {"lspci": parse_lspci}
READS = {"lspci": "lspci [-v|-vv|-vvv] [-k] [-nn] [-D] [-P|-PP] [-s BDF] [-d VEN:DEV] (pciutils 3.x, with and "
                  "without 3.11's (ok)/(downgraded) notes; an old pciutils' 'Speed unknown' for Gen5 leaves downgraded "
                  "undecided; five-digit VMD domains): LnkCap/LnkSta speed, width, downgraded, LnkCtl2 target speed, "
                  "DevCap/DevCtl MaxPayload and MaxReadReq, DevSta error bits, the AER capability's UESta/CESta bits "
                  "set, NUMA node, kernel driver and modules, SR-IOV VFs, VPD product name and part number, -nn class "
                  "and vendor:device codes (ConnectX-4 Lx to ConnectX-7, E810, BCM574xx, A100, MI300X, RTX cards); "
                  "lspci -t / -tv / -tvnn trees (one or several host buses, domains, bridges' bus ranges, the bridge "
                  "above each device, names; a tree cut at its top keeps devices without a bus); grep excerpts of "
                  "LnkCap/LnkSta/DevSta/DevCtl lines without device headers, '> '-quoted mail copies (a device name "
                  "wrapped onto the next line joined), Debian reports' 'lspci -knn: ' line prefixes"}
