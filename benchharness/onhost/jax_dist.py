"""JAX multi-process collective sweep that prints nccl-tests' table, run on the hosts' own jax.

One process per host (CPU: one CPU device each, gloo collectives over TCP), or per GPU: ``spawn``
starts ``--nproc`` local processes, process ``node_rank * nproc + k`` drives GPU ``k``
(``local_device_ids``) and is bound to that GPU's NUMA node (``--numa-nodes``), and XLA's GPU
collectives use NCCL (RCCL on ROCm) with the NCCL environment it inherits. ``jax.distributed``
rendezvous at ``--coordinator ADDR:PORT`` (process 0 serves it).

Operations, each a ``shard_map`` over a one-axis mesh of every process' devices: ``all_reduce``
(``lax.psum``), ``all_gather`` (``lax.all_gather``, tiled) and ``alltoall`` (``lax.all_to_all``).
Sizes and bus bandwidth as nccl-tests (doc/PERFORMANCE.md), through ``torch_dist``'s helpers
(``counts``, ``bus_factor``), so the table charts beside nccl-tests' and torch's. Results are
checked after timing (``#wrong``). Standalone: stdlib, numpy, jax, and ``torch_dist.py`` (which
imports torch only when it runs a torch sweep) beside it.
"""

# ruff: noqa: UP031 - the table is printed with nccl-tests' own printf formats, on purpose
from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import time
from typing import Any

try:
    from benchharness.onhost import torch_dist as nt
except ImportError:  # on a host: torch_dist.py is copied beside this file
    import torch_dist as nt  # type: ignore[no-redef]

OPS = ("all_reduce", "all_gather", "alltoall")
MARKER = "# benchharness jax_dist:"


def _versions(jax: Any, backend: str) -> str:
    """``jax X jaxlib Y backend B platform P nccl V`` for the table's first line."""
    import jaxlib

    nccl = "none"
    if backend == "nccl":
        try:  # jaxlib's CUDA plugin links NCCL; its version is in the plugin's metadata when present
            from importlib import metadata

            nccl = next((metadata.version(d) for d in ("nvidia-nccl-cu12", "nvidia-nccl-cu13")
                         if _installed(metadata, d)), "unknown")
        except ImportError:
            nccl = "unknown"
    return (f"jax {jax.__version__} jaxlib {jaxlib.__version__} backend {backend} "
            f"platform {jax.default_backend()} nccl {nccl}")


def _installed(metadata: Any, dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def init(a: argparse.Namespace) -> tuple[Any, str]:
    """(jax, backend) with ``jax.distributed`` up. CPU: gloo collectives bound to ``--local-addr``
    (or ``--gloo-interface``), as torch's GLOO_SOCKET_IFNAME; GPU: this process' one GPU."""
    local = a.proc_id % a.nproc if a.nproc else 0
    nt.bind_numa(a.numa_nodes, local)
    import jax

    kwargs: dict[str, Any] = {"coordinator_address": a.coordinator, "num_processes": a.nprocs,
                              "process_id": a.proc_id, "initialization_timeout": a.init_timeout}
    backend = a.backend
    if backend in ("auto", "gloo") and a.platform == "cpu":
        backend = "gloo"
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        from jax._src.lib import _jax

        plain = _jax.make_gloo_tcp_collectives
        where = {"interface": a.gloo_interface} if a.gloo_interface else {"hostname": a.local_addr}
        _jax.make_gloo_tcp_collectives = lambda distributed_client: plain(distributed_client, **where)
    else:
        backend = "nccl"
        kwargs["local_device_ids"] = [local]
    jax.distributed.initialize(**kwargs)
    return jax, backend


def values(np: Any, rank: int, length: int) -> Any:
    """Small integers in float32 (as torch_dist's), so every sum is exact."""
    idx = np.arange(length, dtype=np.int64)
    return ((idx * 7 + rank * 3) % 13 + 1).astype(np.float32)


def expected(np: Any, op: str, rank: int, n: int, send_n: int) -> Any:
    """What ``op`` leaves on process ``rank``."""
    if op == "all_reduce":
        return sum(values(np, q, send_n) for q in range(n))
    if op == "all_gather":
        return np.concatenate([values(np, q, send_n) for q in range(n)])
    chunk = send_n // n
    return np.concatenate([values(np, q, send_n)[rank * chunk:(rank + 1) * chunk] for q in range(n)])


def programs(jax: Any, mesh: Any) -> dict[str, Any]:
    """The jitted collectives over the mesh's one axis ``i``."""
    from jax.sharding import PartitionSpec

    shard_map: Any = getattr(jax, "shard_map", None)
    if shard_map is None:  # jax before 0.6: the experimental home
        from jax.experimental.shard_map import shard_map
    lax = jax.lax

    def make(fn: Any) -> Any:
        return jax.jit(shard_map(fn, mesh=mesh, in_specs=PartitionSpec("i"), out_specs=PartitionSpec("i")))

    return {"all_reduce": make(lambda x: lax.psum(x, "i")),
            "all_gather": make(lambda x: lax.all_gather(x, "i", tiled=True)),
            "alltoall": make(lambda x: lax.all_to_all(x, "i", 0, 0, tiled=True))}


def sweep(a: argparse.Namespace) -> int:
    """The size sweep of one operation; process 0 prints nccl-tests' table. Exit 1 on wrong results."""
    jax, backend = init(a)
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    rank, n = jax.process_index(), jax.process_count()
    device = jax.local_devices()[0]
    mesh = Mesh(np.array(jax.devices()), ("i",))
    sharding = NamedSharding(mesh, PartitionSpec("i"))
    fns = programs(jax, mesh)

    def emit(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    def global_sum(x: float) -> float:
        gathered = multihost_utils.process_allgather(np.array([x], dtype=np.float64))
        return float(np.sum(gathered))

    names = multihost_utils.process_allgather(np.frombuffer(
        socket.gethostname().encode()[:32].ljust(32, b"\0"), dtype=np.uint8))
    pids = multihost_utils.process_allgather(np.array([os.getpid()], dtype=np.int64))
    emit(f"{MARKER} {_versions(jax, backend)}")
    emit(f"# Collective test starting: {a.op}_perf")
    emit(f"# nThread 1 nGpus 1 minBytes {a.minbytes} maxBytes {a.maxbytes} step: {a.stepfactor}(factor) "
         f"warmup iters: {a.warmup_iters} iters: {a.iters} agg iters: 1 validation: {a.check} graph: 0")
    emit("#\n# Using devices")
    for q in range(n):
        host = bytes(names[q]).rstrip(b"\0").decode(errors="replace")
        emit(f"#  Rank {q:2d} Group  0 Pid {int(pids[q][0]):6d} on {host:>10s} device {0:2d} "
             f"[{device.platform}] {platform.machine()} jax")
    emit("#\n# %10s  %12s  %8s  %6s  %6s  %30s" % ("", "", "", "", "", "out-of-place"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s"
         % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s"
         % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
    redop = "sum" if a.op == "all_reduce" else "none"
    errors, busbws = 0, []
    fn = fns[a.op]
    size = a.minbytes
    while size <= a.maxbytes:
        send_n, recv_n = nt.counts(a.op, size, n)
        if send_n < n:  # all_to_all splits the buffer n ways
            size *= a.stepfactor
            continue
        local = jax.device_put(values(np, rank, send_n), device)
        x = jax.make_array_from_single_device_arrays((send_n * n,), sharding, [local])
        for _ in range(a.warmup_iters):
            y = fn(x)
        fn(x).block_until_ready()
        multihost_utils.sync_global_devices(f"size {size}")
        start = time.perf_counter()
        for _ in range(a.iters):
            y = fn(x)
        y.block_until_ready()
        sec = global_sum((time.perf_counter() - start) / max(a.iters, 1)) / n
        nbytes = max(send_n, recv_n) * 4
        algbw = nbytes / 1e9 / sec if sec > 0 else 0.0
        busbw = algbw * nt.bus_factor(a.op, n)
        busbws.append(busbw)
        wrong_text = "N/A"
        if a.check:
            got = np.asarray(y.addressable_shards[0].data)
            wrong = int(global_sum(float(np.sum(got != expected(np, a.op, rank, n, send_n)))))
            errors += 1 if wrong else 0
            wrong_text = "%g" % wrong
        shown = send_n // n if a.op == "alltoall" else send_n
        emit("%12li  %12li  %8s  %6s  %6s  %7s  %6s  %6s  %5s" % (nbytes, shown, "float", redop, "    -1",
                                                             nt._time_str(sec * 1e6), nt._bw(algbw),
                                                             nt._bw(busbw), wrong_text))
        size *= a.stepfactor
    emit("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
    emit("# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws) if busbws else 0.0))
    emit("#")
    multihost_utils.sync_global_devices("end")
    jax.distributed.shutdown()
    return 1 if errors else 0


def spawn(argv: list[str], nproc: int, node_rank: int) -> int:
    """Start ``nproc`` processes of this program on this host (process ``node_rank * nproc + k``);
    the worst exit status of theirs."""
    children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv,
                                  "--proc-id", str(node_rank * nproc + k)]) for k in range(nproc)]
    return max(c.wait() for c in children)


def parser() -> argparse.ArgumentParser:
    """The program's options (nccl-tests' sweep flags, and the rendezvous)."""
    p = argparse.ArgumentParser(prog="jax_dist.py", description=(__doc__ or "").splitlines()[0])
    p.add_argument("-b", "--minbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("--op", default="all_reduce", choices=OPS)
    p.add_argument("--backend", default="auto", choices=("auto", "nccl", "gloo"))
    p.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    p.add_argument("--coordinator", required=True, help="ADDR:PORT of process 0's coordination service")
    p.add_argument("--nprocs", type=int, required=True, help="processes in all")
    p.add_argument("--proc-id", type=int, default=None)
    p.add_argument("--nproc", type=int, default=1, help="processes on this host (spawn)")
    p.add_argument("--node-rank", type=int, default=None, help="this host's index: spawn --nproc processes")
    p.add_argument("--local-addr", default=None, help="address gloo binds to on this host")
    p.add_argument("--gloo-interface", default=None, help="netdev gloo binds to on this host")
    p.add_argument("--init-timeout", type=int, default=300, help="seconds to wait for every process to join")
    p.add_argument("--numa-nodes", default="", help="NUMA node of each local process (0,0,1,1)")
    return p


def main(argv: list[str] | None = None) -> int:
    """``--node-rank R`` spawns this host's processes; ``--proc-id I`` is one of them."""
    args = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(args)
    if a.proc_id is None:
        if a.node_rank is None:
            raise SystemExit("jax_dist: give --proc-id (one process) or --node-rank (spawn --nproc)")
        return spawn(args, a.nproc, a.node_rank)
    return sweep(a)


if __name__ == "__main__":
    sys.exit(main())
