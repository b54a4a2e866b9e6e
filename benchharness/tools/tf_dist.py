"""Tool ``tensorflow``: ``MultiWorkerMirroredStrategy`` all-reduce on the hosts' own tensorflow.

The host program is ``benchharness.onhost.tf_dist`` (copied with ``torch_dist.py``, whose sizing
and table helpers it shares), which prints nccl-tests' table, so its samples chart beside
nccl-tests' and torch's. One worker per host over the run's transport, ``TF_CONFIG``'s cluster the
step's hosts at ``ADDR:PORT`` (port ``step.port``, else 29470). Communication ``RING`` (gRPC) on CPU
hosts, ``NCCL`` on GPU hosts (every local GPU a replica of the host's worker), with nccl-tests'
NCCL environment; ``require_network`` / ``require_gdr`` judge NCCL's debug log as for nccl-tests.

The interpreter: the suite's ``python``, else host var ``tf_python``, else ``python3``. A host
whose interpreter has no tensorflow fails the step as ``tool_missing`` ("not installed" in the
frameworks matrix).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_size
from benchharness.tools.common import ONHOST_DIR, onhost_uploads
from benchharness.tools.jax_dist import env_of
from benchharness.tools.nccl_tests import requirements
from benchharness.tools.torch_dist import (
    check_framework_params,
    framework_step_records,
    framework_text_records,
    has_gpus,
    merged,
    sized_for_cpus,
)

PROGRAM = f"{ONHOST_DIR}/tf_dist.py"
#: Every worker's gRPC server port when the planner gives none (TF_CONFIG names one per worker).
DEFAULT_PORT = 29470
MARKER = "# benchharness tf_dist:"
PARAMS: dict[str, Any] = {
    "op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "cpu_maxbytes": "16M", "stepfactor": 2,
    "iters": 20, "warmup": 5, "check": 1, "implementation": "auto", "python": None, "env": {}, "timeout": 900,
    "ib_tc": None, "ib_sl": None, "nccl_debug": False, "require_network": None, "require_gdr": None,
}
_HEADER = re.compile(r"# benchharness tf_dist: tensorflow (\S+) backend (\S+) platform (\S+) cuda (\S+) rocm (\S+)")
_MISSING = re.compile(r"No module named '?(tensorflow)\b")


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the parameter when a value is wrong."""
    p = merged(params, PARAMS)
    if p["op"] != "all_reduce":
        raise ValueError(f"op: {p['op']!r}: the tensorflow tool runs all_reduce only")
    if p["implementation"] not in ("auto", "RING", "NCCL"):
        raise ValueError(f"implementation: {p['implementation']!r} is not one of auto, RING, NCCL")
    check_framework_params(p, ("all_reduce",), {"stepfactor": 2, "iters": 1, "warmup": 0, "check": 0})


def python_of(host: Host, p: Mapping[str, Any]) -> str:
    """The interpreter with tensorflow: the suite's ``python``, host var ``tf_python``, else ``python3``."""
    return str(p["python"] or host.var("tf_python") or "python3")


class TfAllReduce:
    """MultiWorkerMirroredStrategy all-reduce sweep (``tf_dist.py``), nccl-tests' table and bus bandwidth."""

    name = "tensorflow"
    framework = "TensorFlow"  # a row of the compatibility matrix (results/frameworks.py)
    description = "TensorFlow MultiWorkerMirroredStrategy all-reduce (RING on CPUs, NCCL on GPUs)"
    reads = ("the table benchharness.onhost.tf_dist prints (nccl-tests' columns, the tensorflow version and "
             "communication in its header; TensorFlow 2.x)")
    params = PARAMS
    patterns = ("group", "scaling")

    def check_params(self, params: Mapping[str, Any]) -> None:
        check_params(params)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        gpus = has_gpus(step.hosts)
        p = sized_for_cpus(p, gpus)
        port = step.port or DEFAULT_PORT
        workers = ",".join(f"{h.address}:{port}" for h in step.hosts)
        sweep = ["-b", str(parse_size(p["minbytes"])), "-e", str(parse_size(p["maxbytes"])),
                 "-f", str(p["stepfactor"]), "-n", str(p["iters"]), "-w", str(p["warmup"]), "-c", str(p["check"]),
                 "--implementation", p["implementation"], "--workers", workers]
        env = env_of(step, p, gpus)
        uploads = onhost_uploads(ONHOST_DIR, "tf_dist", "torch_dist", "iter_json")
        return [Command(host=h, role="client", argv=(python_of(h, p), PROGRAM, *sweep, "--index", str(i)), env=env,
                        timeout_s=float(p["timeout"]), label=f"tf-{h.name}", uploads=uploads)
                for i, h in enumerate(step.hosts)]

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        p = requirements(merged(step.params, PARAMS), step.hosts)
        return framework_step_records(step, results, p, marker=MARKER, missing=_MISSING, var="tf_python",
                                      backend="tensorflow", op="all_reduce", header=header)

    def parse_text(self, text: str) -> list[Record]:
        return framework_text_records(text, "tensorflow", "all_reduce", header)


def header(text: str) -> Record:
    """``tf_version``, ``tf_backend`` (ring / nccl), ``tf_platform``, ``cuda_version``, ``rocm``."""
    m = _HEADER.search(text)
    if not m:
        return {}
    return {"tf_version": m.group(1), "tf_backend": m.group(2), "tf_platform": m.group(3),
            "cuda_version": None if m.group(4) == "none" else m.group(4), "tf_rocm": m.group(5) == "yes"}



ADAPTER = TfAllReduce()
