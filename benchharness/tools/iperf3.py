"""iperf3 adapter: TCP/UDP throughput between hosts (pairs, incast, one-to-many, all-to-all).

Servers are one-off (``-1``) and bound to the receiver's traffic address; clients print JSON
(``-J``), which ``iperf3_parse`` turns into records. Written for iperf3 3.12 (Debian 12).
``bench parse iperf3 FILE`` also reads saved human-readable outputs (``iperf3_text``).

Bursty traffic: ``bitrate: RATE/BURST`` is iperf3's own ``-b`` pacing (bursts of BURST packets).
``on_off: 100ms/100ms`` makes each client a duty cycle: a fixed ``sh`` loop stops the client
with SIGSTOP for the off time and continues it with SIGCONT, so the wire goes quiet while the TCP
connection stays up (iperf3 has no native on/off; its ``-t`` is whole seconds, so short
on-periods cannot be separate runs). Interval reports then default to 0.1 s so the samples show
the cycle. ``stagger: 0.5s`` starts the flows of one step (incast, one-to-many, all-to-all)
0.5 s apart; records of multi-flow steps carry ``t_offset_s``, their flow's start within the step.

Parallel streams: before iperf3 3.16 one iperf3 process runs all its ``-P`` streams in one thread,
which one core caps far below a 400G NIC; 3.16 gives every stream a thread of its own (see
docs/rails.md). So ``streams: N`` is ``-P N`` only where both ends run iperf3 >= 3.16 (inventory
``iperf3_version``, which ``rails=auto`` fills from the probe) or the suite says
``parallel: threads``; otherwise each flow is N iperf3 processes of one stream each, on ports of
their own, started at the same agreed instant (``execution/clocks.py``), and their figures are
summed into the flow's sample (each process's own summary is kept as a ``kind: process`` record).
Every server and client runs on its NIC's NUMA node (``tools.common.numa_prefix``, as perftest).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_duration, parse_rate, parse_size
from benchharness.core.values import argv_list
from benchharness.tools import iperf3_parse, iperf3_text
from benchharness.tools.base import ToolFacts, version_tuple
from benchharness.tools.common import NUMA_MARKER, NUMACTL, numa_prefix, reject_unknown

#: iperf3 on the hosts: ``iperf3 --version`` prints ``iperf 3.12 (cJSON 1.7.15)``.
IPERF3 = ToolFacts("iperf3", ("iperf3", "--version"), r"iperf\s+(\d+\.\d+(?:\.\d+)?)", min_version="3.7",
                   apt=("iperf3",), dnf=("iperf3",), required=True)
#: The first iperf3 whose ``-P`` streams run in threads of their own.
MULTITHREADED = "3.16"
PARALLEL_MODES = ("auto", "threads", "processes")

SERVER_READY = r"Server listening on \d+"
UDP_DEFAULT_BITRATE = "1G"
#: Seconds allowed beyond duration + omit for connection setup and the results exchange.
TIMEOUT_MARGIN_S = 30.0
_PAIR_PATTERNS = ("pairs", "all-pairs", "ring", "self", "gpu-pairs")  # gpu-pairs: the lab's GPU stand-in
_MAX_UDP_PAYLOAD = 65507
_MAX_TCP_BLOCK = 1 << 20  # iperf3's MAX_BLOCKSIZE: a larger -l only prints its usage text
#: Interval reports under on_off unless the suite sets ``interval`` (iperf3's minimum is 0.1 s).
ON_OFF_INTERVAL = 0.1
#: Extra on/off time allowed for the client's connection setup.
ON_OFF_SETUP_S = 1.0
_ON_OFF_SCRIPT = (
    'on="$1"; off="$2"; n="$3"; shift 3; "$@" & p=$!; '
    "trap 'kill -CONT $p 2>/dev/null' TERM INT; i=0; "
    'while [ "$i" -lt "$n" ] && sleep "$on" && kill -STOP "$p" 2>/dev/null; '
    'do sleep "$off"; kill -CONT "$p" 2>/dev/null; i=$((i+1)); done; '
    'wait "$p"; r=$?; if kill -0 "$p" 2>/dev/null; then wait "$p"; r=$?; fi; exit "$r"')


def _is_bool(value: Any) -> bool:
    """YAML booleans are ints in Python; numeric parameters must refuse them."""
    return isinstance(value, bool)


class Iperf3Adapter:
    """The ``iperf3`` tool adapter (see ``benchharness.tools.base.ToolAdapter``)."""

    name = "iperf3"
    description = "iperf3 TCP/UDP throughput, loss and jitter between hosts"
    params: Mapping[str, Any] = {
        "protocol": "tcp", "duration": 5, "omit": 0, "streams": 1, "length": None,
        "bitrate": None, "bidir": False, "reverse": False, "window": None, "zerocopy": False,
        "interval": 1, "connect_timeout": None, "timeout": None, "extra_args": "",
        "on_off": None, "stagger": None, "parallel": "auto", "numa": True,
    }
    patterns: Sequence[str] = (*_PAIR_PATTERNS, "one-to-many", "incast", "all-to-all")
    requirements: Sequence[ToolFacts] = (IPERF3, NUMACTL)
    # sender_cpu_pct is cpu_local_pct or cpu_remote_pct (whichever end sent); byte and packet
    # counts are the rates times the fixed duration; lost_packets is loss_pct of packets
    restated_metrics = frozenset({"sender_cpu_pct", "bytes", "bytes_sent", "packets", "lost_packets"})

    # ------------------------------------------------------------------ parameters

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError naming the parameter and its bad value."""
        reject_unknown(self.name, params, self.params)
        p = {**self.params, **params}

        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"iperf3 parameter {name}={p[name]!r}: {why}")

        if p["protocol"] not in ("tcp", "udp"):
            raise bad("protocol", "must be 'tcp' or 'udp'")
        for name, low in (("duration", 1), ("omit", 0)):
            try:
                seconds = parse_duration(p[name])
            except ValueError as exc:
                raise bad(name, str(exc)) from None
            if seconds != int(seconds) or seconds < low:
                raise bad(name, f"must be whole seconds >= {low} (iperf3 takes whole seconds)")
        streams = p["streams"]
        if _is_bool(streams) or not isinstance(streams, int) or streams < 1:
            raise bad("streams", "must be a whole number >= 1")
        if p["streams"] > 128:
            raise bad("streams", "iperf3 allows at most 128 parallel streams")
        if p["parallel"] not in PARALLEL_MODES:
            raise bad("parallel", f"must be one of {', '.join(PARALLEL_MODES)}")
        if not _is_bool(p["numa"]):
            raise bad("numa", "must be true or false")
        for name in ("length", "window"):
            if p[name] is not None:
                try:
                    size = parse_size(p[name])
                except ValueError as exc:
                    raise bad(name, str(exc)) from None
                if size <= 0:
                    raise bad(name, "must be > 0")
                if name == "length" and p["protocol"] == "udp" and size > _MAX_UDP_PAYLOAD:
                    raise bad(name, f"a UDP datagram carries at most {_MAX_UDP_PAYLOAD} bytes")
                if name == "length" and p["protocol"] == "tcp" and size > _MAX_TCP_BLOCK:
                    raise bad(name, f"iperf3 writes TCP blocks of at most {_MAX_TCP_BLOCK} bytes (1M)")
        if p["bitrate"] is not None:
            try:
                _bitrate_arg(p["bitrate"])
            except ValueError as exc:
                raise bad("bitrate", str(exc)) from None
        for name in ("bidir", "reverse", "zerocopy"):
            if not _is_bool(p[name]):
                raise bad(name, "must be true or false")
        if p["bidir"] and p["reverse"]:
            raise bad("reverse", "iperf3 cannot combine reverse with bidir")
        try:
            interval = parse_duration(p["interval"])
        except ValueError as exc:
            raise bad("interval", str(exc)) from None
        if not (interval == 0 or 0.1 <= interval <= 60):
            raise bad("interval", "must be 0 (no interval reports) or between 0.1 and 60 seconds")
        timeout = p["connect_timeout"]
        if timeout is not None and (_is_bool(timeout) or not isinstance(timeout, int) or timeout <= 0):
            raise bad("connect_timeout", "must be a whole number of milliseconds > 0")
        try:
            argv_list(p["extra_args"], "extra_args")
        except ValueError as exc:
            raise bad("extra_args", str(exc)) from exc
        if p["timeout"] is not None and (_is_bool(p["timeout"]) or not isinstance(p["timeout"], int | float)
                                         or p["timeout"] <= 0):
            raise bad("timeout", "must be a number of seconds > 0")
        if p["on_off"] is not None:
            try:
                on_off_seconds(p["on_off"])
            except ValueError as exc:
                raise bad("on_off", str(exc)) from None
            if p["protocol"] != "tcp" or p["bitrate"] is not None:
                # -b paces to the average since the start: after every off period iperf3 would
                # send flat out until it caught up, which is not the duty cycle asked for.
                raise bad("on_off", "works with protocol tcp and no bitrate (iperf3's -b paces to "
                          "the average since the start and would burst to catch up after each off "
                          "period); to cap the on-period rate use extra_args: --fq-rate RATE")
        if p["stagger"] is not None:
            try:
                stagger = parse_duration(p["stagger"])
            except ValueError as exc:
                raise bad("stagger", str(exc)) from None
            if not 0 <= stagger <= 60:
                raise bad("stagger", "must be between 0 and 60 seconds")

    # ------------------------------------------------------------------ commands

    def processes(self, params: Mapping[str, Any], hosts: Sequence[Host]) -> int:
        """iperf3 processes per flow: 1 (``-P``), or one per stream where ``-P`` would be one thread."""
        p = {**self.params, **params}
        streams = int(p["streams"])
        if streams == 1 or p["parallel"] == "threads":
            return 1
        if p["parallel"] == "processes":
            return streams
        return 1 if all(_multithreaded(h) for h in hosts) else streams

    def ports_per_flow(self, params: Mapping[str, Any], hosts: Sequence[Host]) -> int:
        """Server ports one flow takes (the planner reserves them): one per process."""
        return self.processes(params, hosts)

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        """Servers (background, one per process of each flow) first, then the clients."""
        p = self._resolved(step.params)
        per_flow = self.processes(p, step.hosts)
        flows = _flows(step, per_flow)
        servers = [self._server(f.dst, port, p) for f in flows for port in f.ports]
        clients = [self._client(f.src, f.dst, port, p, label, delay=i * p["stagger"], threads=per_flow == 1)
                   for i, f in enumerate(flows) for port, label in zip(f.ports, f.labels, strict=True)]
        return servers + clients

    def _resolved(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self.check_params(params)
        p = {**self.params, **params}
        if p["protocol"] == "udp" and p["bitrate"] is None:
            p["bitrate"] = UDP_DEFAULT_BITRATE
        if p["on_off"] is not None and "interval" not in params:
            p["interval"] = ON_OFF_INTERVAL  # one report per second would average the cycle away
        for name in ("duration", "omit", "interval"):  # "5s", "500ms" as suites write them
            p[name] = parse_duration(p[name])
        p["stagger"] = parse_duration(p["stagger"]) if p["stagger"] is not None else 0.0
        return p

    def _server(self, host: Host, port: int, p: Mapping[str, Any]) -> Command:
        argv = [*numa_prefix(host, p["numa"]), _binary(host), "-s", "-p", str(port), "-1", "-B", host.traffic_ip,
                "--forceflush"]
        return Command(host=host, role="server", argv=tuple(argv), background=True,
                       ready_pattern=SERVER_READY, timeout_s=_client_timeout(p) + TIMEOUT_MARGIN_S,
                       label=f"server-{host.name}-{port}")

    def _client(self, src: Host, dst: Host, port: int, p: Mapping[str, Any], label: str,
                delay: float = 0.0, threads: bool = True) -> Command:
        """One client; ``threads``: its flow's streams are its own ``-P`` (else it is one of them)."""
        argv = [*numa_prefix(src, p["numa"]), _binary(src), "-c", dst.traffic_ip, "-p", str(port), "-J",
                "-t", str(int(p["duration"])), "-i", _num(p["interval"])]
        if src.data_ip and src.data_ip != dst.traffic_ip:
            argv += ["-B", src.data_ip]  # leave through the data NIC, not the management one
        if p["protocol"] == "udp":
            argv.append("-u")
        if p["omit"]:
            argv += ["-O", str(int(p["omit"]))]
        if p["streams"] != 1 and threads:
            argv += ["-P", str(int(p["streams"]))]
        if p["length"] is not None:
            argv += ["-l", str(parse_size(p["length"]))]
        if p["bitrate"] is not None:
            argv += ["-b", _bitrate_arg(p["bitrate"])]
        if p["window"] is not None:
            argv += ["-w", str(parse_size(p["window"]))]
        if p["bidir"]:
            argv.append("--bidir")
        if p["reverse"]:
            argv.append("-R")
        if p["zerocopy"]:
            argv.append("-Z")
        if p["connect_timeout"] is not None:
            argv += ["--connect-timeout", str(p["connect_timeout"])]
        argv += argv_list(p["extra_args"], "extra_args")
        if p["on_off"] is not None:
            argv = on_off_argv(p["on_off"], float(p["omit"]) + float(p["duration"]), argv)
        return Command(host=src, role="client", argv=tuple(argv), background=False,
                       timeout_s=_client_timeout(p), label=label, start_delay_s=round(delay, 3))

    # ------------------------------------------------------------------ parsing

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        """Records of every flow of the step, labelled with the step and the two hosts; a flow of
        several processes is their sum (``sum_processes``)."""
        by_label = {r.command.name: r for r in results}
        out: list[Record] = []
        flows = _flows(step, self.processes(step.params, step.hosts))
        # Several flows share one time axis: each flow's start relative to the first one's.
        starts = [by_label[f.labels[0]].started for f in flows if f.labels[0] in by_label]
        t0 = min(starts, default=0.0)
        for flow in flows:
            runs = []
            for port, label in zip(flow.ports, flow.labels, strict=True):
                server_label = f"server-{flow.dst.name}-{port}"
                result = by_label.get(label)
                if result is None:
                    raise ToolFailure("missing_result", f"step {step.id}: no result for {label}")
                try:
                    runs.append(parse_client_result(result))
                except ToolFailure as exc:
                    where = f"step {step.id}, {label}: {exc.message}"
                    raise ToolFailure(exc.kind, where + _server_note(by_label.get(server_label))) from exc
            records = runs[0] if len(runs) == 1 else sum_processes(runs, flow.ports)
            labels = {**step.sample_labels(), "server": flow.dst.name, "client": flow.src.name}
            if len(flows) > 1:
                labels["t_offset_s"] = round(by_label[flow.labels[0]].started - t0, 3)
            out.extend({**labels, **rec} for rec in records)
        return out

    def parse_text(self, text: str) -> list[Record]:
        """Records of one saved output (``bench parse iperf3 FILE``): ``-J`` JSON, else iperf3's text."""
        try:
            return iperf3_parse.parse_output(text)
        except ToolFailure as exc:
            if exc.kind != "unparsable" or not iperf3_text.looks_like_text(text):
                raise
        return iperf3_text.parse_text_output(text)


def parse_client_result(result: CommandResult) -> list[Record]:
    """Records from one client's CommandResult; ToolFailure when it produced nothing usable."""
    if not result.stdout.strip():
        stderr = _telling_line(result.stderr)
        if result.rc == 127 or "not found" in stderr.lower():
            raise ToolFailure("tool_missing", f"iperf3 is not installed or not on PATH: {stderr or 'rc 127'}")
        if result.timed_out:
            note = f"; stderr: {stderr}" if stderr else ""
            raise ToolFailure("timeout", f"iperf3 client printed nothing before its timeout{note}")
        if result.error:
            raise ToolFailure("tool_error", f"iperf3 client could not run: {result.error}")
        why = f"rc {result.rc}" + (f", stderr: {stderr}" if stderr else "")
        kind = "crashed" if result.rc not in (0, None) else "no_output"
        raise ToolFailure(kind, f"iperf3 client printed no output ({why})")
    return iperf3_parse.parse_output(result.stdout)


def _server_note(server: CommandResult | None) -> str:
    """What the matching server did, when that helps explain a client failure."""
    if server is None:
        return "; no result was recorded for its server"
    stderr = "\n".join(ln for ln in server.stderr.splitlines() if not ln.startswith(NUMA_MARKER)).strip()
    if server.ok and not stderr:
        return ""
    said = (stderr or server.stdout.strip()).splitlines()[-1:] or [""]
    state = "timed out" if server.timed_out else server.error or f"rc {server.rc}"
    return f"; server {server.command.name} ({state}): {said[0][:300]}"


class Flow(NamedTuple):
    """One flow of a step: client host, server host, and its processes' server ports and client labels."""

    src: Host
    dst: Host
    ports: list[int]
    labels: list[str]


def _flows(step: Step, processes: int = 1) -> list[Flow]:
    """Every flow of the step; each takes ``processes`` consecutive ports from the step's range."""
    hosts, port = step.hosts, step.port
    pattern = step.pattern

    def flow(src: Host, dst: Host, offset: int, name: str) -> Flow:
        ports = [port + offset * processes + j for j in range(processes)]
        return Flow(src, dst, ports, [f"client-{name}-{p}" for p in ports])

    if pattern in _PAIR_PATTERNS:
        if pattern == "self" and len(hosts) == 1:
            hosts = (hosts[0], hosts[0])
        if len(hosts) != 2:
            raise ValueError(f"step {step.id}: pattern {pattern} needs (server, client), "
                             f"got {len(hosts)} hosts")
        server, client = hosts
        return [flow(client, server, 0, client.name)]
    if len(hosts) < 2:
        raise ValueError(f"step {step.id}: pattern {pattern} needs at least 2 hosts, got {len(hosts)}")
    if pattern == "incast":
        receiver, *senders = hosts
        return [flow(s, receiver, i, s.name) for i, s in enumerate(senders)]
    if pattern == "one-to-many":
        sender, *receivers = hosts
        return [flow(sender, r, 0, f"{sender.name}-to-{r.name}") for r in receivers]
    if pattern == "all-to-all":
        # Receiver j runs one server per sender i, on port + i.
        return [flow(src, dst, i, f"{src.name}-to-{dst.name}")
                for i, src in enumerate(hosts) for j, dst in enumerate(hosts) if j != i]
    raise ValueError(f"step {step.id}: iperf3 does not support pattern {pattern!r}")


#: Figures that add up over the processes of one flow.
_SUMMED = ("bw_avg_gbps", "bytes", "bw_sent_gbps", "bytes_sent", "retransmits", "packets", "lost_packets",
           "msg_rate_mpps", "streams", "cpu_local_pct", "cpu_remote_pct")


def sum_processes(runs: Sequence[Sequence[Record]], ports: Sequence[int]) -> list[Record]:
    """One flow measured by several iperf3 processes (started together) as one flow's records.

    Interval records are summed by position (the processes share ``-i`` and their start), summaries
    by direction: bandwidths, bytes, packets, losses, retransmits, streams and CPU add up; loss is
    recomputed from the sums, jitter is the worst, duration the longest. Each process's own summary
    follows as a ``kind: process`` record with its ``process`` index and ``port``.
    """
    out: list[Record] = []
    for kind in ("interval", "summary"):
        for direction in ("forward", "reverse"):
            per = [[r for r in records if r.get("kind") == kind and r.get("direction") == direction]
                   for records in runs]
            if not any(per):
                continue
            if kind == "interval":
                out.extend(_summed(rows) for rows in zip(*per, strict=False))
                continue
            rec = _summed([rows[0] for rows in per if rows])
            lacking = [str(j) for j, rows in enumerate(per) if not rows]
            if lacking:
                rec["partial"] = True
                rec["partial_reason"] = "; ".join(filter(None, [
                    rec.get("partial_reason"), f"process {', '.join(lacking)} gave no {direction} summary"]))
            out.append(rec)
    for j, (records, port) in enumerate(zip(runs, ports, strict=True)):
        out.extend({**r, "kind": "process", "process": j, "port": port}
                   for r in records if r.get("kind") == "summary")
    return out


def _summed(rows: Sequence[Record]) -> Record:
    rec: Record = dict(rows[0])
    for key in _SUMMED:
        values = [r[key] for r in rows if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)]
        if values:
            rec[key] = sum(values)
    if "duration_s" in rec:
        rec["duration_s"] = max(float(r.get("duration_s") or 0.0) for r in rows)
    senders = [float(r["sender_cpu_pct"]) for r in rows if r.get("sender_cpu_pct") is not None]
    if senders:  # the busiest sending process; bound when any one ran out of its core
        rec["sender_cpu_pct"] = max(senders)
        rec["sender_cpu_bound"] = any(bool(r.get("sender_cpu_bound")) for r in rows)
    jitters = [r["jitter_ms"] for r in rows if r.get("jitter_ms") is not None]
    if jitters:
        rec["jitter_ms"] = max(jitters)
    if rec.get("packets") and "lost_packets" in rec:
        rec["loss_pct"] = 100.0 * rec["lost_packets"] / rec["packets"]
    if any(r.get("omitted") for r in rows):
        rec["omitted"] = True
    reasons = [str(r["partial_reason"]) for r in rows if r.get("partial")]
    if reasons:
        rec["partial"] = True
        rec["partial_reason"] = "; ".join(dict.fromkeys(reasons))
    rec["processes"] = len(rows)
    return rec


def _multithreaded(host: Host) -> bool:
    """Whether ``host`` runs an iperf3 whose ``-P`` streams get threads of their own (>= 3.16)."""
    version = host.var("iperf3_version")
    return version is not None and version_tuple(str(version)) >= version_tuple(MULTITHREADED)


def on_off_seconds(value: Any) -> tuple[float, float]:
    """``"100ms/100ms"`` -> ``(0.1, 0.1)``: seconds on and off, each 0.01 .. 60."""
    if not isinstance(value, str) or value.count("/") != 1:
        raise ValueError("must be ON/OFF durations, e.g. 100ms/100ms or 1s/3s")
    on, off = (parse_duration(part) for part in value.split("/"))
    for seconds in (on, off):
        if not 0.01 <= seconds <= 60:
            raise ValueError("each of ON/OFF must be between 10ms and 60s")
    return on, off


def on_off_argv(value: str, seconds: float, argv: Sequence[str]) -> list[str]:
    """``argv`` run under the on/off loop for about ``seconds`` (whole cycles, rounded up).

    The loop is a fixed script; the durations and the command are its positional arguments, so no
    value ever becomes shell text. It ends with the client continued, so the client finishes its
    own ``-t``; on SIGTERM it continues a stopped client so that it can write its partial JSON.
    """
    on, off = on_off_seconds(value)
    cycles = math.ceil((seconds + ON_OFF_SETUP_S) / (on + off))
    return ["sh", "-c", _ON_OFF_SCRIPT, "bench-on-off", _num(on), _num(off), str(cycles), *argv]


def _bitrate_arg(value: Any) -> str:
    """iperf3's ``-b`` argument in plain bits/s (``100M/64`` -> ``100000000/64``)."""
    if _is_bool(value):
        raise ValueError("not a rate")
    text = str(value)
    rate_text, _, burst = text.partition("/")
    rate = parse_rate(rate_text if isinstance(value, str) else value)
    if rate < 0 or rate != int(rate):
        raise ValueError("rate must be a whole, non-negative number of bits/s")
    if burst and (not burst.isdigit() or int(burst) <= 0):
        raise ValueError(f"burst {burst!r} must be a whole number of packets > 0")
    return f"{int(rate)}/{int(burst)}" if burst else str(int(rate))


def _binary(host: Host) -> str:
    """The iperf3 to run on ``host``: inventory variable ``iperf3_bin``, else iperf3 on PATH."""
    return str(host.var("iperf3_bin") or "iperf3")


def _telling_line(stderr: str) -> str:
    """The line of iperf3's stderr that says what went wrong, not its whole usage text."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith(NUMA_MARKER)]
    for line in lines:
        if line.startswith("iperf3: ") or "error" in line.lower() or "not found" in line.lower():
            return line
    return lines[0] if lines else ""


def _client_timeout(p: Mapping[str, Any]) -> float:
    if p.get("timeout"):
        return float(p["timeout"])
    extra = (p["connect_timeout"] or 0) / 1000.0
    return float(p["duration"]) + float(p["omit"]) + TIMEOUT_MARGIN_S + extra


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


ADAPTER = Iperf3Adapter()
