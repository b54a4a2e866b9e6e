"""Tool ``jax``: JAX multi-process collectives (``psum``, ``all_gather``, ``all_to_all``) on the hosts' jax.

The host program is ``benchharness.onhost.jax_dist`` (copied to every host with ``torch_dist.py``,
whose sizing and table helpers it shares), which prints nccl-tests' table, so its samples
(``busbw_GBps`` over ``size_bytes``) chart beside nccl-tests' and torch's. One command per host over
the run's transport, as torchrun: ``jax.distributed`` rendezvous on the first host's address
(process 0 serves it). CPU hosts: one process each, gloo collectives bound to the host's first data
netdev (its address when the inventory names none). GPU hosts: one process per GPU (``spawn``),
each bound to its GPU's NUMA node, XLA's collectives over NCCL/RCCL with nccl-tests' NCCL
environment (rails' HCAs, GID index, traffic class, socket netdevs); ``require_network`` and
``require_gdr`` judge NCCL's debug log as they do for nccl-tests.

The interpreter: the suite's ``python``, else host var ``jax_python``, else ``python3``. A host
whose interpreter has no jax fails the step as ``tool_missing`` ("not installed" in the
frameworks matrix), never as a pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.errors import ConfigError
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_size
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
PROGRAM = f"{ONHOST_DIR}/jax_dist.py"
#: The coordination service's port when the planner gives none (jax.distributed has no default).
DEFAULT_PORT = 29450
MARKER = "# benchharness jax_dist:"
PARAMS: dict[str, Any] = {
    "op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "cpu_maxbytes": "16M", "stepfactor": 2,
    "iters": 20, "warmup": 5, "check": 1, "backend": "auto", "python": None, "procs_per_host": None,
    "env": {}, "timeout": 900, "init_timeout": 120, "ib_tc": None, "ib_sl": None, "nccl_debug": False,
    "require_network": None, "require_gdr": None,
}
_HEADER = re.compile(r"# benchharness jax_dist: jax (\S+) jaxlib (\S+) backend (\S+) platform (\S+) nccl (\S+)")
_MISSING = re.compile(r"No module named '?(jax|jaxlib|numpy)\b")


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the parameter when a value is wrong."""
    p = merged(params, PARAMS)
    if p["backend"] not in ("auto", "nccl", "gloo"):
        raise ValueError(f"backend: {p['backend']!r} is not one of auto, nccl, gloo")
    check_framework_params(p, OPS, {"stepfactor": 2, "iters": 1, "warmup": 0, "check": 0, "procs_per_host": 1,
                                    "init_timeout": 1})


def python_of(host: Host, p: Mapping[str, Any]) -> str:
    """The interpreter with jax: the suite's ``python``, host var ``jax_python``, else ``python3``."""
    return str(p["python"] or host.var("jax_python") or "python3")


def gloo_where(host: Host) -> list[str]:
    """Where gloo binds on ``host``: its first data netdev, else its address."""
    netdevs = [str(r.netdev) for r in host.nics() if r.netdev]
    return ["--gloo-interface", netdevs[0]] if netdevs else ["--local-addr", host.address]


def env_of(step: Step, p: Mapping[str, Any], gpus: bool) -> dict[str, str]:
    """``torch_dist.framework_env``, and on GPU hosts no whole-GPU preallocation by XLA."""
    return framework_env(step, p, gpus, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})


class JaxCollectives:
    """jax.distributed collective sweep (``jax_dist.py``), nccl-tests' table and bus bandwidth."""

    name = "jax"
    framework = "JAX"  # a row of the compatibility matrix (results/frameworks.py)
    description = "JAX multi-process collectives (psum, all_gather, all_to_all): gloo on CPUs, NCCL/RCCL on GPUs"
    reads = ("the table benchharness.onhost.jax_dist prints (nccl-tests' columns, jax and jaxlib versions in "
             "its header; jax 0.4+)")
    params = PARAMS
    patterns = ("group", "scaling")

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_params(params)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        gpus = has_gpus(step.hosts)
        p = sized_for_cpus(p, gpus)
        slots = [int(p["procs_per_host"] or (gpu_count(h) if gpus else 1) or 1) for h in step.hosts]
        if len(set(slots)) > 1:
            raise ConfigError(f"step {step.id}: hosts have different GPU counts ({slots}); set procs_per_host")
        env = env_of(step, p, gpus)
        first, port = step.hosts[0], step.port or DEFAULT_PORT
        sweep = ["--op", p["op"], "--backend", p["backend"], "-b", str(parse_size(p["minbytes"])),
                 "-e", str(parse_size(p["maxbytes"])), "-f", str(p["stepfactor"]), "-n", str(p["iters"]),
                 "-w", str(p["warmup"]), "-c", str(p["check"]), "--platform", "gpu" if gpus else "cpu",
                 "--coordinator", f"{first.address}:{port}", "--nprocs", str(sum(slots)),
                 "--init-timeout", str(p["init_timeout"])]
        uploads = onhost_uploads(ONHOST_DIR, "jax_dist", "torch_dist", "iter_json")
        out = []
        for i, host in enumerate(step.hosts):
            numa = numa_args(host, slots[i])[1:] if gpus else []
            argv = [python_of(host, p), PROGRAM, *sweep, "--nproc", str(slots[i]), "--node-rank", str(i),
                    *gloo_where(host), *(["--numa-nodes", numa[0]] if numa else [])]
            out.append(Command(host=host, role="client", argv=tuple(argv), env=env, timeout_s=float(p["timeout"]),
                               label=f"jax-{host.name}", uploads=uploads))
        return out

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        return framework_step_records(step, results, p, marker=MARKER, missing=_MISSING, var="jax_python",
                                      backend="jax", op=p["op"], header=header)

    def parse_text(self, text: str) -> list[Record]:
        return framework_text_records(text, "jax", None, header)


def header(text: str) -> Record:
    """``jax_version``, ``jaxlib_version``, ``jax_backend``, ``jax_platform``, ``nccl_version``."""
    m = _HEADER.search(text)
    if not m:
        return {}
    nccl = None if m.group(5) == "none" else m.group(5)
    return {"jax_version": m.group(1), "jaxlib_version": m.group(2), "jax_backend": m.group(3),
            "jax_platform": m.group(4), "nccl_version": nccl}



ADAPTER = JaxCollectives()
