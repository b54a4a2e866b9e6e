"""How inventory and suite values that name several things are read: one rule everywhere."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

#: Step parameters that hold a message size (swept, written as ``8..1M x2`` ranges).
SIZE_PARAMS = ("length", "size", "sizes")


def as_list(value: Any) -> list[str]:
    """Names from a value: ``"a, b"`` and ``["a", "b"]`` both give ``["a", "b"]``; None or "" none."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return [str(value)]


def gpu_indices(value: Any) -> list[int]:
    """GPU indices from a ``gpus`` value: a count (``8`` means 0..7) or a list (``[0, 2]``, ``"0,2"``)."""
    if value is None or value == "" or isinstance(value, bool):
        return []
    if isinstance(value, int):
        return list(range(max(0, value)))
    if isinstance(value, str) and "," not in value:
        return list(range(max(0, int(value.strip())))) if value.strip().isdigit() else []
    return [int(v) for v in as_list(value) if str(v).strip().isdigit()]


def argv_list(value: Any, what: str) -> list[str]:
    """Command-line options as an argv list (``extra_args``, ``slurm_args``).

    A string is split as a shell would split it (it never reaches a shell); a list of strings
    is taken as it is. ValueError, naming ``what``, for anything else.
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list | tuple) and all(isinstance(a, str) for a in value):
        return list(value)
    raise ValueError(f"{what}: must be a string of options or a list of strings, not {value!r}")
