"""CPU collective benchmark over MPI (mpi4py + NumPy) that prints nccl-tests' table, exactly.

Run under mpirun on hosts without GPUs::

    mpirun -np 3 python -m benchharness.onhost.mpi_allreduce -b 8 -e 128M -f 2 --collective all_reduce

Sizes, counts and bandwidths follow nccl-tests (src/*.cu and doc/PERFORMANCE.md): ``size`` is the
larger of the send and receive buffers in bytes, ``algbw = size / time`` in 10^9 bytes/s, and
``busbw = algbw * factor`` with 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
alltoall, and 1 for broadcast. Results are checked after timing; ``#wrong`` counts the elements that
differ from the exact expected value, summed over ranks. Standalone: stdlib, NumPy, mpi4py and ``iter_json.py`` beside it.

``-I 1`` times every iteration on every rank, as nccl-tests 2.19 does with ``-z 1`` (a barrier
before each iteration, so a rank's time says when it finished): four more columns per
placement (``i_min i_max i_p99 i_cv%``, of the max over processes) and, with ``-J FILE``, rank 0
writes nccl-tests' JSON document (``version`` 4: ``config.devices``, ``results`` with
``*_per_iter.times_us`` and ``per_process_max_times_us``), never overwriting a file (``FILE.0`` ...).
"""

# ruff: noqa: UP031 - the table is printed with nccl-tests' own printf formats, on purpose
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from benchharness.onhost import iter_json
except ImportError:  # on a host: iter_json.py is copied beside this file
    import iter_json  # type: ignore[no-redef]

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")
_ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
            "alltoall": "alltoall", "bcast": "broadcast", "broadcast": "broadcast"}
REDOPS = ("sum", "prod", "max", "min")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes in ``8``, ``128K``, ``4M``, ``1G`` (binary multipliers, as nccl-tests)."""
    text = text.strip().upper()
    unit = text[-1] if text and text[-1] in "KMG" else ""
    return int(float(text[: len(text) - len(unit)]) * _UNITS[unit])


def bus_factor(collective: str, nranks: int) -> float:
    """nccl-tests' busbw / algbw factor for ``collective`` over ``nranks`` ranks."""
    if collective == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (nranks - 1) / nranks
    return 1.0


def counts(collective: str, size: int, nranks: int, word: int = 4) -> tuple[int, int, int]:
    """(send count, receive count, printed count) per rank for a requested ``size`` in bytes."""
    count = size // word
    per_rank = count // nranks
    if collective == "all_gather":
        return per_rank, per_rank * nranks, per_rank
    if collective == "reduce_scatter":
        return per_rank * nranks, per_rank, per_rank
    if collective == "alltoall":
        return per_rank * nranks, per_rank * nranks, per_rank
    return count, count, count


def _time_str(usec: float) -> str:
    if usec >= 10000.0:
        return f"{usec:7.0f}"
    if usec >= 100.0:
        return f"{usec:7.1f}"
    return f"{usec:7.2f}"


def float_str(value: float, width: int = 7) -> str:
    """nccl-tests' getFloatStr: the most decimals (2, 1, 0) that fit ``width``, else an exponent."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


def _g(value: float) -> str:
    """C's ``%g``."""
    return "%g" % value


class Bench:
    """One collective on one communicator: buffers, the operation, and its exact expected result."""

    def __init__(self, comm: Any, mpi: Any, collective: str, redop: str) -> None:
        self.comm, self.mpi, self.collective, self.redop = comm, mpi, collective, redop
        self.rank, self.n = comm.Get_rank(), comm.Get_size()
        self.op = {"sum": mpi.SUM, "prod": mpi.PROD, "max": mpi.MAX, "min": mpi.MIN}[redop]

    def values(self, rank: int, length: int, offset: int = 0) -> np.ndarray:
        """Small integers stored in float32, so every reduction is exact."""
        idx = np.arange(offset, offset + length, dtype=np.int64)
        if self.redop == "prod":
            return ((idx + rank) % 2 + 1).astype(np.float32)
        return ((idx * 7 + rank * 3) % 13 + 1).astype(np.float32)

    def reduce_all(self, length: int, offset: int = 0) -> np.ndarray:
        """The exact reduction over every rank's values (folded one rank at a time, to save memory)."""
        acc = self.values(0, length, offset)
        fold = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[self.redop]
        for r in range(1, self.n):
            fold(acc, self.values(r, length, offset), out=acc)
        return acc

    def expected(self, send_n: int, recv_n: int) -> np.ndarray:
        """What this rank's receive buffer must hold after one operation."""
        c, r, n = self.collective, self.rank, self.n
        if c == "all_reduce":
            return self.reduce_all(send_n)
        if c == "all_gather":
            return np.concatenate([self.values(q, send_n) for q in range(n)])
        if c == "reduce_scatter":
            return self.reduce_all(recv_n, offset=r * recv_n)
        if c == "alltoall":
            # chunk j of rank q's send buffer goes to rank j; rank r receives chunk r of every rank
            chunk = send_n // n
            return np.concatenate([self.values(q, chunk, offset=r * chunk) for q in range(n)])
        return self.values(0, send_n)  # broadcast from root 0

    def setup(self, send_n: int, recv_n: int, in_place: bool) -> tuple[np.ndarray, np.ndarray]:
        """(send, recv) buffers filled for one run; in place, the input sits in the receive buffer."""
        c, r = self.collective, self.rank
        recv = np.zeros(recv_n, dtype=np.float32)
        if c == "broadcast":
            send = self.values(0, send_n) if r == 0 else np.zeros(send_n, dtype=np.float32)
        else:
            send = self.values(r, send_n)
        if in_place:
            if c == "all_gather":
                recv[r * send_n:(r + 1) * send_n] = send
            else:  # all_reduce, broadcast, reduce_scatter, alltoall: input read from the receive buffer
                recv = send.copy()
        return send, recv

    def run(self, send: np.ndarray, recv: np.ndarray, in_place: bool) -> None:
        c, comm, mpi = self.collective, self.comm, self.mpi
        src = mpi.IN_PLACE if in_place else send
        if c == "all_reduce":
            comm.Allreduce(src, recv, op=self.op)
        elif c == "all_gather":
            comm.Allgather(src, recv)
        elif c == "reduce_scatter":
            comm.Reduce_scatter_block(src, recv, op=self.op)
        elif c == "alltoall":
            comm.Alltoall(src, recv)
        else:  # out of place, the root sends from its send buffer and the others receive
            comm.Bcast(send if (not in_place and self.rank == 0) else recv, root=0)

    def result(self, send: np.ndarray, recv: np.ndarray, expected: np.ndarray, in_place: bool) -> np.ndarray:
        """The buffer that holds this rank's result (the root of an out-of-place broadcast keeps its own)."""
        if self.collective == "broadcast" and not in_place and self.rank == 0:
            return send
        return recv[: expected.size]

    def measure(self, send_n: int, recv_n: int, in_place: bool, warmup: int, iters: int,
                check: int, per_iter: list[float] | None = None) -> tuple[float, int | None]:
        """(mean seconds per operation averaged over ranks, wrong elements summed over ranks or None);
        with ``per_iter``, this rank's time of each iteration is appended to it."""
        send, recv = self.setup(send_n, recv_n, in_place)
        for _ in range(warmup):
            self.run(send, recv, in_place)
        self.comm.Barrier()
        wtime = self.mpi.Wtime
        start = wtime()
        for _ in range(iters):
            if per_iter is None:
                self.run(send, recv, in_place)
                continue
            self.comm.Barrier()  # as nccl-tests -z 1: every rank's iteration starts together
            began = wtime()
            self.run(send, recv, in_place)
            per_iter.append(wtime() - began)
        if per_iter is not None and iters:  # the barriers between iterations are not the collective's time
            elapsed = sum(per_iter[-iters:]) / iters
        else:
            elapsed = (wtime() - start) / max(iters, 1)
        mean = self.comm.allreduce(elapsed, op=self.mpi.SUM) / self.n
        if not check:
            return mean, None
        expected = self.expected(send_n, recv_n)
        wrong = 0
        for _ in range(check):
            send, recv = self.setup(send_n, recv_n, in_place)
            self.run(send, recv, in_place)
            wrong += int(np.count_nonzero(self.result(send, recv, expected, in_place) != expected))
        return mean, int(self.comm.allreduce(wrong, op=self.mpi.SUM))


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=int, default=1)
    p.add_argument("-i", "--stepbytes", type=parse_size, default=parse_size("1M"))
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-o", "--op", default="sum", choices=REDOPS)
    p.add_argument("-d", "--datatype", default="float", choices=("float", "float32"))
    p.add_argument("-I", "--per_iter_timing", type=int, default=0, choices=(0, 1))
    p.add_argument("-J", "--output_file", default=None)
    p.add_argument("--collective", default="all_reduce",
                   type=lambda s: _ALIASES.get(s.replace("_", "").lower(), s), choices=COLLECTIVES)
    return p.parse_args(argv)


def _sizes(a: argparse.Namespace) -> list[int]:
    sizes, size = [], a.minbytes
    while size <= a.maxbytes:
        sizes.append(size)
        size = size * a.stepfactor if a.stepfactor > 1 else size + a.stepbytes
        if size == 0:
            size = 1
    return sizes


def main(argv: list[str] | None = None, out: Callable[[str], None] | None = None) -> int:
    """Run the sweep; rank 0 prints the table. Exit status 1 when any result was wrong."""
    from mpi4py import MPI

    a = _args(argv)
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()

    def emit(text: str) -> None:
        if rank == 0:
            (out or (lambda s: print(s, flush=True)))(text)

    collective = a.collective
    redop = a.op if collective in ("all_reduce", "reduce_scatter") else "none"
    root = 0 if collective == "broadcast" else -1
    bench = Bench(comm, MPI, collective, a.op)
    device = {"rank": rank, "group": 0, "pid": os.getpid(), "hostname": MPI.Get_processor_name(),
              "device": 0, "device_hex": "cpu", "device_info": f"{platform.machine()} mpi4py"}
    devices = comm.gather(device, root=0)
    per_iter = bool(a.per_iter_timing)
    doc = iter_json.document([sys.argv[0], *(argv if argv is not None else sys.argv[1:])], a.minbytes,
                             a.maxbytes, a.warmup_iters, a.iters, per_iter, devices or [])
    lines = comm.gather(f"#  Rank {rank:2d} Group  0 Pid {os.getpid():6d} on {MPI.Get_processor_name():>10s} "
                        f"device {0:2d} [cpu] {platform.machine()} mpi4py", root=0)
    step = f"{a.stepfactor}(factor)" if a.stepfactor > 1 else f"{a.stepbytes}(bytes)"
    emit(f"# benchharness mpi_allreduce: {MPI.Get_library_version().split(chr(0))[0].splitlines()[0].strip()}")
    emit(f"# Collective test starting: {collective}_perf")
    emit(f"# nThread 1 nGpus 1 minBytes {a.minbytes} maxBytes {a.maxbytes} step: {step} warmup iters: "
         f"{a.warmup_iters} iters: {a.iters} agg iters: 1 validation: {a.check} graph: 0")
    if per_iter:
        emit("# Per-Iteration Report: MPI_Wtime per rank; i_* uses max over process rows")
    emit("#")
    emit("# Using devices")
    for line in lines or []:
        emit(line)
    emit("#")
    emit("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
         % ("", "", "", "", ""))
    if per_iter:  # nccl-tests 2.19's titles: four per-iteration columns after each placement's #wrong
        titles = ("time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%")
        units = ("(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)")
        emit("# %10s  %12s  %8s  %6s  %6s" % ("size", "count", "type", "redop", "root")
             + "".join("  %7s" % t for t in titles * 2))
        emit("# %10s  %12s  %8s  %6s  %6s" % ("(B)", "(elements)", "", "", "")
             + "".join("  %7s" % u for u in units * 2))
    else:
        emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
             % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong"))
        emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
             % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    errors, busbws = 0, []
    for size in _sizes(a):
        send_n, recv_n, shown = counts(collective, size, n)
        row = "%12li  %12li  %8s  %6s  %6s" % (max(send_n, recv_n) * 4, shown, "float", redop, f"{root:6d}")
        result: dict[str, Any] = {"size": max(send_n, recv_n) * 4, "count": shown, "type": "float",
                                  "redop": redop, "root": f"{root:6d}"}
        for in_place in (False, True):
            mine: list[float] | None = [] if per_iter else None
            sec, wrong = bench.measure(send_n, recv_n, in_place, a.warmup_iters, a.iters, a.check, mine)
            algbw = max(send_n, recv_n) * 4 / 1e9 / sec if sec > 0 else 0.0
            busbw = algbw * bus_factor(collective, n)
            busbws.append(busbw)
            if wrong is None:
                row += "  %7s  %6.2f  %6.2f  %5s" % (_time_str(sec * 1e6), algbw, busbw, "N/A")
            else:
                errors += 1 if wrong else 0
                row += "  %7s  %6.2f  %6.2f  %5s" % (_time_str(sec * 1e6), algbw, busbw, _g(wrong))
            key = "in_place" if in_place else "out_of_place"
            result[key] = {"time": sec * 1e6, "alg_bw": algbw, "bus_bw": busbw,
                           "nwrong": "nan" if wrong is None else float(wrong)}
            if mine is not None:
                everyone = comm.gather(mine, root=0)
                if rank == 0 and everyone:
                    block = iter_json.per_iter_block(everyone)
                    result[f"{key}_per_iter"] = block
                    row += "  %7s  %7s  %7s  %7s" % tuple(float_str(block[k]) for k in
                                                          ("min_us", "max_us", "p99_us", "cv_pct"))
        doc["results"].append(result)
        emit(row)
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    emit("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
    emit("# Avg bus bandwidth    : %s " % _g(avg))
    emit("#")
    if a.output_file and rank == 0:
        print(f"# Writing JSON output to {a.output_file}", file=sys.stderr, flush=True)
        with iter_json.open_new(a.output_file) as fh:
            json.dump(iter_json.finish(doc, errors, avg), fh)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
