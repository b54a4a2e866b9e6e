"""Simulated hosts: a transport with injected latency and failures, nothing started anywhere.

What the controller does for a thousand hosts (connections, the probe, rounds of steps) costs
the controller the same whether the hosts are real or not, apart from the wait for them. This
transport stands in for SSH at that scale: opening a connection waits a few round trips, every
command waits one (``latency_s``, drawn per command), and a ``responder`` says what a command
prints. Hosts named in ``unreachable`` refuse the connection as SSH reports it; a responder may
fail any command. Used by ``benchmarks/controller_scale.py`` and the runner's tests.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from benchharness.core.errors import TransportError
from benchharness.core.model import Host
from benchharness.transport.base import Process, Transport

Responder = Callable[[Host, Sequence[str]], tuple[int, str, str]]
"""(host, argv) -> (exit code, stdout, stderr) of a simulated command."""

HANDSHAKE_ROUND_TRIPS = 3
"""Round trips of an SSH connection set-up (TCP, key exchange, authentication), roughly."""


class FakeProcess(Process):
    """A command that has already ended with its responder's answer (or is a background server
    that waits for ``stop``, when its stdin is kept open)."""

    def __init__(self, rc: int, stdout: str, stderr: str, keep_running: bool = False) -> None:
        super().__init__()
        self.out.append(stdout)
        self.err.append(stderr)
        self._rc: int | None = None if keep_running else rc
        self._final = rc
        self._ended = threading.Event()
        if not keep_running:
            self._ended.set()
            self.out.close()
            self.err.close()

    def close_stdin(self) -> None:
        self._end(self._final)

    def _end(self, rc: int) -> None:
        if not self._ended.is_set():
            self._rc = rc
            self.out.close()
            self.err.close()
            self._ended.set()

    def poll(self) -> int | None:
        return self._rc

    def wait(self, timeout: float | None = None) -> int | None:
        self._ended.wait(timeout)
        return self._rc

    def stop(self, grace_s: float = 2.0) -> None:
        self._end(143)  # SIGTERM, in the shell's convention


@dataclass
class FakeFleet:
    """The simulated cluster: latency, who is unreachable, what commands print."""

    responder: Responder
    latency_s: tuple[float, float] = (0.02, 0.05)
    unreachable: Collection[str] = ()
    seed: int = 1
    commands: int = 0
    """Commands started on all hosts together (a count for benchmarks)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def delay(self) -> float:
        """One round trip, drawn from ``latency_s``."""
        with self._lock:
            self.commands += 1
            return self._rng.uniform(*self.latency_s)

    def transport(self, host: Host) -> FakeTransport:
        """The launcher protocol of ``transport_for``: one simulated transport per host."""
        return FakeTransport(host, self)

    def close(self) -> None:
        """Nothing to release (the launcher protocol)."""


class FakeTransport(Transport):
    """One simulated host of a ``FakeFleet``."""

    def __init__(self, host: Host, fleet: FakeFleet) -> None:
        super().__init__(host)
        self.fleet = fleet
        self._connected = False
        self._lock = threading.Lock()

    def connection(self) -> None:
        """Open the simulated connection: a few round trips, or SSH's unreachable error."""
        with self._lock:
            if self._connected:
                return
            time.sleep(self.fleet.delay() * HANDSHAKE_ROUND_TRIPS)
            if self.host.name in self.fleet.unreachable:
                raise TransportError(self.host.name, f"unreachable: {self.host.address}:{self.host.port} "
                                     "refused the connection or has no route (simulated)")
            self._connected = True

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              limit_s: float | None = None, stdin: bool = False) -> Process:
        if not argv:
            raise TransportError(self.host.name, "empty command line")
        self.connection()
        time.sleep(self.fleet.delay())
        rc, out, err = self.fleet.responder(self.host, list(argv))
        return FakeProcess(rc, out, err, keep_running=stdin)

    def put(self, local_path: str, remote_path: str) -> None:
        self.connection()
        time.sleep(self.fleet.delay())

    def get(self, remote_path: str, local_path: str) -> None:
        self.connection()
        time.sleep(self.fleet.delay())
