"""Horovod collective sweep (``hvd.allreduce``, ``allgather``, ``alltoall``) that prints nccl-tests' table.

Run once per host by the harness (its own transport, as the jax and tensorflow programs), each with
the host's own interpreter: ``--index I`` of ``--hosts ADDR:SLOTS,...``. The program on host 0 serves
Horovod's gloo rendezvous (Horovod's own ``RendezvousHTTPServer``, the server ``horovodrun --gloo``
starts, with its slot plan from ``get_host_assignments``) on ``--port``; every host then starts its
``--nproc`` ranks with the environment ``horovodrun --gloo`` gives them (``gloo_run.create_run_envs``
and ``create_slot_env_vars``: ``HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT``, ``HOROVOD_CONTROLLER=gloo``,
``HOROVOD_CPU_OPERATIONS=gloo``, ``HOROVOD_GLOO_IFACE``, ``HOROVOD_HOSTNAME``, ``HOROVOD_RANK`` ...).
CPU hosts: one rank, tensors on the CPU, gloo over TCP. GPU hosts: one rank per GPU, bound to its
GPU's NUMA node (``--numa-nodes``), tensors on its GPU, so Horovod's GPU operations (NCCL/RCCL) move
them with the NCCL environment the rank inherits.

Sizes and bus bandwidth as nccl-tests (doc/PERFORMANCE.md) through ``torch_dist``'s helpers
(``counts``, ``bus_factor``); results are checked after timing (``#wrong``). Standalone: stdlib, torch,
horovod, and ``torch_dist.py`` beside it.
"""

# ruff: noqa: UP031 - the table is printed with nccl-tests' own printf formats, on purpose
from __future__ import annotations

import argparse
import fcntl
import os
import platform
import socket
import struct
import subprocess
import sys
import time
from typing import Any

try:
    from benchharness.onhost import torch_dist as nt
except ImportError:  # on a host: torch_dist.py is copied beside this file
    import torch_dist as nt  # type: ignore[no-redef]

OPS = ("all_reduce", "all_gather", "alltoall")
MARKER = "# benchharness horovod_dist:"
_SIOCGIFADDR = 0x8915  # linux/sockios.h


def iface_of(address: str) -> str | None:
    """The netdev that holds IPv4 ``address`` (gloo binds to an interface, not an address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            if socket.inet_ntoa(raw[20:24]) == address:
                return name
    return None


def slots(hosts: str) -> list[tuple[str, int]]:
    """``ADDR:SLOTS,...`` as (address, slots) pairs, in rank order."""
    out = []
    for item in hosts.split(","):
        addr, _, n = item.rpartition(":")
        out.append((addr, int(n)))
    return out


def rank_env(a: argparse.Namespace, local: int) -> dict[str, str]:
    """What ``horovodrun --gloo`` sets for the rank on host ``--index``, local rank ``local``."""
    plan = slots(a.hosts)
    addr, nproc = plan[a.index]
    return {"HOROVOD_GLOO_RENDEZVOUS_ADDR": plan[0][0], "HOROVOD_GLOO_RENDEZVOUS_PORT": str(a.port),
            "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_GLOO_IFACE": a.iface,
            "HOROVOD_GLOO_TIMEOUT_SECONDS": str(a.init_timeout), "HOROVOD_HOSTNAME": addr,
            "HOROVOD_RANK": str(sum(n for _, n in plan[:a.index]) + local), "HOROVOD_SIZE": str(sum(n for _, n in plan)),
            "HOROVOD_LOCAL_RANK": str(local), "HOROVOD_LOCAL_SIZE": str(nproc),
            "HOROVOD_CROSS_RANK": str(a.index), "HOROVOD_CROSS_SIZE": str(len(plan)),
            "PYTHONUNBUFFERED": "1"}


def own_hostname(address: str) -> None:
    """Make this rank's host name resolve to ``address``. Horovod 0.28.1 creates the gloo device of
    its process sets without ``HOROVOD_GLOO_IFACE`` (``GlooContext::InitializeForProcessSet`` reads
    a ``gloo_iface_`` it never set), so gloo binds it to what the host name resolves to: nothing in
    the lab's namespaces (gloo aborts), 127.0.1.1 under Debian's default /etc/hosts (the peers are
    refused). Where the name does not resolve to ``address``, the rank takes a UTS namespace of its
    own whose host name is the address (needs CAP_SYS_ADMIN); otherwise a line on stderr says why
    gloo may fail."""
    import ctypes

    name = socket.gethostname()
    try:
        found = {str(ai[4][0]) for ai in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        found = set()
    if address in found:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x04000000) != 0:  # CLONE_NEWUTS (sched.h)
        print(f"horovod_dist: host name {name!r} resolves to {', '.join(sorted(found)) or 'nothing'}, not "
              f"{address}, and this rank cannot take a name of its own ({os.strerror(ctypes.get_errno())}): "
              "Horovod's gloo process sets may bind to the wrong address", file=sys.stderr)
        return
    socket.sethostname(address)


def serve_rendezvous(a: argparse.Namespace) -> Any:
    """Horovod's gloo rendezvous server on ``--port`` of host 0, with the slot plan of ``--hosts``."""
    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
    from horovod.runner.http.http_server import RendezvousHandler, RendezvousHTTPServer
    from horovod.runner.util.threads import in_thread

    server = RendezvousHTTPServer((slots(a.hosts)[0][0], a.port), RendezvousHandler, 0)
    plan = get_host_assignments(parse_hosts(a.hosts), sum(n for _, n in slots(a.hosts)))
    server.init(plan)
    in_thread(target=server.serve_forever)
    return server


def wait_for(addr: str, port: int, timeout: float) -> None:
    """Until host 0's rendezvous answers (gloo's HTTP store retries only 3 times, 0.5 s apart)."""
    end = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((addr, port), timeout=2).close()
            return
        except OSError as exc:
            if time.monotonic() > end:
                raise SystemExit(f"horovod_dist: rendezvous {addr}:{port} did not answer in {timeout:.0f} s ({exc})") \
                    from None
            time.sleep(0.2)


def host_main(argv: list[str], a: argparse.Namespace) -> int:
    """Host ``--index``: serve the rendezvous (host 0), start this host's ranks, their worst status."""
    if not a.iface:
        a.iface = iface_of(slots(a.hosts)[a.index][0]) or ""
        if not a.iface:
            raise SystemExit(f"horovod_dist: no interface holds {slots(a.hosts)[a.index][0]}; give --iface")
    server = serve_rendezvous(a) if a.index == 0 else None
    wait_for(slots(a.hosts)[0][0], a.port, a.init_timeout)
    children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv, "--iface", a.iface,
                                  "--local-rank", str(k)], env={**os.environ, **rank_env(a, k)})
                for k in range(a.nproc)]
    status = max(c.wait() for c in children)
    if server is not None:
        server.shutdown()
    return status


def versions(hvd: Any, torch: Any, device: Any) -> str:
    """``horovod X torch Y controller C backend B nccl N cuda C`` for the table's first line."""
    import horovod

    controller = "gloo" if hvd.gloo_enabled() else "mpi" if hvd.mpi_enabled() else "unknown"
    backend = ("nccl" if hvd.nccl_built() else "gpu") if device.type == "cuda" else controller
    return (f"horovod {horovod.__version__} torch {torch.__version__} controller {controller} backend {backend} "
            f"nccl {hvd.nccl_built() or 'none'} cuda {torch.version.cuda or 'none'}")


def values(torch: Any, rank: int, length: int) -> Any:
    """Small integers in float32 (as torch_dist's), so every sum is exact."""
    idx = torch.arange(length, dtype=torch.int64)
    return ((idx * 7 + rank * 3) % 13 + 1).to(torch.float32)


def expected(torch: Any, op: str, rank: int, n: int, send_n: int) -> Any:
    """What ``op`` leaves on rank ``rank``."""
    if op == "all_reduce":
        return sum(values(torch, q, send_n) for q in range(n))
    if op == "all_gather":
        return torch.cat([values(torch, q, send_n) for q in range(n)])
    chunk = send_n // n
    return torch.cat([values(torch, q, send_n)[rank * chunk:(rank + 1) * chunk] for q in range(n)])


def run_op(hvd: Any, op: str, x: Any) -> Any:
    """One synchronous Horovod collective: sum all-reduce (Horovod's default is the average),
    all-gather along dim 0, all-to-all in equal splits."""
    if op == "all_reduce":
        return hvd.allreduce(x, op=hvd.Sum)
    if op == "all_gather":
        return hvd.allgather(x)
    out = hvd.alltoall(x)
    return out[0] if isinstance(out, tuple) else out


def sweep(a: argparse.Namespace) -> int:
    """The size sweep of one operation; rank 0 prints nccl-tests' table. Exit 1 on wrong results."""
    nt.bind_numa(a.numa_nodes, a.local_rank)
    host = socket.gethostname()  # the table names it, before own_hostname may rename this rank
    own_hostname(slots(a.hosts)[a.index][0])
    import horovod.torch as hvd
    import torch

    hvd.init()
    rank, n = hvd.rank(), hvd.size()
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)

    def emit(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    names = hvd.allgather_object((os.getpid(), host, str(device)))
    emit(f"{MARKER} {versions(hvd, torch, device)}")
    emit(f"# Collective test starting: {a.op}_perf")
    emit(f"# nThread 1 nGpus 1 minBytes {a.minbytes} maxBytes {a.maxbytes} step: {a.stepfactor}(factor) "
         f"warmup iters: {a.warmup_iters} iters: {a.iters} agg iters: 1 validation: {a.check} graph: 0")
    emit("#\n# Using devices")
    for q, (pid, name, dev) in enumerate(names):
        emit(f"#  Rank {q:2d} Group  0 Pid {int(pid):6d} on {name:>10s} device {0:2d} [{dev}] "
             f"{platform.machine()} horovod")
    emit("#\n# %10s  %12s  %8s  %6s  %6s  %30s" % ("", "", "", "", "", "out-of-place"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s"
         % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"))
    emit("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s"
         % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
    redop = "sum" if a.op == "all_reduce" else "none"
    errors, busbws = 0, []
    size = a.minbytes
    while size <= a.maxbytes:
        send_n, recv_n = nt.counts(a.op, size, n)
        if send_n < n:  # all-to-all splits the buffer n ways
            size *= a.stepfactor
            continue
        x = values(torch, rank, send_n).to(device)
        for _ in range(a.warmup_iters):
            y = run_op(hvd, a.op, x)
        sync()
        hvd.allreduce(torch.zeros(1), op=hvd.Sum, name=f"barrier.{size}")
        start = time.perf_counter()
        for _ in range(a.iters):
            y = run_op(hvd, a.op, x)
        sync()
        took = torch.tensor([(time.perf_counter() - start) / max(a.iters, 1)], dtype=torch.float64)
        sec = float(hvd.allreduce(took, op=hvd.Sum, name=f"time.{size}").item()) / n
        nbytes = max(send_n, recv_n) * 4
        algbw = nbytes / 1e9 / sec if sec > 0 else 0.0
        busbw = algbw * nt.bus_factor(a.op, n)
        busbws.append(busbw)
        wrong_text = "N/A"
        if a.check:
            y = run_op(hvd, a.op, x)
            mine = int((y.cpu() != expected(torch, a.op, rank, n, send_n)).sum().item())
            wrong = int(hvd.allreduce(torch.tensor([mine], dtype=torch.int64), op=hvd.Sum,
                                      name=f"wrong.{size}").item())
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
    hvd.shutdown()
    return 1 if errors else 0


def parser() -> argparse.ArgumentParser:
    """The program's options (nccl-tests' sweep flags, and where the ranks meet)."""
    p = argparse.ArgumentParser(prog="horovod_dist.py", description=(__doc__ or "").splitlines()[0])
    p.add_argument("-b", "--minbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=nt.parse_size, default=nt.parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("--op", default="all_reduce", choices=OPS)
    p.add_argument("--hosts", required=True, help="ADDR:SLOTS of every host, in rank order (host 0 serves)")
    p.add_argument("--index", type=int, required=True, help="this host's place in --hosts")
    p.add_argument("--port", type=int, required=True, help="the rendezvous port on host 0")
    p.add_argument("--iface", default=None, help="netdev gloo binds to (default: the one holding this host's address)")
    p.add_argument("--nproc", type=int, default=1, help="ranks on this host")
    p.add_argument("--local-rank", type=int, default=None, help="(set by the host process for each rank)")
    p.add_argument("--init-timeout", type=int, default=120, help="seconds to wait for every rank to join")
    p.add_argument("--numa-nodes", default="", help="NUMA node of each local rank (0,0,1,1)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Without ``--local-rank``: this host's launcher; with it: one rank."""
    args = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(args)
    if a.local_rank is None:
        return host_main(args, a)
    return sweep(a)


if __name__ == "__main__":
    sys.exit(main())
