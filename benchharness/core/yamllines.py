"""YAML read with line numbers, so that every error can name the file, the line and the key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from benchharness.core.errors import ConfigError


class LineMap(dict[Any, Any]):
    """A mapping read from the file; ``line`` is where it starts, ``key_lines`` where each key is."""

    line: int
    key_lines: dict[Any, int]


class LineSeq(list[Any]):
    line: int
    item_lines: list[int]


class LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences remember their lines (1-based)."""


def _construct_map(loader: LineLoader, node: yaml.MappingNode) -> Iterator[LineMap]:
    data = LineMap()
    data.line, data.key_lines = node.start_mark.line + 1, {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in data
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a key must be a plain value", key_node.start_mark) from None
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = key_node.start_mark.line + 1


def _construct_seq(loader: LineLoader, node: yaml.SequenceNode) -> Iterator[LineSeq]:
    data = LineSeq()
    data.line, data.item_lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
    yield data
    data.extend(loader.construct_object(n, deep=True) for n in node.value)


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def read_yaml(path: Path, what: str = "suite") -> Any:
    """A YAML file whose mappings and sequences know their lines; ConfigError with file:line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror}", str(path)) from exc
    try:
        return yaml.load(text, Loader=LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = exc.problem or exc.context or "unreadable"
        if exc.context and exc.problem and exc.context_mark:
            msg += f" ({exc.context} that starts at line {exc.context_mark.line + 1})"
        raise ConfigError(f"YAML syntax error: {msg}", str(path), mark.line + 1 if mark else None) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML error: {exc}", str(path)) from exc
