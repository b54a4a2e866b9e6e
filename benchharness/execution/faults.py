"""How a step's commands went wrong, whatever the tool: pure functions over CommandResults.

The runner asks these after every step, so that a hung, missing or crashed tool gets the same
failure kind (``timeout``, ``tool_missing``, ``crashed``, ``port_in_use``, ``server_not_ready``)
and a one-line message naming the host, whichever adapter built the command.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult

#: How shells, ``env`` and coreutils ``timeout`` say a program does not exist (exit code 127).
_NOT_FOUND = (
    re.compile(r"timeout: failed to run command '(?P<cmd>[^']+)': (?P<why>.+)"),
    re.compile(r"env: '(?P<cmd>[^']+)': (?P<why>.+)"),
    re.compile(r"(?P<cmd>[^\s:]+): (?P<why>(?:command )?not found)"),
)
_PORT_TAKEN = re.compile(r"address already in use|EADDRINUSE", re.IGNORECASE)
_TELLING = re.compile(r"error|fail|unable|cannot|can't|couldn't|denied|refused|not found|no such",
                      re.IGNORECASE)


def killed_by(result: CommandResult) -> str | None:
    """Name of the signal that killed the command (``SIGSEGV``), unless the harness stopped it."""
    rc = result.rc
    if rc is None or result.stopped or result.timed_out:
        return None
    number = rc - 128 if rc > 128 else -rc if rc < -1 else 0  # shell convention, or Popen's -N
    try:
        return signal.Signals(number).name if number > 0 else None
    except ValueError:
        return None


def telling_line(text: str) -> str:
    """The line of a tool's output that best says what went wrong (an error line, else the last)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for line in lines:
        if _TELLING.search(line):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def one_line(message: str, limit: int = 600) -> str:
    """A failure message as one line: a tool's multi-line output (a usage text) is cut to its ends."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    if len(lines) > 2:
        lines = [lines[0], f"[... {len(lines) - 2} lines ...]", lines[-1]]
    text = " ".join(lines)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def missing_tool(results: Sequence[CommandResult], any_127: bool = False) -> ToolFailure | None:
    """``tool_missing`` when a command could not start because its program does not exist (rc 126/127).

    A shell's, ``env``'s or ``timeout``'s own message is required, unless ``any_127``: then exit
    code 127 with no output is enough (a launcher's 127 may mean a remote program; adapters say which).
    """
    for res in results:
        if res.rc not in (126, 127):
            continue
        for pattern in _NOT_FOUND:
            match = pattern.search(res.stderr)
            if match:
                host = res.command.host.name
                return ToolFailure("tool_missing", f"{host}: {match['cmd']}: {match['why'].strip()} "
                                   f"(the {res.command.role} could not start; install it on {host} "
                                   f"or set its path in the inventory)")
        if any_127 and res.rc == 127 and not res.stdout.strip():
            host = res.command.host.name
            return ToolFailure("tool_missing", f"{host}: {res.command.argv[0]} could not be run (exit code 127: "
                               f"not found): {telling_line(res.stderr)}")
    return None


def crash_note(results: Sequence[CommandResult]) -> str | None:
    """``"client-h2 on h2 was killed by SIGSEGV"`` for each command that died by a signal it was not sent."""
    notes = [f"{r.command.name} on {r.command.host.name} was killed by {sig}"
             for r in results if (sig := killed_by(r))]
    return "; ".join(notes) or None


def timeout_note(results: Sequence[CommandResult]) -> str | None:
    """What hung: each command that ran past its limit and was killed with its process group."""
    notes = [f"{r.command.name} on {r.command.host.name} ran past its {r.command.timeout_s:g} s limit "
             f"and was killed" for r in results if r.timed_out]
    return "; ".join(notes) or None


def not_ready(result: CommandResult, ready_timeout_s: float) -> ToolFailure:
    """Why a server never printed its ready line: missing, port taken, crashed, or silent."""
    missing = missing_tool([result], any_127=True)
    if missing is not None:
        return missing
    cmd, rc = result.command, result.rc
    said = result.stderr + "\n" + result.stdout
    where = f"{cmd.host.name}: {cmd.role} {cmd.name}"
    if _PORT_TAKEN.search(said):
        line = next(ln.strip() for ln in said.splitlines() if _PORT_TAKEN.search(ln))
        return ToolFailure("port_in_use", f"{where}: its port is taken by another process: {line[:300]}")
    sig = killed_by(result)
    if sig:
        return ToolFailure("crashed", f"{where} was killed by {sig} before it was ready: {telling_line(said)}")
    state = f"exited with code {rc}" if rc is not None else f"not ready after {ready_timeout_s:.0f} s"
    return ToolFailure("server_not_ready", f"{where} {state}: {telling_line(said)}")
