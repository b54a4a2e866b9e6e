"""torch.distributed collective sweep that prints nccl-tests' table, run on the hosts' own torch.

Launched by torchrun (``python torch_dist.py torchrun --local-addr ADDR -- <torchrun args> torch_dist.py
<sweep args>``, see :func:`torchrun`), mpirun or srun (ranks from Open MPI's or Slurm's variables,
the rendezvous from ``MASTER_ADDR``/``MASTER_PORT``). Operations: ``all_reduce``, ``all_gather``
(``all_gather_into_tensor``), ``reduce_scatter`` (``reduce_scatter_tensor``), ``alltoall``
(``all_to_all_single``), ``broadcast`` and ``sendrecv`` (``isend``/``irecv`` to the next rank).
Backend ``nccl`` on CUDA and ROCm (RCCL) GPUs, ``gloo`` on CPUs.

Sizes and bandwidths follow nccl-tests (doc/PERFORMANCE.md): ``size`` is the larger of the send
and receive buffers in bytes, ``algbw = size / time`` in 10^9 bytes/s and ``busbw = algbw * f`` with
f = 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall, 1 for broadcast
and sendrecv. Results are checked after timing (``#wrong``).

``-I 1`` times every iteration on every rank, each after a barrier (as nccl-tests 2.19 with
``-z 1``, so a rank's time says when it finished), and with ``-J FILE`` rank 0 writes nccl-tests'
JSON document with the per-process times (``iter_json.py``), never overwriting a file: the same
wrapper carries it home and the same straggler analysis reads it (tools/nccl_iter.py).
Standalone: stdlib, torch, and ``iter_json.py`` beside it.
"""

# ruff: noqa: UP031 - the table is printed with nccl-tests' own printf formats, on purpose
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
from typing import Any

try:
    from benchharness.onhost import iter_json
except ImportError:  # on a host: iter_json.py is copied beside this file
    import iter_json  # type: ignore[no-redef]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
#: gloo (torch 1.13) has no tensor all-gather or reduce-scatter: the list forms stand in for them
_GLOO_LIST_FORMS = ("all_gather", "reduce_scatter")


def parse_size(text: str) -> int:
    """Bytes in ``8``, ``128K``, ``4M``, ``1G`` (binary multipliers, as nccl-tests)."""
    text = text.strip().upper()
    unit = text[-1] if text and text[-1] in "KMG" else ""
    return int(float(text[: len(text) - len(unit)]) * _UNITS[unit])


def bus_factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw / algbw factor (doc/PERFORMANCE.md)."""
    if op == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (nranks - 1) / nranks
    return 1.0


def counts(op: str, size: int, nranks: int, word: int = 4) -> tuple[int, int]:
    """(send, receive) element counts per rank for ``size`` bytes, as nccl-tests sizes them."""
    per_rank = size // word // nranks
    if op == "all_gather":
        return per_rank, per_rank * nranks
    if op == "reduce_scatter":
        return per_rank * nranks, per_rank
    if op == "alltoall":
        return per_rank * nranks, per_rank * nranks
    return size // word, size // word


def world() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun, Open MPI or Slurm; MASTER_* must be set."""
    for rank, size, local in (("RANK", "WORLD_SIZE", "LOCAL_RANK"),
                              ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                              ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size]), int(os.environ.get(local, "0"))
    raise SystemExit("torch_dist: no rank in the environment (run under torchrun, mpirun or srun)")


NODE_SYSFS = "/sys/devices/system/node"


def parse_cpulist(text: str) -> set[int]:
    """CPUs of a sysfs ``cpulist`` (``0-31,64-95``; Documentation/ABI/stable/sysfs-devices-node)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def bind_numa(nodes: str, local: int, root: str = NODE_SYSFS) -> set[int] | None:
    """Pin this rank to the CPUs of its GPU's NUMA node: ``nodes`` lists the node of each local
    rank (``--numa-nodes 0,0,0,0,1,1,1,1``, from the rails as mpirun's placement has it). What
    ``numactl --cpunodebind`` does, with the stdlib (memory then follows by first touch). Returns
    the CPUs, or None (and a line on stderr) when it cannot: the rank runs unbound."""
    if not nodes:
        return None
    items = nodes.split(",")
    if local >= len(items):
        print(f"torch_dist: local rank {local} has no NUMA node in {nodes!r}; not bound", file=sys.stderr)
        return None
    path = os.path.join(root, f"node{int(items[local])}", "cpulist")
    try:
        with open(path) as fh:
            cpus = parse_cpulist(fh.read())
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError) as exc:
        print(f"torch_dist: local rank {local}: cannot bind to NUMA node {items[local]} ({path}: {exc}); "
              "not bound", file=sys.stderr)
        return None
    return cpus


def init(backend: str, numa_nodes: str = "") -> tuple[Any, Any, Any, str]:
    """(torch, torch.distributed, device, backend) with the process group up; the rank bound to
    its GPU's NUMA node first (``bind_numa``), so that torch's threads start there."""
    rank, size, local = world()
    bind_numa(numa_nodes, local)
    import torch
    import torch.distributed as dist

    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cpu")
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise SystemExit("torch_dist: backend nccl needs a GPU, and torch sees none")
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=size)
    return torch, dist, device, backend


def versions(torch: Any, backend: str) -> str:
    """``torch X backend B nccl V cuda C hip H`` for the table's first line."""
    nccl = "none"
    if backend == "nccl":
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    return (f"torch {torch.__version__} backend {backend} nccl {nccl} cuda {torch.version.cuda or 'none'} "
            f"hip {getattr(torch.version, 'hip', None) or 'none'}")


class Op:
    """One operation on tensors of one size: run it, and check what it left."""

    def __init__(self, torch: Any, dist: Any, device: Any, op: str, size: int, backend: str) -> None:
        self.torch, self.dist, self.op, self.backend = torch, dist, op, backend
        self.rank, self.n = dist.get_rank(), dist.get_world_size()
        self.send_n, self.recv_n = counts(op, size, self.n)
        self.send = self.values(self.rank, self.send_n).to(device)
        self.recv = torch.zeros(self.recv_n, dtype=torch.float32, device=device)

    def values(self, rank: int, length: int, offset: int = 0) -> Any:
        """Small integers in float32, so every sum is exact."""
        idx = self.torch.arange(offset, offset + length, dtype=self.torch.int64)
        return ((idx * 7 + rank * 3) % 13 + 1).to(self.torch.float32)

    def run(self) -> None:
        d, op = self.dist, self.op
        if op == "all_reduce":
            d.all_reduce(self.recv.copy_(self.send))
        elif op == "broadcast":
            d.broadcast(self.recv.copy_(self.send) if self.rank == 0 else self.recv, src=0)
        elif op == "all_gather" and self.backend == "gloo":
            d.all_gather(list(self.recv.chunk(self.n)), self.send)
        elif op == "all_gather":
            d.all_gather_into_tensor(self.recv, self.send)
        elif op == "reduce_scatter" and self.backend == "gloo":
            # gloo has no reduce_scatter: reduce each chunk to its owner
            for j, chunk in enumerate(self.send.chunk(self.n)):
                part = chunk.clone()
                d.reduce(part, dst=j)
                if j == self.rank:
                    self.recv.copy_(part)
        elif op == "reduce_scatter":
            d.reduce_scatter_tensor(self.recv, self.send)
        elif op == "alltoall":
            d.all_to_all_single(self.recv, self.send)
        else:  # sendrecv: to the next rank, from the previous one (nccl-tests' sendrecv_perf)
            reqs = [d.isend(self.send, (self.rank + 1) % self.n), d.irecv(self.recv, (self.rank - 1) % self.n)]
            for r in reqs:
                r.wait()

    def expected(self) -> Any:
        n, r, t = self.n, self.rank, self.torch
        if self.op == "all_reduce":
            return sum(self.values(q, self.send_n) for q in range(n))
        if self.op == "broadcast":
            return self.values(0, self.send_n)
        if self.op == "all_gather":
            return t.cat([self.values(q, self.send_n) for q in range(n)])
        if self.op == "reduce_scatter":
            return sum(self.values(q, self.send_n)[r * self.recv_n:(r + 1) * self.recv_n] for q in range(n))
        if self.op == "alltoall":
            chunk = self.send_n // n
            return t.cat([self.values(q, self.send_n)[r * chunk:(r + 1) * chunk] for q in range(n)])
        return self.values((r - 1) % n, self.send_n)

    def wrong(self) -> int:
        return int((self.recv.cpu() != self.expected()).sum().item())


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_str(usec: float) -> str:
    return f"{usec:7.0f}" if usec >= 10000.0 else f"{usec:7.1f}" if usec >= 100.0 else f"{usec:7.2f}"


def _bw(value: float) -> str:
    """nccl-tests' ``%6.2f``, with two more decimals below 1 GB/s (CPU and shaped links live there)."""
    return "%6.2f" % value if value >= 1.0 else "%6.4f" % value


def _sizes(a: argparse.Namespace) -> list[int]:
    sizes, size = [], a.minbytes
    while size <= a.maxbytes:
        sizes.append(size)
        size = size * a.stepfactor if a.stepfactor > 1 else size + a.stepbytes
    return sizes


def sweep(argv: list[str]) -> int:
    """The size sweep of one operation; rank 0 prints nccl-tests' table. Exit 1 on wrong results."""
    p = argparse.ArgumentParser(prog="torch_dist.py", description=__doc__.splitlines()[0])
    p.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-i", "--stepbytes", type=parse_size, default=parse_size("1M"))
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-I", "--per_iter_timing", type=int, default=0, choices=(0, 1))
    p.add_argument("-J", "--output_file", default=None)
    p.add_argument("--op", default="all_reduce", choices=OPS)
    p.add_argument("--backend", default="auto", choices=("auto", "nccl", "gloo"))
    p.add_argument("--numa-nodes", default="", help="NUMA node of each local rank (0,0,1,1): bind to its CPUs")
    a = p.parse_args(argv)
    torch, dist, device, backend = init(a.backend, a.numa_nodes)
    rank, n = dist.get_rank(), dist.get_world_size()

    def emit(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    local = world()[2]
    names: list[Any] = [None] * n
    dist.all_gather_object(names, {"rank": rank, "group": 0, "pid": os.getpid(), "hostname": socket.gethostname(),
                                   "device": device.index if device.type == "cuda" else 0,
                                   "device_hex": str(device), "device_info": f"{platform.machine()} torch",
                                   "local_rank": local})
    per_iter = bool(a.per_iter_timing)
    doc = iter_json.document([f"{a.op}_perf", *argv], a.minbytes, a.maxbytes, a.warmup_iters, a.iters,
                             per_iter, names)
    emit(f"# benchharness torch_dist: {versions(torch, backend)}")
    emit(f"# Collective test starting: {a.op}_perf")
    emit(f"# nThread 1 nGpus 1 minBytes {a.minbytes} maxBytes {a.maxbytes} step: {a.stepfactor}(factor) "
         f"warmup iters: {a.warmup_iters} iters: {a.iters} agg iters: 1 validation: {a.check} graph: 0")
    emit("#\n# Using devices")
    for q, dev in enumerate(names):
        emit(f"#  Rank {q:2d} Group  0 Pid {int(dev['pid']):6d} on {dev['hostname']:>10s} device {0:2d} "
             f"[{dev['device_hex']}] {platform.machine()} torch")
    # torch's all_reduce and broadcast work in place; the tensor forms write a separate output
    placement = "in-place" if a.op in ("all_reduce", "broadcast") else "out-of-place"
    emit("#\n# %10s  %12s  %8s  %6s  %6s  %30s" % ("", "", "", "", "", placement))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s"
         % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s"
         % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
    redop = "sum" if a.op in ("all_reduce", "reduce_scatter") else "none"
    root = 0 if a.op == "broadcast" else -1
    errors, busbws = 0, []
    for size in _sizes(a):
        bench = Op(torch, dist, device, a.op, size, backend)
        for _ in range(a.warmup_iters):
            bench.run()
        _sync(torch, device)
        dist.barrier()
        mine: list[float] = []
        start = time.perf_counter()
        for _ in range(a.iters):
            if not per_iter:
                bench.run()
                continue
            dist.barrier()  # as nccl-tests -z 1: every rank's iteration starts together
            _sync(torch, device)
            began = time.perf_counter()
            bench.run()
            _sync(torch, device)
            mine.append(time.perf_counter() - began)
        _sync(torch, device)
        # with per-iteration timing the barriers between iterations are not the collective's time
        took = sum(mine) if per_iter else time.perf_counter() - start
        elapsed = torch.tensor([took / max(a.iters, 1)], dtype=torch.float64, device=device)
        dist.all_reduce(elapsed)
        sec = float(elapsed.item()) / n
        nbytes = max(bench.send_n, bench.recv_n) * 4
        algbw = nbytes / 1e9 / sec if sec > 0 else 0.0
        busbw = algbw * bus_factor(a.op, n)
        busbws.append(busbw)
        wrong_text = "N/A"
        if a.check:
            bench.run()
            _sync(torch, device)
            wrong = torch.tensor([bench.wrong()], dtype=torch.int64, device=device)
            dist.all_reduce(wrong)
            errors += 1 if int(wrong.item()) else 0
            wrong_text = "%g" % int(wrong.item())
        # nccl-tests' count column: elements per rank's chunk for the scattering collectives
        shown = {"reduce_scatter": bench.recv_n, "alltoall": bench.send_n // n}.get(a.op, bench.send_n)
        emit("%12li  %12li  %8s  %6s  %6s  %7s  %6s  %6s  %5s" % (nbytes, shown, "float", redop, f"{root:6d}",
                                                             _time_str(sec * 1e6), _bw(algbw), _bw(busbw), wrong_text))
        key = placement.replace("-", "_")
        result: dict[str, Any] = {"size": nbytes, "count": shown, "type": "float", "redop": redop,
                                  "root": f"{root:6d}", key: {"time": sec * 1e6, "alg_bw": algbw, "bus_bw": busbw,
                                                              "nwrong": "nan" if not a.check else float(wrong_text)}}
        if per_iter and a.iters:
            everyone: list[Any] = [None] * n
            dist.all_gather_object(everyone, mine)
            result[f"{key}_per_iter"] = iter_json.per_iter_block(everyone)
        doc["results"].append(result)
    emit("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    emit("# Avg bus bandwidth    : %g " % avg)
    emit("#")
    if a.output_file and rank == 0:
        with iter_json.open_new(a.output_file) as fh:
            json.dump(iter_json.finish(doc, errors, avg), fh)
    dist.destroy_process_group()
    return 1 if errors else 0


def torchrun(argv: list[str]) -> int:
    """Run torch's own torchrun (``torch.distributed.run``) with two fixes for older torch.

    ``--local-addr ADDR``: the address this node's agent advertises as ``MASTER_ADDR`` when its
    workers get rank 0. torch before 2.x advertises ``socket.getfqdn()``, which other nodes
    cannot always resolve (network namespaces, nodes without DNS); newer torch has the option
    itself and gets it passed on. On Python 3.11, torch 1.x's ``Std.from_str`` finds no member
    for ``0`` (``enum`` no longer iterates zero-valued flags) and torchrun fails with
    "'NoneType' object has no attribute 'get'"; ``Std(int)`` is what it means.
    """
    local_addr = None
    if argv[:1] == ["--local-addr"]:
        local_addr, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    from torch.distributed import run
    from torch.distributed.elastic.agent.server import api
    from torch.distributed.elastic.multiprocessing import Std

    def from_str(vm: str) -> Any:
        if ":" in vm:
            return {int(k): Std(int(v)) for k, v in (item.split(":") for item in vm.split(","))}
        return Std(int(vm))

    Std.from_str = staticmethod(from_str)
    if local_addr:
        if "--local-addr" in run.get_args_parser().format_help():
            argv = ["--local-addr", local_addr, *argv]
        else:
            api._get_fq_hostname = lambda: local_addr
    run.main(argv)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``torchrun ...`` launches; anything else is a sweep run as one rank."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["torchrun"]:
        return torchrun(args[1:])
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
