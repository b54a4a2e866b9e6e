"""Build Open MPI ``mpirun`` command lines (argv lists) for collective benchmarks across hosts.

Environment values reach the ranks through ``-x NAME=VALUE`` (Open MPI ships them in its launch
message, not through a remote shell), and the whole argv is one list: no value from a suite or an
inventory is ever pasted into a shell string.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

from benchharness.core.model import Host

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


def lab_cidr(address: str, prefix: int = 24) -> str:
    """The ``/prefix`` network around ``address`` (``198.18.1.7`` -> ``198.18.1.0/24``)."""
    return str(ipaddress.ip_interface(f"{address}/{prefix}").network)


def host_list(hosts: Sequence[Host], slots: int | Sequence[int]) -> str:
    """``-H`` value: ``addr:slots,...`` over each host's traffic address (data_ip, else address).

    Host var ``mpi_host`` overrides the address (the name mpirun hands to its rsh agent).
    """
    per_host = [slots] * len(hosts) if isinstance(slots, int) else list(slots)
    if len(per_host) != len(hosts):
        raise ValueError("one slot count per host is needed")
    return ",".join(f"{h.var('mpi_host') or h.traffic_ip}:{n}" for h, n in zip(hosts, per_host, strict=True))


def build_mpirun(hosts: Sequence[Host], slots: int | Sequence[int], program_argv: Sequence[str],
                 env: Mapping[str, object] | None = None, *, rsh_agent: str | None = None,
                 if_include: str | None = None, allow_run_as_root: bool = False, tag_output: bool = True,
                 mca: Mapping[str, str] | None = None, mpirun: str = "mpirun",
                 oversubscribe: bool = False) -> list[str]:
    """``mpirun`` argv running ``program_argv`` with ``slots`` ranks on each of ``hosts``.

    ``if_include`` (a CIDR or interface list) pins both the TCP BTL and the out-of-band channel,
    as the lab needs; ``rsh_agent`` replaces ssh for starting the remote daemons.
    """
    if not hosts:
        raise ValueError("mpirun needs at least one host")
    if not program_argv:
        raise ValueError("mpirun needs a program to run")
    per_host = [slots] * len(hosts) if isinstance(slots, int) else list(slots)
    if any(n < 1 for n in per_host):
        raise ValueError("every host needs at least one slot")
    argv = [mpirun]
    if allow_run_as_root:
        argv.append("--allow-run-as-root")
    if tag_output:
        argv.append("--tag-output")
    if oversubscribe:
        argv.append("--oversubscribe")
    argv += ["-np", str(sum(per_host)), "-H", host_list(hosts, per_host)]
    settings: dict[str, str] = {"btl": "tcp,self", "plm_rsh_no_tree_spawn": "1"}
    if if_include:
        settings["btl_tcp_if_include"] = if_include
        settings["oob_tcp_if_include"] = if_include
    if rsh_agent:
        settings["plm_rsh_agent"] = rsh_agent
    settings.update(mca or {})
    for key, value in settings.items():
        argv += ["--mca", key, str(value)]
    for name, value in check_env(env or {}).items():
        argv += ["-x", f"{name}={value}"]
    return [*argv, *program_argv]


def build_srun(nodes: Sequence[str], slots: int | Sequence[int], program_argv: Sequence[str],
               env: Mapping[str, object] | None = None, *, mpi: str = "pmix",
               if_include: str | None = None, mca: Mapping[str, str] | None = None,
               extra: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """``srun`` argv and environment running ``program_argv`` with ``slots`` ranks on each Slurm node.

    The Slurm form of :func:`build_mpirun`: Slurm starts the ranks (``--mpi=pmix`` wires them up,
    no ``mpirun``, no SSH), and the MCA settings travel as ``OMPI_MCA_*`` variables in srun's own
    environment, which srun exports to the tasks. Slurm places the same number of ranks on every
    node, so the slot counts must agree.
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
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"-N{len(nodes)}", f"--ntasks-per-node={per_node[0]}",
            f"--mpi={mpi}", "--kill-on-bad-exit=1", "--overlap", *extra, "--", *program_argv]
    settings: dict[str, str] = {"btl": "tcp,self"}
    if if_include:
        settings["btl_tcp_if_include"] = if_include
        settings["oob_tcp_if_include"] = if_include
    settings.update(mca or {})
    out_env = {f"OMPI_MCA_{k}": str(v) for k, v in settings.items()}
    out_env.update(check_env(env or {}))
    return argv, out_env
