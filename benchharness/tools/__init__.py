"""Registry of tool adapters, discovered from the modules of this package.

Adding a tool means adding a module here that defines ``ADAPTER`` (or ``ADAPTERS``); the
runner, the planner and the CLI find it by name and never change.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from benchharness.core.errors import UsageError
from benchharness.tools.base import ToolAdapter, ToolFacts

_NOT_ADAPTERS = {"base", "common"}


@cache
def registry() -> dict[str, ToolAdapter]:
    """All adapters by name."""
    found: dict[str, ToolAdapter] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_ADAPTERS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        adapters = list(getattr(module, "ADAPTERS", []))
        if hasattr(module, "ADAPTER"):
            adapters.append(module.ADAPTER)
        for adapter in adapters:
            found[adapter.name] = adapter
    return found


def get_tool(name: str) -> ToolAdapter:
    """The adapter called ``name``; a UsageError listing the known tools otherwise."""
    tools = registry()
    if name not in tools:
        raise UsageError(f"unknown tool {name!r}; known tools: {', '.join(sorted(tools))}")
    return tools[name]


def tool_facts() -> dict[str, ToolFacts]:
    """Every program the adapters run on hosts (``ADAPTER.requirements``), by name, each once."""
    found: dict[str, ToolFacts] = {}
    for adapter in registry().values():
        for facts in getattr(adapter, "requirements", ()):
            found.setdefault(facts.name, facts)
    return found


def restated_metrics() -> dict[str, frozenset[str]]:
    """Per tool name, the metrics its records repeat from other fields (``restated_metrics``)."""
    return {name: frozenset(getattr(adapter, "restated_metrics", ()))
            for name, adapter in registry().items() if getattr(adapter, "restated_metrics", ())}
