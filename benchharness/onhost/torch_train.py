"""Training-step proxies over torch.distributed: step time and EXPOSED communication time.

Run as ranks like ``torch_dist.py`` (torchrun, mpirun or srun). Three proxies:

- ``ddp``: DistributedDataParallel over a synthetic MLP of ``--params`` parameters (``--width``
  square layers), gradients all-reduced in ``--bucket-mb`` buckets overlapped with backward;
- ``moe``: an expert-parallel layer, tokens dispatched and combined with ``all_to_all_single``
  around the expert's matmuls;
- ``pipeline``: GPipe-style forward of ``--microbatches`` micro-batches, activations sent to the
  next stage with ``send``/``recv``.

Each step runs twice, interleaved: with its communication and without (``no_sync()`` for DDP; no
all-to-all; no send/recv). ``exposed = step - compute`` is the communication the step waits for.
``comm_ms`` is the same communication alone (DDP: every bucket's all-reduce back to back). Rank 0
prints one ``proxy=...`` line of ``key=value`` pairs (times are means over steps and ranks).
Standalone: stdlib, torch, and ``torch_dist.py`` beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

try:
    from benchharness.onhost import torch_dist as td
except ImportError:  # on a host: the sweep program was copied beside this one
    import torch_dist as td  # type: ignore[no-redef]

_COUNT = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}


def parse_count(text: str) -> int:
    """``2M`` -> 2000000 (decimal multipliers: parameter counts, not bytes)."""
    text = str(text).strip().upper()
    unit = text[-1] if text and text[-1] in _COUNT and not text[-1].isdigit() else ""
    return int(float(text[: len(text) - len(unit)]) * _COUNT[unit])


def mlp(torch: Any, params: int, width: int) -> Any:
    """A stack of ``width``-square linear layers with about ``params`` parameters (at least one layer)."""
    layers = max(1, round(params / (width * width + width)))
    return torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])


class Timer:
    """Per-step wall times of one rank, every step started together (barrier outside the timing)."""

    def __init__(self, torch: Any, dist: Any, device: Any) -> None:
        self.torch, self.dist, self.device = torch, dist, device

    def __call__(self, fn: Callable[[], object]) -> float:
        self.dist.barrier()
        start = time.perf_counter()
        fn()
        td._sync(self.torch, self.device)
        return time.perf_counter() - start

    def mean_over_ranks(self, values: list[float]) -> float:
        """The mean over steps, averaged over ranks, in ms."""
        t = self.torch.tensor([statistics.fmean(values)], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t)
        return float(t.item()) / self.dist.get_world_size() * 1e3


def ddp(a: argparse.Namespace, torch: Any, dist: Any, device: Any, timer: Timer) -> dict[str, Any]:
    from torch.nn.parallel import DistributedDataParallel

    model = mlp(torch, parse_count(a.params), a.width).to(device)
    net = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None,
                                  bucket_cap_mb=a.bucket_mb)
    x = torch.randn(a.batch, a.width, device=device)

    def step(sync: bool) -> None:
        for p in net.parameters():
            p.grad = None
        if sync:
            net(x).sum().backward()
        else:
            with net.no_sync():
                net(x).sum().backward()

    for _ in range(max(a.warmup, 2)):  # DDP rebuilds its buckets, in gradient order, at the second step
        step(True)
    data = net._get_ddp_logging_data()
    buckets = [int(b) for b in str(data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes")).split(",")
               if b.strip()]
    with_comm, without = [], []
    for _ in range(a.iters):
        with_comm.append(timer(lambda: step(True)))
        without.append(timer(lambda: step(False)))
    flats = [torch.zeros(b // 4, device=device) for b in buckets]
    comm = [timer(lambda: [dist.all_reduce(f) for f in flats]) for _ in range(a.iters)]
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"params": sum(p.numel() for p in model.parameters()), "layers": len(model), "width": a.width,
            "batch": a.batch, "grad_bytes": grad_bytes, "bucket_cap_bytes": int(a.bucket_mb * 2**20),
            "buckets": len(buckets), "bucket_bytes": ",".join(str(b) for b in buckets),
            **_times(timer, with_comm, without, comm)}


def moe(a: argparse.Namespace, torch: Any, dist: Any, device: Any, timer: Timer) -> dict[str, Any]:
    n = dist.get_world_size()
    tokens = a.tokens - a.tokens % n
    x = torch.randn(tokens, a.width, device=device)
    w1 = torch.randn(a.width, 4 * a.width, device=device) / a.width ** 0.5
    w2 = torch.randn(4 * a.width, a.width, device=device) / a.width ** 0.5
    routed, back = torch.empty_like(x), torch.empty_like(x)

    def step(comm: bool) -> None:
        if comm:
            dist.all_to_all_single(routed, x)  # dispatch: each rank's tokens to the experts' ranks
        h = torch.relu((routed if comm else x) @ w1) @ w2
        if comm:
            dist.all_to_all_single(back, h)  # combine: expert outputs back to the tokens' ranks

    for _ in range(a.warmup):
        step(True)
    with_comm, without = [], []
    for _ in range(a.iters):
        with_comm.append(timer(lambda: step(True)))
        without.append(timer(lambda: step(False)))
    comm = [timer(lambda: (dist.all_to_all_single(routed, x), dist.all_to_all_single(back, x)))
            for _ in range(a.iters)]
    return {"tokens": tokens, "width": a.width, "a2a_bytes": tokens * a.width * 4,
            **_times(timer, with_comm, without, comm)}


def pipeline(a: argparse.Namespace, torch: Any, dist: Any, device: Any, timer: Timer) -> dict[str, Any]:
    rank, n = dist.get_rank(), dist.get_world_size()
    w = torch.randn(a.width, a.width, device=device) / a.width ** 0.5
    acts = [torch.randn(a.batch, a.width, device=device) for _ in range(a.microbatches)]

    def step(comm: bool) -> None:
        for act in acts:
            if comm and rank > 0:
                dist.recv(act, rank - 1)
            out = torch.tanh(act @ w)
            if comm and rank < n - 1:
                dist.send(out, rank + 1)

    for _ in range(a.warmup):
        step(True)
    with_comm, without = [], []
    for _ in range(a.iters):
        with_comm.append(timer(lambda: step(True)))
        without.append(timer(lambda: step(False)))

    def transfers() -> None:
        for act in acts:
            if rank > 0:
                dist.recv(act, rank - 1)
            if rank < n - 1:
                dist.send(act, rank + 1)

    comm = [timer(transfers) for _ in range(a.iters)]
    return {"stages": n, "microbatches": a.microbatches, "width": a.width, "batch": a.batch,
            "activation_bytes": a.batch * a.width * 4, **_times(timer, with_comm, without, comm)}


def _times(timer: Timer, with_comm: list[float], without: list[float], comm: list[float]) -> dict[str, float]:
    step, compute = timer.mean_over_ranks(with_comm), timer.mean_over_ranks(without)
    return {"step_ms": round(step, 4), "compute_ms": round(compute, 4), "exposed_ms": round(step - compute, 4),
            "comm_ms": round(timer.mean_over_ranks(comm), 4)}


def main(argv: list[str] | None = None) -> int:
    """Run one proxy; rank 0 prints the version line and the ``proxy=`` line."""
    p = argparse.ArgumentParser(prog="torch_train.py", description=__doc__.splitlines()[0])
    p.add_argument("--proxy", default="ddp", choices=("ddp", "moe", "pipeline"))
    p.add_argument("--params", default="10M", help="DDP model parameters (2M, 1.5B ...)")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    p.add_argument("--tokens", type=int, default=4096, help="moe: tokens per rank")
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("-n", "--iters", type=int, default=5)
    p.add_argument("-w", "--warmup", type=int, default=2)
    p.add_argument("--backend", default="auto", choices=("auto", "nccl", "gloo"))
    p.add_argument("--numa-nodes", default="", help="NUMA node of each local rank (0,0,1,1): bind to its CPUs")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    torch, dist, device, backend = td.init(a.backend, a.numa_nodes)
    timer = Timer(torch, dist, device)
    result = {"ddp": ddp, "moe": moe, "pipeline": pipeline}[a.proxy](a, torch, dist, device, timer)
    if dist.get_rank() == 0:
        print(f"# benchharness torch_train: {td.versions(torch, backend)}", flush=True)
        fields = {"proxy": a.proxy, "ranks": dist.get_world_size(), "iters": a.iters, **result}
        print(" ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
