"""Every parser ``bench parse NAME FILE`` knows: tool adapters and command-output parsers.

Modules under ``benchharness/tools/``, ``benchharness/telemetry/parsers/`` and
``benchharness/analysis/`` (a reading of a tool's output, such as ``nccl-stragglers``) may define a
module-level ``PARSERS`` dict (name -> function from text to JSON-ready data); tool adapters
contribute their ``parse_text`` under their own name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from typing import Any

from benchharness.core.errors import UsageError

Parser = Callable[[str], Any]


def _module_parsers(package: str) -> dict[str, Parser]:
    found: dict[str, Parser] = {}
    try:
        pkg = importlib.import_module(package)
    except ModuleNotFoundError:
        return found
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        found.update(getattr(module, "PARSERS", {}))
    return found


@cache
def registry() -> dict[str, Parser]:
    """All parsers by name."""
    from benchharness.tools import registry as tools

    found: dict[str, Parser] = {name: adapter.parse_text for name, adapter in tools().items()}
    found.update(_module_parsers("benchharness.tools"))
    found.update(_module_parsers("benchharness.telemetry.parsers"))
    found.update(_module_parsers("benchharness.analysis"))
    return found


def get_parser(name: str) -> Parser:
    """The parser called ``name``; a UsageError listing the known ones otherwise."""
    parsers = registry()
    if name not in parsers:
        raise UsageError(f"unknown parser {name!r}; known: {', '.join(sorted(parsers))}")
    return parsers[name]
