"""``dcgmi dmon -e FIELD,... [-c N] [-d MS]`` (NVIDIA DCGM 2.x-4.x): one row per entity and sample.

Format (DCGM ``dcgmi/DeviceMonitor.cpp``): a ``#Entity`` line with the fields' short names
(``GRACT SMACT DRAMA POWER TMPTR ...``, ``dcgmi dmon -l`` lists them), a second header line
``ID`` (``Id`` in some versions) that may carry each field's unit, then ``<entity type> <id>``
(``GPU 0``, ``GPU-I 1``, ``Switch 2``, ``Link 3``) and one value per field; ``N/A`` for a field the
entity does not report (None: absent, not zero). The header is printed again when the terminal
fills; each header starts a new set of columns.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import to_float, undecorate, unreadable

_HEAD = re.compile(r"^#\s*Entity\s+(.+)$")
_ROW = re.compile(r"^([A-Za-z][\w-]*)\s+(\d+)\s+(.*)$")


def _value(token: str) -> float | str | None:
    if token.upper() in ("N/A", "N/S", "-", "NONE"):
        return None
    number = to_float(token)
    return number if number is not None and re.fullmatch(r"[-+]?[\d.]+(?:[eE][-+]?\d+)?", token) else token


def parse_dcgmi_dmon(text: str) -> list[dict[str, Any]]:
    """One record per row: ``entity`` (``GPU``), ``id``, ``sample`` (0 for the first row of an
    entity, 1 for its next ...), and each field by its short name (None for ``N/A``)."""
    lines = undecorate(text, keep=_HEAD).split("\n")
    columns: list[str] | None = None
    head_line = 0
    seen: dict[tuple[str, int], int] = {}
    out: list[dict[str, Any]] = []
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        m = _HEAD.match(stripped)
        if m:
            columns, head_line = m.group(1).split(), no
            continue
        row = _ROW.match(stripped) if columns is not None else None
        if columns is None or not row:  # the "ID" (units) line and anything around the table
            continue
        values = row.group(3).split()
        if len(values) != len(columns):
            raise unreadable(no, line, f"{len(values)} values under the {len(columns)} fields of line {head_line}")
        key = (row.group(1), int(row.group(2)))
        out.append({"entity": key[0], "id": key[1], "sample": seen.get(key, 0),
                    **{name: _value(v) for name, v in zip(columns, values, strict=True)}})
        seen[key] = seen.get(key, 0) + 1
    if columns is not None and not out:
        raise unreadable(head_line, lines[head_line - 1], "a dcgmi dmon header without any entity row")
    return out


PARSERS = {"dcgmi": parse_dcgmi_dmon, "dcgmi-dmon": parse_dcgmi_dmon}
READS = {"dcgmi": "dcgmi dmon -e FIELDS [-c N] (DCGM 2.x-4.x): rows per entity and sample, N/A as absent",
         "dcgmi-dmon": "dcgmi dmon (the same reader as dcgmi)"}
