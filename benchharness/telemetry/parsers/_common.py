"""Small helpers shared by the command-output parsers (not a parser module itself)."""

from __future__ import annotations

import re
from typing import Any

from benchharness.tools.textclean import is_fence
from benchharness.tools.textclean import strip_ansi as strip_ansi  # the one ANSI reader, for the parsers

_NA = {"", "n/a", "[n/a]", "na", "none", "unknown", "[not supported]", "not supported", "-"}


def to_int(value: Any) -> int | None:
    """An int from ``value`` (decimal or 0x hex), or None for N/A-like values."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in _NA:
        return None
    try:
        return int(text, 0) if text.lower().startswith("0x") else int(text)
    except ValueError:
        number = to_float(text)
        return int(number) if number is not None and number == int(number) else None


def to_float(value: Any) -> float | None:
    """A float from the leading number of ``value`` (``"47.12 degrees C"`` -> 47.12), or None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if value is None:
        return None
    m = re.match(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)", str(value))
    return float(m.group(1)) if m else None


def pcie_speed_gts(text: str | None) -> float | None:
    """GT/s in a PCIe speed as lspci or sysfs print it: ``16GT/s``, ``16.0 GT/s PCIe``, ``2.5 GT/s``."""
    if not text:
        return None
    m = re.search(r"(\d+(?:\.\d+)?)\s*GT/s", text)
    return float(m.group(1)) if m else None


def snake(name: str) -> str:
    """``Module temperature high alarm`` -> ``module_temperature_high_alarm``."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def key_values(text: str, sep: str = ":") -> dict[str, str]:
    """``key: value`` lines into a dict (first separator splits; later duplicates ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if sep not in line:
            continue
        key, _, value = line.partition(sep)
        key = key.strip()
        if key and key not in out:
            out[key] = value.strip()
    return out


# Lines a pasted or captured output may carry around the tool's own text: shell prompts with
# the command (``root@host:~# lspci -vvv``, ``[root@node ~]# ...``, ``$ ethtool eth0``,
# ``# numactl -H``) and sudo's complaints. None of them is a line any parser here reads.
_NOISE = [
    re.compile(r"^\s*[\w.-]+@[\w.-]+(?::\S*)?(?:\s+~?\S*)?(?:\s+\[\d+\])?\s*[$#](?:\s|$)"),
    re.compile(r"^\s*\[[^\]\s]*@[^\]]*\]\s*[$#](?:\s|$)"),
    re.compile(r"^\s*[$#](?:\s|$)"),
    re.compile(r"^\S*[:~]\S*[$#]\s"),
    re.compile(r"^\s*sudo(?::|\s)"),
]


def is_noise(line: str) -> bool:
    """True for a shell prompt / command echo or a ``sudo:`` message line."""
    return any(p.match(line) for p in _NOISE)


#: ``ethtool -S DEV`` (also ``--statistics``, ``--json``, ``--all-groups`` ...) in a paste's command line
STATS_COMMAND = re.compile(r"\bethtool\s+(?:--json\s+)?(?:-S|--statistics)(?:\s+--?\w[\w-]*)*\s+([A-Za-z][\w.:@-]*)")


def stats_commands(text: str) -> list[tuple[int, str]]:
    """(line index, netdev) of each ``ethtool -S DEV`` command line in a paste (a prompt, a
    ``sudo`` or a Markdown line): which port the counters below it belong to."""
    return [(i, m.group(1)) for i, line in enumerate(text.replace("\r\n", "\n").split("\n"))
            if (m := STATS_COMMAND.search(line))]


def clean_text(text: str) -> str:
    """Tool output without terminal colours, CR line ends, prompt/command and sudo lines."""
    text = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line for line in text.split("\n") if not is_noise(line))


def unreadable(line_no: int, line: str, why: str) -> Any:
    """The error for an output a parser recognises but cannot read: names the line (exit 3)."""
    from benchharness.core.errors import ToolFailure

    shown = line.strip()
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ToolFailure("unreadable", f"line {line_no}: {why}: {shown!r}")


_QUOTE = re.compile(r"^(?:\s?>)+ ?")
_BORDER = re.compile(r"^\s*[|│┃]\s?|\s?[|│┃]\s*$")
_RULE = re.compile(r"^\s*(?:[\u2500-\u257f]+|\+[-=+]*\+)\s*$")  # ┌────┐ └────┘ +-----+


def undecorate(text: str, keep: re.Pattern[str] | None = None) -> str:
    """``clean_text`` plus what a paste adds around the tool's lines: e-mail / Markdown quote marks
    (``> ``), a terminal's box borders (``│ ... │`` and the ``┌───┐`` / ``+---+`` rules above and
    below) and Markdown code fences. Lines matching
    ``keep`` are the tool's own even when they look like a ``# `` prompt. Lines keep their numbers:
    what is dropped is left blank."""
    out = []
    text = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n")
    for line in text.split("\n"):
        if is_fence(line) or _RULE.match(line):
            out.append("")
            continue
        line = _QUOTE.sub("", line)
        if re.match(r"^\s*[|│┃]", line) and re.search(r"[|│┃]\s*$", line):
            line = _BORDER.sub("", line)
        if is_noise(line) and not (keep and keep.match(line.strip())):
            line = ""  # kept as a blank: line numbers stay those of the file, and a record ends there
        out.append(line)
    return "\n".join(out)
