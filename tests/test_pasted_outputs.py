"""What a paste adds around a tool's output changes nothing ``bench parse`` reads.

Every real published fixture (tests/fixtures/real) that its parser reads, read again as it would
arrive from a Windows editor (byte-order mark, CRLF), a coloured terminal (ANSI codes), a terminal
copy (lines padded with blanks), a Markdown code fence, and after a shell prompt with its command
and before the next prompt: the same records (a line number or cut position may move with the
prompt line).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser

ROOT = Path(__file__).parent / "fixtures" / "real"


def _end(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


PASTES: dict[str, Callable[[str], str]] = {
    "bom-crlf": lambda t: "\ufeff" + t.replace("\r\n", "\n").replace("\n", "\r\n"),
    "ansi": lambda t: "\n".join(f"\x1b[1;32m{line}\x1b[0m" if i % 3 == 0 and line.strip() else line
                                for i, line in enumerate(t.split("\n"))),
    "padded": lambda t: "\n".join(line + "   " for line in t.split("\n")),
    "fenced": lambda t: "```console\n" + _end(t) + "```\n",
    "prompts": lambda t: "user@gpu-node-07:~$ sudo the-command --its-flags\n" + _end(t) + "user@gpu-node-07:~$ \n",
}


def _parser_name(path: Path) -> str:
    if path.parent.name == "qos":  # one folder for both QoS readers
        return "dcb-pfc" if path.name.startswith("dcb-pfc") else "mlnx_qos"
    return path.parent.name


def _readable() -> list[Path]:
    out = []
    for path in sorted(ROOT.glob("*/*")):
        expected = path.with_name(path.name.rsplit(".", 1)[0] + ".expected.json")
        if path.name.endswith(".expected.json") or not expected.exists():
            continue
        if "error" not in json.loads(expected.read_text()):
            out.append(path)
    return out


def _plain(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def _without_positions(data: Any) -> Any:
    """``data`` without the fields that say where in the file something was (a prompt line
    added at the top moves them by one)."""
    if isinstance(data, dict):
        return {k: _without_positions(v) for k, v in data.items() if k not in ("cut_at", "line", "cut")}
    if isinstance(data, list):
        return [_without_positions(v) for v in data]
    return data


@pytest.mark.parametrize("paste", sorted(PASTES))
def test_a_pasted_output_reads_as_the_published_one(paste: str) -> None:
    wrong = []
    fixtures = _readable()
    assert len(fixtures) > 200
    for path in fixtures:
        parser = get_parser(_parser_name(path))
        text = path.read_text(encoding="utf-8", errors="replace")
        want = _without_positions(_plain(parser(text)))
        try:
            got = _without_positions(_plain(parser(PASTES[paste](text))))
        except Exception as exc:  # every failure is reported with its file
            wrong.append(f"{path.relative_to(ROOT)}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        if got != want:
            wrong.append(f"{path.relative_to(ROOT)}: read differently")
    assert not wrong, "\n".join(wrong)
