"""TensorFlow ``MultiWorkerMirroredStrategy`` all-reduce sweep that prints nccl-tests' table, run on
the hosts' own tensorflow.

One worker per host (``--workers ADDR:PORT,...``, this one ``--index I``; written into ``TF_CONFIG``
before TensorFlow is imported). Communication: ``RING`` (gRPC collective ops) on CPU hosts,
``NCCL`` on GPU hosts (every local GPU a replica of the one worker). The all-reduce is
``ReplicaContext.all_reduce(SUM)`` inside ``strategy.run`` of a ``tf.function``; sizes and bus
bandwidth as nccl-tests (doc/PERFORMANCE.md) through ``torch_dist``'s helpers, so the table charts
beside nccl-tests' and torch's. Results are checked after timing (``#wrong``). Standalone: stdlib,
tensorflow, and ``torch_dist.py`` (torch only for a torch sweep) beside it.
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
    from benchharness.onhost import torch_dist as nt
except ImportError:  # on a host: torch_dist.py is copied beside this file
    import torch_dist as nt  # type: ignore[no-redef]

MARKER = "# benchharness tf_dist:"
OPS = ("all_reduce",)


def init(a: argparse.Namespace) -> tuple[Any, Any, str]:
    """(tf, strategy, implementation) with the cluster up."""
    workers = [w for w in a.workers.split(",") if w]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": a.index}})
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    impl = a.implementation if a.implementation != "auto" else ("NCCL" if gpus else "RING")
    kinds = tf.distribute.experimental.CommunicationImplementation
    options = tf.distribute.experimental.CommunicationOptions(implementation=getattr(kinds, impl))
    return tf, tf.distribute.MultiWorkerMirroredStrategy(communication_options=options), impl


def _versions(tf: Any, impl: str) -> str:
    """``tensorflow X backend B platform P cuda C`` for the table's first line."""
    info = tf.sysconfig.get_build_info()
    gpus = tf.config.list_physical_devices("GPU")
    return (f"tensorflow {tf.__version__} backend {impl.lower()} platform {'gpu' if gpus else 'cpu'} "
            f"cuda {info.get('cuda_version') or 'none'} rocm {'yes' if info.get('is_rocm_build') else 'none'}")


def values(tf: Any, rank: int, length: int) -> Any:
    """Small integers in float32 (as torch_dist's), so every sum is exact."""
    idx = tf.range(length, dtype=tf.int64)
    return tf.cast((idx * 7 + rank * 3) % 13 + 1, tf.float32)


def sweep(a: argparse.Namespace) -> int:
    """The all-reduce size sweep; worker 0 prints nccl-tests' table. Exit 1 on wrong results."""
    tf, strategy, impl = init(a)
    n_workers = len([w for w in a.workers.split(",") if w])
    n = strategy.num_replicas_in_sync
    rank = a.index

    def emit(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    @tf.function
    def reduce_all(x: Any) -> Any:
        return strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce("sum", tf.identity(v)), args=(x,))

    def local(make: Any) -> Any:
        """A per-replica value made on each replica's own device."""
        return strategy.experimental_distribute_values_from_function(lambda _ctx: make())

    def mean_over_workers(x: float) -> float:
        out = reduce_all(local(lambda: tf.constant([x], dtype=tf.float32)))
        return float(strategy.experimental_local_results(out)[0][0]) / n

    emit(f"{MARKER} {_versions(tf, impl)}")
    emit("# Collective test starting: all_reduce_perf")
    emit(f"# nThread 1 nGpus 1 minBytes {a.minbytes} maxBytes {a.maxbytes} step: {a.stepfactor}(factor) "
         f"warmup iters: {a.warmup_iters} iters: {a.iters} agg iters: 1 validation: {a.check} graph: 0")
    emit("#\n# Using devices")
    for q, worker in enumerate(a.workers.split(",")):
        emit(f"#  Rank {q:2d} Group  0 Pid {os.getpid() if q == rank else 0:6d} on "
             f"{(socket.gethostname() if q == rank else worker.rsplit(':', 1)[0]):>10s} device {0:2d} "
             f"[{impl.lower()}] {platform.machine()} tensorflow")
    emit("#\n# %10s  %12s  %8s  %6s  %6s  %30s" % ("", "", "", "", "", "out-of-place"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s"
         % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s"
         % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
    errors, busbws = 0, []
    size = a.minbytes
    while size <= a.maxbytes:
        count = size // 4
        x = local(lambda count=count: values(tf, rank, count))
        for _ in range(a.warmup_iters):
            y = reduce_all(x)
        strategy.experimental_local_results(reduce_all(x))[0].numpy()
        start = time.perf_counter()
        for _ in range(a.iters):
            y = reduce_all(x)
        got = strategy.experimental_local_results(y)[0].numpy()
        sec = mean_over_workers((time.perf_counter() - start) / max(a.iters, 1))
        nbytes = count * 4
        algbw = nbytes / 1e9 / sec if sec > 0 else 0.0
        busbw = algbw * nt.bus_factor("all_reduce", n)
        busbws.append(busbw)
        wrong_text = "N/A"
        if a.check:
            want = sum(values(tf, q, count) for q in range(n_workers)).numpy() * (n // n_workers or 1)
            wrong = round(mean_over_workers(float((got != want).sum())) * n)
            errors += 1 if wrong else 0
            wrong_text = "%g" % wrong
        emit("%12li  %12li  %8s  %6s  %6s  %7s  %6s  %6s  %5s" % (nbytes, count, "float", "sum", "    -1",
                                                             nt._time_str(sec * 1e6), nt._bw(algbw),
                                                             nt._bw(busbw), wrong_text))
        size *= a.stepfactor
    emit("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
    emit("# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws) if busbws else 0.0))
    emit("#")
    return 1 if errors else 0


def parser() -> argparse.ArgumentParser:
    """The program's options (nccl-tests' sweep flags, and the cluster)."""
    p = argparse.ArgumentParser(prog="tf_dist.py", description=(__doc__ or "").splitlines()[0])
    p.add_argument("-b", "--minbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("--op", default="all_reduce", choices=OPS)
    p.add_argument("--implementation", default="auto", choices=("auto", "RING", "NCCL"))
    p.add_argument("--workers", required=True, help="ADDR:PORT of every worker, in order")
    p.add_argument("--index", type=int, required=True, help="this worker's place in --workers")
    return p


def main(argv: list[str] | None = None) -> int:
    """One worker of the sweep."""
    return sweep(parser().parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
