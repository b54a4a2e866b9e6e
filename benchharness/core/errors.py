"""One exception family; each class maps to a documented exit code and a one-line message."""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_VERDICT_FAILED = 1
EXIT_USAGE = 2
EXIT_STEPS_FAILED = 3
EXIT_STORAGE = 4
EXIT_INTERRUPTED = 130


class BenchError(Exception):
    """Base of every error the harness reports to the user as one line."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(BenchError):
    """Bad command line: unknown subcommand, malformed key=value, unknown suite."""


class ConfigError(BenchError):
    """A suite or inventory file is malformed. Names the file and line when known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path:
            where = f"{path}:{line}: " if line else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class LabError(BenchError):
    """The loopback lab could not be created, inspected or removed."""


class TransportError(BenchError):
    """A host could not be reached, authenticated or verified, or a command could not be started.

    `kind` tells these apart: ``unreachable``, ``auth_failed``, ``host_key_changed``,
    ``host_key_unknown``.
    """

    exit_code = EXIT_STEPS_FAILED

    def __init__(self, host: str, message: str, kind: str = "unreachable") -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.kind = kind


class ToolFailure(BenchError):
    """A tool ran but reported an error, crashed, or printed nothing usable.

    `kind` is a short stable classification (e.g. ``no_device``, ``connect_failed``,
    ``tool_missing``, ``crashed``) that reports and tests can rely on. ``records`` are rows the
    tool did print (wrong results flagged ``kind: invalid``): the runner stores them with the
    failed step, so what was measured is kept without ever counting as a passing value.
    """

    exit_code = EXIT_STEPS_FAILED

    def __init__(self, kind: str, message: str, records: list[dict[str, Any]] | None = None,
                 host: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.records: list[dict[str, Any]] = list(records or [])
        self.host = host  # the host it failed on, when the tool knows (``tool_missing`` of torch)


class StorageError(BenchError):
    """Results could not be written (disk full, read-only, no permission); what was written is intact."""

    exit_code = EXIT_STORAGE


class StepsFailed(BenchError):
    """The run finished but some steps could not run; their samples are missing."""

    exit_code = EXIT_STEPS_FAILED


class VerdictFailed(BenchError):
    """The run finished and at least one pass/fail check failed."""

    exit_code = EXIT_VERDICT_FAILED


class Interrupted(BenchError):
    """The run was stopped by SIGINT or SIGTERM; what was measured is kept."""

    exit_code = EXIT_INTERRUPTED
