"""SSH transport (fabric over paramiko): one connection per host, reused by every step.

Host keys are verified against known_hosts by default (the inventory's ``UserKnownHostsFile``,
else the user's own); an unknown or changed key is refused, never silently accepted.
"""

from __future__ import annotations

import contextlib
import copy
import getpass
import posixpath
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.core.errors import ToolFailure, TransportError
from benchharness.core.model import Host
from benchharness.transport.base import OutputBuffer, Process, Transport, shell_exit_code, wrap_command
from benchharness.transport.sshconfig import hop_view

if TYPE_CHECKING:
    import paramiko
    from fabric import Connection

CONNECT_TIMEOUT_S = 10.0
#: Connection set-up retries (sshd's MaxStartups drops, resets); ``ansible_ssh_retries`` overrides.
CONNECT_RETRIES = 8
BACKOFF_S = (0.2, 3.0)  # first delay, largest delay; each delay is jittered down to half


def ssh_error_kind(exc: BaseException) -> str:
    """Failure kind of a connection error: auth_failed, host_key_changed, host_key_unknown or unreachable."""
    import paramiko

    if isinstance(exc, paramiko.BadHostKeyException):
        return "host_key_changed"
    if isinstance(exc, paramiko.AuthenticationException):
        return "auth_failed"
    if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in str(exc):
        return "host_key_unknown"
    return "unreachable"


def retryable(exc: BaseException) -> bool:
    """True for set-up failures a busy sshd causes (MaxStartups drop, reset); never auth or host keys."""
    import paramiko

    if isinstance(exc, paramiko.BadHostKeyException | paramiko.AuthenticationException):
        return False
    if isinstance(exc, ConnectionResetError | ConnectionAbortedError | BrokenPipeError | EOFError):
        return True
    if isinstance(exc, paramiko.SSHException):
        text = str(exc)
        if "known_hosts" in text:
            return False
        return any(s in text for s in ("protocol banner", "reset by peer", "No existing session",
                                       "EOF during negotiation", "Connection lost"))
    return False


def _retry_count(host: Host) -> int:
    try:
        return max(0, min(20, int(host.var("ansible_ssh_retries"))))
    except (TypeError, ValueError):
        return CONNECT_RETRIES


class KeepAlive(threading.Thread):
    """ServerAliveInterval/CountMax: a request every interval; no answer to ``count`` of them ends it.

    paramiko's own keepalive only sends (no reply wanted), so a cut link would wait for TCP to
    give up; here each probe wants a reply (OpenSSH answers keepalive@openssh.com with a failure).
    """

    def __init__(self, transport: paramiko.Transport, interval: float, count: int,
                 on_dead: Callable[[str], None]) -> None:
        super().__init__(daemon=True)
        self.transport, self.interval, self.count, self.on_dead = transport, interval, count, on_dead
        self.stopped = threading.Event()

    def run(self) -> None:
        probe: threading.Thread | None = None
        sent = 0.0
        while not self.stopped.wait(self.interval) and self.transport.is_active():
            if probe is None or not probe.is_alive():
                probe = threading.Thread(target=self._probe, daemon=True)
                sent = time.monotonic()
                probe.start()
            elif time.monotonic() - sent >= self.interval * self.count:
                self.on_dead(f"no answer to {self.count} keep-alives sent every {self.interval:g} s "
                             "(ServerAliveInterval/ServerAliveCountMax)")
                self.transport.close()
                return

    def _probe(self) -> None:
        try:
            self.transport.global_request("keepalive@openssh.com", wait=True)
        except Exception:  # noqa: S110 - a failed probe is the link's problem, seen by the next one
            pass


def describe_ssh_error(exc: BaseException, host: Host) -> str:
    """One line that says what went wrong connecting to ``host`` and what to do."""
    import paramiko

    where = f"{host.user + '@' if host.user else ''}{host.address}:{host.port}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return (f"host key of {where} has CHANGED (got {exc.key.get_name()}); if the host was "
                f"reinstalled, remove its old key from {host.known_hosts or '~/.ssh/known_hosts'}")
    if isinstance(exc, paramiko.AuthenticationException):
        key = f" with key {host.key_file}" if host.key_file else ""
        return f"authentication failed for {where}{key}: {exc}"
    if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in str(exc):
        return (f"host key of {where} is not in {host.known_hosts or '~/.ssh/known_hosts'}; "
                f"verify it and add it (ssh-keyscan) before benchmarking")
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"unreachable: connecting to {where} timed out"
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        return f"unreachable: {where} refused the connection or has no route"
    if isinstance(exc, OSError):
        return f"unreachable: {where}: {exc.strerror or exc}"
    return f"ssh to {where} failed: {exc}"


def _ansible_timeout(host: Host) -> float | None:
    """Ansible's connection timeout of the host (``ansible_timeout``, ``ansible_ssh_timeout``), if set."""
    for name in ("ansible_ssh_timeout", "ansible_timeout"):
        try:
            value = float(host.var(name))
        except (TypeError, ValueError):
            continue
        if value > 0:
            return value
    return None


class SSHProcess(Process):
    """A remote process group on one paramiko channel."""

    def __init__(self, transport: SSHTransport, channel: paramiko.Channel) -> None:
        super().__init__()
        self._transport = transport
        self._chan = channel
        self._readers = [self._pump(channel.recv, self.out), self._pump(channel.recv_stderr, self.err)]

    @staticmethod
    def _pump(read: Callable[[int], bytes], buf: OutputBuffer) -> threading.Thread:
        def pump() -> None:
            try:
                for chunk in iter(lambda: read(65536), b""):
                    buf.append(chunk.decode("utf-8", "replace"))
            except (OSError, EOFError):
                pass
            buf.close()
        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        return thread

    def close_stdin(self) -> None:
        try:
            self._chan.shutdown_write()
        except (OSError, EOFError):
            pass

    def poll(self) -> int | None:
        if self._chan.exit_status_ready():
            return self.wait(0)
        if self._chan.closed:
            return -1
        return None

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._chan.status_event.wait(0.5 if deadline is None else
                                               max(0.0, min(0.5, deadline - time.monotonic()))):
            if self._chan.closed or self._transport.lost is not None:
                return -1  # nothing more will come from this channel
            if deadline is not None and time.monotonic() >= deadline:
                return None
        for reader in self._readers:
            reader.join(2.0)
        return shell_exit_code(self._chan.recv_exit_status(), self.err.text())

    def stop(self, grace_s: float = 2.0) -> None:
        pgid = self.pgid(timeout=0.5)
        if pgid is not None and pgid > 1:
            self._transport.kill_group(pgid, grace_s)
        self._chan.close()
        for reader in self._readers:
            reader.join(2.0)


class SSHTransport(Transport):
    """Runs commands on a host over SSH; connects lazily and reconnects once if the link drops."""

    def __init__(self, host: Host, connect_timeout: float | None = None) -> None:
        super().__init__(host)
        self.connect_timeout = (connect_timeout or _ansible_timeout(host) or host.ssh.get("connect_timeout")
                                or CONNECT_TIMEOUT_S)
        self._conn: Connection | None = None
        self._keepalive: KeepAlive | None = None
        #: Connection set-ups that were tried again (busy sshd), for run.json.
        self.retries = 0
        self.retry_reasons: list[str] = []
        self._lock = threading.Lock()
        #: Set when a process could not be stopped because the host stopped answering.
        self.lost: TransportError | None = None

    def _make_connection(self, host: str, port: int, user: str | None, gateway: Any,
                         key_files: Sequence[str], known_hosts: str | None) -> Connection:
        import paramiko
        from fabric import Config, Connection

        connect_kwargs: dict[str, Any] = {"banner_timeout": self.connect_timeout,
                                          "auth_timeout": self.connect_timeout}
        if key_files:
            connect_kwargs["key_filename"] = list(key_files)
            connect_kwargs["look_for_keys"] = False
        # The SSH view is resolved already (sshconfig); fabric must not apply ssh_config again.
        conn = Connection(host, user=user or getpass.getuser(), port=port, gateway=gateway,
                          config=Config(ssh_config=paramiko.SSHConfig()),
                          connect_timeout=self.connect_timeout, connect_kwargs=connect_kwargs)
        client: paramiko.SSHClient = conn.client
        # fabric accepts unknown keys by default; benchmarks must not.
        if self.host.strict_host_keys:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # accept-new; a changed key still fails
        if known_hosts:
            client._system_host_keys = paramiko.HostKeys()  # type: ignore[attr-defined]  # only the inventory's file counts
            try:
                client.load_host_keys(known_hosts)
            except OSError as exc:
                raise TransportError(self.host.name, f"cannot read known_hosts {known_hosts}: "
                                                     f"{exc.strerror}") from exc
        return conn

    def _key_files(self) -> list[str]:
        return list(self.host.ssh.get("key_files") or ([self.host.key_file] if self.host.key_file else []))

    def _chain(self) -> Connection:
        """The host's connection behind its ProxyCommand or ProxyJump hops (not opened yet)."""
        gateway: Any = self.host.proxy_command
        if self.host.proxy_jump and not gateway:
            for spec in self.host.proxy_jump.split(","):
                hop = hop_view(spec, self.host.ssh.get("config_file"))
                # A hop the config file does not describe is reached as the host is: same user, key, known_hosts.
                gateway = self._make_connection(hop.address, hop.port, hop.user or self.host.user, gateway,
                                                hop.key_files or self._key_files(),
                                                hop.known_hosts or self.host.known_hosts)
        return self._make_connection(self.host.address, self.host.port, self.host.user, gateway,
                                     self._key_files(), self.host.known_hosts)

    def _open(self) -> Connection:
        """Open the chain, trying again with bounded, jittered backoff while sshd is only busy."""
        retries = _retry_count(self.host)
        for attempt in range(retries + 1):
            conn = self._chain()
            try:
                conn.open()
                return conn
            except Exception as exc:
                with contextlib.suppress(Exception):
                    conn.close()
                if attempt == retries or not retryable(exc):
                    raise TransportError(self.host.name, describe_ssh_error(exc, self.host)
                                         + (f" (after {attempt} retries)" if attempt else ""),
                                         kind=ssh_error_kind(exc)) from exc
                self.retries += 1
                self.retry_reasons.append(str(exc)[:120])
                delay = min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** attempt)
                time.sleep(random.uniform(delay / 2, delay))
        raise AssertionError("unreachable")

    def _lost_link(self, why: str) -> None:
        self.lost = TransportError(self.host.name, f"unreachable: {why}", kind="unreachable")

    def connection(self) -> Connection:
        """The open connection to this host, made on first use."""
        with self._lock:
            if self._conn is not None and self._conn.is_connected:
                return self._conn
            if self.lost is not None:
                raise copy.copy(self.lost)
            conn = self._open()
            transport = conn.client.get_transport()
            if transport is not None:
                interval = self.host.ssh.get("keepalive_s")
                if interval:
                    self._keepalive = KeepAlive(transport, float(interval),
                                                int(self.host.ssh.get("keepalive_count") or 3), self._lost_link)
                    self._keepalive.start()
                else:
                    transport.set_keepalive(15)
            self._conn = conn
            return conn

    def _channel(self) -> paramiko.Channel:
        if self.lost is not None:  # once it stopped answering, fail at once instead of waiting again
            raise copy.copy(self.lost)
        try:
            return self._open_channel()
        except TransportError as exc:
            self.lost = exc
            raise

    def _open_channel(self) -> paramiko.Channel:
        for attempt in (1, 2):
            conn = self.connection()
            transport = conn.client.get_transport()
            try:
                if transport is None:
                    raise OSError("no transport")
                return transport.open_session(timeout=self.connect_timeout)
            except Exception as exc:
                with self._lock:
                    self._conn = None
                if attempt == 2:
                    raise TransportError(self.host.name, f"cannot open an SSH session: {exc}") from exc
        raise AssertionError("unreachable")

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              limit_s: float | None = None, stdin: bool = False) -> Process:
        if not argv:
            raise TransportError(self.host.name, "empty command line")
        chan = self._channel()
        chan.exec_command(wrap_command(argv, env, limit_s))
        if not stdin:
            chan.shutdown_write()  # the tool sees end of input, as with </dev/null
        return SSHProcess(self, chan)

    def kill_group(self, pgid: int, grace_s: float = 2.0) -> None:
        """SIGTERM a remote process group, then SIGKILL whatever is left after ``grace_s``."""
        steps = max(1, int(grace_s / 0.1))
        script = (f"kill -TERM -- -{pgid} 2>/dev/null || exit 0; i=0; "
                  f"while kill -0 -- -{pgid} 2>/dev/null && [ $i -lt {steps} ]; do sleep 0.1; i=$((i+1)); done; "
                  f"kill -KILL -- -{pgid} 2>/dev/null; exit 0")
        try:
            chan = self._channel()
            chan.exec_command(script)
            chan.status_event.wait(grace_s + 10)
            chan.close()
        except TransportError as exc:
            # The host-side `timeout` of wrap_command still ends the group there.
            self.lost = exc
        except OSError:
            pass

    def put(self, local_path: str, remote_path: str) -> None:
        folder = posixpath.dirname(remote_path)
        if folder:
            rc, _, err, _ = self.run(["mkdir", "-p", folder], timeout=30)
            if rc != 0:
                raise ToolFailure("upload_failed", f"{self.host.name}: cannot create {folder}: {err.strip()}")
        try:
            self.connection().put(local_path, remote_path)
        except OSError as exc:
            raise ToolFailure("upload_failed",
                              f"{self.host.name}: cannot copy {local_path} to {remote_path}: {exc}") from exc

    def get(self, remote_path: str, local_path: str) -> None:
        try:
            self.connection().get(remote_path, local_path)
        except OSError as exc:
            raise ToolFailure("download_failed",
                              f"{self.host.name}: cannot copy {remote_path} from the host: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._keepalive is not None:
                self._keepalive.stopped.set()
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None
