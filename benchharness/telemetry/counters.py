"""Counter snapshots before and after a step, and their deltas with wrap, reset and highlights.

A snapshot maps ``source:object:name`` to an int:

- ``ethtool:<netdev>:<name>``   ``ethtool -S`` (64-bit driver counters)
- ``net:<netdev>:<name>``       ``/sys/class/net/<netdev>/statistics/*``
- ``ib:<dev>/<port>:<name>``    ``/sys/class/infiniband/<dev>/ports/<port>/counters/*``
- ``ib_hw:<dev>/<port>:<name>`` ``.../hw_counters/*`` (np_cnp_sent, out_of_sequence ...)

Take one either with ``python3 sampler.py --snapshot`` (one JSON document) or with the plain
commands of ``snapshot_commands(vars)`` whose concatenated output ``parse_snapshot`` also reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from benchharness.core.values import as_list
from benchharness.telemetry.parsers._counter_names import ECN_CNP, base_name, highlights
from benchharness.telemetry.parsers._counter_names import RETRANSMISSION as RETRANS_NAMES

#: IB PortCounters that are 32 bits wide when the HCA lacks PortCountersExtended (old kernels and
#: HCAs); the IBA spec makes them saturate at all ones, some drivers let them wrap.
IB_32BIT = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                      "port_xmit_wait"})
#: IB data counters count 4-octet words.
IB_WORD_COUNTERS = frozenset({"port_xmit_data", "port_rcv_data"})


def snapshot_commands(vars: Mapping[str, Any], sampler_path: str | None = None,
                      python: str = "python3") -> list[list[str]]:
    """argv lists that read the counters of a host's ``netdev`` and ``rdma_dev``/``rdma_port``.

    With ``sampler_path`` (sampler.py already copied to the host): one command printing a JSON
    snapshot. Without: ``ethtool -S`` plus ``grep -H -r -s ''`` over the sysfs counter directories
    (``path:value`` lines); grep exits 2 when a counter file is unreadable, which is harmless.
    """
    netdevs = as_list(vars.get("netdev"))
    rdma = as_list(vars.get("rdma_dev"))
    port = str(vars.get("rdma_port", 1))
    if sampler_path:
        argv = [python, sampler_path, "--snapshot"]
        for nd in netdevs:
            argv += ["--netdev", nd]
        for dev in rdma:
            argv += ["--rdma-dev", dev]
        return [[*argv, "--rdma-port", port]] if rdma else [argv]
    commands: list[list[str]] = []
    for nd in netdevs:
        commands.append(["ethtool", "-S", nd])
        commands.append(["grep", "-H", "-r", "-s", "", f"/sys/class/net/{nd}/statistics"])
    for dev in rdma:
        base = f"/sys/class/infiniband/{dev}/ports/{port}"
        commands.append(["grep", "-H", "-r", "-s", "", f"{base}/counters", f"{base}/hw_counters"])
    return commands




_SYS_NET = re.compile(r"^/sys/class/net/([^/]+)/statistics/([^/:]+):(-?\d+)$")
# /sys/class/infiniband/<dev>/... or the device's own path (/sys/devices/pci.../infiniband/<dev>/...)
_SYS_IB = re.compile(r"^/sys/\S*?/infiniband/([^/]+)/ports/(\d+)/(counters|hw_counters)/([^/:]+):(-?\d+)$")
#: a counter the device cannot read: ``.../counters/link_downed:N/A (no PMA)`` (iWARP devices)
_SYS_IB_NA = re.compile(r"^/sys/\S*?/infiniband/[^/]+/ports/\d+/(?:counters|hw_counters)/[^/:]+:\s*N/A\b")
_REL_IB = re.compile(r"^(?:\S*/)?(counters|hw_counters)/([^/:\s]+):\s*(-?\d+)$")
_PORT_HEAD = re.compile(r"^Port (\d+) (hw )?counters:\s*$", re.IGNORECASE)
_NAME_VALUE = re.compile(r"^(\s*)(\S.*?):\s*(-?\d+)\s*$")
#: RDMA ``hw_counters`` names (mlx5 q/cong counters, and the retransmission / ECN names the health
#: judge reads): a ``name: value`` listing mostly of these is a hw_counters directory, not ethtool -S.
_HW_NAME = re.compile(r"^(?:rx_(?:write|read|atomic)_requests|rx_dct_connect|out_of_(?:buffer|sequence)|"
                      r"duplicate_request|rnr_nak_retry_err|packet_seq_err|implied_nak_seq_err|"
                      r"local_ack_timeout_err|resp_\w+|req_\w+|rp_cnp_\w+|np_\w+|roce_\w+|"
                      r"rx_icrc_encapsulated|lifespan)$")


#: The IB port counters of ``/sys/class/infiniband/<dev>/ports/<port>/counters`` (the kernel's
#: ``ib_port_counter`` attributes): a listing mostly of these is that directory.
_IB_PORT_NAME = frozenset({
    "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "local_link_integrity_errors",
    "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors", "port_rcv_data",
    "port_rcv_errors", "port_rcv_packets", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait",
    "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets", "VL15_dropped"})
#: A counters directory named in the text (a ``cd`` or ``grep`` command line, a ``==> path <==``
#: header): the device and port of the rows listed without their path.
_IB_DIR = re.compile(r"/sys/\S*?/infiniband/([^/\s'\"*]+)/ports/(\d+)/(hw_counters|counters)\b")
#: A file's banner, then its value on the next line: ``head``/``tail`` of several files
#: (``==> out_of_sequence <==``, or a path), and the banners of a shell loop over the files
#: (``echo "=== $file ==="``: ``=== ./port_xmit_wait ===``; ``--- name ---``).
_FILE_HEAD = re.compile(r"^(?:==> (\S+) <==|={2,}\s*([\w./:-]+)\s*={2,}|-{3,}\s*([\w./:-]+)\s*-{3,})$")
#: ``paste <(ls) <(cat *)`` and friends: a name and a number separated by blanks.
_NAME_BLANK_VALUE = re.compile(r"^([A-Za-z_][\w.-]*)\s+(-?\d+)$")


def _listing_kind(rows: list[tuple[str, str, int, str, str | None, int]]) -> str | None:
    """``hw`` or ``port`` when the unsectioned rows are mostly the names of that sysfs directory."""
    names = [name for indent, name, _v, _p, kind, _i in rows if not indent and kind is None]
    if not names:
        return None
    if sum(1 for n in names if _HW_NAME.match(n) or n in RETRANS_NAMES or n in ECN_CNP) * 2 >= len(names):
        return "hw"
    return "port" if sum(1 for n in names if n in _IB_PORT_NAME) * 2 >= len(names) else None


def _named_rows(lines: list[str], used: set[int], named_dir: bool) -> tuple[list[tuple[str, int]], set[int]]:
    """(name, value) of the two-line ``==> name <==`` / value listings, and of ``name value`` rows
    when most of them name RDMA counters or the text names the one directory they come from
    (``named_dir``: ``cd .../hw_counters; for i in *; do printf ...``); and the lines read."""
    out: list[tuple[str, int]] = []
    read: set[int] = set()
    for i, line in enumerate(lines[:-1]):
        m = _FILE_HEAD.match(line.strip())
        value = lines[i + 1].strip()
        if m and i not in used and re.fullmatch(r"-?\d+", value):
            out.append((next(g for g in m.groups() if g), int(value)))
            read |= {i, i + 1}
    blank = [(i, m.group(1), int(m.group(2))) for i, line in enumerate(lines) if i not in used | read
             and (m := _NAME_BLANK_VALUE.match(line.strip()))]
    known = [r for r in blank if _HW_NAME.match(r[1]) or r[1] in _IB_PORT_NAME or r[1] in RETRANS_NAMES]
    if blank and (len(known) * 2 >= len(blank) or named_dir):
        out += [(name, value) for _i, name, value in blank]
        read |= {i for i, _n, _v in blank}
    return out, read


def parse_snapshot(text: str, netdev: str | None = None) -> dict[str, int]:
    """Counters from a sampler ``--snapshot`` JSON document, from ``snapshot_commands`` output, or
    from what an operator pastes: ``ethtool -S``, ``rdma statistic show``, ``perfquery``, a
    ``hw_counters`` directory listed as ``name: value`` (``show_counters``, ``grep . *``), ``netstat
    -s`` / ``nstat``, each read by its one parser (``telemetry/parsers``), in one text or several.

    ``ethtool -S`` output does not name its interface: ``netdev`` names it, else the single netdev
    of the sysfs lines in the same text, else ``-``. Raises ToolFailure (``unreadable``) for an
    output of a known form that cannot be read.
    """
    from benchharness.telemetry.parsers import netstat, perfquery, rdma
    from benchharness.telemetry.parsers._common import stats_commands, undecorate

    stripped = text.strip()
    if stripped.startswith("{"):
        data = json.loads(stripped)
        return {k: int(v) for k, v in (data.get("counters") or {}).items()}
    lines = undecorate(text, keep=re.compile(r"^#\s*Port (?:extended )?counters:|^#kernel$")).split("\n")
    named_dirs = set(_IB_DIR.findall(text))  # one counters directory named anywhere: its rows' home
    counters: dict[str, int] = {}
    used: set[int] = set()
    for reader in (rdma.counters_of, perfquery.counters_of, netstat.counters_of):
        found, lines_read = reader([line if i not in used else "" for i, line in enumerate(lines)])
        counters.update(found)
        used |= lines_read
    seen_netdevs: set[str] = set()
    rows: list[tuple[str, str, int, str, str | None, int]] = []  # indent, name, value, port, kind, line
    named, read = _named_rows(lines, used, len({(d, p) for d, p, _k in named_dirs}) == 1)
    used |= read
    for name, value in named:
        m = _SYS_IB.match(f"{name}:{value}")
        if m:  # "==> /sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence <=="
            counters[f"{'ib' if m.group(3) == 'counters' else 'ib_hw'}:{m.group(1)}/{m.group(2)}:{m.group(4)}"] = value
        else:
            rows.append(("", name.rsplit("/", 1)[-1], value, "-", None, -1))
    port, kind = "-", None
    unreadable_counters = 0
    for i, line in enumerate(lines):
        if i in used:
            continue
        m = _SYS_NET.match(line.strip())
        if m:
            seen_netdevs.add(m.group(1))
            counters[f"net:{m.group(1)}:{m.group(2)}"] = int(m.group(3))
            continue
        m = _SYS_IB.match(line.strip())
        if m:
            prefix = "ib" if m.group(3) == "counters" else "ib_hw"
            counters[f"{prefix}:{m.group(1)}/{m.group(2)}:{m.group(4)}"] = int(m.group(5))
            continue
        if _SYS_IB_NA.match(line.strip()):
            unreadable_counters += 1  # not a number: absent, never 0
            continue
        m = _REL_IB.match(line.strip())
        if m:
            prefix = "ib" if m.group(1) == "counters" else "ib_hw"
            counters[f"{prefix}:-/{port}:{m.group(2)}"] = int(m.group(3))
            continue
        m = _PORT_HEAD.match(line.strip())
        if m:  # mlnx-tools show_counters: "Port 1 counters:" / "Port 1 hw counters:"
            port, kind = m.group(1), ("hw" if m.group(2) else "port")
            continue
        m = _NAME_VALUE.match(line)
        if m and (m.group(1) or " " not in m.group(2).strip()):
            rows.append((m.group(1), m.group(2).strip(), int(m.group(3)), port, kind, i))
    listing = _listing_kind(rows)
    dirs = {(dev, p) for dev, p, _k in named_dirs}
    home_dev, home_port = next(iter(dirs)) if len(dirs) == 1 else ("-", None)
    kinds = {"hw" if k == "hw_counters" else "port" for _d, _p, k in named_dirs}
    if listing is None and len(kinds) == 1 and len(dirs) == 1:
        listing = next(iter(kinds))  # "cd .../hw_counters; grep . *": the directory says what they are
    owner = netdev or (next(iter(seen_netdevs)) if len(seen_netdevs) == 1 else "-")
    commands = stats_commands(text)  # "ethtool -S DEV" lines: each port's counters below its own

    def port_of(line: int) -> str:
        named = [dev for at, dev in commands if at < line]
        return named[-1] if named and not netdev else owner
    for indent, name, value, at, section, line_no in rows:
        where = f"{home_dev}/{home_port if at == '-' and home_port else at}"
        if section == "port" or (section is None and listing == "port" and not indent):
            counters[f"ib:{where}:{name}"] = value
        elif section == "hw" or (section is None and listing == "hw" and not indent):
            counters[f"ib_hw:{where}:{name}"] = value
        else:
            counters[f"ethtool:{port_of(line_no)}:{name}"] = value
    if not counters and unreadable_counters:
        from benchharness.core.errors import ToolFailure

        raise ToolFailure("unreadable", f"all {unreadable_counters} counters read N/A: the device exposes no "
                                        "port counters (an iWARP device without a PMA); nothing to judge")
    if not counters:
        heads = sorted(used) + [i for i, line in enumerate(lines) if _PORT_HEAD.match(line.strip())
                                or line.strip() == "NIC statistics:"]
        if heads:
            from benchharness.telemetry.parsers._common import unreadable

            first = min(heads)
            raise unreadable(first + 1, lines[first], "a counters listing without any counter")
    return counters


def delta(before: Mapping[str, int], after: Mapping[str, int], width_bits: int | None = None) -> dict[str, Any]:
    """Per-counter increase from ``before`` to ``after``.

    A counter that went down either wrapped or was reset. With ``width_bits`` every counter wraps
    at that width (64-bit wrap is treated as a reset: it cannot happen in a step). Without it, the
    32-bit IB PortCounters (``IB_32BIT``) wrap at 2**32 when ``before`` fits in 32 bits; others are
    resets, whose delta is the ``after`` value (the count since the reset). A 32-bit IB counter
    sitting at 2**32-1 is ``saturated``: its delta is a lower bound.

    Returns ``counters`` (name -> delta), lists ``wrapped``, ``reset``, ``saturated``, ``missing``
    (in before only), ``new`` (in after only), and ``highlights`` (see parsers._counter_names;
    plus ``ib_bytes`` from the 4-octet IB data counters).
    """
    out: dict[str, Any] = {"counters": {}, "wrapped": [], "reset": [], "saturated": [],
                           "missing": sorted(set(before) - set(after)), "new": sorted(set(after) - set(before))}
    for key in sorted(set(before) & set(after)):
        b, a = int(before[key]), int(after[key])
        name = base_name(key)
        is_ib32 = key.startswith("ib:") and name in IB_32BIT
        width = width_bits or (32 if is_ib32 and b < 2**32 else None)
        if is_ib32 and (a == 2**32 - 1 or b == 2**32 - 1) and width_bits in (None, 32):
            out["saturated"].append(key)
        if a >= b:
            out["counters"][key] = a - b
        elif width and width < 64 and b < 2**width:
            out["counters"][key] = a + 2**width - b
            out["wrapped"].append(key)
        else:
            out["counters"][key] = a
            out["reset"].append(key)
    hl = highlights(out["counters"])
    hl["ib_bytes"] = {"xmit": 0, "rcv": 0}
    for key, value in out["counters"].items():
        name = base_name(key)
        if key.startswith("ib:") and name in IB_WORD_COUNTERS:
            hl["ib_bytes"]["xmit" if "xmit" in name else "rcv"] += value * 4
    out["highlights"] = hl
    return out
