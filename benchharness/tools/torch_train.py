"""Tool ``torch-train``: training-step proxies (DDP, expert all-to-all, pipeline send/recv) over torch.

The host program is ``benchharness.onhost.torch_train`` (with ``torch_dist.py`` beside it),
launched like tool ``torch`` (torchrun over SSH, mpirun, or srun). One sample per step: the proxy,
its shape (parameters, buckets, tokens ...) and ``step_ms``, ``compute_ms`` (the same step without
communication), ``exposed_ms`` (their difference) and ``comm_ms`` (the communication alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Record, Step
from benchharness.tools.common import onhost_uploads
from benchharness.tools.torch_dist import (
    LAUNCH_PARAMS,
    REMOTE_DIR,
    check_launch_params,
    check_results,
    header,
    launch_commands,
    merged,
)

PROGRAM = f"{REMOTE_DIR}/torch_train.py"
PROXIES = ("ddp", "moe", "pipeline")
PARAMS: dict[str, Any] = {
    "proxy": "ddp", "model_params": "10M", "width": 1024, "batch": 8, "bucket_mb": 25, "tokens": 4096,
    "microbatches": 4, "iters": 5, "warmup": 2, **LAUNCH_PARAMS,
}
_INTS = ("width", "batch", "tokens", "microbatches", "iters")
_FLAGS = (("proxy", "--proxy"), ("model_params", "--params"), ("width", "--width"), ("batch", "--batch"),
          ("bucket_mb", "--bucket-mb"), ("tokens", "--tokens"), ("microbatches", "--microbatches"),
          ("iters", "-n"), ("warmup", "-w"), ("backend", "--backend"))


def parse_count(text: object) -> int:
    """``2M`` -> 2000000, ``70B`` -> 70e9 (decimal: parameter counts); ValueError otherwise."""
    s = str(text).strip().upper()
    mult = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}.get(s[-1:], 1)
    try:
        value = float(s[:-1] if mult > 1 else s) * mult
    except ValueError:
        raise ValueError(f"{text!r} is not a count such as 2M or 70B") from None
    if value < 1:
        raise ValueError(f"{text!r} must be at least 1")
    return int(value)


def parse_line(line: str) -> Record:
    """One ``proxy=ddp ranks=3 ... step_ms=12.5`` line as a record (numbers as numbers)."""
    rec: Record = {"kind": "summary"}
    for item in line.split():
        key, _, value = item.partition("=")
        try:
            rec[key] = int(value)
        except ValueError:
            try:
                rec[key] = float(value)
            except ValueError:
                rec[key] = value
    return rec


def parse_output(text: str) -> list[Record]:
    """Records of every ``proxy=`` line, with the program's versions; ToolFailure when there is none."""
    extra = {"backend": "torch", **header(text.replace("torch_train:", "torch_dist:"))}
    records = [{**parse_line(line.strip()), **extra} for line in text.splitlines() if line.startswith("proxy=")]
    if not records:
        raise ToolFailure("no_results", "no proxy= result line in the output")
    return records


class TorchTrain:
    """Training-step proxies: step time with and without communication."""

    name = "torch-train"
    description = "training-step proxies over torch.distributed: DDP, expert all-to-all, pipeline send/recv"
    reads = ("the step lines benchharness.onhost.torch_train prints: proxy, shape, step_ms, compute_ms, "
             "exposed_ms, comm_ms (torch 2.x)")
    params = PARAMS
    patterns = ("group", "scaling")

    def check_params(self, params: Mapping[str, Any]) -> None:
        p = merged(params, PARAMS)
        if p["proxy"] not in PROXIES:
            raise ValueError(f"proxy: {p['proxy']!r} is not one of {', '.join(PROXIES)}")
        parse_count(p["model_params"])
        for key in _INTS:
            if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
                raise ValueError(f"{key}: must be a positive integer, not {p[key]!r}")
        if isinstance(p["warmup"], bool) or not isinstance(p["warmup"], int) or p["warmup"] < 0:
            raise ValueError(f"warmup: must be a non-negative integer, not {p['warmup']!r}")
        if isinstance(p["bucket_mb"], bool) or not isinstance(p["bucket_mb"], int | float) or p["bucket_mb"] <= 0:
            raise ValueError(f"bucket_mb: must be a number of MiB > 0, not {p['bucket_mb']!r}")
        check_launch_params(p)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = merged(step.params, PARAMS)
        program = [PROGRAM]
        for key, flag in _FLAGS:
            program += [flag, str(parse_count(p[key]) if key == "model_params" else p[key])]
        uploads = onhost_uploads(REMOTE_DIR, "torch_train", "torch_dist", "iter_json")
        return launch_commands(step, p, program, launcher, uploads)

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        res = check_results(step, results, "# benchharness torch_train")
        try:
            records = parse_output(res.stdout)
        except ToolFailure as exc:
            raise ToolFailure(exc.kind, f"step {step.id} on {res.command.host.name}: {exc}") from exc
        return [{**step.sample_labels(), **r, "nhosts": len(step.hosts)} for r in records]

    def parse_text(self, text: str) -> list[Record]:
        return parse_output(text)


ADAPTER = TorchTrain()
