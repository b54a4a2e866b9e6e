"""Small helpers that several tool adapters share (not an adapter: the registry skips it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def reject_unknown(tool: str, params: Mapping[str, Any], known: Mapping[str, Any]) -> None:
    """ValueError naming the parameters ``tool`` does not have, their values and the known ones."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        given = ", ".join(f"{k}={params[k]!r}" for k in unknown)
        raise ValueError(f"{tool}: unknown parameter(s) {given}; known: {', '.join(sorted(known))}")
