"""Telemetry around a run: host facts and preflight before it, samplers and counters per step.

The probe and the sampler are stdlib-only scripts copied to each host and run with the host's
own ``python3``. Nothing here may break a measurement: a host whose telemetry fails is recorded
as such and the run goes on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, Protocol

from benchharness.core.errors import BenchError, ToolFailure
from benchharness.core.model import Host, Step, Verdict
from benchharness.core.naming import safe_name
from benchharness.core.values import as_list
from benchharness.telemetry import requirements
from benchharness.telemetry.counters import delta
from benchharness.telemetry.gpu_step import interval_temperatures, sampler_gpu_vendor, throttle_record
from benchharness.telemetry.health import snapshot_seconds, step_context
from benchharness.telemetry.module_step import module_temperatures
from benchharness.telemetry.parsers.sampler import read_sampler
from benchharness.telemetry.series import write_series
from benchharness.transport import Process, Transport


class Runner(Protocol):
    """What an observer uses of the runner that calls it (``execution.runner.Runner``)."""

    plan: Any  # .hosts and .steps
    run_dir: Any  # write_json, write_text, append_samples
    down: dict[str, str]

    def transport(self, host: Host) -> Transport: ...
    def step_limit_s(self, step: Step) -> float: ...
    def track(self, proc: Process) -> None: ...
    def untrack(self, proc: Process) -> None: ...

PAIR_PATTERNS = ("pairs", "all-pairs", "ring", "self")
SAMPLER_GRACE_S = 3.0
"""The sampler's host-side limit runs this long past the step's time limit (as the tools' do)."""
SAMPLER_END_WAIT_S = 30.0
"""How long a step's end waits for each sampler's last counter snapshot once its stdin closes.
The snapshot runs ``ethtool -S`` and ``rdma statistic`` (5 s limit each) and the exit crosses
SSH: 10 s cut a slow host's (an emulated VM's) end snapshot off and lost its whole delta."""
REMOTE_DIR = "/tmp/benchharness-telemetry"


def script_path(name: str) -> str:
    """Local path of a program shipped for hosts (``onhost/``: probe.py, sampler.py)."""
    return str(resources.files("benchharness.onhost") / name)


def stage_script(transport: Transport, name: str) -> str:
    """The script's path on the host: the package file locally, a copy under /tmp remotely."""
    if transport.host.local:
        return script_path(name)
    remote = f"{REMOTE_DIR}/{name}"
    # Hosts that share a file system (a lab, an NFS home) must never read a half-copied script:
    # each copies to a name of its own and renames it into place, which is atomic.
    partial = f"{remote}.{transport.host.name}.partial"
    transport.put(script_path(name), partial)
    rc, _, err, _ = transport.run(["mv", "-f", partial, remote], timeout=30)
    if rc != 0:
        raise ToolFailure("upload_failed", f"{transport.host.name}: cannot place {remote}: {err.strip()}")
    return remote


def host_python(host: Host) -> str:
    """Interpreter for telemetry scripts: the host's own python3 (``telemetry_python`` overrides)."""
    return str(host.var("telemetry_python") or ("python3" if not host.local else sys.executable))


def probe_argv(host: Host, path: str) -> list[str]:
    """The probe's command line: ``telemetry_root`` (a sysfs/procfs tree read instead of the host's
    own, a lab host standing for a GPU node) and ``telemetry_path`` (directories put first on PATH:
    stand-in nvidia-smi / amd-smi) from the inventory; ``--tools``: the version commands of the tool
    adapters and the telemetry (``requirements.probe_tools``)."""
    argv = [host_python(host), path, "--tools", requirements.probe_tools_arg()]
    if host.var("telemetry_root"):
        argv += ["--root", str(host.var("telemetry_root"))]
    for d in as_list(host.var("telemetry_path")):
        argv += ["--path-prefix", str(d)]
    return argv


def probe_host(transport: Transport, timeout: float = 90.0) -> dict[str, Any]:
    """Facts of one host as the probe prints them; ``{"available": false, ...}`` when it fails."""
    host = transport.host
    try:
        path = stage_script(transport, "probe.py")
        rc, out, err, timed_out = transport.run(probe_argv(host, path), timeout=timeout)
    except BenchError as exc:
        return {"available": False, "reason": exc.message, "host": {"name": host.name}}
    if timed_out:
        return {"available": False, "reason": f"probe ran past {timeout:.0f} s", "host": {"name": host.name}}
    try:
        facts: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        tail = (err.strip() or out.strip()).splitlines()[-1:] or ["no output"]
        return {"available": False, "reason": f"probe exited {rc}: {tail[0]}", "host": {"name": host.name}}
    return facts


def probe_all(transports: Sequence[Transport], workers: int = 32) -> dict[str, dict[str, Any]]:
    """Facts of every host, probed in parallel."""
    if not transports:
        return {}
    with ThreadPoolExecutor(max_workers=min(workers, len(transports))) as pool:
        return dict(zip([t.host.name for t in transports], pool.map(probe_host, transports), strict=True))


def step_pairs(steps: Sequence[Step]) -> list[tuple[str, str]]:
    """Host pairs that exchange traffic in pair patterns (for the MTU-mismatch check)."""
    pairs = {(s.hosts[0].name, s.hosts[1].name) for s in steps
             if s.pattern in PAIR_PATTERNS and len(s.hosts) == 2 and s.hosts[0].name != s.hosts[1].name}
    return sorted(pairs)


def sampler_argv(host: Host, path: str, interval: float, counters_every: float = 0.0,
                 module_every: float = 0.0) -> list[str]:
    """The sampler's command line, watching every rail of ``host`` (its netdevs and RDMA ports);
    ``counters_every``: a counter snapshot every N seconds too (``telemetry/series.py``);
    ``module_every``: the transceivers' ``ethtool -m`` every N seconds (``telemetry/module_step.py``)."""
    argv = [host_python(host), path, "--interval", str(interval), "--edge-snapshots", "--stop-on-eof"]
    if counters_every > 0:
        argv += ["--counters-every", f"{counters_every:g}"]
    if module_every > 0:
        argv += ["--module-every", f"{module_every:g}"]
    if host.var("telemetry_root"):
        argv += ["--root", str(host.var("telemetry_root"))]
    if host.var("telemetry_cpu_cgroup"):  # the host's CPU is a cgroup's (a container, a lab host)
        argv += ["--cpu-cgroup", str(host.var("telemetry_cpu_cgroup"))]
    vendor = sampler_gpu_vendor(host)
    if vendor:
        argv += ["--gpu", vendor]
    for d in as_list(host.var("telemetry_path")):  # stand-in nvidia-smi, ethtool ... first on PATH
        argv += ["--path-prefix", str(d)]
    rails = host.nics()
    for netdev in dict.fromkeys(r.netdev for r in rails if r.netdev):
        argv += ["--netdev", str(netdev)]
    for rail in rails:
        if rail.rdma_dev:
            argv += ["--rdma-dev", f"{rail.rdma_dev}/{rail.rdma_port}" if host.rails or host.var("rdma_port")
                     else str(rail.rdma_dev)]
    return argv


def rail_counters(host: Host, d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Counter highlights per rail (``rail3`` -> highlights) from one host's step delta."""
    from benchharness.telemetry.parsers._counter_names import highlights

    out: dict[str, dict[str, Any]] = {}
    counters = d.get("counters") or {}
    for rail in host.nics():
        objects = {o for o in (rail.netdev, f"{rail.rdma_dev}/{rail.rdma_port}") if o}
        mine = {k: v for k, v in counters.items() if k.count(":") >= 2 and k.split(":")[1] in objects}
        if mine:
            out[rail.name] = highlights(mine)
    return out




def split_sampler_output(text: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Interval lines (GPU temperatures folded in) and the start/end counter snapshots of one
    sampler run (read by ``telemetry/parsers/sampler.read_sampler``)."""
    out = read_sampler(text)
    snaps = {s.phase: dict(s.counters) for s in out.snapshots}
    return fold_sensors([dict(line.raw) for line in out.lines]), snaps


#: Raw tool text a sample line may carry -> its parser into sensors (°C), run on the controller.
RAW_SENSORS = (("gpu_raw", interval_temperatures), ("module_raw", module_temperatures))


def fold_sensors(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sample lines with each raw tool text (``RAW_SENSORS``) parsed into ``temps`` and dropped."""
    for line in lines:
        for key, parse in RAW_SENSORS:
            raw = line.pop(key, None)
            if raw is not None:
                line["temps"] = {**(line.get("temps") or {}), **parse(raw)}
    return lines


def sampler_gpu_edges(text: str) -> dict[str, Any]:
    """The GPU tool's raw throttle state at the step's start and end (``--gpu``), by phase."""
    return {s.phase: s.gpu for s in read_sampler(text).snapshots if s.gpu is not None}


class TelemetryObserver:
    """Runner observer: facts + preflight at the start, a sampler on every host of every step."""

    def __init__(self, interval: float = 1.0, per_step: bool = True, counters_every: float = 0.0,
                 module_every: float = 0.0) -> None:
        self.interval = interval
        self.counters_every = counters_every
        self.module_every = module_every
        self.per_step = per_step
        self.facts: dict[str, dict[str, Any]] = {}
        self.preflight: list[Verdict] = []
        self._samplers: dict[str, list[tuple[Host, Process]]] = {}
        self._paths: dict[str, str] = {}
        self._hosts: dict[str, Host] = {}

    def start_run(self, runner: Runner) -> None:
        from benchharness.telemetry.preflight import run_findings, to_verdict

        hosts = [h for h in runner.plan.hosts if h.name not in runner.down]
        # the runner's bound on hosts handled at once (suite setting max_connections); stand-in
        # runners of tests may not have one
        workers = int(getattr(runner, "max_connections", 32))
        self.facts = probe_all([runner.transport(h) for h in hosts], workers=workers)
        for name, facts in self.facts.items():
            runner.run_dir.write_json(f"telemetry/facts/{safe_name(name)}.json", facts)
        records = run_findings(self.facts, hosts, step_pairs(runner.plan.steps))
        self.preflight = [to_verdict(r) for r in records]
        self._hosts = {h.name: h for h in hosts}
        runner.run_dir.write_json("telemetry/preflight.json", records)
        if self.per_step and hosts:
            def stage(host: Host) -> None:
                try:
                    self._paths[host.name] = stage_script(runner.transport(host), "sampler.py")
                except BenchError as exc:
                    print(f"warning: {host.name}: no sampler this run: {exc.message}", file=sys.stderr)

            # in parallel, as the probe: one host after another cost a thousand hosts minutes
            with ThreadPoolExecutor(max_workers=min(workers, len(hosts))) as pool:
                list(pool.map(stage, hosts))

    def before_step(self, runner: Runner, step: Step) -> None:
        started = []
        # a step's hosts may be rail views (one NIC each): the sampler watches every rail of the host
        for host in {h.name: self._hosts.get(h.name, h) for h in step.hosts}.values():
            path = self._paths.get(host.name)
            if path is None or host.name in runner.down:
                continue
            # The sampler ends by itself with the step's other host-side processes: it must not
            # outlive a step whose controller lost the host (stdin then never closes).
            proc = runner.transport(host).start(sampler_argv(host, path, self.interval, self.counters_every, self.module_every), stdin=True,
                                                limit_s=runner.step_limit_s(step) + SAMPLER_GRACE_S)
            runner.track(proc)
            started.append((host, proc))
        self._samplers[step.id] = started

    def after_step(self, runner: Runner, step: Step) -> None:
        counters: dict[str, Any] = {}
        records = []
        samplers = self._samplers.pop(step.id, [])
        for _, proc in samplers:  # every host takes its end snapshot at once
            proc.close_stdin()
        for host, proc in samplers:
            if proc.wait(SAMPLER_END_WAIT_S) is None:
                proc.stop(1.0)
            runner.untrack(proc)
            lines, snaps = split_sampler_output(proc.stdout)
            missing = [p for p in ("start", "end") if p not in snaps]
            if missing:
                said = " ".join(proc.stderr.split())[-200:] or "nothing on stderr"
                print(f"warning: {host.name}: {step.id}: no counter delta: the sampler gave no "
                      f"{' or '.join(missing)} snapshot (exit {proc.poll()}; "
                      f"{said})", file=sys.stderr)
            write_series(runner.run_dir, step.id, host.name, proc.stdout)
            edges = sampler_gpu_edges(proc.stdout)
            gpu = throttle_record(edges.get("start"), edges.get("end"))
            if gpu is not None:
                runner.run_dir.write_json(f"telemetry/gpu/{safe_name(step.id)}/{safe_name(host.name)}.json", gpu)
            if lines:
                runner.run_dir.write_text(f"telemetry/samples/{safe_name(step.id)}/{safe_name(host.name)}.jsonl",
                                          "".join(json.dumps(line) + "\n" for line in lines))
            if "start" in snaps and "end" in snaps:
                d = delta(snaps["start"], snaps["end"])
                d["context"] = step_context(self._hosts.get(host.name, host), step, snapshot_seconds(proc.stdout))
                counters[host.name] = d
                records.append({**step.sample_labels(), "kind": "counters", "host": host.name,
                                **{f"ctr_{k}": v for k, v in _flat_highlights(d).items()}})
                full = self._hosts.get(host.name, host)
                per_rail = rail_counters(full, d) if len(full.nics()) > 1 else {}
                if per_rail:
                    d["rails"] = per_rail
                for rail, hl in per_rail.items():
                    records.append({**step.sample_labels(), "kind": "counters", "host": host.name,
                                    "counter_rail": rail,
                                    **{f"ctr_{k}": v for k, v in _flat_highlights({"highlights": hl}).items()}})
        if counters:
            runner.run_dir.write_json(f"telemetry/counters/{safe_name(step.id)}.json", counters)
            runner.run_dir.append_samples(records)

    def end_run(self, runner: Runner) -> None:
        for step_id in list(self._samplers):
            for _, proc in self._samplers.pop(step_id):
                proc.stop(0.5)


def _flat_highlights(d: dict[str, Any]) -> dict[str, int]:
    """Counter highlights (PFC pauses per priority, ECN/CNP, discards ...) as flat integer fields."""
    flat: dict[str, int] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}_{key}" if prefix else str(key), sub)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[prefix] = int(value)

    walk("", d.get("highlights") or {})
    return flat
