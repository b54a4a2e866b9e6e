"""Collective benchmarks: nccl-tests, rccl-tests, and the ``collective`` tool that picks one per host kind.

One step is one ``mpirun`` on the step's first host (the launcher) with ranks on every step host
(pattern ``group``, or ``scaling`` where the planner grows the host list). ``collective`` runs
rccl-tests on hosts with ``gpus > 0`` and ``gpu_vendor: amd``, nccl-tests on other GPU hosts, and
the CPU benchmark (``benchharness.onhost.mpi_allreduce``, same table) on hosts without GPUs.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.errors import ConfigError, ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_size
from benchharness.tools import nccl_iter
from benchharness.tools.base import ToolFacts
from benchharness.tools.common import ONHOST_DIR, onhost_uploads
from benchharness.tools.mpi_launch import (
    MPIRUN,
    build_mpirun,
    build_srun,
    check_env,
    gpu_count,
    gpu_numa,
    launch_settings,
    mgmt_netdevs,
    rdma_devices,
)
from benchharness.tools.nccl_debug import hcas_used, network_matches, parse_nccl_debug, rdma_plugin
from benchharness.tools.nccl_parse import NcclRun, parse_nccl_tests, with_nranks

GPU_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce",
                   "sendrecv", "gather", "scatter", "hypercube", "alltoallv")
CPU_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")
REDOPS = ("sum", "prod", "min", "max", "avg", "mulsum", "all")
CPU_PROGRAM = f"{ONHOST_DIR}/mpi_allreduce.py"
#: Pattern ``gpu-pairs``: rank r (one per host) sees only the r-th GPU of the comma list it is given
#: (rank 0 on the step's first host, rank 1 on its second), so that GPU i of one node meets GPU j
#: of the other; where the r-th entry of the NUMA list is known the rank runs on that GPU's NUMA
#: node (mpirun then maps one rank per node and binds none). Open MPI sets OMPI_COMM_WORLD_RANK,
#: Slurm SLURM_PROCID.
GPU_WRAPPER = ('l="$1"; v="$2"; m="$3"; shift 3; r="${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}"; '
               'g=$(printf %s "$l" | cut -d, -f"$((r + 1))"); export "$v=$g"; '
               'n=$(printf %s "$m" | cut -d, -f"$((r + 1))"); '
               'if [ -n "$n" ]; then exec numactl --cpunodebind="$n" --membind="$n" "$@"; fi; exec "$@"')
#: ``require_network: any`` / ``require_gdr: any``: do not check (the defaults check IB and GDR).
ANY = "any"

PARAMS: dict[str, Any] = {
    "op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "stepfactor": 2, "iters": 20, "warmup": 5,
    "check": 1, "redop": None, "datatype": None, "blocking": None, "cudagraph": None, "gpus_per_proc": 1,
    "procs_per_host": None, "env": {}, "nccl_debug": False, "require_network": None, "require_gdr": None,
    "binary_dir": None, "timeout": 900, "ib_tc": None, "ib_sl": None, "cpu_maxbytes": "16M",
    "per_iteration": False, "nccl_algo": None,
}
#: ``nccl_algo``: ``default`` (what NCCL picks as deployed: Tree/NVLS may carry more than the
#: NICs between two nodes) or the NCCL_ALGO value to force, ``Ring`` for the NIC curve (NCCL's
#: maintainers' advice for benchmarking the network: github.com/NVIDIA/nccl-tests/issues/196).
ALGO_DEFAULT = "default"
_ALGO = re.compile(r"^\^?[A-Za-z]+(?:,[A-Za-z]+)*$")
_FLAGS = (("minbytes", "-b"), ("maxbytes", "-e"), ("stepfactor", "-f"), ("iters", "-n"), ("warmup", "-w"),
          ("check", "-c"), ("redop", "-o"), ("datatype", "-d"), ("blocking", "-z"), ("cudagraph", "-G"))


def _merged(params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    return {**PARAMS, **{k: v for k, v in params.items() if v is not None}}


def check_collective_params(params: Mapping[str, Any], ops: Sequence[str] = GPU_COLLECTIVES) -> None:
    """Raise ValueError naming the parameter when a value is wrong."""
    p = _merged(params)
    if p["op"] not in ops:
        raise ValueError(f"op: {p['op']!r} is not one of {', '.join(ops)}")
    for key in ("minbytes", "maxbytes"):
        parse_size(p[key])
    if parse_size(p["minbytes"]) > parse_size(p["maxbytes"]):
        raise ValueError("minbytes is larger than maxbytes")
    for key in ("stepfactor", "iters", "gpus_per_proc"):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
            raise ValueError(f"{key}: must be a positive integer, not {p[key]!r}")
    if isinstance(p["timeout"], bool) or not isinstance(p["timeout"], int | float) or p["timeout"] <= 0:
        raise ValueError(f"timeout: must be a number of seconds > 0, not {p['timeout']!r}")
    for key in ("warmup", "check", "blocking", "cudagraph", "procs_per_host"):
        if p[key] is not None and (isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 0):
            raise ValueError(f"{key}: must be a non-negative integer, not {p[key]!r}")
    for key, top in (("ib_tc", 255), ("ib_sl", 15)):
        if p[key] is not None and (isinstance(p[key], bool) or not isinstance(p[key], int) or not 0 <= p[key] <= top):
            raise ValueError(f"{key}: must be an integer 0..{top}, not {p[key]!r}")
    if p["cpu_maxbytes"] is not None:
        parse_size(p["cpu_maxbytes"])
    if p["procs_per_host"] == 0:
        raise ValueError("procs_per_host: must be at least 1")
    if p["redop"] is not None and p["redop"] not in REDOPS:
        raise ValueError(f"redop: {p['redop']!r} is not one of {', '.join(REDOPS)}")
    if not isinstance(p["env"], Mapping):
        raise ValueError("env: must be a mapping of NAME: value")
    if not isinstance(p["per_iteration"], bool):
        raise ValueError(f"per_iteration: must be true or false, not {p['per_iteration']!r}")
    if p["per_iteration"] and p["cudagraph"]:
        raise ValueError("per_iteration: nccl-tests turns per-iteration timing (-I) off under CUDA graphs "
                         "(cudagraph / -G); drop one of them")
    check_env(p["env"])
    if p["require_gdr"] is not None and not isinstance(p["require_gdr"], bool) and p["require_gdr"] != ANY:
        raise ValueError("require_gdr: must be true, false or any")
    if p["require_network"] is not None and not isinstance(p["require_network"], str):
        raise ValueError("require_network: must be a name such as IB, Socket or OFI (or any)")
    algo = p["nccl_algo"]
    if algo is not None and (not isinstance(algo, str) or (algo != ALGO_DEFAULT and not _ALGO.match(algo))):
        raise ValueError(f"nccl_algo: must be {ALGO_DEFAULT} or an NCCL_ALGO value such as Ring or Tree,Ring, "
                         f"not {algo!r}")


def requirements(p: Mapping[str, Any], hosts: Sequence[Host]) -> dict[str, Any]:
    """``p`` with the transport requirements resolved: on hosts whose every rail list has an RDMA
    device, NCCL must use ``NET/IB`` with GPUDirect RDMA unless the suite says otherwise
    (``require_network: any`` / ``require_gdr: any`` turn a check off)."""
    rdma = bool(hosts) and all(any(r.rdma_dev for r in h.nics()) for h in hosts)
    network = p["require_network"] if p["require_network"] is not None else ("IB" if rdma else None)
    network = None if str(network).lower() == ANY else network
    gdr = p["require_gdr"] if p["require_gdr"] is not None else (True if network == "IB" else None)
    return {**p, "require_network": network, "require_gdr": None if gdr == ANY else gdr}


def _slots(step: Step, p: Mapping[str, Any], gpus: bool) -> list[int]:
    """Ranks per host: ``procs_per_host``, else one per ``gpus_per_proc`` GPUs, else one per CPU host."""
    if p["procs_per_host"]:
        return [int(p["procs_per_host"])] * len(step.hosts)
    if not gpus:
        return [1] * len(step.hosts)
    return [max(1, (gpu_count(h) or 1) // int(p["gpus_per_proc"])) for h in step.hosts]


def fabric_env(hosts: Sequence[Host], p: Mapping[str, Any]) -> dict[str, object]:
    """What NCCL (and RCCL, which reads the same names) is told of the fabric, from the inventory.

    ``NCCL_IB_HCA`` lists every rail's ``device:port`` (``=`` for exact names: ``mlx5_1`` would
    otherwise also select ``mlx5_10``...), ``NCCL_SOCKET_IFNAME`` the management netdev for
    bootstrap and sockets, ``NCCL_IB_GID_INDEX`` the rails' GID index (NCCL takes one for all),
    ``NCCL_IB_TC`` / ``NCCL_IB_SL`` the suite's ``ib_tc`` / ``ib_sl``.
    """
    env: dict[str, object] = {}
    devices = rdma_devices(hosts)
    if devices:
        env["NCCL_IB_HCA"] = "=" + ",".join(devices)
    netdevs = mgmt_netdevs(hosts)
    if netdevs:
        env["NCCL_SOCKET_IFNAME"] = "=" + ",".join(netdevs)
    rails = [(h.name, r) for h in hosts for r in h.nics() if r.rdma_dev]
    roce = bool(rails) and all(r.link == "ethernet" for _, r in rails)  # IB ports need no GID index
    gids = {(h, r.name): r.gid_index for h, r in rails if r.gid_index is not None}
    if roce and len(set(gids.values())) > 1:
        where = ", ".join(f"{h}/{r}={g}" for (h, r), g in gids.items())
        raise ValueError(f"rails disagree on gid_index ({where}); NCCL_IB_GID_INDEX is one value for all")
    if roce and gids:
        env["NCCL_IB_GID_INDEX"] = next(iter(gids.values()))
    tcs = {r.traffic_class for _, r in rails if r.traffic_class is not None}
    if p["ib_tc"] is not None:
        env["NCCL_IB_TC"] = p["ib_tc"]
    elif roce and len(tcs) == 1:
        env["NCCL_IB_TC"] = tcs.pop()
    elif roce and len(tcs) > 1:
        raise ValueError(f"rails disagree on traffic_class ({sorted(tcs)}); NCCL_IB_TC is one value for all")
    if p["ib_sl"] is not None:
        env["NCCL_IB_SL"] = p["ib_sl"]
    plugins = {str(h.var("nccl_net_plugin")) for h in hosts if h.var("nccl_net_plugin")}
    if len(plugins) > 1:
        raise ValueError(f"hosts disagree on nccl_net_plugin ({sorted(plugins)}); NCCL_NET_PLUGIN is one value for all")
    if plugins:  # e.g. AMD's ANP for Pollara rails (docs/collectives.md, "Network plugins")
        env["NCCL_NET_PLUGIN"] = plugins.pop()
    return env


def _mpirun(step: Step, p: Mapping[str, Any], program: list[str], env: Mapping[str, object],
            gpus: bool, launch_via: str, uploads: tuple[tuple[str, str], ...] = ()) -> list[Command]:
    launcher = step.hosts[0]
    mca = {str(k): str(v) for k, v in dict(launcher.var("mpi_mca") or {}).items()}
    slots = _slots(step, p, gpus)
    try:
        launch = launch_settings(step.hosts, gpus, int(p["gpus_per_proc"]))
        if step.pattern == "gpu-pairs":  # one rank per host, bound to its GPU's node by GPU_WRAPPER
            launch = dataclasses.replace(launch, gpu_numa=(), bind_to="none")
        if launch_via == "slurm":
            from benchharness.transport.slurm import node_name, site_args

            argv, srun_env = build_srun([node_name(h) for h in step.hosts], slots, program, env,
                                        mpi=str(launcher.var("slurm_mpi", "pmix")), mca=mca,
                                        extra=site_args(launcher), launch=launch,
                                        gpus_per_node=max(gpu_count(h) for h in step.hosts) if gpus else 0)
            return [Command(host=launcher, role="launcher", argv=tuple(argv), env=srun_env,
                            timeout_s=float(p["timeout"]), label=f"srun-{launcher.name}", uploads=uploads)]
        argv = build_mpirun(step.hosts, slots, program, env, launch=launch,
                            allow_run_as_root=launcher.user in (None, "root") or bool(launcher.var("mpi_allow_root")),
                            mca=mca, mpirun=str(launcher.var("mpirun", "mpirun")))
    except ValueError as exc:
        raise ConfigError(f"step {step.id}: {exc}") from exc
    return [Command(host=launcher, role="launcher", argv=tuple(argv), timeout_s=float(p["timeout"]),
                    label=f"mpirun-{launcher.name}", uploads=uploads)]


def _tool_args(p: Mapping[str, Any], flags: Sequence[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for key, flag in flags:
        value = p[key]
        if value is None:
            continue
        out += [flag, str(parse_size(value)) if key in ("minbytes", "maxbytes") else str(value)]
    return out


def _result(step: Step, results: Sequence[CommandResult]) -> CommandResult:
    if not results:
        raise ToolFailure("no_results", f"step {step.id}: mpirun did not run")
    res = results[0]
    if res.error:
        raise ToolFailure("launch_failed", f"step {step.id}: {res.error}")
    return res


def _parse(step: Step, res: CommandResult, collective: str, extra: Record | None = None) -> NcclRun:
    """The step's output parsed (the per-iteration document left out); a ToolFailure names the
    step and the launcher host.

    Rows the tool printed before failing (wrong results, flagged ``kind: invalid``) travel with
    the failure, labelled like the step's samples, so the runner keeps them.
    """
    text, _ = nccl_iter.split(res.stdout)
    try:
        return parse_nccl_tests(f"{text}\n{res.stderr}", collective=collective)
    except ToolFailure as exc:
        kept = [{**step.sample_labels(), **rec, **(extra or {}), "nhosts": len(step.hosts)} for rec in exc.records]
        raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}", records=kept) from exc


def _iteration_records(step: Step, res: CommandResult, p: Mapping[str, Any], tool: str) -> list[Record]:
    """With ``per_iteration``: the stragglers and spikes of the document the step printed; an
    ``iterations`` record with the reason when none came back (the tool stopped before writing it)."""
    if not p["per_iteration"]:
        return []
    if tool == "rccl-tests":
        return [{"kind": "iterations", "processes": None,
                 "missing": f"rccl-tests has no per-iteration timing (nccl-tests {nccl_iter.MIN_VERSION} -I)"}]
    return nccl_iter.step_records(res.stdout, step.hosts, tool)


def _finish(step: Step, res: CommandResult, records: list[Record], extra: Record) -> list[Record]:
    if res.timed_out:
        raise ToolFailure("timeout", f"step {step.id}: {res.command.argv[0]} ran past {res.command.timeout_s:.0f} s")
    if res.rc not in (0, None) and not res.stopped:
        raise ToolFailure("crashed", f"step {step.id}: {res.command.argv[0]} exited with status {res.rc}")
    labels = step.sample_labels()
    nhosts = len(step.hosts)
    return [{**labels, **rec, **extra, "nhosts": nhosts} for rec in with_nranks(records)]


class NcclTests:
    """nccl-tests (``vendor='nvidia'``) or rccl-tests (``vendor='amd'``): ``<op>_perf`` under mpirun."""

    params = PARAMS
    patterns = ("group", "scaling", "gpu-pairs")

    def __init__(self, name: str, vendor: str, dir_var: str) -> None:
        self.name, self.vendor, self.dir_var = name, vendor, dir_var
        # built from source by the nccl_tests / rccl_tests roles; the probe finds them itself
        self.requirements: tuple[ToolFacts, ...] = (ToolFacts("rccl" if vendor == "amd" else name), MPIRUN)
        self.description = f"{name}: NCCL-style collectives ({'RCCL, ROCm' if vendor == 'amd' else 'NCCL'}) "\
                           "over mpirun, with NCCL_DEBUG transport checks"
        self.reads = (f"{name} *_perf tables (2.x: the old error column, #wrong N/A, 2.20+ per-iteration "
                      "columns), srun -l / --tag-output prefixes, elided rows, NCCL_DEBUG lines")

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_collective_params(params)

    def env(self, p: Mapping[str, Any], hosts: Sequence[Host] = ()) -> dict[str, object]:
        """The ranks' environment: the fabric from the inventory, NCCL_DEBUG for checks, the suite's ``env`` last."""
        algo = {"NCCL_ALGO": p["nccl_algo"]} if p["nccl_algo"] not in (None, ALGO_DEFAULT) else {}
        env: dict[str, object] = {**fabric_env(hosts, p), **algo, **dict(p["env"])}
        if p["nccl_debug"] or p["require_network"] or p["require_gdr"] is not None:
            env.setdefault("NCCL_DEBUG", "INFO")
            env.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
        return env

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = requirements(_merged(step.params), step.hosts)
        if p["per_iteration"] and self.vendor == "amd":
            p = {**p, "per_iteration": False}  # rccl-tests has no -I; parse_step records why
        if p["per_iteration"] and p["blocking"] is None:
            p = {**p, "blocking": 1}  # every process's iteration starts together: its time says when it ended
        bindir = p["binary_dir"] or step.hosts[0].var(self.dir_var)
        binary = f"{str(bindir).rstrip('/')}/{p['op']}_perf" if bindir else f"{p['op']}_perf"
        program = [binary, *_tool_args(p, _FLAGS), "-g", str(p["gpus_per_proc"])]
        if step.pattern == "gpu-pairs":
            program, p = self._gpu_pair(step, binary, p)
        if p["per_iteration"]:
            program = nccl_iter.wrap(program)
        try:
            env = self.env(p, step.hosts)
        except ValueError as exc:
            raise ConfigError(f"step {step.id}: {exc}") from exc
        return _mpirun(step, p, program, env, gpus=True, launch_via=launcher)

    def _gpu_pair(self, step: Step, binary: str, p: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """Two ranks, one GPU each: the GPU of each side's view (``planning.gpus``), made the only
        one it sees (CUDA_VISIBLE_DEVICES; HIP_VISIBLE_DEVICES for RCCL), ``-g 1``."""
        gpus = [h.var("gpu_index") for h in step.hosts]
        if len(step.hosts) != 2 or any(g is None for g in gpus):
            raise ConfigError(f"step {step.id}: pattern gpu-pairs needs two GPU views (planning.gpus)")
        one = {**p, "gpus_per_proc": 1, "procs_per_host": 1}
        visible = "HIP_VISIBLE_DEVICES" if self.vendor == "amd" else "CUDA_VISIBLE_DEVICES"
        numa = [dict(gpu_numa([h])).get(int(g)) if g is not None else None for h, g in zip(step.hosts, gpus, strict=True)]
        return (["sh", "-c", GPU_WRAPPER, "bench-gpu", ",".join(str(g) for g in gpus), visible,
                 ",".join("" if n is None else str(n) for n in numa),
                 binary, *_tool_args(one, _FLAGS), "-g", "1"], one)

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = requirements(_merged(step.params), step.hosts)
        res = _result(step, results)
        if p["per_iteration"] and self.vendor != "amd":
            try:
                nccl_iter.check_supported(f"{res.stdout}\n{res.stderr}", self.name)
            except ToolFailure as exc:
                raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}") from exc
        debug = parse_nccl_debug(f"{res.stdout}\n{res.stderr}")
        algo = str(self.env(p, step.hosts).get("NCCL_ALGO") or ALGO_DEFAULT)  # which curve this is
        run = _parse(step, res, p["op"], {"backend": self.name, "nccl_network": debug["network"],
                                          "nccl_gdr": debug["gdr"], "nccl_algo": algo})
        try:
            self.check_transport(p, debug)
            self.check_hcas(str(self.env(p, step.hosts).get("NCCL_IB_HCA") or ""), f"{res.stdout}\n{res.stderr}")
        except ToolFailure as exc:
            raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}") from exc
        extra: Record = {"backend": self.name, "nccl_network": debug["network"], "nccl_gdr": debug["gdr"],
                         "nccl_algo": algo}
        summary_extra = {"nccl_devices": debug["devices"], "nccl_channels": debug["channels"],
                         "nccl_version": debug["nccl_version"], "nccl_socket_fallback": debug["socket_fallback"],
                         "nccl_warnings": debug["warnings"],
                         "nccl_plugin": (lambda pl: f"{pl[0]}: {pl[1]} ({pl[2]})" if pl else None)(
                             rdma_plugin(debug["network"]))}
        records = [dict(r, **summary_extra) if r.get("kind") == "footer" else r for r in run.all_records()]
        return _finish(step, res, records + _iteration_records(step, res, p, self.name), extra)

    @staticmethod
    def check_transport(p: Mapping[str, Any], debug: Mapping[str, Any]) -> str | None:
        """ToolFailure('transport_mismatch') when NCCL's network or GPUDirect RDMA is not what the suite asks.

        ``require_network: IB`` also accepts a known RDMA network plugin (``nccl_debug.RDMA_PLUGINS``:
        AMD's ANP for Pollara, AWS's OFI plugin, Google's gIB) whose channels show GPUDirect RDMA;
        the returned note names it and its document. A fallback to sockets still fails.
        """
        want, used = p.get("require_network"), debug.get("network")
        plugin = rdma_plugin(used)
        note = f"NCCL used {plugin[0]}: {plugin[1]} ({plugin[2]})" if plugin else None
        if want and not network_matches(want, used):
            if plugin and str(want).strip().lower() in ("ib", "rdma"):
                if debug.get("gdr") is not True:
                    raise ToolFailure("transport_mismatch", f"{note}, but its channels show no GPUDirect RDMA "
                                      f"(no /GDRDMA); suite requires {want} with GPUDirect RDMA")
            else:
                why = " (fell back from IB)" if debug.get("socket_fallback") else ""
                raise ToolFailure("transport_mismatch", f"NCCL used {used or 'an unknown network'}{why}, "
                                  f"suite requires {want}")
        gdr = p.get("require_gdr")
        if gdr is not None and debug.get("gdr") is not gdr:
            got = {True: "used", False: "did not use", None: "did not log"}[debug.get("gdr")]
            raise ToolFailure("transport_mismatch", f"NCCL {got} GPUDirect RDMA, suite requires "
                              f"require_gdr={str(gdr).lower()}" + (f" ({note})" if note else ""))
        return note

    @staticmethod
    def check_hcas(listed: str, text: str) -> None:
        """ToolFailure('transport_mismatch') when an HCA that NCCL_IB_HCA lists was not opened or carried no channel.

        Checked only where the log shows it (NCCL_DEBUG=INFO, IB in use); an exclusion list (``^``)
        says nothing about what must be used.
        """
        if not listed or listed.startswith("^"):
            return
        opened, used = hcas_used(text)
        if not opened:
            return
        want = [h if ":" in h else f"{h}:1" for h in listed.lstrip("=").split(",") if h]
        missing = [h for h in want if h not in opened]
        if missing:
            raise ToolFailure("transport_mismatch", f"NCCL did not open {', '.join(missing)} of NCCL_IB_HCA "
                              f"(opened {', '.join(opened)})")
        idle = [h for h in want if h not in used]
        if used and idle:
            raise ToolFailure("transport_mismatch", f"no NCCL channel ran over {', '.join(idle)} "
                              f"(channels over {', '.join(used)})")

    def parse_text(self, text: str) -> list[Record]:
        debug = parse_nccl_debug(text)
        extra = {"backend": self.name, "nccl_network": debug["network"], "nccl_gdr": debug["gdr"]}
        try:
            run = parse_nccl_tests(text)
        except ToolFailure as exc:
            raise ToolFailure(exc.kind, exc.message, records=[{**r, **extra} for r in exc.records]) from exc
        return [{**r, **extra} for r in run.all_records()]


class CpuCollective:
    """The CPU benchmark (mpi4py + NumPy over Open MPI) in nccl-tests' table format."""

    name = "mpi-collective"
    description = "CPU collectives over MPI (mpi4py, NumPy), printed as an nccl-tests table"
    reads = "the nccl-tests table benchharness.onhost.mpi_allreduce prints (Open MPI 4.x-5.x, mpi4py 3.x+)"
    params = PARAMS
    patterns = ("group", "scaling")
    requirements: tuple[ToolFacts, ...] = (MPIRUN,)

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_collective_params(params, CPU_COLLECTIVES)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = _merged(step.params)
        if p["op"] not in CPU_COLLECTIVES:
            raise ConfigError(f"step {step.id}: the CPU benchmark has no {p['op']} "
                              f"(it has {', '.join(CPU_COLLECTIVES)})")
        if p["cpu_maxbytes"] is not None and parse_size(p["maxbytes"]) > parse_size(p["cpu_maxbytes"]):
            # the GPU sizing (8G) would take minutes per size on CPUs: stop at cpu_maxbytes
            p = {**p, "maxbytes": p["cpu_maxbytes"],
                 "minbytes": min(parse_size(p["minbytes"]), parse_size(p["cpu_maxbytes"]))}
        python = str(step.hosts[0].var("bench_python", "python3"))
        program = [python, CPU_PROGRAM, "--collective", p["op"],
                   *_tool_args(p, [f for f in _FLAGS if f[0] not in ("datatype", "blocking", "cudagraph")])]
        if p["per_iteration"]:  # the same -I 1 -J as nccl-tests, the same wrapper and document
            program = nccl_iter.wrap(program)
        return _mpirun(step, p, program, p["env"], gpus=False, launch_via=launcher, uploads=onhost_uploads(posixpath.dirname(CPU_PROGRAM), "mpi_allreduce", "iter_json"))

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = _merged(step.params)
        res = _result(step, results)
        run = _parse(step, res, p["op"])
        extra: Record = {"backend": "mpi4py", "nccl_network": None, "nccl_gdr": None}
        return _finish(step, res, run.all_records() + _iteration_records(step, res, p, self.name), extra)

    def parse_text(self, text: str) -> list[Record]:
        extra = {"backend": "mpi4py", "nccl_network": None, "nccl_gdr": None}
        return [{**r, **extra} for r in parse_nccl_tests(text).all_records()]


NCCL = NcclTests("nccl-tests", "nvidia", "nccl_tests_dir")
RCCL = NcclTests("rccl-tests", "amd", "rccl_tests_dir")
CPU = CpuCollective()


def backend_for(hosts: Sequence[Host]) -> NcclTests | CpuCollective:
    """rccl-tests for AMD GPU hosts, nccl-tests for other GPU hosts, the CPU benchmark without GPUs."""
    kinds = set()
    for h in hosts:
        try:
            gpus = gpu_count(h)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        kinds.add("cpu" if gpus <= 0 else "amd" if str(h.var("gpu_vendor", "nvidia")).lower() == "amd"
                  else "nvidia")
    if len(kinds) > 1:
        raise ConfigError(f"hosts {', '.join(h.name for h in hosts)} mix {' and '.join(sorted(kinds))} "
                          "hosts; one collective step needs one kind")
    kind = kinds.pop() if kinds else "cpu"
    return {"amd": RCCL, "nvidia": NCCL}.get(kind, CPU)


class Collective:
    """Tool ``collective``: the right backend for the step's hosts (see :func:`backend_for`)."""

    name = "collective"
    description = "collective sweep: rccl-tests on AMD GPUs, nccl-tests on NVIDIA GPUs, MPI CPU benchmark otherwise"
    reads = "any of their tables: nccl-tests and rccl-tests 2.x output, the MPI CPU benchmark's"
    params = PARAMS
    patterns = ("group", "scaling", "gpu-pairs")  # gpu-pairs needs gpus: never the CPU backend

    @property
    def requirements(self) -> tuple[ToolFacts, ...]:
        """Those of every backend it may choose."""
        return tuple({f.name: f for b in (NCCL, RCCL, CPU) for f in b.requirements}.values())

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_collective_params(params)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        return backend_for(step.hosts).commands(step, launcher)

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        return backend_for(step.hosts).parse_step(step, results)

    def parse_text(self, text: str) -> list[Record]:
        if "# benchharness mpi_allreduce" in text:
            return CPU.parse_text(text)
        return (RCCL if "rccl-tests: Version" in text else NCCL).parse_text(text)


ADAPTERS = [NCCL, RCCL, CPU, Collective()]
