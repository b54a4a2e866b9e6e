"""Several ports' outputs of one ethtool command pasted one after another.

A paste often holds ``ethtool -i ens1f0`` and ``ethtool -i ens1f1`` (or ``Settings for ens1f0:``
then ``Settings for ens1f1:``) in one text. Read as one output, the second port's lines overwrite
or merge into the first's. ``per_port`` splits such a text at each command line or heading that
names another port and reads each port's part on its own: ``{"netdevs": {port: result}}``. A text
that names one port (or none) is read whole, as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from benchharness.telemetry.parsers._common import is_noise

Parser = Callable[[str], Any]


#: options a command line may give before the one that names the show (``ethtool --json -a``,
#: ``ethtool --include-statistics -a``, ``ethtool -I --show-fec``)
_BEFORE = r"(?:(?:--json|-j|--include-statistics|-I)\s+)*"


def ethtool_command(flags: str) -> re.Pattern[str]:
    """``ethtool [--json] FLAG DEV`` (``flags``: an alternation such as ``-i|--driver``; empty:
    ``ethtool DEV`` itself), anywhere in a line (after a prompt, ``sudo``, a Markdown quote)."""
    if not flags:  # "ethtool eth0", "ethtool eth0 | grep -i speed": no option before the port
        return re.compile(rf"\bethtool\s+{_BEFORE}([A-Za-z][\w.:@-]*)\s*(?:$|[|>])")
    return re.compile(rf"\bethtool\s+{_BEFORE}(?:{flags})\s+(?:--?\w[\w-]*\s+)*([A-Za-z][\w.:@-]*)")


def _marks(lines: list[str], command: re.Pattern[str], heading: re.Pattern[str] | None) -> list[tuple[int, str, bool]]:
    """(line index, port, is a command line) of every line that starts a port's output."""
    out = []
    for i, line in enumerate(lines):
        m = command.search(line)
        if m and not line.lstrip().startswith(("-", "[")):
            out.append((i, m.group(1), True))
            continue
        h = heading.match(line) if heading else None
        if h:
            out.append((i, h.group(1), False))
    return out


def split_ports(text: str, command: re.Pattern[str], heading: re.Pattern[str] | None = None) -> dict[str, str]:
    """Each port's part of ``text`` (its lines, without the command line that names it), in the
    order first seen; empty when the text names fewer than two ports."""
    lines = text.replace("\r\n", "\n").split("\n")
    bounds: list[tuple[int, str, bool]] = []
    for mark in _marks(lines, command, heading):
        if bounds and bounds[-1][1] == mark[1]:
            continue  # the heading under its own command line, or the same port shown again
        bounds.append(mark)
    if len({port for _i, port, _c in bounds}) < 2:
        return {}
    parts: dict[str, list[str]] = {}
    ends = [i for i, _p, _c in bounds[1:]] + [len(lines)]
    for k, ((start, port, is_command), end) in enumerate(zip(bounds, ends, strict=True)):
        first = start + 1 if is_command else start
        parts.setdefault(port, []).extend(lines[0 if k == 0 and not is_command else first:end])
    return {port: "\n".join(body) for port, body in parts.items()}


def per_port(parse_one: Parser, command: re.Pattern[str], heading: re.Pattern[str] | None = None) -> Parser:
    """``parse_one`` that reads each named port of a several-port paste apart (``split_ports``)."""
    @functools.wraps(parse_one)
    def read(text: str) -> Any:
        parts = split_ports(text, command, heading)
        if not parts:
            return parse_one(text)
        ports: dict[str, Any] = {}
        for port, part in parts.items():
            if any(line.strip() and not is_noise(line) for line in part.splitlines()):  # not prompts only
                got = parse_one(part)
                ports[port] = {**got, "netdev": port} if isinstance(got, dict) else got
        return {"netdevs": ports}
    return read
