"""Tool ``torch``: torch.distributed collectives on the hosts' own Python and torch.

The host program is ``benchharness.onhost.torch_dist`` (copied to every host), which prints
nccl-tests' table, so its samples (``busbw_GBps`` over ``size_bytes``) sit beside nccl-tests' in one
chart. Backend ``nccl`` on NVIDIA and AMD (RCCL) GPU hosts, ``gloo`` on CPU hosts. Launch:

- ``torchrun`` (default over SSH): one ``torchrun`` per host, c10d rendezvous on the first host's
  management address (``is_host`` set explicitly: node 0 serves the store), or ``rdzv: static``;
- ``mpirun``: one Open MPI launch, ranks read ``OMPI_COMM_WORLD_*``;
- ``srun`` (the default with ``launcher=slurm``): one job step, ranks read ``SLURM_*``, with
  ``container_image`` through pyxis' ``--container-image``.

The interpreter: the suite's ``python``, else host var ``torch_python``, else ``python3``. The
ranks get the NCCL environment of nccl-tests (``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME`` ... from the
inventory's rails) and ``GLOO_SOCKET_IFNAME`` = the hosts' data netdevs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchharness.core.errors import ConfigError, ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_size
from benchharness.tools import nccl_iter
from benchharness.tools.common import ONHOST_DIR, onhost_uploads
from benchharness.tools.mpi_launch import build_srun, check_env, gpu_count, gpu_numa, launch_settings
from benchharness.tools.nccl_debug import parse_nccl_debug
from benchharness.tools.nccl_parse import parse_nccl_tests, with_nranks
from benchharness.tools.nccl_tests import ANY, NcclTests, _mpirun, fabric_env

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
LAUNCHES = ("auto", "torchrun", "mpirun", "srun")
REMOTE_DIR = ONHOST_DIR
PROGRAM = f"{REMOTE_DIR}/torch_dist.py"
MONITOR_INTERVAL_S = 0.5
DEFAULT_PORT = 29400  # torchrun's own default rendezvous port (torch.distributed.run --rdzv_endpoint)

LAUNCH_PARAMS: dict[str, Any] = {
    "backend": "auto", "launch": "auto", "rdzv": "c10d", "python": None, "procs_per_host": None,
    "container_image": None, "container_mounts": None, "env": {}, "timeout": 900, "ib_tc": None, "ib_sl": None,
}
PARAMS: dict[str, Any] = {
    "op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "stepfactor": 2, "iters": 20, "warmup": 5,
    "check": 1, "cpu_maxbytes": "16M", "per_iteration": False, **LAUNCH_PARAMS,
}
_HEADER = re.compile(r"# benchharness torch_dist: torch (\S+) backend (\S+) nccl (\S+) cuda (\S+) hip (\S+)")


def merged(params: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` over ``defaults``; ValueError naming unknown keys."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(defaults)}")
    return {**defaults, **{k: v for k, v in params.items() if v is not None}}


def _positive_int(p: Mapping[str, Any], key: str, minimum: int = 1) -> None:
    value = p[key]
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise ValueError(f"{key}: must be an integer >= {minimum}, not {value!r}")


def check_launch_params(p: Mapping[str, Any]) -> None:
    """The launch settings every torch tool shares; ValueError naming the parameter."""
    if p["backend"] not in ("auto", "nccl", "gloo"):
        raise ValueError(f"backend: {p['backend']!r} is not one of auto, nccl, gloo")
    if p["launch"] not in LAUNCHES:
        raise ValueError(f"launch: {p['launch']!r} is not one of {', '.join(LAUNCHES)}")
    if p["rdzv"] not in ("c10d", "static"):
        raise ValueError(f"rdzv: {p['rdzv']!r} is not c10d or static")
    _positive_int(p, "procs_per_host")
    if isinstance(p["timeout"], bool) or not isinstance(p["timeout"], int | float) or p["timeout"] <= 0:
        raise ValueError(f"timeout: must be a number of seconds > 0, not {p['timeout']!r}")
    for key in ("python", "container_image", "container_mounts"):
        if p[key] is not None and (not isinstance(p[key], str) or not p[key].strip() or "\n" in p[key]):
            raise ValueError(f"{key}: must be a non-empty string")
    if not isinstance(p["env"], Mapping):
        raise ValueError("env: must be a mapping of NAME: value")
    check_env(p["env"])


def check_framework_params(p: Mapping[str, Any], ops: Sequence[str], ints: Mapping[str, int]) -> None:
    """What the JAX, TensorFlow and Horovod tools check alike (merged parameters ``p``): the
    operation among ``ops``, the sweep's sizes, the integers ``ints`` (name: minimum; None allowed),
    the time limit, the interpreter, the environment and the network requirements; ValueError
    naming the parameter."""
    if p["op"] not in ops:
        raise ValueError(f"op: {p['op']!r} is not one of {', '.join(ops)}")
    for key in ("minbytes", "maxbytes", "cpu_maxbytes"):
        parse_size(p[key])
    if parse_size(p["minbytes"]) > parse_size(p["maxbytes"]):
        raise ValueError("minbytes is larger than maxbytes")
    for key, low in ints.items():
        value = p[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"{key}: must be an integer >= {low}, not {value!r}")
    if isinstance(p["timeout"], bool) or not isinstance(p["timeout"], int | float) or p["timeout"] <= 0:
        raise ValueError(f"timeout: must be a number of seconds > 0, not {p['timeout']!r}")
    if p["python"] is not None and (not isinstance(p["python"], str) or not p["python"].strip()):
        raise ValueError("python: must be a non-empty string")
    if not isinstance(p["env"], Mapping):
        raise ValueError("env: must be a mapping of NAME: value")
    check_env(p["env"])
    if p["require_gdr"] is not None and not isinstance(p["require_gdr"], bool) and p["require_gdr"] != ANY:
        raise ValueError("require_gdr: must be true, false or any")
    if p["require_network"] is not None and not isinstance(p["require_network"], str):
        raise ValueError("require_network: must be a name such as IB, Socket or OFI (or any)")


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the parameter when a value is wrong for the sweep."""
    p = merged(params, PARAMS)
    if p["op"] not in OPS:
        raise ValueError(f"op: {p['op']!r} is not one of {', '.join(OPS)}")
    for key in ("minbytes", "maxbytes", "cpu_maxbytes"):
        parse_size(p[key])
    if parse_size(p["minbytes"]) > parse_size(p["maxbytes"]):
        raise ValueError("minbytes is larger than maxbytes")
    for key in ("stepfactor", "iters"):
        _positive_int(p, key)
    for key in ("warmup", "check"):
        _positive_int(p, key, 0)
    if not isinstance(p["per_iteration"], bool):
        raise ValueError(f"per_iteration: must be true or false, not {p['per_iteration']!r}")
    check_launch_params(p)


def has_gpus(hosts: Sequence[Host]) -> bool:
    """True when every host has GPUs, False when none has; ConfigError for a mix."""
    try:
        kinds = {gpu_count(h) > 0 for h in hosts}
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if len(kinds) > 1:
        raise ConfigError(f"hosts {', '.join(h.name for h in hosts)} mix GPU and CPU hosts; "
                          "one torch step needs one kind")
    return kinds == {True}


def rank_env(hosts: Sequence[Host], p: Mapping[str, Any]) -> dict[str, object]:
    """NCCL's fabric settings (as nccl-tests gets them), ``GLOO_SOCKET_IFNAME``, then the suite's ``env``."""
    env = dict(fabric_env(hosts, p))
    netdevs: list[str] = []
    for h in hosts:
        for rail in h.nics():
            if rail.netdev and str(rail.netdev) not in netdevs:
                netdevs.append(str(rail.netdev))
    if netdevs:
        env["GLOO_SOCKET_IFNAME"] = ",".join(netdevs)
    return {**env, **dict(p["env"])}


def framework_env(step: Step, p: Mapping[str, Any], gpus: bool,
                  on_gpus: Mapping[str, str] | None = None) -> dict[str, str]:
    """A framework tool's environment: nccl-tests' NCCL environment and ``GLOO_SOCKET_IFNAME``
    (``rank_env``), on GPU hosts ``on_gpus`` and NCCL's debug log when a check reads it; the
    suite's ``env`` last. ConfigError naming the step when a value is wrong."""
    env = dict(rank_env(step.hosts, {**p, "env": {}}))
    if gpus:
        env |= dict(on_gpus or {})
        if p["nccl_debug"] or p["require_network"] or p["require_gdr"] is not None:
            env |= {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    try:
        return check_env({**env, **dict(p["env"])})
    except ValueError as exc:
        raise ConfigError(f"step {step.id}: {exc}") from exc


def python_of(host: Host, p: Mapping[str, Any]) -> str:
    """The interpreter with torch: the suite's ``python``, host var ``torch_python``, else ``python3``."""
    return str(p["python"] or host.var("torch_python") or "python3")


def launch_commands(step: Step, p: Mapping[str, Any], program: Sequence[str], launcher: str,
                    uploads: tuple[tuple[str, str], ...], per_iteration: bool = False) -> list[Command]:
    """Commands that start ``program`` (a script path and its arguments) as ranks on every step host;
    with ``per_iteration`` each rank runs under nccl-tests' per-iteration wrapper (``nccl_iter.wrap``:
    ``-I 1``, and rank 0's ``-J`` document carried home on stdout), torchrun's with ``--no_python``."""
    gpus = has_gpus(step.hosts)
    launch = p["launch"] if p["launch"] != "auto" else "srun" if launcher == "slurm" else "torchrun"
    slots = [int(p["procs_per_host"] or (gpu_count(h) if gpus else 1) or 1) for h in step.hosts]
    first = step.hosts[0]
    port = step.port or DEFAULT_PORT
    try:
        env = check_env(rank_env(step.hosts, p))
    except ValueError as exc:
        raise ConfigError(f"step {step.id}: {exc}") from exc
    if launch == "torchrun":
        ranks = [[*program, *(numa_args(h, slots[i]) if gpus else [])] for i, h in enumerate(step.hosts)]
        if per_iteration:  # torchrun starts the wrapper, which starts python
            ranks = [["--no_python", *nccl_iter.wrap([python_of(h, p), *r])] for h, r in zip(step.hosts, ranks,
                                                                                              strict=True)]
        return [_torchrun(step, p, i, h, slots[i], port, ranks[i], env, uploads) for i, h in enumerate(step.hosts)]
    env |= {"MASTER_ADDR": first.address, "MASTER_PORT": str(port)}
    argv = [python_of(first, p), *program]
    if per_iteration:
        argv = nccl_iter.wrap(argv)
    if launch == "mpirun":
        one_gpu_each = {"procs_per_host": slots[0] if len(set(slots)) == 1 else None, "gpus_per_proc": 1}
        return _mpirun(step, {**p, **one_gpu_each}, argv, env,
                       gpus=gpus, launch_via=launcher, uploads=uploads)
    return [_srun(step, p, slots, argv, env, gpus, uploads)]


def numa_args(host: Host, nproc: int) -> list[str]:
    """``--numa-nodes`` for the ranks torchrun starts on ``host``: local rank i drives GPU i (the
    program's ``init``) and binds to that GPU's NUMA node (the rails' ``nearest_gpu`` and
    ``numa_node``, the facts mpirun's placement uses); nothing when a rank's node is not known."""
    try:
        nodes = dict(gpu_numa([host]))
    except ValueError:
        return []
    if nproc < 1 or any(i not in nodes for i in range(nproc)):
        return []
    return ["--numa-nodes", ",".join(str(nodes[i]) for i in range(nproc))]


def _torchrun(step: Step, p: Mapping[str, Any], index: int, host: Host, nproc: int, port: int,
              program: Sequence[str], env: Mapping[str, str], uploads: tuple[tuple[str, str], ...]) -> Command:
    first = step.hosts[0]
    rdzv = ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"{first.address}:{port}", "--rdzv_id", step.id,
            "--rdzv_conf", f"is_host={'true' if index == 0 else 'false'}"] if p["rdzv"] == "c10d" else \
           ["--rdzv_backend", "static", "--master_addr", first.address, "--master_port", str(port),
            "--node_rank", str(index)]
    argv = [python_of(host, p), PROGRAM, "torchrun", "--local-addr", host.address, "--",
            "--nnodes", str(len(step.hosts)), "--nproc_per_node", str(nproc), "--max_restarts", "0",
            # torchrun's agent looks at its workers every monitor_interval, and every host's agent
            # waits for the slowest at the exit barrier: torch < 2.2's default of 5 s added up to 5 s
            # to every step (torch 2.2 lowered the default to 0.1 s)
            "--monitor_interval", str(MONITOR_INTERVAL_S), *rdzv, *program]
    return Command(host=host, role="client", argv=tuple(argv), env=dict(env), timeout_s=float(p["timeout"]),
                   label=f"torchrun-{host.name}", uploads=uploads)


def _srun(step: Step, p: Mapping[str, Any], slots: list[int], argv: list[str], env: Mapping[str, str],
          gpus: bool, uploads: tuple[tuple[str, str], ...]) -> Command:
    from benchharness.transport.slurm import node_name, site_args

    first = step.hosts[0]
    extra = site_args(first)
    image = p["container_image"] or first.var("torch_container_image")
    if image:  # pyxis: the image, and the harness' programs mounted where the ranks expect them
        mounts = ",".join(m for m in (f"{REMOTE_DIR}:{REMOTE_DIR}", p["container_mounts"]) if m)
        extra += [f"--container-image={image}", f"--container-mounts={mounts}"]
    try:
        srun_argv, srun_env = build_srun([node_name(h) for h in step.hosts], slots, argv, env, mpi="none",
                                         extra=extra, launch=launch_settings(step.hosts, gpus),
                                         gpus_per_node=max(gpu_count(h) for h in step.hosts) if gpus else 0)
    except ValueError as exc:
        raise ConfigError(f"step {step.id}: {exc}") from exc
    return Command(host=first, role="launcher", argv=tuple(srun_argv), env=srun_env,
                   timeout_s=float(p["timeout"]), label=f"srun-{first.name}", uploads=uploads)


_TORCH_MISSING = re.compile(r"No module named '?(torch)\b")


def check_results(step: Step, results: Sequence[CommandResult], marker: str,
                  missing_module: re.Pattern[str] = _TORCH_MISSING, var: str = "torch_python") -> CommandResult:
    """Rank 0's result (the one that printed ``marker`` and its table); ToolFailure naming the host
    otherwise: ``tool_missing`` where the interpreter lacks a module ``missing_module`` names (and
    which host var sets the interpreter: ``var``). Shared by the framework adapters."""
    if not results:
        raise ToolFailure("no_results", f"step {step.id}: {step.tool} did not run")
    for res in results:
        where = f"step {step.id} on {res.command.host.name}"
        if res.error:
            raise ToolFailure("launch_failed", f"{where}: {res.error}")
        missing = missing_module.search(f"{res.stdout}\n{res.stderr}")
        if missing:
            raise ToolFailure("tool_missing", f"{where}: {res.command.argv[0]} has no {missing.group(1)} "
                              f"(set the suite's python, or host var {var})", host=res.command.host.name)
        if res.timed_out:
            raise ToolFailure("timeout", f"{where}: ran past {res.command.timeout_s:.0f} s")
    mine = [r for r in results if marker in r.stdout]
    bad = [r for r in results if r.rc not in (0, None) and not r.stopped]
    if bad and not mine:
        res = bad[0]
        tail = " | ".join(res.stderr.strip().splitlines()[-3:])
        raise ToolFailure("crashed", f"step {step.id} on {res.command.host.name}: exited with status {res.rc}"
                          + (f": {tail}" if tail else ""))
    if not mine:
        raise ToolFailure("no_results", f"step {step.id}: no rank printed results")
    return mine[0]


def framework_records(text: str, backend: str, op: str | None, extra: Mapping[str, Any]) -> list[Record]:
    """nccl-tests' table as a framework program prints it (JAX, TensorFlow, Horovod), each record
    with ``backend`` and ``extra``; a ToolFailure keeps the complete rows before it."""
    extra = {"backend": backend, **extra}
    try:
        run = parse_nccl_tests(text, collective=op)
    except ToolFailure as exc:
        raise ToolFailure(exc.kind, exc.message, records=[{**r, **extra} for r in exc.records]) from exc
    return [{**r, **extra} for r in run.all_records()]


def framework_step_records(step: Step, results: Sequence[CommandResult], p: Mapping[str, Any], *, marker: str,
                           missing: re.Pattern[str], var: str, backend: str, op: str | None,
                           header: Callable[[str], Record]) -> list[Record]:
    """A framework adapter's ``parse_step``: rank 0's table (``check_results``) with the program's
    ``header`` facts and the network NCCL_DEBUG names on any host, judged by nccl-tests' transport
    check (``p``'s ``expect_transport``); a failure names the host and keeps the rows before it."""
    res = check_results(step, results, marker, missing, var)
    debug = parse_nccl_debug("\n".join(f"{r.stdout}\n{r.stderr}" for r in results))
    extra = {**header(res.stdout), "nccl_network": debug["network"], "nccl_gdr": debug["gdr"]}
    try:
        records = framework_records(f"{res.stdout}\n{res.stderr}", backend, op, extra)
        NcclTests.check_transport(p, debug)
    except ToolFailure as exc:
        kept = [{**step.sample_labels(), **r, "nhosts": len(step.hosts)} for r in exc.records]
        raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}", records=kept) from exc
    return [{**step.sample_labels(), **r, "nhosts": len(step.hosts)} for r in with_nranks(records)]


def framework_text_records(text: str, backend: str, op: str | None, header: Callable[[str], Record]) -> list[Record]:
    """A framework adapter's ``parse_text`` (``bench parse``): the table, header facts and NCCL network."""
    debug = parse_nccl_debug(text)
    return framework_records(text, backend, op, {**header(text), "nccl_network": debug["network"],
                                                 "nccl_gdr": debug["gdr"]})

def sized_for_cpus(p: dict[str, Any], gpus: bool) -> dict[str, Any]:
    """``p`` with the sweep stopped at ``cpu_maxbytes`` on CPU hosts: the GPU sizing (8G) would
    take minutes per size on CPUs."""
    if not gpus and parse_size(p["maxbytes"]) > parse_size(p["cpu_maxbytes"]):
        p |= {"maxbytes": p["cpu_maxbytes"],
              "minbytes": min(parse_size(p["minbytes"]), parse_size(p["cpu_maxbytes"]))}
    return p


def header(text: str) -> Record:
    """``torch_version``, ``torch_backend``, ``nccl_version`` ... from the program's first line."""
    m = _HEADER.search(text)
    if not m:
        return {}
    nccl, cuda, hip = (None if v == "none" else v for v in m.group(3, 4, 5))
    return {"torch_version": m.group(1), "torch_backend": m.group(2), "nccl_version": nccl,
            "cuda_version": cuda, "hip_version": hip}


def _records(text: str, op: str | None) -> list[Record]:
    extra = {"backend": "torch", **header(text)}
    try:
        run = parse_nccl_tests(text, collective=op)
    except ToolFailure as exc:
        raise ToolFailure(exc.kind, exc.message, records=[{**r, **extra} for r in exc.records]) from exc
    return [{**r, **extra} for r in run.all_records()]


class TorchCollectives:
    """torch.distributed collective sweep (``torch_dist.py``), nccl-tests' table and bus bandwidth."""

    name = "torch"
    description = "torch.distributed collectives (nccl on GPUs, gloo on CPUs) under torchrun, mpirun or srun"
    reads = ("the table benchharness.onhost.torch_dist prints (nccl-tests' columns; torch 2.x, backend and "
             "world size in its header), with or without NCCL_DEBUG lines")
    #: A framework in the compatibility matrix (results/frameworks.py), and the other frameworks'
    #: reference where the run has no nccl-tests on the same hosts.
    framework = "PyTorch"
    framework_reference = True
    params = PARAMS
    patterns = ("group", "scaling")

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_params(params)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = sized_for_cpus(merged(step.params, PARAMS), has_gpus(step.hosts))
        program = [PROGRAM, "--op", p["op"], "--backend", p["backend"], "-b", str(parse_size(p["minbytes"])),
                   "-e", str(parse_size(p["maxbytes"])), "-f", str(p["stepfactor"]), "-n", str(p["iters"]),
                   "-w", str(p["warmup"]), "-c", str(p["check"])]
        return launch_commands(step, p, program, launcher, onhost_uploads(REMOTE_DIR, "torch_dist", "iter_json"),
                               per_iteration=bool(p["per_iteration"]))

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = merged(step.params, PARAMS)
        res = check_results(step, results, "# benchharness torch_dist")
        table, _ = nccl_iter.split(res.stdout)
        try:
            records = _records(f"{table}\n{res.stderr}", p["op"])
        except ToolFailure as exc:
            kept = [{**step.sample_labels(), **r, "nhosts": len(step.hosts)} for r in exc.records]
            raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}", records=kept) from exc
        if p["per_iteration"]:  # rank 0's wrapper printed its per-iteration document after the table
            records += nccl_iter.step_records(res.stdout, step.hosts, self.name)
        return [{**step.sample_labels(), **r, "nhosts": len(step.hosts)} for r in with_nranks(records)]

    def parse_text(self, text: str) -> list[Record]:
        return _records(nccl_iter.split(text)[0], None)


ADAPTER = TorchCollectives()
