"""``show_gids`` (rdma-core / MLNX_OFED script): one row per GID of every RDMA port.

Columns ``DEV PORT INDEX GID IPv4 VER DEV``, tab- or blank-separated; ``IPv4`` is empty for
link-local and other non-IPv4-mapped GIDs, the last ``DEV`` is the netdev (absent on some IB
ports). Header, ``---`` ruler and prompt lines are skipped; the script's closing
``n_gids_found=N`` line is its own count. A row that starts as one (device, port, index, a GID's
first group) but does not read as one, e.g. a paste cut inside it, is an error naming the line.

A table without rows is a real answer when show_gids said so (``n_gids_found=0``: no GID on any
port, e.g. a pod that sees the HCA but none of its netdevs): ``bench parse`` gives zero GIDs
then, not "nothing read".
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable

_ROW = re.compile(
    r"^\s*(?P<dev>[\w.-]+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})"
    r"\s+(?:(?P<ipv4>\d{1,3}(?:\.\d{1,3}){3})\s+)?(?P<ver>v\d)(?:\s+(?P<netdev>\S+))?\s*$")
_ROW_START = re.compile(r"^\s*[\w.-]+\s+\d+\s+\d+\s+[0-9a-fA-F]{1,4}(?::|\s*$)")
_FOUND = re.compile(r"^\s*n_gids_found=(\d+)\s*$")


def _read(text: str) -> tuple[list[dict[str, Any]], int | None]:
    rows: list[dict[str, Any]] = []
    found: int | None = None
    for no, line in enumerate(undecorate(text).split("\n"), 1):
        m = _ROW.match(line)
        if not m and _ROW_START.match(line):
            raise unreadable(no, line, "a show_gids row without its GID, version or columns")
        if m:
            rows.append({"device": m["dev"], "port": int(m["port"]), "index": int(m["index"]),
                         "gid": m["gid"].lower(), "ipv4": m["ipv4"], "version": m["ver"],
                         "netdev": m["netdev"]})
            continue
        count = _FOUND.match(line)
        if count:  # several tables in one paste: their counts add up
            found = (found or 0) + int(count.group(1))
    return rows, found


def parse_show_gids(text: str) -> list[dict[str, Any]]:
    """Rows as ``device, port, index, gid, ipv4 (None when empty), version (v1/v2), netdev``."""
    return _read(text)[0]


def parse_show_gids_table(text: str) -> dict[str, Any]:
    """``{"gids": rows, "n_gids_found": N | None}``: the rows as :func:`parse_show_gids` reads them
    and the count show_gids printed (None when the paste has no ``n_gids_found=`` line). An empty
    table with ``n_gids_found=0`` is zero GIDs, not an empty parse."""
    rows, found = _read(text)
    return {"gids": rows, "n_gids_found": found}


PARSERS = {"show_gids": parse_show_gids_table}
READS = {"show_gids": "show_gids [DEV] (mlnx-tools / MLNX_OFED / DOCA-OFED script; mlx5, bond and udev-named "
                      "rocep*/ionic devices, RoCE v1/v2 rows, IPv4-mapped, link-local and global IPv6 GIDs, tabs or "
                      "blanks): {gids: [device, port, index, gid, ipv4, version, netdev], n_gids_found}; an empty "
                      "table with n_gids_found=0 is zero GIDs"}
