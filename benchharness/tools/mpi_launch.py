"""Build Open MPI ``mpirun`` command lines (argv lists) for collective benchmarks across hosts.

Environment values reach the ranks through ``-x NAME=VALUE`` (Open MPI ships them in its launch
message, not through a remote shell), and the whole argv is one list: no value from a suite or an
inventory is ever pasted into a shell string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from benchharness.core.model import Host
from benchharness.tools.base import ToolFacts

#: Open MPI's launcher on the hosts: ``mpirun (Open MPI) 4.1.4`` (MPICH's Hydra: ``Version: 4.0.2``).
MPIRUN = ToolFacts("mpirun", ("mpirun", "--version"), r"(?:\(Open MPI\)|Version:?)\s*v?(\d+(?:\.\d+)+)",
                   apt=("openmpi-bin",), dnf=("openmpi",))

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables mpirun or the ranks' launch depends on; a suite overriding them breaks the launch.
_RESERVED = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "OMPI_MCA_plm_rsh_agent"}


def check_env(env: Mapping[str, object]) -> dict[str, str]:
    """``env`` as str -> str after checking names and values; ValueError naming the bad entry."""
    out: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(f"env: {name!r} is not a valid environment variable name")
        if name in _RESERVED:
            raise ValueError(f"env: {name} is set by mpirun itself")
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            raise ValueError(f"env: {name} must be a string or number, not {type(value).__name__}")
        if "\0" in text or "\n" in text:
            raise ValueError(f"env: {name} must not contain NUL or newline characters")
        out[name] = text
    return out


def gpu_count(host: Host) -> int:
    """GPUs of ``host``: host var ``gpus`` as a count (8) or a list of GPU indices ([0, 1, 2, 3])."""
    value = host.var("gpus", 0)
    if isinstance(value, list | tuple):
        return len(value)
    if isinstance(value, str) and "," in value:
        return len([v for v in value.split(",") if v.strip()])
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        raise ValueError(f"host {host.name}: gpus={value!r} is neither a count nor a list of GPUs") from None


@dataclass(frozen=True)
class Launch:
    """How a cluster places and wires MPI ranks; :func:`launch_settings` reads it from the inventory.

    ``pml`` ``tcp`` is Open MPI's ob1 with the TCP BTL, ``ucx`` its UCX PML (``--mca pml ucx``);
    ``if_include`` pins the TCP BTL and the out-of-band channel (interfaces or CIDRs);
    ``bind_to`` is ``--bind-to`` (``numa``, ``none`` ...); ``map_by`` overrides ``ppr:N:node``.
    """

    pml: str = "tcp"
    if_include: str | None = None
    bind_to: str | None = None
    map_by: str | None = None
    prefix: str | None = None
    export: tuple[str, ...] = ()
    rsh_agent: str | None = None
    rsh_args: str | None = None
    ucx_devices: str | None = None
    #: GPU index -> NUMA node (from the rails' ``nearest_gpu`` and ``numa_node``), the same on every host.
    gpu_numa: tuple[tuple[int, int], ...] = ()
    gpus_per_proc: int = 1


#: Each rank runs on the NUMA node of its GPU: the n-th item of the list for local rank n (Open MPI's
#: OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID). Used when GPUs do not split evenly and in
#: order over the NUMA nodes, which ``--map-by ppr:N:numa`` needs.
NUMA_WRAPPER = ('l="$1"; shift; r="${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}"; '
                'n=$(printf %s "$l" | cut -d, -f"$((r + 1))"); '
                'exec numactl --cpunodebind="$n" --membind="$n" "$@"')


@dataclass(frozen=True)
class Placement:
    """Where a host's ranks run: ``ppr`` ranks per NUMA node (``--map-by ppr:N:numa``), or a
    per-rank NUMA list for :data:`NUMA_WRAPPER`, or neither (no NUMA facts: ``ppr:N:node``)."""

    per_numa: int | None = None
    rank_nodes: tuple[int, ...] = ()


def gpu_numa(hosts: Sequence[Host]) -> tuple[tuple[int, int], ...]:
    """GPU -> NUMA node of the first host from its rails (``nearest_gpu`` + ``numa_node``); the other
    hosts must agree (mpirun and srun place ranks with one rule for every node)."""
    def of(h: Host) -> tuple[tuple[int, int], ...]:
        found: dict[int, int] = {}
        for rail in h.nics():
            if rail.numa_node is not None and rail.numa_node >= 0:
                for gpu in rail.nearest_gpus:
                    found.setdefault(gpu, rail.numa_node)
        return tuple(sorted(found.items()))

    first = of(hosts[0]) if hosts else ()
    for h in hosts[1:]:
        if of(h) != first:
            raise ValueError(f"hosts {hosts[0].name} and {h.name} differ in their GPUs' NUMA nodes (rails' "
                             "nearest_gpu and numa_node); one launch places ranks alike on every node")
    return first


def placement(launch: Launch, ranks: int) -> Placement:
    """Placement of ``ranks`` local ranks (rank r drives GPU r x gpus_per_proc) from ``launch.gpu_numa``."""
    nodes_of = dict(launch.gpu_numa)
    nodes = [nodes_of.get(r * launch.gpus_per_proc) for r in range(ranks)]
    if not nodes or any(n is None for n in nodes):
        return Placement()
    known = [int(n) for n in nodes if n is not None]
    used = sorted(set(known))
    per = ranks // len(used)
    if known == sorted(known) and used == list(range(len(used))) and all(known.count(n) == per for n in used):
        return Placement(per_numa=per)
    return Placement(rank_nodes=tuple(known))


_NO_SPACE = re.compile(r"^\S+$")


def rsh_args(hosts: Sequence[Host]) -> str | None:
    """``plm_rsh_args``: the ssh options the launch node uses to reach ``hosts`` by their management address.

    The command runs on the launch node, so no path of the controller goes into it: the key is the
    inventory's ``launch_ssh_key`` and the known-hosts file ``launch_known_hosts`` (both paths on the
    launch node); unset, ssh there uses its own default keys, known_hosts or a forwarded agent.
    User, port and jump host come from the inventory. Open MPI passes one ssh command line to every
    node, so the hosts must agree on these settings; Open MPI splits the value at spaces, so no
    value may hold one.
    """
    def of(h: Host) -> tuple[object, ...]:
        return (h.user, h.port, h.var("launch_ssh_key"), h.var("launch_known_hosts"), h.proxy_jump,
                h.strict_host_keys)

    first = hosts[0]
    for h in hosts[1:]:
        if of(h) != of(first):
            raise ValueError(f"hosts {first.name} and {h.name} differ in ssh settings (user, port, launch_ssh_key, "
                             "launch_known_hosts, jump host); mpirun reaches every node with one ssh command line "
                             "(set mpi_rsh_agent to a script that knows each host)")
    args: list[str] = []
    if first.user:
        args += ["-l", first.user]
    if first.port != 22:
        args += ["-p", str(first.port)]
    if first.var("launch_ssh_key"):
        args += ["-i", str(first.var("launch_ssh_key")), "-o", "IdentitiesOnly=yes"]
    if first.var("launch_known_hosts"):
        args += ["-o", f"UserKnownHostsFile={first.var('launch_known_hosts')}"]
    args += ["-o", f"StrictHostKeyChecking={'yes' if first.strict_host_keys else 'accept-new'}"]
    if first.proxy_jump:
        args += ["-J", first.proxy_jump]
    args += ["-o", "BatchMode=yes"]
    bad = [a for a in args if not _NO_SPACE.match(a)]
    if bad:
        raise ValueError(f"host {first.name}: {bad[0]!r} holds a space, which Open MPI's plm_rsh_args "
                         "cannot carry (set mpi_rsh_agent to a script instead)")
    return " ".join(args)


def _str_list(value: object, name: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else None
    if items is None:
        raise ValueError(f"{name}: must be a list of names, not {value!r}")
    return tuple(str(i).strip() for i in items if str(i).strip())


def rdma_devices(hosts: Sequence[Host]) -> list[str]:
    """``dev:port`` of every rail with an RDMA device, over ``hosts`` in order, without repeats."""
    out: list[str] = []
    for h in hosts:
        for rail in h.nics():
            if rail.rdma_dev and f"{rail.rdma_dev}:{rail.rdma_port}" not in out:
                out.append(f"{rail.rdma_dev}:{rail.rdma_port}")
    return out


def mgmt_netdevs(hosts: Sequence[Host]) -> list[str]:
    """Management interfaces (host var ``mgmt_netdev``) of ``hosts``, without repeats."""
    out: list[str] = []
    for h in hosts:
        dev = h.var("mgmt_netdev")
        if dev and str(dev) not in out:
            out.append(str(dev))
    return out


def launch_settings(hosts: Sequence[Host], gpus: bool, gpus_per_proc: int = 1) -> Launch:
    """:class:`Launch` from the launcher's (first host's) variables.

    ``mpi_pml``: ``ucx`` or ``tcp`` (default ``ucx`` when every host has an RDMA rail, else ``tcp``).
    Interfaces: ``mpi_if_include`` (empty: let Open MPI choose), else the management netdev
    ``mgmt_netdev``, else the lab's own subnet (``bench_lab_subnet``, written by ``bench lab``);
    never guessed from an address. ``mpi_bind_to`` (default ``numa`` on GPU hosts, ``none``
    without GPUs), ``mpi_map_by``, ``mpi_prefix``, ``mpi_export`` (default PATH, LD_LIBRARY_PATH),
    ``mpi_rsh_agent`` (a script replacing ssh; else ssh with the inventory's settings).
    """
    launcher = hosts[0]
    rails = all(any(r.rdma_dev for r in h.nics()) for h in hosts)
    pml = str(launcher.var("mpi_pml") or ("ucx" if rails else "tcp")).lower()
    if pml not in ("ucx", "tcp"):
        raise ValueError(f"host {launcher.name}: mpi_pml={pml!r} must be ucx or tcp")
    configured = launcher.var("mpi_if_include")
    if configured is not None:
        if_include = str(configured) or None
    elif mgmt_netdevs(hosts):
        if_include = ",".join(mgmt_netdevs(hosts))
    else:
        if_include = str(launcher.var("bench_lab_subnet")) if launcher.var("bench_lab_subnet") else None
    export = _str_list(launcher.var("mpi_export", ["PATH", "LD_LIBRARY_PATH"]), "mpi_export")
    for name in export:
        if not _ENV_NAME.match(name):
            raise ValueError(f"host {launcher.name}: mpi_export: {name!r} is not a variable name")
    agent = launcher.var("mpi_rsh_agent")
    devices = rdma_devices(hosts)
    return Launch(pml=pml, if_include=if_include,
                  bind_to=str(launcher.var("mpi_bind_to") or ("numa" if gpus else "none")),
                  map_by=str(launcher.var("mpi_map_by")) if launcher.var("mpi_map_by") else None,
                  prefix=str(launcher.var("mpi_prefix")) if launcher.var("mpi_prefix") else None,
                  export=export, rsh_agent=str(agent) if agent else None,
                  rsh_args=None if agent else rsh_args(hosts),
                  ucx_devices=",".join(devices) if pml == "ucx" and devices else None,
                  gpu_numa=gpu_numa(hosts) if gpus else (), gpus_per_proc=gpus_per_proc)


def host_list(hosts: Sequence[Host], slots: int | Sequence[int]) -> str:
    """``-H`` value: ``addr:slots,...`` over each host's management address.

    mpirun's daemons are started over ssh, which belongs on the management network (and through
    its jump host), not the RDMA fabric. Host var ``mpi_host`` overrides the address.
    """
    per_host = [slots] * len(hosts) if isinstance(slots, int) else list(slots)
    if len(per_host) != len(hosts):
        raise ValueError("one slot count per host is needed")
    return ",".join(f"{h.var('mpi_host') or h.address}:{n}" for h, n in zip(hosts, per_host, strict=True))


def _mca(launch: Launch, one_rank_per_host: bool) -> dict[str, str]:
    """MCA settings of the point-to-point layer and its interfaces."""
    if launch.pml == "ucx":
        # Open MPI's UCX PML and one-sided layer; no BTL (openib would race UCX for the HCAs)
        settings = {"pml": "ucx", "osc": "ucx", "btl": "^openib"}
    else:
        # shared memory between ranks of one node; a single rank per node needs none (and the
        # lab's namespace hosts share one hostname, which must not look like one node)
        settings = {"pml": "ob1", "btl": "tcp,self" if one_rank_per_host else "tcp,vader,self"}
    if launch.if_include:
        if launch.pml == "tcp":
            settings["btl_tcp_if_include"] = launch.if_include
        settings["oob_tcp_if_include"] = launch.if_include
    return settings


def build_mpirun(hosts: Sequence[Host], slots: int | Sequence[int], program_argv: Sequence[str],
                 env: Mapping[str, object] | None = None, *, launch: Launch | None = None,
                 rsh_agent: str | None = None, if_include: str | None = None,
                 allow_run_as_root: bool = False, tag_output: bool = True,
                 mca: Mapping[str, str] | None = None, mpirun: str = "mpirun",
                 oversubscribe: bool = False) -> list[str]:
    """``mpirun`` argv running ``program_argv`` with ``slots`` ranks on each of ``hosts``.

    ``launch`` carries the cluster's settings (:func:`launch_settings`); ``rsh_agent`` and
    ``if_include`` override its agent and interfaces. With N slots on every host, rank r runs on
    node r // N (as NCCL's local ranks expect) and on the NUMA node of its GPU: ``ppr:M:numa``
    when the GPUs split evenly and in order over M-rank NUMA nodes, else :data:`NUMA_WRAPPER`
    (``--bind-to none``); without NUMA facts ``ppr:N:node``. ``mpi_map_by`` overrides it all.
    """
    if not hosts:
        raise ValueError("mpirun needs at least one host")
    if not program_argv:
        raise ValueError("mpirun needs a program to run")
    per_host = [slots] * len(hosts) if isinstance(slots, int) else list(slots)
    if any(n < 1 for n in per_host):
        raise ValueError("every host needs at least one slot")
    launch = launch or Launch()
    argv = [mpirun]
    if allow_run_as_root:
        argv.append("--allow-run-as-root")
    if tag_output:
        argv.append("--tag-output")
    if oversubscribe:
        argv.append("--oversubscribe")
    if launch.prefix:
        argv += ["--prefix", launch.prefix]
    argv += ["-np", str(sum(per_host)), "-H", host_list(hosts, per_host)]
    place = placement(launch, per_host[0]) if len(set(per_host)) == 1 and not launch.map_by else Placement()
    bind_to = launch.bind_to
    if launch.map_by:
        argv += ["--map-by", launch.map_by]
    elif place.per_numa:
        argv += ["--map-by", f"ppr:{place.per_numa}:numa"]
    elif len(set(per_host)) == 1:
        argv += ["--map-by", f"ppr:{per_host[0]}:node"]
    if place.rank_nodes:
        bind_to = "none"  # each rank binds itself with numactl (NUMA_WRAPPER)
        program_argv = ["sh", "-c", NUMA_WRAPPER, "bench-numa", ",".join(map(str, place.rank_nodes)),
                        *program_argv]
    if bind_to:
        argv += ["--bind-to", bind_to]
    settings = _mca(replace(launch, if_include=if_include or launch.if_include), max(per_host) == 1)
    settings["plm_rsh_no_tree_spawn"] = "1"
    agent = rsh_agent or launch.rsh_agent
    if agent:
        settings["plm_rsh_agent"] = agent
    elif launch.rsh_args:
        settings["plm_rsh_agent"] = "ssh"
        settings["plm_rsh_args"] = launch.rsh_args
    settings.update(mca or {})
    for key, value in settings.items():
        argv += ["--mca", key, str(value)]
    for name in launch.export:
        argv += ["-x", name]
    env_out = dict(check_env(env or {}))
    if launch.ucx_devices:
        env_out.setdefault("UCX_NET_DEVICES", launch.ucx_devices)
    for name, value in env_out.items():
        argv += ["-x", f"{name}={value}"]
    return [*argv, *program_argv]


def build_srun(nodes: Sequence[str], slots: int | Sequence[int], program_argv: Sequence[str],
               env: Mapping[str, object] | None = None, *, mpi: str = "pmix",
               if_include: str | None = None, mca: Mapping[str, str] | None = None,
               extra: Sequence[str] = (), launch: Launch | None = None,
               gpus_per_node: int = 0) -> tuple[list[str], dict[str, str]]:
    """``srun`` argv and environment running ``program_argv`` with ``slots`` ranks on each Slurm node.

    The Slurm form of :func:`build_mpirun`: Slurm starts the ranks (``--mpi=pmix`` wires them up,
    no ``mpirun``, no SSH), and the MCA settings travel as ``OMPI_MCA_*`` variables in srun's own
    environment, which srun exports to the tasks (``--export=ALL``: PATH and LD_LIBRARY_PATH too).
    Slurm places the same number of ranks on every node, so the slot counts must agree. On GPU
    nodes ``--gpus-per-node`` allocates the GPUs and ``--gpu-bind=none`` leaves every GPU visible
    to every task: nccl-tests picks its GPU by local rank, which a one-GPU view would break.
    """
    if not nodes:
        raise ValueError("srun needs at least one node")
    if not program_argv:
        raise ValueError("srun needs a program to run")
    per_node = [slots] * len(nodes) if isinstance(slots, int) else list(slots)
    if len(per_node) != len(nodes) or any(n < 1 for n in per_node):
        raise ValueError("every node needs at least one slot")
    if len(set(per_node)) != 1:
        raise ValueError(f"srun places the same number of ranks on every node; got {per_node} "
                         "(set procs_per_host, or give the hosts the same gpus)")
    launch = launch or Launch()
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"-N{len(nodes)}", f"--ntasks-per-node={per_node[0]}",
            f"--mpi={mpi}", "--kill-on-bad-exit=1", "--overlap", "--export=ALL"]
    if gpus_per_node:
        argv += [f"--gpus-per-node={gpus_per_node}", "--gpu-bind=none"]
    place = placement(launch, per_node[0])
    bind_to = launch.bind_to
    if place.per_numa:
        # consecutive tasks fill a socket before the next (the default cyclic would alternate)
        argv.append("--distribution=block:block")
    if place.rank_nodes:
        bind_to = "none"
        program_argv = ["sh", "-c", NUMA_WRAPPER, "bench-numa", ",".join(map(str, place.rank_nodes)),
                        *program_argv]
    if bind_to:
        # Slurm's name for binding to NUMA locality domains is "ldoms"
        argv.append(f"--cpu-bind={'ldoms' if bind_to == 'numa' else bind_to}")
    argv += [*extra, "--", *program_argv]
    settings = _mca(replace(launch, if_include=if_include or launch.if_include), per_node[0] == 1)
    settings.update(mca or {})
    out_env = {f"OMPI_MCA_{k}": str(v) for k, v in settings.items()}
    if launch.ucx_devices:
        out_env["UCX_NET_DEVICES"] = launch.ucx_devices
    out_env.update(check_env(env or {}))
    return argv, out_env
