"""perftest adapter (ib_write_bw, ib_read_lat ...): command lines for a step, and its records.

One invocation measures one message size (``-s``) or, with ``all: true``, every power of two
(``-a``). The server is the same command without the address; it is started first, in the
background, and is ready when it prints perftest's "Waiting for client to connect" banner.
perftest does not flush stdout, so the server runs under ``stdbuf -oL`` or the banner would only
appear at exit.

NUMA: by default the tool runs on the NUMA node of the NIC (``tools.common.numa_prefix``: the
inventory's ``numa_node`` with numactl, else the node sysfs gives); the node it used is reported on
stderr (``BENCH_NUMA=<n>``), so records carry it.

Each ``ib_*`` test is one entry of ``TESTS`` here (``ib_atomic_bw`` is no module of its own).

Message rate at a NIC's scale (how NIC vendors measure Mpps): many QPs (``qps: 8``, ``-q``), a post
list (``post_list: 32``, ``-l``: that many work requests per ``ibv_post_send``), CQ moderation
(``cq_mod: 8``, ``-Q``: one completion per that many) and ``processes: N`` perftest pairs per rail,
each on its own port and pinned to the NIC's NUMA node. A rail's sample is the sum of its
processes (``msg_rate_mpps``, ``bw_avg_gbps``); each process's own row follows as ``kind:
process``. ``rate_limit: 95%`` paces bursts at that share of the rail's line rate (inventory
``nic_line_rate_gbps``) instead of a fixed figure.

Latency under load (``load: same | neighbour | both`` on a ``*_lat`` test): bulk ``ib_write_bw``
(``load_qps`` QPs of ``load_size``) between the same two hosts on the probe's rail, on the next
rail of each host (``Host.neighbour_view``), or on both, started ``load_lead`` before the probe and
running ``load_duration``; its figures are ``kind: load`` samples, outside the probe's checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_duration, parse_size
from benchharness.core.values import argv_list
from benchharness.tools import perftest_parse as pp
from benchharness.tools.base import ToolFacts
from benchharness.tools.common import NUMACTL, numa_prefix, reject_unknown

TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw",
         "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat")
CONNECTIONS = ("RC", "UC", "UD", "DC", "SRD", "XRC")
MTUS = (256, 512, 1024, 2048, 4096)
#: The server prints this (regex) once it is about to accept the client's socket connection.
READY_PATTERN = r"Waiting for client (?:to connect|rdma_cm QP to connect)"

_JSON_SCRIPT = (
    'f="$1"; shift; rm -f "$f"; "$@"; rc=$?\n'
    'if [ -s "$f" ]; then echo "' + pp.JSON_MARKER + '"; cat "$f"; fi; rm -f "$f"; exit $rc\n')


#: perftest on the hosts: ``ib_write_bw --version`` prints ``Version: 6.06`` (and exits 1).
PERFTEST = ToolFacts("perftest", ("ib_write_bw", "--version"), r"Version:?\s*(\d+(?:\.\d+)+)", min_version="4.5",
                     apt=("perftest", "rdma-core", "ibverbs-utils"),
                     dnf=("perftest", "rdma-core", "libibverbs-utils"), required=True)

NEAREST = "nearest"
#: perftest ``--rate_limit_type`` (perftest --help: "[HW/SW/PP] Limit the QP's by HW, PP or by SW").
RATE_LIMIT_TYPES = ("HW", "SW", "PP")
#: ``gpu_memory``: the perftest option of the host's GPU vendor (inventory ``gpu_vendor``); a host
#: without one measures host memory.
GPU_VENDOR_OPTS = {"nvidia": "use_cuda", "amd": "use_rocm"}


def gpu_for(value: Any, host: Host, what: str = "use_cuda") -> int:
    """The GPU index of ``use_cuda``/``use_rocm``: a number as given, or ``nearest``: the GPU
    nearest the host's NIC (the rail's ``nearest_gpus``, inventory or ``rails=auto``)."""
    if str(value).strip().lower() != NEAREST:
        return int(value)
    nics = host.nics()
    gpu = nics[0].nearest_gpu if len(nics) == 1 else None
    if gpu is None and host.var("nearest_gpus"):
        gpu = int(host.var("nearest_gpus")[0])
    if gpu is None:
        raise ValueError(f"{what}: nearest: host {host.name} {host.rail or 'rail0'} "
                         f"({host.var('rdma_dev') or host.var('netdev') or 'its NIC'}) has no nearest GPU "
                         "known; set nearest_gpu per rail in the inventory or use rails=auto")
    return gpu


#: Latency tests that perftest runs only on host memory (its ``--use_cuda``/``--use_rocm`` are
#: accepted by ib_read_lat and ib_send_lat alone).
GPU_LAT_REFUSED = ("ib_write_lat", "ib_atomic_lat")


def is_latency(params: Mapping[str, Any]) -> bool:
    """Whether a perftest case measures latency (``*_lat``): such tests run one rail at a time."""
    return str(params.get("test") or "").endswith("_lat")


def _is_bw(test: str) -> bool:
    return test.endswith("_bw")


#: ``load``: where bulk traffic runs beside a latency test (the probe's rail, the next rail, both).
LOADS = ("same", "neighbour", "both")


def _whole(name: str, value: Any, low: int) -> int | None:
    """``value`` as a whole number >= ``low`` (None stays None); ValueError naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}: a whole number >= {low}, not {value!r}")
    return value


def rate_limit_gbps(value: Any, host: Host) -> str:
    """perftest's ``--rate_limit`` figure: a number as given, or ``N%`` of the rail's line rate."""
    text = str(value).strip()
    if not text.endswith("%"):
        return text
    rate = host.var("nic_line_rate_gbps")
    if rate is None:
        raise ValueError(f"rate_limit: {text} of the line rate: host {host.name} {host.rail or 'rail0'} has no "
                         "nic_line_rate_gbps in the inventory")
    return f"{float(text[:-1]) / 100.0 * float(rate):g}"


class PerftestAdapter:
    """Adapter for linux-rdma perftest; see the module docstring."""

    name = "perftest"
    description = "RDMA bandwidth and latency with perftest (ib_write_bw, ib_send_lat ...)"
    params: Mapping[str, Any] = {
        "test": None, "size": None, "all": False, "bidir": False, "duration": None, "iters": None,
        "qps": 1, "report_gbits": True, "rdma_cm": False, "connection": None, "mtu": None,
        "tx_depth": None, "use_cuda": None, "use_rocm": None, "rate_limit": None,
        "burst_size": None, "rate_units": None, "rate_limit_type": None, "gpu_memory": None,
        "cpu_util": False, "out_json": False, "post_list": None, "cq_mod": None, "processes": 1,
        "load": None, "load_qps": 4, "load_size": "1M", "load_duration": "15s", "load_lead": "2s",
        "numa": True, "extra_args": None, "timeout": None, "tclass": None,
    }
    patterns: Sequence[str] = ("pairs", "all-pairs", "ring", "incast", "self")
    requirements: Sequence[ToolFacts] = (PERFTEST, NUMACTL)

    # ---- parameters -------------------------------------------------------------------------

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError naming the parameter when a value is wrong for perftest."""
        reject_unknown(self.name, params, self.params)
        test = params.get("test")
        if test not in TESTS:
            raise ValueError(f"test: must be one of {', '.join(TESTS)}, not {test!r}")
        bw = _is_bw(test)
        if params.get("size") is not None:
            parse_size(params["size"])
        if params.get("all") and params.get("size") is not None:
            raise ValueError("size: set either size or all: true, not both")
        if params.get("all") and test.startswith("ib_atomic"):
            raise ValueError("all: atomic tests have a fixed 8-byte size")
        if not bw:
            used = [f for f in ("rate_limit", "burst_size", "rate_units", "rate_limit_type") if params.get(f) is not None]
            used += ["bidir"] if params.get("bidir") else []
            used += ["qps"] if params.get("qps") is not None and params.get("qps") != 1 else []
            if used:
                raise ValueError(f"{', '.join(used)}: only bandwidth tests take it, not {test}")
        qps = params.get("qps")
        if qps is not None and (not isinstance(qps, int) or isinstance(qps, bool) or qps < 1):
            raise ValueError(f"qps: a whole number >= 1, not {qps!r}")
        for name in ("post_list", "cq_mod", "processes", "load_qps"):
            _whole(name, params.get(name), 1)
        rate = params.get("rate_limit")
        if rate is not None:
            text = str(rate).strip().rstrip("%")
            try:
                ok = not isinstance(rate, bool) and float(text) > 0
            except ValueError:
                ok = False
            if not ok or (str(rate).strip().endswith("%") and params.get("rate_units") not in ("g", None)):
                raise ValueError(f"rate_limit: a rate > 0, or a share of the line rate such as '95%' "
                                 f"(Gbit/s, rate_units: g), not {rate!r}")
        if not bw:
            used_bw = [f for f in ("post_list", "cq_mod") if params.get(f) is not None]
            used_bw += ["processes"] if (params.get("processes") or 1) != 1 else []
            if used_bw:
                raise ValueError(f"{', '.join(used_bw)}: only bandwidth (message-rate) tests take it, not {test}")
        if params.get("load") is not None:
            if params["load"] not in LOADS:
                raise ValueError(f"load: one of {', '.join(LOADS)} (bulk traffic beside a latency test), "
                                 f"not {params['load']!r}")
            if bw:
                raise ValueError(f"load: bulk traffic runs beside a latency test (*_lat), not {test}")
            for name in ("load_duration", "load_lead"):
                if parse_duration(params.get(name) or self.params[name]) <= 0:
                    raise ValueError(f"{name}: must be > 0 seconds")
            parse_size(params.get("load_size") or self.params["load_size"])
        duration = params.get("duration")
        iters = params.get("iters")
        if duration is not None and iters is None and parse_duration(duration) <= 0:
            raise ValueError("duration: must be > 0 seconds")
        if iters is not None and (not isinstance(iters, int) or isinstance(iters, bool) or iters < 5):
            raise ValueError(f"iters: perftest needs an integer of at least 5, not {iters!r}")
        if params.get("all") and duration is not None and iters is None:
            raise ValueError("all: perftest cannot run all sizes in duration mode; set iters")
        if params.get("cpu_util") and (duration is None or iters is not None):
            raise ValueError("cpu_util: perftest reports CPU use in duration mode only")
        conn = params.get("connection")
        if conn is not None:
            if conn not in CONNECTIONS:
                raise ValueError(f"connection: one of {', '.join(CONNECTIONS)}, not {conn!r}")
            verb = test.split("_")[1]
            if conn == "UC" and verb in ("read", "atomic"):
                raise ValueError(f"connection: UC is not possible with {test}")
            if conn == "UD" and verb != "send":
                raise ValueError("connection: UD works with ib_send_* only")
            if conn == "SRD" and verb not in ("send", "read"):
                raise ValueError("connection: SRD works with ib_send_* and ib_read_* only")
        if params.get("mtu") is not None and params["mtu"] not in MTUS:
            raise ValueError(f"mtu: one of {MTUS}, not {params['mtu']!r}")
        if params.get("rate_units") not in (None, "M", "g", "p"):
            raise ValueError("rate_units: M (MiB/s), g (Gbit/s) or p (packets/s)")
        if params.get("rate_limit_type") not in (None, *RATE_LIMIT_TYPES):
            raise ValueError(f"rate_limit_type: one of {', '.join(RATE_LIMIT_TYPES)} (perftest --rate_limit_type), "
                             f"not {params['rate_limit_type']!r}")
        if params.get("use_cuda") is not None and params.get("use_rocm") is not None:
            raise ValueError("use_cuda/use_rocm: choose one")
        if params.get("gpu_memory") is not None:
            if params.get("use_cuda") is not None or params.get("use_rocm") is not None:
                raise ValueError("gpu_memory: set it or use_cuda/use_rocm, not both")
            if test in GPU_LAT_REFUSED:
                raise ValueError(f"gpu_memory: perftest refuses GPU memory with {test}")
        for opt in ("use_cuda", "use_rocm"):
            if params.get(opt) is not None and test in GPU_LAT_REFUSED:
                raise ValueError(f"{opt}: perftest measures GPU memory latency only with ib_read_lat and "
                                 f"ib_send_lat; {test} refuses it")
        tclass = params.get("tclass")
        if tclass is not None and (isinstance(tclass, bool) or not isinstance(tclass, int) or not 0 <= tclass <= 255):
            raise ValueError(f"tclass: an integer 0..255 (RoCE traffic class, DSCP << 2), not {tclass!r}")
        for opt in ("use_cuda", "use_rocm", "gpu_memory"):
            value = params.get(opt)
            if value is not None and str(value).strip().lower() != NEAREST and (
                    isinstance(value, bool) or not str(value).strip().isdigit()):
                raise ValueError(f"{opt}: a GPU index or 'nearest' (the GPU beside the NIC), not {value!r}")
        argv_list(params.get("extra_args"), "extra_args")

    def _p(self, step: Step) -> dict[str, Any]:
        merged = {**self.params, **{k: v for k, v in step.params.items() if v is not None}}
        self.check_params(merged)
        return merged

    # ---- command lines ----------------------------------------------------------------------

    @staticmethod
    def tool_args(params: Mapping[str, Any], host: Host, port: int) -> list[str]:
        """Options shared by server and client (both sides must agree on them)."""
        test = params["test"]
        args = [test, "-p", str(port)]
        if host.var("rdma_dev"):
            args += ["-d", str(host.var("rdma_dev"))]
        if host.var("rdma_port") is not None:
            args += ["-i", str(host.var("rdma_port"))]
        link = host.nics()[0].link  # a rail view has its one rail; a whole host, rail 0 as in its vars
        if host.var("gid_index") is not None and link != "infiniband":
            args += ["-x", str(host.var("gid_index"))]  # RoCE only: an IB port needs no GID index
        tclass = params.get("tclass") if params.get("tclass") is not None else host.var("traffic_class")
        if tclass is not None and link == "ethernet":
            args.append(f"--tclass={tclass}")
        args.append("-F")  # no cpufreq warning: it would interleave with the result table
        if params.get("all"):
            args.append("-a")
        elif params.get("size") is not None and not test.startswith("ib_atomic"):
            args += ["-s", str(parse_size(params["size"]))]
        if params.get("iters") is not None:
            args += ["-n", str(params["iters"])]
        elif params.get("duration") is not None:
            args += ["-D", str(max(1, math.ceil(parse_duration(params["duration"]))))]
        if _is_bw(test):
            if params.get("bidir"):
                args.append("-b")
            if params.get("qps", 1) != 1:
                args += ["-q", str(params["qps"])]
            if params.get("report_gbits", True):
                args.append("--report_gbits")
            if params.get("tx_depth") is not None:
                args += ["-t", str(params["tx_depth"])]
            if params.get("post_list") is not None:
                args += ["-l", str(params["post_list"])]
            if params.get("cq_mod") is not None:
                args += ["-Q", str(params["cq_mod"])]
            if params.get("rate_limit") is not None:
                args.append(f"--rate_limit={rate_limit_gbps(params['rate_limit'], host)}")
            for opt in ("burst_size", "rate_units", "rate_limit_type"):
                if params.get(opt) is not None:
                    args.append(f"--{opt}={params[opt]}")
            if str(params.get("rate_limit") or "").strip().endswith("%") and params.get("rate_units") is None:
                args.append("--rate_units=g")  # a share of the line rate is in Gbit/s
        if params.get("rdma_cm"):
            args.append("-R")
        if params.get("connection"):
            args += ["-c", str(params["connection"])]
        if params.get("mtu") is not None:
            args += ["-m", str(params["mtu"])]
        for opt in ("use_cuda", "use_rocm"):
            if params.get(opt) is not None:
                args.append(f"--{opt}={gpu_for(params[opt], host, opt)}")
        vendor_opt = GPU_VENDOR_OPTS.get(str(host.var("gpu_vendor") or "").lower())
        if params.get("gpu_memory") is not None and vendor_opt:  # no gpu_vendor: host memory
            args.append(f"--{vendor_opt}={gpu_for(params['gpu_memory'], host, 'gpu_memory')}")
        if params.get("cpu_util"):
            args.append("--cpu_util")
        args += argv_list(params.get("extra_args"), "extra_args")
        return args

    @staticmethod
    def numa_prefix(params: Mapping[str, Any], host: Host) -> list[str]:
        """argv prefix that runs the tool on the NIC's NUMA node (empty when numa is off)."""
        return numa_prefix(host, bool(params.get("numa", True)))

    @staticmethod
    def timeout_s(params: Mapping[str, Any]) -> float:
        """Generous bound for the client: duration or a floor of 1 Gbit/s per size, plus setup."""
        if params.get("timeout") is not None:
            return float(parse_duration(params["timeout"]))
        if params.get("iters") is None and params.get("duration") is not None:
            return 30.0 + 1.5 * parse_duration(params["duration"]) + 10.0
        test = params["test"]
        iters = params.get("iters") or (5000 if test == "ib_write_bw" else 1000)
        if params.get("all"):
            sizes = [1 << i for i in range(1, 24)]
        else:
            default = 65536 if _is_bw(test) else 2
            sizes = [parse_size(params["size"]) if params.get("size") is not None else default]
        factor = (2 if params.get("bidir") else 1) * int(params.get("qps") or 1)
        seconds = sum(2.0 + iters * s * 8 * factor / 1e9 for s in sizes)
        return round(30.0 + seconds, 1)

    @staticmethod
    def _loads(params: Mapping[str, Any]) -> tuple[str, ...]:
        """The rails a latency test's bulk load runs on: ``same``, ``neighbour``, or both."""
        load = params.get("load")
        return () if load is None else ("same", "neighbour") if load == "both" else (str(load),)

    def ports_per_flow(self, params: Mapping[str, Any], hosts: Sequence[Host]) -> int:
        """Server ports one pair takes (the planner reserves them): one per process, one per load flow."""
        merged = {**self.params, **{k: v for k, v in params.items() if v is not None}}
        return int(merged.get("processes") or 1) + len(self._loads(merged))

    def _pairs(self, step: Step, processes: int = 1) -> list[tuple[Host, Host, int]]:
        """(server, client, port) for each perftest instance of the step (``processes`` per pair)."""
        if not step.hosts:
            raise ValueError(f"step {step.id}: no hosts")
        if len(step.hosts) == 1:  # self: server and client on one host
            base = [(step.hosts[0], step.hosts[0])]
        elif step.pattern == "incast":
            base = [(step.hosts[0], sender) for sender in step.hosts[1:]]
        else:
            base = [(step.hosts[0], step.hosts[1])]
        return [(server, client, step.port + i * processes + j)
                for i, (server, client) in enumerate(base) for j in range(processes)]

    def _load_commands(self, step: Step, params: Mapping[str, Any], timeout: float) -> list[Command]:
        """Bulk ib_write_bw beside a latency probe: a server and a client per loaded rail."""
        server, client = step.hosts[0], step.hosts[-1]
        seconds = max(1, math.ceil(parse_duration(params["load_duration"])))
        bulk = {**self.params, "test": "ib_write_bw", "size": params["load_size"], "duration": seconds,
                "qps": params["load_qps"], "tclass": params.get("tclass"), "numa": params.get("numa", True),
                "rdma_cm": params.get("rdma_cm"), "gpu_memory": params.get("gpu_memory")}
        out: list[Command] = []
        for k, where in enumerate(self._loads(params)):
            dst, src = (server, client) if where == "same" else (server.neighbour_view(), client.neighbour_view())
            if dst is None or src is None:
                raise ValueError(f"step {step.id}: load: neighbour needs hosts with several rails "
                                 f"({server.name} has {len(server.host_rails) or 1})")
            port = step.port + 1 + k
            tag = f"{where}-{dst.rail or 'rail0'}"
            out.append(Command(host=dst, role="load-server", background=True, ready_pattern=READY_PATTERN,
                               argv=("stdbuf", "-oL", *self.numa_prefix(bulk, dst), *self.tool_args(bulk, dst, port)),
                               timeout_s=seconds + timeout + 60.0, label=f"load-server-{tag}"))
            out.append(Command(host=src, role="load", timeout_s=seconds + 60.0, label=f"load-{tag}",
                               argv=(*self.numa_prefix(bulk, src), *self.tool_args(bulk, src, port), dst.traffic_ip)))
        return out

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        """Server commands (background, with a ready pattern) first, then the clients; a latency
        probe with ``load`` starts ``load_lead`` after its bulk load."""
        params = self._p(step)
        pairs = self._pairs(step, int(params.get("processes") or 1))
        timeout = self.timeout_s(params)
        many = len(pairs) > 1 or pairs[0][0] == pairs[0][1]
        load = self._load_commands(step, params, timeout) if params.get("load") else []
        lead = parse_duration(params["load_lead"]) if load else 0.0
        servers = [c for c in load if c.background]
        clients = [c for c in load if not c.background]
        for server, client, port in pairs:
            tag = f"-p{port}" if many else ""
            s_argv = ["stdbuf", "-oL", *self.numa_prefix(params, server),
                      *self.tool_args(params, server, port)]
            servers.append(Command(host=server, role="server", argv=tuple(s_argv), background=True,
                                   ready_pattern=READY_PATTERN, timeout_s=timeout + 30.0,
                                   label=f"server-{server.name}{tag}"))
            c_argv = [*self.numa_prefix(params, client), *self.tool_args(params, client, port),
                      server.traffic_ip]
            if params.get("out_json"):
                path = f"/tmp/bench-{step.id}-{client.name}{tag}.json".replace(" ", "_")
                c_argv = ["sh", "-c", _JSON_SCRIPT, "bench-json", path,
                          *c_argv[:len(c_argv) - 1], "--out_json", f"--out_json_file={path}",
                          c_argv[-1]]
            clients.append(Command(host=client, role="client", argv=tuple(c_argv), start_delay_s=lead,
                                   timeout_s=timeout, label=f"client-{client.name}{tag}"))
        return servers + clients

    # ---- results ----------------------------------------------------------------------------

    @staticmethod
    def _failure(step: Step, res: CommandResult) -> ToolFailure:
        """Why a command produced no rows, naming the step and host."""
        text = res.stdout + "\n" + res.stderr
        if res.error:
            err = ToolFailure("crashed", res.error)
        else:
            err = pp.classify_error(text, res.rc) or (
                ToolFailure("timeout", f"perftest did not finish within {res.command.timeout_s:.0f} s")
                if res.timed_out else pp.no_result(text, res.rc))
        return ToolFailure(err.kind, f"step {step.id}, {res.command.name} on "
                                     f"{res.command.host.name}: {err.message}")

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        """Records from the clients' outputs; ToolFailure (quoting the tool) when one has none.

        Samples come from the clients: a unidirectional server prints the client's figures
        again. A server's error is raised instead of its client's when it is the root cause
        (the client then only says that it could not connect).
        """
        params = self._p(step)
        servers = {r.command.label: r for r in results if r.command.role in ("server", "load-server")}
        records: list[Record] = []
        for res in results:
            if res.command.role not in ("client", "load"):
                continue
            try:
                rows = pp.parse_output(res.stdout, res.stderr, res.rc,
                                       gbits=bool(params.get("report_gbits", True)))
            except ToolFailure as exc:
                own = self._failure(step, res)
                server_err = self._server_error(step, res, servers)
                if server_err is not None and own.kind in ("connect_failed", "no_result", "timeout"):
                    raise server_err from exc
                raise own from exc
            warning = None
            if not res.ok:  # rows were printed, then something went wrong: keep both
                err = pp.classify_error(res.stdout + "\n" + res.stderr, res.rc)
                warning = err.message if err else (
                    f"timed out after {res.command.timeout_s:.0f} s" if res.timed_out
                    else f"exit code {res.rc}")
            server = self._server_of(res, servers)
            load = res.command.role == "load"
            for row in rows:
                rec: Record = step.sample_labels()
                rec.update({"perftest_test": params["test"], "bidir": bool(params.get("bidir")),
                            "client_host": res.command.host.name,
                            "server_host": server.command.host.name if server else None})
                rec.update(row)
                rec["perftest_test"] = "ib_write_bw" if load else params["test"]
                if load:  # bulk traffic beside the probe: its own kind, outside the probe's checks
                    rec.update({"kind": "load", "load_flow": res.command.label, "load_rail": res.command.host.rail})
                elif params.get("load"):
                    rec["load"] = params["load"]
                if warning is not None:
                    rec["tool_warning"] = warning
                rec["port"] = int(res.command.argv[res.command.argv.index("-p") + 1])
                records.append(rec)
        processes = int(params.get("processes") or 1)
        return sum_processes(records, processes) if processes > 1 else records

    @staticmethod
    def _server_of(client: CommandResult, servers: Mapping[str, CommandResult]) -> CommandResult | None:
        port = client.command.argv[client.command.argv.index("-p") + 1]
        for srv in servers.values():
            argv = srv.command.argv
            if "-p" in argv and argv[argv.index("-p") + 1] == port:
                return srv
        return None

    def _server_error(self, step: Step, client: CommandResult,
                      servers: Mapping[str, CommandResult]) -> ToolFailure | None:
        srv = self._server_of(client, servers)
        if srv is None or srv.ok:
            return None
        err = pp.classify_error(srv.stdout + "\n" + srv.stderr, srv.rc)
        if err is None:
            return None
        return ToolFailure(err.kind, f"step {step.id}, {srv.command.name} on "
                                     f"{srv.command.host.name}: {err.message}")

    @staticmethod
    def classify(result: CommandResult) -> ToolFailure | None:
        """The known error in one command's output (e.g. a server that never got ready), or None."""
        return pp.classify_error(result.stdout + "\n" + result.stderr, result.rc)

    def parse_text(self, text: str) -> list[Record]:
        """Records from one saved perftest output (stdout, or stdout and stderr together)."""
        return pp.parse_text(text)


#: Figures that add up over the processes of one rail pair (peaks do not: each process peaks alone).
_SUMMED = ("msg_rate_mpps", "bw_avg_gbps", "bw_avg_MBps_tool", "iterations")


def sum_processes(records: Sequence[Record], processes: int) -> list[Record]:
    """One sample per rail pair and size: the sum of its ``processes`` perftest processes.

    Rows group by (client, server, size, report part); ``msg_rate_mpps``, ``bw_avg_gbps`` and
    ``iterations`` add up, ``processes`` says how many were summed (fewer than asked: ``partial``).
    Each process's own row follows as ``kind: process``; ``kind: load`` rows pass through.
    """
    groups: dict[tuple[Any, ...], list[Record]] = {}
    passthrough: list[Record] = []
    for rec in records:
        if rec.get("kind") == "load":
            passthrough.append(rec)
            continue
        key = (rec.get("client_host"), rec.get("server_host"), rec.get("size_bytes"), rec.get("report_part"))
        groups.setdefault(key, []).append(rec)
    out: list[Record] = []
    for rows in groups.values():
        total: Record = {k: v for k, v in rows[0].items() if k not in ("port", "bw_peak_gbps", "bw_peak_MBps_tool")}
        for field in _SUMMED:
            values = [r[field] for r in rows
                      if isinstance(r.get(field), int | float) and not isinstance(r.get(field), bool)]
            if values:
                total[field] = round(sum(values), 6) if isinstance(values[0], float) else sum(values)
        total["processes"] = len(rows)
        if len(rows) < processes:
            total["partial"] = True
            total["partial_reason"] = f"{len(rows)} of {processes} processes reported"
        warnings = [str(r["tool_warning"]) for r in rows if r.get("tool_warning")]
        if warnings:
            total["tool_warning"] = "; ".join(dict.fromkeys(warnings))
        out.append(total)
        out.extend({**r, "kind": "process", "process": j} for j, r in enumerate(rows))
    return out + passthrough


ADAPTER = PerftestAdapter()
