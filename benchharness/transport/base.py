"""What a transport is: run, start in the background, stop for sure, copy files.

Every remote process is started in a session of its own (``setsid``) and reports its process
group id first, so that stopping it kills the whole group on that host, whatever the tool forked.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from benchharness.core.model import Host

PGID_MARKER = "BENCH_PGID="

# sh prints its own pid (= the new process group id, since setsid made it a leader) on stderr,
# then replaces itself with the tool.
_WRAPPER = 'echo "' + PGID_MARKER + '$$" >&2; exec "$@"'
# What `setsid -w` says when its child died by a signal; it then exits with the raw wait status
# (the signal number, +128 with a core dump) instead of a shell's 128 + signal.
_SETSID_SIGNALLED = re.compile(r"^setsid: child \d+ did not exit normally.*(?:\n|$)", re.M)


def shell_exit_code(rc: int, stderr: str) -> int:
    """``rc`` of a wrapped command in the shell's convention: 128 + N when signal N killed it."""
    if rc > 0 and _SETSID_SIGNALLED.search(stderr):
        return 128 + (rc & 0x7F)
    return rc


KILL_AFTER_S = 2
"""Seconds between the host-side ``timeout``'s SIGTERM and its SIGKILL."""


def wrap_command(argv: Sequence[str], env: Mapping[str, str] | None = None,
                 limit_s: float | None = None) -> str:
    """Shell command line that runs ``argv`` in a new session and reports its process group.

    With ``limit_s`` the host's own ``timeout`` kills the command even if the harness dies.
    """
    inner = ["setsid", "-w", "sh", "-c", _WRAPPER, "bench-step"]
    if limit_s:
        inner += ["timeout", "-k", str(KILL_AFTER_S), f"{max(1, int(limit_s + 0.999))}"]
    env_args = [f"{k}={v}" for k, v in (env or {}).items()]
    if env_args:
        inner += ["env", *env_args]
    inner += list(argv)
    return "exec " + shlex.join(inner)


class OutputBuffer:
    """Text collected from a stream by a reader thread, with a way to wait for a pattern."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._cond = threading.Condition()
        self.closed = False

    def append(self, text: str) -> None:
        with self._cond:
            self._parts.append(text)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def text(self) -> str:
        with self._cond:
            return "".join(self._parts)

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if pattern.search("".join(self._parts)):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return bool(pattern.search("".join(self._parts)))
                self._cond.wait(min(left, 0.5))


class Process(ABC):
    """A command started on a host; stdout and stderr are collected as they arrive."""

    def __init__(self) -> None:
        self.out = OutputBuffer()
        self.err = OutputBuffer()
        self.started = time.time()

    @property
    def stdout(self) -> str:
        return self.out.text()

    @property
    def stderr(self) -> str:
        """Standard error without the harness's own process-group line."""
        text = "".join(line for line in self.err.text().splitlines(keepends=True)
                       if not line.startswith(PGID_MARKER))
        return _SETSID_SIGNALLED.sub("", text)

    def pgid(self, timeout: float = 5.0) -> int | None:
        """Process group of the remote command, as it reported it."""
        pat = re.compile(PGID_MARKER + r"(\d+)")
        if self.err.wait_for(pat, timeout):
            m = pat.search(self.err.text())
            if m:
                return int(m.group(1))
        return None

    def wait_for_output(self, pattern: str, timeout: float) -> bool:
        """True once ``pattern`` appears on stdout or stderr; False on timeout or exit."""
        pat = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pat.search(self.stdout) or pat.search(self.stderr):
                return True
            if self.poll() is not None:
                return bool(pat.search(self.stdout) or pat.search(self.stderr))
            self.out.wait_for(pat, min(0.2, max(0.0, deadline - time.monotonic())))
        return False

    def close_stdin(self) -> None:  # noqa: B027 - only processes started with stdin=True have one
        """Close the process's standard input (processes started with ``stdin=True``)."""

    @abstractmethod
    def poll(self) -> int | None:
        """Exit code, or None while running."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for exit; the exit code, or None when the timeout passed first."""

    @abstractmethod
    def stop(self, grace_s: float = 2.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace_s``."""


class Transport(ABC):
    """Runs commands on one host. One instance per host, reused across steps."""

    def __init__(self, host: Host) -> None:
        self.host = host

    @abstractmethod
    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              limit_s: float | None = None, stdin: bool = False) -> Process:
        """Start ``argv`` in the background in a process group of its own.

        ``limit_s`` bounds its life on the host itself, even if the harness goes away; with
        ``stdin`` the process keeps a standard input that ``close_stdin`` ends.
        """

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float | None = 60.0) -> tuple[int | None, str, str, bool]:
        """Run to completion: (exit code, stdout, stderr, timed_out). A timeout kills the group."""
        proc = self.start(argv, env, limit_s=timeout + 10 if timeout else None)
        rc = proc.wait(timeout)
        timed_out = rc is None
        if timed_out:
            proc.stop()
            rc = proc.wait(5.0)
        return rc, proc.stdout, proc.stderr, timed_out

    @abstractmethod
    def put(self, local_path: str, remote_path: str) -> None:
        """Copy a file to the host."""

    @abstractmethod
    def get(self, remote_path: str, local_path: str) -> None:
        """Copy a file from the host."""

    def close(self) -> None:  # noqa: B027 - most transports hold nothing to release
        """Release the connection."""
