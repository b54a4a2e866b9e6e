"""Local transport: the machine bench runs on, through subprocess. No SSH."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from benchharness.core.errors import TransportError
from benchharness.transport.base import OutputBuffer, Process, Transport


class LocalProcess(Process):
    """A local process group, started with ``start_new_session`` so it can be stopped whole."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None,
                 limit_s: float | None, stdin: bool = False) -> None:
        super().__init__()
        self._popen: subprocess.Popen[bytes] | None
        full_env = dict(os.environ)
        full_env.update(env or {})
        self._popen = None
        try:
            self._popen = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=full_env, start_new_session=True)
        except FileNotFoundError:
            # Same shape as a remote shell's "command not found" so adapters classify it alike.
            self._rc: int | None = 127
            self.err.append(f"{argv[0]}: command not found\n")
            self.out.close()
            self.err.close()
            return
        self._rc = None
        self._readers = [self._reader(self._popen.stdout, self.out), self._reader(self._popen.stderr, self.err)]
        self._deadline = time.monotonic() + limit_s if limit_s else None

    @staticmethod
    def _reader(stream: IO[bytes] | None, buf: OutputBuffer) -> threading.Thread:
        def pump() -> None:
            assert stream is not None
            read = getattr(stream, "read1", stream.read)
            for chunk in iter(lambda: read(65536), b""):
                buf.append(chunk.decode("utf-8", "replace"))
            buf.close()
        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        return thread

    def close_stdin(self) -> None:
        if self._popen is not None and self._popen.stdin is not None:
            try:
                self._popen.stdin.close()
            except OSError:
                pass

    def pgid(self, timeout: float = 5.0) -> int | None:
        return self._popen.pid if self._popen else None

    def poll(self) -> int | None:
        if self._popen is None:
            return self._rc
        rc = self._popen.poll()
        if rc is None and self._deadline and time.monotonic() > self._deadline:
            self.stop()
            rc = self._popen.poll()
        return rc

    def wait(self, timeout: float | None = None) -> int | None:
        if self._popen is None:
            return self._rc
        try:
            rc = self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join(2.0)
        return rc

    def stop(self, grace_s: float = 2.0) -> None:
        if self._popen is None or self._popen.poll() is not None:
            self._kill_group(signal.SIGKILL)  # children that outlived their leader
            return
        self._kill_group(signal.SIGTERM)
        try:
            self._popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        self._kill_group(signal.SIGKILL)
        self.wait(5.0)

    def _kill_group(self, sig: signal.Signals) -> None:
        if self._popen is None:
            return
        try:
            os.killpg(self._popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class LocalTransport(Transport):
    """Runs commands on this machine."""

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              limit_s: float | None = None, stdin: bool = False) -> Process:
        if not argv:
            raise TransportError(self.host.name, "empty command line")
        return LocalProcess(argv, env, limit_s, stdin)

    def put(self, local_path: str, remote_path: str) -> None:
        if os.path.abspath(local_path) != os.path.abspath(remote_path):
            os.makedirs(os.path.dirname(os.path.abspath(remote_path)), exist_ok=True)
            shutil.copyfile(local_path, remote_path)

    def get(self, remote_path: str, local_path: str) -> None:
        self.put(remote_path, local_path)
