"""Every parser ``bench parse NAME FILE`` knows: tool adapters and command-output parsers.

Modules under ``benchharness/tools/``, ``benchharness/telemetry/parsers/`` and
``benchharness/analysis/`` (a reading of a tool's output, such as ``nccl-stragglers``) may define a
module-level ``PARSERS`` dict (name -> function from text to JSON-ready data) and a ``READS`` dict
(name -> the commands and versions it reads, for ``--list``); tool adapters contribute their
``parse_text`` under their own name, described by their ``reads``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from typing import Any

from benchharness.cli.paste import unpaste
from benchharness.core.errors import UsageError

Parser = Callable[[str], Any]


def _module_parsers(package: str, reads: dict[str, str] | None = None) -> dict[str, Parser]:
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
        if reads is not None:
            reads.update(getattr(module, "READS", {}))
    return found


def _pasted(fn: Parser) -> Parser:
    """``fn`` reading a pasted text: what any paste adds around the output removed first."""
    @functools.wraps(fn)
    def read(text: str) -> Any:
        return fn(unpaste(text))
    return read


@cache
def registry() -> dict[str, Parser]:
    """All parsers by name, each reading pasted text (``cli/paste.py``)."""
    from benchharness.tools import registry as tools

    found: dict[str, Parser] = {name: adapter.parse_text for name, adapter in tools().items()}
    found.update(_module_parsers("benchharness.tools"))
    found.update(_module_parsers("benchharness.telemetry.parsers"))
    found.update(_module_parsers("benchharness.analysis"))
    found.update(_module_parsers("benchharness.telemetry"))
    return {name: _pasted(fn) for name, fn in found.items()}


def undeclared() -> list[str]:
    """Parsers that say nothing of what they read (no ``READS`` entry, no adapter ``reads``)."""
    reads: dict[str, str] = {}
    for package in ("benchharness.tools", "benchharness.telemetry.parsers", "benchharness.analysis",
                    "benchharness.telemetry"):
        _module_parsers(package, reads)
    from benchharness.tools import registry as tools

    adapters = tools()
    return sorted(name for name in registry() if name not in reads
                  and not isinstance(getattr(adapters.get(name), "reads", None), str))


@cache
def describe() -> dict[str, str]:
    """Each parser's name -> the commands and versions it reads (a module's ``READS``), else the
    first line of its docstring."""
    reads: dict[str, str] = {}
    for package in ("benchharness.tools", "benchharness.telemetry.parsers", "benchharness.analysis",
                    "benchharness.telemetry"):
        _module_parsers(package, reads)
    from benchharness.tools import registry as tools

    out = {}
    adapters = tools()
    for name, fn in sorted(registry().items()):
        declared: object = getattr(adapters[name], "reads", None) if name in adapters else None
        if name not in reads and isinstance(declared, str) and declared:  # the adapter's own ``reads``
            reads[name] = declared
        if name not in reads and name in adapters:
            facts = [f for f in getattr(adapters[name], "requirements", ()) or () if f.name != "numactl"]
            module = importlib.import_module(fn.__module__)
            doc = (module.__doc__ or fn.__doc__ or "").strip().splitlines()
            versions = ", ".join(f"{f.name} {f.min_version}+" if f.min_version else f.name for f in facts)
            reads[name] = (doc[0] if doc else name) + (f" [{versions}]" if versions else "")
        doc = (fn.__doc__ or "").strip().splitlines()
        out[name] = reads.get(name) or (doc[0] if doc else fn.__module__)
    return out


def is_empty(data: Any) -> bool:
    """True when a parse found nothing: no records, or only empty containers (``{"ports": []}``)."""
    if data is None:
        return True
    if isinstance(data, dict):
        return all(is_empty(v) if isinstance(v, dict | list) else v is None for v in data.values())
    if isinstance(data, list | tuple):
        return len(data) == 0
    return False


def get_parser(name: str) -> Parser:
    """The parser called ``name``; a UsageError listing the known ones otherwise."""
    parsers = registry()
    if name not in parsers:
        raise UsageError(f"unknown parser {name!r}; known: {', '.join(sorted(parsers))}")
    return parsers[name]
