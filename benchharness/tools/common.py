"""Small helpers that several tool adapters share (not an adapter: the registry skips it)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any


def extra_args(value: Any) -> list[str]:
    """A suite's ``extra_args`` as an argv list.

    A string is split as a shell would split it (it never reaches a shell); a list of strings
    is taken as it is. Suites write one string, since a list in a suite is swept.
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list | tuple) and all(isinstance(a, str) for a in value):
        return list(value)
    raise ValueError(f"extra_args: must be a string of options or a list of strings, not {value!r}")


def reject_unknown(tool: str, params: Mapping[str, Any], known: Mapping[str, Any]) -> None:
    """ValueError naming the parameters ``tool`` does not have, their values and the known ones."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        given = ", ".join(f"{k}={params[k]!r}" for k in unknown)
        raise ValueError(f"{tool}: unknown parameter(s) {given}; known: {', '.join(sorted(known))}")
