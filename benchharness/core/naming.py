"""Names that are safe as file names: step ids, host names and suite names in run directories."""

from __future__ import annotations

import re

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    """A string usable as one path component."""
    cleaned = _SAFE.sub("_", text).strip("._")
    return cleaned[:120] or "x"
