"""Executes a plan: rounds of concurrent steps, raw output and samples stored after every step.

Nothing measured is lost: samples and raw output are written as each step ends, and on any
exit path (error, SIGINT, SIGTERM) every process the run started is stopped on its host.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from benchharness.core.errors import ToolFailure, TransportError
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.execution import clocks, faults
from benchharness.execution.events import StepEvent
from benchharness.results.store import RunDir
from benchharness.tools import get_tool
from benchharness.transport import Process, Transport, transport_for

if TYPE_CHECKING:
    from benchharness.planning.plan import Plan

READY_TIMEOUT_S = 30.0
SERVER_EXIT_GRACE_S = 0.5
MAX_CONNECTIONS = 32
"""Hosts the controller connects to, probes or reads the clock of at once (the suite setting
``max_connections``). Steps of one round always run together: that is the measurement."""
HOST_GRACE_S = 3.0
"""Host-side limits run this long past the step's time limit (start skew between hosts); the
host's own ``timeout`` then sends SIGTERM, and SIGKILL 2 s later (``transport.base.wrap_command``),
so everything a step started on a host ends by itself even when the controller cannot reach it."""


class StepObserver(Protocol):
    """Telemetry and other hooks around steps; none may break the run."""

    def start_run(self, runner: Runner) -> None: ...
    def before_step(self, runner: Runner, step: Step) -> None: ...
    def after_step(self, runner: Runner, step: Step) -> None: ...
    def end_run(self, runner: Runner) -> None: ...


@dataclass
class StepOutcome:
    """How one step ended."""

    step: Step
    status: str  # ok | failed | skipped
    kind: str = ""
    message: str = ""
    host: str | None = None
    samples: int = 0
    started: float = 0.0
    ended: float = 0.0
    limit_s: float | None = None  # the step's time limit (``Runner.step_limit_s``)


@dataclass
class RunOutcome:
    """How the whole run ended."""

    outcomes: list[StepOutcome] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> list[StepOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


class _Stop(Exception):
    """SIGTERM, turned into an exception in the main thread."""


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C while a run is in progress (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: Any) -> None:
        raise _Stop()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Runner:
    """Runs a plan into a run directory."""

    def __init__(self, plan: Plan, run_dir: RunDir, observers: Sequence[StepObserver] = (),
                 done_steps: set[str] | None = None, max_connections: int = MAX_CONNECTIONS,
                 progress: Callable[[StepEvent], None] | None = None, launcher: Any = None) -> None:
        self.plan = plan
        self.launcher = launcher  # None: SSH/local per host; else e.g. a SlurmLauncher
        self.run_dir = run_dir
        self.observers = list(observers)
        self.done_steps = done_steps or set()
        self.max_connections = max_connections
        self.progress = progress or (lambda event: None)
        self.transports: dict[str, Transport] = {}
        self.down: dict[str, str] = {}
        self.down_kinds: dict[str, str] = {}  # unreachable | auth_failed | host_key_changed | ...
        self._live: set[Process] = set()
        self._commands: dict[str, list[Command]] = {}
        self._waits: dict[int, float] = {}
        self.clocks: dict[str, clocks.ClockOffset] = {}
        """Each host's clock offset, for clients that start at one agreed instant (``clocks``)."""
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    # -- hosts -------------------------------------------------------------------------------
    def transport(self, host: Host) -> Transport:
        """The one transport of ``host``, created on first use."""
        with self._lock:
            if host.name not in self.transports:
                self.transports[host.name] = transport_for(host, self.launcher)
            return self.transports[host.name]

    def connect_all(self) -> None:
        """Open every host's connection in parallel; unreachable hosts are marked down."""
        remote = [h for h in self.plan.hosts if not h.local]
        if not remote:
            return

        def connect(host: Host) -> None:
            conn = getattr(self.transport(host), "connection", None)
            if conn is None:
                return
            try:
                conn()
            except TransportError as exc:
                self._mark_down(exc)

        with ThreadPoolExecutor(max_workers=min(self.max_connections, len(remote))) as pool:
            list(pool.map(connect, remote))
        self.measure_clocks()

    def measure_clocks(self) -> None:
        """Every reachable host's clock offset; a host whose clock cannot be read (no GNU date)
        gets none, and steps with it start their clients from the controller, one by one."""
        hosts = [h for h in self.plan.hosts if h.name not in self.down]

        def measure(host: Host) -> None:
            def read() -> str:
                rc, out, _, _ = self.transport(host).run(["date", "+%s.%N"], timeout=10)
                if rc != 0:
                    raise ValueError(out)
                return out

            try:
                found = clocks.ClockOffset(0.0, 0.0) if host.local else clocks.measure_offset(read)
            except (ValueError, IndexError, TransportError):
                return
            with self._lock:
                self.clocks[host.name] = found

        if hosts:
            with ThreadPoolExecutor(max_workers=min(self.max_connections, len(hosts))) as pool:
                list(pool.map(measure, hosts))

    # -- processes ---------------------------------------------------------------------------
    def track(self, proc: Process) -> None:
        """Remember a process this run started, so that every exit path stops it."""
        with self._lock:
            self._live.add(proc)

    def untrack(self, proc: Process) -> None:
        """Forget a process that has ended."""
        with self._lock:
            self._live.discard(proc)

    def stop_everything(self) -> None:
        """Stop every process this run started that may still be alive, on every host."""
        with self._lock:
            live = list(self._live)
        if live:
            with ThreadPoolExecutor(max_workers=min(16, len(live))) as pool:
                list(pool.map(lambda p: p.stop(1.0), live))
        with self._lock:
            self._live.clear()

    def close(self) -> None:
        for transport in self.transports.values():
            try:
                transport.close()
            except Exception:  # noqa: S110 - closing is best effort at the end of a run
                pass
        if self.launcher is not None:
            self._safely(self.launcher.close)  # e.g. cancel the run's Slurm allocation

    # -- the run -----------------------------------------------------------------------------
    def run(self) -> RunOutcome:
        """Execute every round; returns how each step ended. Ctrl-C/SIGTERM stop it cleanly."""
        result = RunOutcome()
        total = len(self.plan.steps)
        finished = 0
        try:
            with _signals_raise():
                self.connect_all()
                for obs in self.observers:
                    self._safely(obs.start_run, self)
                for index, round_steps in enumerate(self.plan.rounds):
                    todo = [s for s in round_steps if s.id not in self.done_steps]
                    if not todo:
                        continue
                    rounds = len(self.plan.rounds)
                    for step in todo:
                        self.progress(StepEvent("started", step, finished + len(self.done_steps), total,
                                                index + 1, rounds))
                    for outcome in self._run_round(todo):
                        result.outcomes.append(outcome)
                        finished += 1
                        failure = f"{outcome.kind}: {outcome.message}" if outcome.status != "ok" else ""
                        self.progress(StepEvent("finished", outcome.step, finished + len(self.done_steps), total,
                                                index + 1, rounds, outcome.status, failure))
        except (KeyboardInterrupt, _Stop):
            result.interrupted = True
            self.stopping.set()
        finally:
            self.stopping.set()
            self.stop_everything()
            for obs in self.observers:
                self._safely(obs.end_run, self)
            self.close()
        return result

    def _run_round(self, steps: list[Step]) -> list[StepOutcome]:
        # Steps always run in worker threads: the main thread only waits, in short slices, so
        # that Ctrl-C and SIGTERM reach it at once; the workers then see `stopping` and end.
        pool = ThreadPoolExecutor(max_workers=len(steps), thread_name_prefix="step")
        futures = [pool.submit(self.run_step, s) for s in steps]
        try:
            outcomes = []
            for fut in futures:
                while True:
                    try:
                        outcomes.append(fut.result(timeout=0.2))
                        break
                    except TimeoutError:
                        continue
            return outcomes
        except BaseException:
            self.stopping.set()
            self.stop_everything()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def _safely(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # telemetry must never break a measurement
            print(f"warning: {getattr(fn, '__qualname__', fn)}: {exc}", file=sys.stderr)

    def step_commands(self, step: Step) -> list[Command]:
        """The step's command lines (built once per step by its tool adapter)."""
        with self._lock:
            found = self._commands.get(step.id)
        if found is None:
            found = get_tool(step.tool).commands(step, launcher=self.plan.launcher)
            with self._lock:
                found = self._commands.setdefault(step.id, found)
        return found

    def step_limit_s(self, step: Step) -> float:
        """The step's time limit: its servers' readiness wait and its longest client (timeout +
        start delay). Every host-side process of the step, telemetry included, ends within it."""
        commands = self.step_commands(step)
        longest = max((c.timeout_s + c.start_delay_s for c in commands if not c.background),
                      default=60.0)
        return longest + (READY_TIMEOUT_S if any(c.background for c in commands) else 0.0)

    def run_step(self, step: Step) -> StepOutcome:
        """Run one step to the end, store its raw output and samples, and say how it went."""
        outcome = StepOutcome(step=step, status="ok", started=time.time())
        dead = [h.name for h in step.hosts if h.name in self.down]
        if dead:
            outcome.status, outcome.kind, outcome.host = "failed", self.down_kinds.get(dead[0], "unreachable"), dead[0]
            outcome.message = self.down[dead[0]]
        elif self.stopping.is_set():
            outcome.status, outcome.kind, outcome.message = "skipped", "interrupted", "run was stopped"
        else:
            for obs in self.observers:
                self._safely(obs.before_step, self, step)
            lost: TransportError | None = None
            try:
                self._execute(step, outcome)
                lost = self._lost(step)
            except TransportError as exc:
                self._mark_down(exc)
                outcome.status, outcome.kind, outcome.host, outcome.message = (
                    "failed", exc.kind, exc.host, exc.message)
            except ToolFailure as exc:
                outcome.status, outcome.kind, outcome.message = "failed", exc.kind, exc.message
                unmet = self._unmet(step, exc)
                if unmet:  # the test said a host may lack it: skipped, not failed
                    outcome.status, outcome.kind, outcome.host, outcome.message = "skipped", "requirement", *unmet
                lost = self._lost(step)
            if lost is not None:  # the step's own failure (a timeout) came from the host going away
                self._mark_down(lost)
                step_kind = f" (the step: {outcome.kind})" if outcome.kind else ""
                outcome.status, outcome.kind, outcome.host = "failed", lost.kind, lost.host
                outcome.message = lost.message + step_kind
            for obs in self.observers:
                self._safely(obs.after_step, self, step)
        outcome.ended = time.time()
        outcome.message = faults.one_line(outcome.message)
        with self._lock:
            self._commands.pop(step.id, None)
        if self.stopping.is_set() and outcome.status == "failed" and outcome.kind not in ("unreachable",):
            outcome.status, outcome.kind = "skipped", "interrupted"
        self._record(outcome)
        return outcome

    def _unmet(self, step: Step, exc: ToolFailure) -> tuple[str, str] | None:
        """(host, message) when the tool is missing what the step's test ``requires:``."""
        if exc.kind != "tool_missing":
            return None
        spec = next((t for t in self.plan.suite.tests if t.name == step.test), None)
        needs = tuple(getattr(spec, "requires", ()) or ())
        if not needs:
            return None
        host = exc.host or ",".join(h.name for h in step.hosts)
        return host, f"skipped: {' and '.join(needs)} not found on {host}"

    def _mark_down(self, exc: TransportError) -> None:
        """Later steps on this host fail at once, with the same kind and message."""
        if exc.host not in self.down:
            self.down[exc.host], self.down_kinds[exc.host] = exc.message, exc.kind

    def _lost(self, step: Step) -> TransportError | None:
        """A host of the step that stopped answering while the step ran (link cut, host hung)."""
        for host in step.hosts:
            lost = getattr(self.transports.get(host.name), "lost", None)
            if isinstance(lost, TransportError):
                reason = lost.message.removeprefix(f"{host.name}: ")
                return TransportError(host.name, "stopped answering during the step (link down or host "
                                      f"hung): {reason}; its processes end at their host-side time limit",
                                      kind="unreachable")
        return None

    def _record(self, o: StepOutcome) -> None:
        self.run_dir.append_step({
            "step": o.step.id, "test": o.step.test, "tool": o.step.tool, "round": o.step.round,
            "rep": o.step.repetition, "hosts": [h.name for h in o.step.hosts], "status": o.status,
            "kind": o.kind, "message": o.message, "host": o.host, "samples": o.samples,
            "started": o.started, "ended": o.ended, "limit_s": o.limit_s,
            "params": dict(o.step.params)})

    def _execute(self, step: Step, outcome: StepOutcome) -> None:
        adapter = get_tool(step.tool)
        commands = self.step_commands(step)
        outcome.limit_s = self.step_limit_s(step)
        results: list[CommandResult] = []
        servers: list[tuple[Command, Process]] = []
        try:
            for cmd in commands:
                # A launcher (mpirun) starts the program on every host of the step: all need the files.
                targets = {h.name: h for h in (step.hosts if cmd.role == "launcher" else (cmd.host,))}
                for host in targets.values():
                    for local_path, remote_path in cmd.uploads:
                        self.transport(host).put(local_path, remote_path)
            for cmd in (c for c in commands if c.background):
                proc = self._start(cmd, limit_s=self.step_limit_s(step) + HOST_GRACE_S)
                servers.append((cmd, proc))
            for cmd, proc in servers:
                if cmd.ready_pattern and not proc.wait_for_output(cmd.ready_pattern, READY_TIMEOUT_S):
                    failure = self._not_ready(adapter, cmd, proc)
                    results += self._stop_all(servers)
                    self._store(step, results)
                    raise failure
            clients = self._start_clients([c for c in commands if not c.background])
            results += [self._finish(cmd, proc) for cmd, proc in clients]
            results += self._stop_all(servers)
            servers = []
        finally:
            if servers:
                results += self._stop_all(servers)
                self._store(step, results)
        self._store(step, results)
        if self.stopping.is_set() and any(r.stopped and not r.command.background for r in results):
            # Its partial output stays in raw/, its samples are not counted; resume runs it again.
            raise ToolFailure("interrupted", f"{step.id}: stopped before it finished")
        missing = faults.missing_tool(results)
        if missing is not None:
            raise missing
        hung, crash = faults.timeout_note(results), faults.crash_note(results)
        labels = step.sample_labels()
        try:
            records = adapter.parse_step(step, results)
        except ToolFailure as exc:
            if exc.records:  # rows the tool printed, flagged (wrong results): kept, and the step fails
                outcome.samples = self.run_dir.append_samples({**labels, **r} for r in exc.records)
            if hung or crash:
                raise ToolFailure("timeout" if hung else "crashed", f"{hung or crash} ({exc.message})") from exc
            raise
        outcome.samples = self.run_dir.append_samples({**labels, **r} for r in records)
        if hung or crash:  # what it measured before it hung or died is kept, and the step fails
            raise ToolFailure("timeout" if hung else "crashed",
                              f"{step.id}: {hung or crash}; {outcome.samples} partial samples kept")
        if not records:
            raise ToolFailure("no_result", f"{step.id}: the tool ran but produced no samples")

    def _start_clients(self, commands: list[Command]) -> list[tuple[Command, Process]]:
        """Start clients in order of ``start_delay_s`` (stable), each at its offset from the first.

        Several clients whose hosts' clocks are known start at one agreed instant that each host
        waits for itself (``clocks``); otherwise the controller starts them one after another."""
        if len(commands) > 1 and all(c.host.name in self.clocks for c in commands):
            return self._start_clients_together(commands)
        t0 = time.monotonic()
        started: list[tuple[Command, Process]] = []
        for cmd in sorted(commands, key=lambda c: c.start_delay_s):
            while not self.stopping.is_set() and time.monotonic() < t0 + cmd.start_delay_s:
                time.sleep(max(0.0, min(0.05, t0 + cmd.start_delay_s - time.monotonic())))
            if self.stopping.is_set():
                break
            started.append((cmd, self._start(cmd, limit_s=cmd.timeout_s + HOST_GRACE_S)))
        return started

    def _start_clients_together(self, commands: list[Command]) -> list[tuple[Command, Process]]:
        lead = clocks.lead_time_s(len(commands), max(self.clocks[c.host.name].rtt_s for c in commands))
        t0 = time.time() + lead
        started: list[tuple[Command, Process]] = []
        for cmd in sorted(commands, key=lambda c: c.start_delay_s):
            if self.stopping.is_set():
                break
            at = t0 + cmd.start_delay_s + self.clocks[cmd.host.name].offset_s
            limit = cmd.timeout_s + HOST_GRACE_S + lead + cmd.start_delay_s
            proc = self.transport(cmd.host).start([*clocks.start_at_argv(at), *cmd.argv], cmd.env,
                                                  limit_s=limit)
            self.track(proc)
            with self._lock:
                self._waits[id(proc)] = lead + cmd.start_delay_s
            started.append((cmd, proc))
        return started

    def _store(self, step: Step, results: list[CommandResult]) -> None:
        for res in results:
            self.run_dir.write_raw(step.id, res)

    def _start(self, cmd: Command, limit_s: float) -> Process:
        proc = self.transport(cmd.host).start(cmd.argv, cmd.env, limit_s=limit_s)
        self.track(proc)
        return proc

    def _finish(self, cmd: Command, proc: Process) -> CommandResult:
        with self._lock:
            waits = self._waits.pop(id(proc), 0.0)  # time it waits on its host for the agreed start
        deadline = time.monotonic() + cmd.timeout_s + waits
        rc = None
        while time.monotonic() < deadline and not self.stopping.is_set():
            rc = proc.wait(min(0.5, max(0.01, deadline - time.monotonic())))
            if rc is not None:
                break
        timed_out = rc is None and not self.stopping.is_set()
        if rc is None:
            proc.stop()
            rc = proc.wait(5.0)
        self.untrack(proc)
        host_start, stderr = clocks.split_start_mark(proc.stderr)
        offset = self.clocks.get(cmd.host.name)
        # A client that waited for the agreed instant started when its host says it did.
        started = host_start - offset.offset_s if host_start is not None and offset else proc.started
        return CommandResult(cmd, rc, proc.stdout, stderr, started, time.time(),
                             timed_out=timed_out, stopped=self.stopping.is_set() and not timed_out)

    def _stop_all(self, servers: list[tuple[Command, Process]]) -> list[CommandResult]:
        results = []
        for cmd, proc in servers:
            rc = proc.poll()
            if rc is None and not self.stopping.is_set():
                # One-off servers (iperf3 -1, perftest, ucx_perftest) end a moment after their
                # client; waiting for that is cheaper than a remote kill (a round trip or more).
                rc = proc.wait(SERVER_EXIT_GRACE_S)
            stopped = rc is None
            if stopped:
                proc.stop(1.0)
                rc = proc.wait(5.0)
            self.untrack(proc)
            results.append(CommandResult(cmd, rc, proc.stdout, proc.stderr, proc.started, time.time(),
                                         stopped=stopped))
        return results

    @staticmethod
    def _not_ready(adapter: Any, cmd: Command, proc: Process) -> ToolFailure:
        rc = proc.wait(1.0)  # if it exited, let its last output arrive
        result = CommandResult(cmd, rc, proc.stdout, proc.stderr, proc.started, time.time())
        classify = getattr(adapter, "classify", None)
        if classify is not None and rc is not None and rc not in (126, 127):
            failure = classify(result)
            if failure is not None:
                return ToolFailure(failure.kind, f"{cmd.host.name}: {cmd.role}: {failure.message}")
        return faults.not_ready(result, READY_TIMEOUT_S)


def summarize_failures(outcomes: Sequence[StepOutcome]) -> list[Record]:
    """Failures as stored in run.json: step, host, kind, message."""
    return [{"step": o.step.id, "host": o.host, "kind": o.kind, "message": o.message}
            for o in outcomes if o.status == "failed"]
