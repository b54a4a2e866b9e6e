"""Tool ``horovod``: Horovod's ``hvd.allreduce``, ``hvd.allgather`` and ``hvd.alltoall`` on the hosts' own Horovod.

The host program is ``benchharness.onhost.horovod_dist`` (copied to every host with ``torch_dist.py``,
whose sizing and table helpers it shares), which prints nccl-tests' table, so its samples
(``busbw_GBps`` over ``size_bytes``) chart beside nccl-tests' and torch's.

Launch: one command per host over the run's own transport, as the jax and tensorflow tools. The
program on the first host serves Horovod's gloo rendezvous (the HTTP server ``horovodrun --gloo``
runs) on ``step.port`` (else 29480), and each host starts its ranks with the environment
``horovodrun --gloo`` would give them. Not ``horovodrun`` itself: it reaches the other hosts with its
own ``ssh -o StrictHostKeyChecking=no`` (only ``-p`` and ``-i`` can be set, so the inventory's
known_hosts and ssh options are lost) from the first host, which then needs keys to every other
host; nor ``mpirun`` (which ``horovodrun`` wraps without ``--gloo``): one interpreter path for every
host, and an import error that names no host. Started per host, each host keeps its own interpreter
and a host without Horovod is named. See docs/frameworks.md.

CPU hosts: one rank each, gloo over TCP bound to the host's first data netdev. GPU hosts: one rank
per GPU, bound to its GPU's NUMA node, with nccl-tests' NCCL environment (rails' HCAs, GID index,
traffic class, socket netdevs); ``require_network`` / ``require_gdr`` judge NCCL's debug log as for
nccl-tests. The interpreter: the suite's ``python``, else host var ``horovod_python``, else
``python3``; one without horovod fails the step as ``tool_missing`` ("not installed" in the matrix).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_size
from benchharness.tools.base import ToolFacts
from benchharness.tools.common import ONHOST_DIR, onhost_uploads
from benchharness.tools.mpi_launch import gpu_count
from benchharness.tools.nccl_tests import requirements
from benchharness.tools.torch_dist import (
    check_framework_params,
    framework_env,
    framework_step_records,
    framework_text_records,
    has_gpus,
    merged,
    numa_args,
    sized_for_cpus,
)

OPS = ("all_reduce", "all_gather", "alltoall")
PROGRAM = f"{ONHOST_DIR}/horovod_dist.py"
#: The gloo rendezvous port on the first host when the planner gives none (horovodrun picks a free one).
DEFAULT_PORT = 29480
MARKER = "# benchharness horovod_dist:"
#: Horovod from PyPI is built from source against the hosts' torch: ``horovodrun --version`` prints
#: its version. The packages are what that build needs on Debian 12 (measured, docs/frameworks.md);
#: pip builds Horovod itself (setup.sh does it for the lab).
HOROVOD = ToolFacts("horovod", ("horovodrun", "--version"), r"(\d+\.\d+\.\d+)",
                    apt=("python3-torch", "libtorch-dev", "pybind11-dev", "cmake", "g++"))
PARAMS: dict[str, Any] = {
    "op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "cpu_maxbytes": "16M", "stepfactor": 2,
    "iters": 20, "warmup": 5, "check": 1, "python": None, "procs_per_host": None, "env": {}, "timeout": 900,
    "init_timeout": 120, "ib_tc": None, "ib_sl": None, "nccl_debug": False, "require_network": None,
    "require_gdr": None,
}
_HEADER = re.compile(r"# benchharness horovod_dist: horovod (\S+) torch (\S+) controller (\S+) backend (\S+) "
                     r"nccl (\S+) cuda (\S+)")
#: The interpreter lacks horovod or torch, or its horovod was built without the torch extension.
_MISSING = re.compile(r"(?:No module named '?|Extension (?=horovod\.torch has not been built))(horovod|torch)\b")


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the parameter when a value is wrong."""
    check_framework_params(merged(params, PARAMS), OPS, {"stepfactor": 2, "iters": 1, "warmup": 0, "check": 0,
                                                         "procs_per_host": 1, "init_timeout": 1})


def python_of(host: Host, p: Mapping[str, Any]) -> str:
    """The interpreter with horovod: the suite's ``python``, host var ``horovod_python``, else ``python3``."""
    return str(p["python"] or host.var("horovod_python") or "python3")


def where(host: Host) -> list[str]:
    """The netdev gloo binds to on ``host``: its first data netdev; else the program finds the one
    holding the host's address."""
    netdevs = [str(r.netdev) for r in host.nics() if r.netdev]
    return ["--iface", netdevs[0]] if netdevs else []


def env_of(step: Step, p: Mapping[str, Any], gpus: bool) -> dict[str, str]:
    """``torch_dist.framework_env``: nothing of Horovod's own on GPU hosts."""
    return framework_env(step, p, gpus)


class HorovodCollectives:
    """Horovod collective sweep (``horovod_dist.py``), nccl-tests' table and bus bandwidth."""

    name = "horovod"
    framework = "Horovod"  # a row of the compatibility matrix (results/frameworks.py)
    description = "Horovod collectives (allreduce, allgather, alltoall): gloo on CPUs, NCCL/RCCL on GPUs"
    reads = ("the table benchharness.onhost.horovod_dist prints (nccl-tests' columns, Horovod 0.28+ and "
             "torch versions in its header), one rank's or all ranks' output")
    params = PARAMS
    patterns = ("group", "scaling")
    requirements: Sequence[ToolFacts] = (HOROVOD,)

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_params(params)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        gpus = has_gpus(step.hosts)
        p = sized_for_cpus(p, gpus)
        slots = [int(p["procs_per_host"] or (gpu_count(h) if gpus else 1) or 1) for h in step.hosts]
        env = env_of(step, p, gpus)
        hosts = ",".join(f"{h.address}:{n}" for h, n in zip(step.hosts, slots, strict=True))
        sweep = ["--op", p["op"], "-b", str(parse_size(p["minbytes"])), "-e", str(parse_size(p["maxbytes"])),
                 "-f", str(p["stepfactor"]), "-n", str(p["iters"]), "-w", str(p["warmup"]), "-c", str(p["check"]),
                 "--hosts", hosts, "--port", str(step.port or DEFAULT_PORT), "--init-timeout", str(p["init_timeout"])]
        uploads = onhost_uploads(ONHOST_DIR, "horovod_dist", "torch_dist", "iter_json")
        out = []
        for i, host in enumerate(step.hosts):
            argv = [python_of(host, p), PROGRAM, *sweep, "--index", str(i), "--nproc", str(slots[i]), *where(host),
                    *(numa_args(host, slots[i]) if gpus else [])]
            out.append(Command(host=host, role="client", argv=tuple(argv), env=env, timeout_s=float(p["timeout"]),
                               label=f"horovod-{host.name}", uploads=uploads))
        return out

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        return framework_step_records(step, results, p, marker=MARKER, missing=_MISSING, var="horovod_python",
                                      backend="horovod", op=p["op"], header=header)

    def parse_text(self, text: str) -> list[Record]:
        return framework_text_records(text, "horovod", None, header)


def header(text: str) -> Record:
    """``horovod_version``, ``torch_version``, ``horovod_controller``, ``horovod_backend`` (gloo on
    CPUs, nccl on GPUs), ``horovod_nccl`` (the NCCL version code Horovod was built with), ``cuda_version``."""
    m = _HEADER.search(text)
    if not m:
        return {}
    nccl, cuda = (None if v == "none" else v for v in m.group(5, 6))
    return {"horovod_version": m.group(1), "torch_version": m.group(2), "horovod_controller": m.group(3),
            "horovod_backend": m.group(4), "horovod_nccl": nccl, "cuda_version": cuda}



ADAPTER = HorovodCollectives()
