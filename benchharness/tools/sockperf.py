"""sockperf adapter: socket-level latency (ping-pong, under-load) and throughput, and its parser.

Modes (``mode``): ``ping-pong`` (one message in flight, latency of every one), ``under-load``
(messages sent at ``mps`` per second without waiting for replies; the server answers every
``reply_every``-th, whose latency is measured) and ``throughput`` (one way, flat out or at
``mps``). The server is ``sockperf server`` on the receiver's traffic address; ``protocol`` is
``udp`` (sockperf's default) or ``tcp``; ``size`` (``-m``, 14 B to 64 KiB - 29 B) sweeps.

Latency is one-way: sockperf's default, half of each measured round trip (``--full-rtt`` is not
passed), the convention of perftest's ``*_lat`` tests too, so ``lat_p99_us`` of the two tools
compare. An output made with ``--full-rtt`` (``avg-rtt``, "Round trip is") is read as ``rtt_*_us``.

Latency under bulk load (``load_streams: N``): N ``sockperf throughput --tcp`` flows of
``load_size`` messages run on the same host pair during the latency probe (``load_direction``:
``forward`` client to server, the probe's request direction; ``reverse``; or ``both``), each
with a server of its own. The load starts first and ends ``LOAD_MARGIN_S`` after the probe, so
every probe message meets it; its throughput is kept as ``kind: load`` samples. The load is
sockperf's own throughput mode, so that one tool module declares the whole composition.

Output (sockperf 3.x ``src/client.cpp``): ``[Valid Duration] RunTime=...; SentMessages=...;
ReceivedMessages=...``, ``====> avg-latency=X (std-dev=Y ...)`` (``avg-lat`` before 3.5,
``avg-rtt`` with ``--full-rtt``), drop/duplicate/out-of-order counts, ``Total N observations``,
then ``---> <MAX> observation``, ``---> percentile 99.999 ... 25.000`` and ``<MIN>`` (``MAX``
without brackets from 3.8); throughput: ``Total of N messages sent in T sec``, ``Message Rate is
R [msg/sec]`` and ``BandWidth is M MBps (B Mbps)``, where sockperf's MB is 2^20 bytes. sockperf
exits 0 on errors (no server, bad option): the text decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_duration, parse_size
from benchharness.core.values import argv_list
from benchharness.tools.base import ToolFacts
from benchharness.tools.common import NUMACTL, numa_prefix, reject_unknown
from benchharness.tools.textclean import clean, known_error

#: sockperf on the hosts: ``sockperf --version`` prints ``sockperf, version 3.7-no.git``.
SOCKPERF = ToolFacts("sockperf", ("sockperf", "--version"), r"version\s*#?\s*(\d+\.\d+(?:\.\d+)?)",
                     min_version="3.0", apt=("sockperf",), dnf=("sockperf",))
MODES = {"ping-pong": "ping-pong", "under-load": "under-load", "throughput": "throughput"}
LOAD_DIRECTIONS = ("forward", "reverse", "both")
#: sockperf's message size bounds (``-m``): its header, and a UDP datagram's payload.
MIN_SIZE, MAX_SIZE = 14, 65507
#: The server prints this once its sockets are bound.
READY_PATTERN = r"using \S+ to block on socket|\[SERVER\] listen on"
#: Seconds the bulk load starts before the probe and ends after it.
LOAD_LEAD_S = 1.0
LOAD_MARGIN_S = 2.0
#: Seconds allowed beyond the run time for connection setup and the summary.
TIMEOUT_MARGIN_S = 30.0
MIB = 1 << 20

_NUM = r"(\d+(?:\.\d+)?)"
_VERSION_RE = re.compile(r"== version #\s*(\S+?)\s*==")
_AVG_RE = re.compile(r"====>\s*avg-(latency|lat|rtt)=\s*" + _NUM + r"\s*\(std-dev=\s*" + _NUM)
_VALID_RE = re.compile(r"\[Valid Duration\]\s*RunTime=" + _NUM + r" sec; SentMessages=(\d+); "
                       r"ReceivedMessages=(\d+)")
_DROPS_RE = re.compile(r"# dropped messages = (\d+); # duplicated messages = (\d+); "
                       r"# out-of-order messages = (\d+)")
_TOTAL_RE = re.compile(r"Total\s+(\d+)\s+observations")
_PCT_RE = re.compile(r"--->\s*percentile\s+" + _NUM + r"\s*=\s*" + _NUM)
_EXTREME_RE = re.compile(r"--->\s*<?(MAX|MIN)>?\s+observation\s*=\s*" + _NUM)
_SENT_RE = re.compile(r"Total of (\d+) messages sent in " + _NUM + " sec")
_RATE_RE = re.compile(r"Message Rate is (\d+) \[msg/sec\]")
_PKT_RE = re.compile(r"Packet Rate is about (\d+) \[pkt/sec\] \((\d+) ip frags / msg\)")
_BW_RE = re.compile(r"BandWidth is " + _NUM + r" MBps \(" + _NUM + r" Mbps\)")
_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("tool_missing", r"command not found|: not found\s*$|execution of .*No such file or directory"),
        ("connect_failed", r"Can`t connect socket|Connection refused|No route to host"
                           r"|No messages were received from the server"),
        ("bad_args", r"Invalid message size|Invalid argument|invalid option|unrecognized option"
                     r"|^Usage: sockperf"),
        ("tool_error", r"sockperf: ERROR:|### ERROR"),
    ))
_HINTS = {"tool_missing": "install sockperf on the host",
          "connect_failed": "check that the server started and that the traffic address is reachable",
          "bad_args": "check the suite's sockperf parameters",
          "tool_error": "sockperf reported an error, see the raw output"}


#: What ``bench parse sockperf`` reads (``bench parse --list``).
READS = {"sockperf": "sockperf 3.x client output (3.10 and the older layouts): ping-pong and under-load latency (avg-lat / "
                     "avg-latency, avg-rtt with --full-rtt, percentiles to 99.999, <MAX>/<MIN>, drops, "
                     "duplicates, out-of-order), throughput (message rate, BandWidth MBps = MiB/s, Packet Rate); "
                     "several runs in one text, Prior:/After: labels, prompts and emulator prefixes; "
                     "'sockperf: ERROR' outputs named by kind"}

def _pct_name(rank: str) -> str:
    """``99.900`` -> ``p999``, ``50.000`` -> ``p50``, ``99.999`` -> ``p99999``."""
    text = rank.rstrip("0").rstrip(".") if "." in rank else rank
    return "p" + text.replace(".", "")


def parse_latency(text: str) -> Record | None:
    """The latency summary of a ping-pong or under-load client output; None when it has none."""
    avg = _AVG_RE.search(text)
    if avg is None:
        return None
    kind = "rtt" if avg.group(1) == "rtt" else "lat"
    rec: Record = {f"{kind}_avg_us": float(avg.group(2)), f"{kind}_stddev_us": float(avg.group(3))}
    for m in _PCT_RE.finditer(text):
        rec[f"{kind}_{_pct_name(m.group(1))}_us"] = float(m.group(2))
    for m in _EXTREME_RE.finditer(text):
        rec[f"{kind}_{m.group(1).lower()}_us"] = float(m.group(2))
    total = _TOTAL_RE.search(text)
    if total:
        rec["observations"] = int(total.group(1))
    valid = _VALID_RE.search(text)
    if valid:
        rec.update({"valid_s": float(valid.group(1)), "sent_messages": int(valid.group(2)),
                    "received_messages": int(valid.group(3))})
    drops = _DROPS_RE.search(text)
    if drops:
        rec.update({"dropped_messages": int(drops.group(1)), "duplicated_messages": int(drops.group(2)),
                    "out_of_order_messages": int(drops.group(3))})
    return rec


def parse_throughput(text: str) -> Record | None:
    """The summary of a throughput client output; None when it has none."""
    rate, bw = _RATE_RE.search(text), _BW_RE.search(text)
    if rate is None or bw is None:
        return None
    mbps_tool = float(bw.group(1))
    rec: Record = {"msg_rate_mpps": round(int(rate.group(1)) / 1e6, 6),
                   "bw_avg_gbps": round(mbps_tool * MIB * 8 / 1e9, 6),
                   "bw_avg_MBps_tool": mbps_tool}
    sent = _SENT_RE.search(text)
    if sent:
        rec.update({"sent_messages": int(sent.group(1)), "valid_s": float(sent.group(2))})
    pkt = _PKT_RE.search(text)
    if pkt:
        rec.update({"pkt_rate_mpps": round(int(pkt.group(1)) / 1e6, 6), "ip_frags_per_msg": int(pkt.group(2))})
    return rec


#: Lines that open one client run's report (or one server's statistics in a multi-server run):
#: they come before its summary, never after it.
_RUN_START_RE = re.compile(r"^.*(?:== version #|\[Total Run\]|Printing statistics for Server No"
                           r"|\[Valid Duration\]|Total of \d+ messages sent).*$", re.MULTILINE)


def _runs(text: str) -> list[str]:
    """``text`` cut into one piece per summary: a saved log may hold several runs one after the
    other (or one ``[Valid Duration]`` block per server of a ``-f`` run), and each piece's figures
    must come from its own lines, not the next run's percentiles."""
    # a latency run's summary (avg-lat) and a throughput run's (Message Rate) alike: a log may hold both
    anchors = sorted(m.start() for pattern in (_AVG_RE, _RATE_RE) for m in pattern.finditer(text))
    cuts = [0]
    for before, after in pairwise(anchors):
        start = next((m.start() for m in _RUN_START_RE.finditer(text, before, after)), None)
        cuts.append(start if start is not None else text.rfind("\n", before, after) + 1)
    cuts.append(len(text))
    return [text[a:b] for a, b in pairwise(cuts)]


def parse_output(text: str) -> list[Record]:
    """One summary record per client run in a sockperf output (latency or throughput), in
    order, with ``sockperf_version`` when printed; ToolFailure quoting the tool when there is none."""
    text = clean(text)
    records: list[Record] = []
    first_version = _VERSION_RE.search(text)
    for piece in _runs(text):
        rec = parse_latency(piece) or parse_throughput(piece)
        if rec is None:
            continue
        version = _VERSION_RE.search(piece) or first_version
        if version:
            rec["sockperf_version"] = version.group(1)
        records.append(rec)
    if not records:
        raise classify_error(text) or _no_result(text)
    return records


def classify_error(text: str, rc: int | None = None) -> ToolFailure | None:
    """The ToolFailure an output shows, quoting the tool's line; None when none is known."""
    return known_error("sockperf", text, _ERRORS, _HINTS, rc)


def _no_result(text: str, rc: int | None = None) -> ToolFailure:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:]) if lines else "(no output)"
    code = "" if rc is None else f", exit code {rc}"
    return ToolFailure("no_result", f"sockperf printed no summary{code}; last lines: {tail!r}")


def _whole(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"sockperf parameter {name}={value!r}: must be a whole number >= {low}")
    return value


class SockperfAdapter:
    """Adapter for ``sockperf`` (Debian ``sockperf``); see the module docstring."""

    name = "sockperf"
    description = "sockperf socket latency (ping-pong, under-load, percentiles to p99.999) and throughput"
    params: Mapping[str, Any] = {
        "mode": "ping-pong", "protocol": "udp", "size": 64, "duration": 5, "mps": None,
        "reply_every": None, "load_streams": 0, "load_size": 65000, "load_direction": "forward",
        "numa": True, "extra_args": None, "timeout": None,
    }
    patterns: Sequence[str] = ("pairs", "all-pairs", "ring", "self")
    requirements: Sequence[ToolFacts] = (SOCKPERF, NUMACTL)

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError naming the parameter when a value is wrong for sockperf."""
        reject_unknown(self.name, params, self.params)
        p = {**self.params, **{k: v for k, v in params.items() if v is not None}}
        if p["mode"] not in MODES:
            raise ValueError(f"sockperf parameter mode={p['mode']!r}: one of {', '.join(MODES)}")
        if p["protocol"] not in ("udp", "tcp"):
            raise ValueError(f"sockperf parameter protocol={p['protocol']!r}: must be 'udp' or 'tcp'")
        for name in ("size", "load_size"):
            size = parse_size(p[name])
            if not MIN_SIZE <= size <= MAX_SIZE:
                raise ValueError(f"sockperf parameter {name}={p[name]!r}: sockperf sends "
                                 f"{MIN_SIZE}..{MAX_SIZE} byte messages")
        seconds = parse_duration(p["duration"])
        if seconds != int(seconds) or seconds < 1:
            raise ValueError(f"sockperf parameter duration={p['duration']!r}: whole seconds >= 1")
        if p["mps"] is not None and p["mps"] != "max":
            _whole("mps", p["mps"], 1)
        if p["reply_every"] is not None:
            _whole("reply_every", p["reply_every"], 1)
            if p["mode"] != "under-load":
                raise ValueError("sockperf parameter reply_every: only for mode under-load")
        if _whole("load_streams", p["load_streams"], 0) and p["mode"] == "throughput":
            raise ValueError("sockperf parameter load_streams: bulk load runs beside a latency probe "
                             "(ping-pong or under-load), not beside throughput")
        if p["load_direction"] not in LOAD_DIRECTIONS:
            raise ValueError(f"sockperf parameter load_direction={p['load_direction']!r}: one of "
                             f"{', '.join(LOAD_DIRECTIONS)}")
        if not isinstance(p["numa"], bool):
            raise ValueError(f"sockperf parameter numa={p['numa']!r}: must be true or false")
        argv_list(p["extra_args"], "extra_args")
        if p["timeout"] is not None:
            parse_duration(p["timeout"])

    def _p(self, step: Step) -> dict[str, Any]:
        merged = {**self.params, **{k: v for k, v in step.params.items() if v is not None}}
        self.check_params(merged)
        return merged

    @staticmethod
    def ports_per_flow(params: Mapping[str, Any], hosts: Sequence[Host]) -> int:
        """The probe's server port, and one per bulk-load flow (two per stream for ``both``)."""
        streams = int(params.get("load_streams") or 0)
        return 1 + streams * (2 if params.get("load_direction") == "both" else 1)

    def timeout_s(self, params: Mapping[str, Any]) -> float:
        """Bound for the probe client: its run time, the load's lead, and setup."""
        if params.get("timeout") is not None:
            return float(parse_duration(params["timeout"]))
        return parse_duration(params["duration"]) + LOAD_LEAD_S + LOAD_MARGIN_S + TIMEOUT_MARGIN_S

    @staticmethod
    def client_args(params: Mapping[str, Any], server: Host, port: int) -> list[str]:
        """``sockperf MODE -i IP -p PORT -m SIZE -t SECONDS [--tcp] [--mps N] [--reply-every N]``."""
        args = ["sockperf", MODES[params["mode"]], "-i", server.traffic_ip, "-p", str(port),
                "-m", str(parse_size(params["size"])), "-t", str(int(parse_duration(params["duration"])))]
        if params["protocol"] == "tcp":
            args.append("--tcp")
        if params.get("mps") is not None:
            args.append(f"--mps={params['mps']}")
        if params.get("reply_every") is not None:
            args.append(f"--reply-every={params['reply_every']}")
        return args + argv_list(params.get("extra_args"), "extra_args")

    @staticmethod
    def server_args(server: Host, port: int, tcp: bool) -> list[str]:
        """``sockperf server -i IP -p PORT [--tcp]``."""
        return ["sockperf", "server", "-i", server.traffic_ip, "-p", str(port), *(["--tcp"] if tcp else [])]

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        """Servers (probe, then load), ready when bound; then the load clients and the probe."""
        params = self._p(step)
        if not step.hosts:
            raise ValueError(f"step {step.id}: no hosts")
        server, client = step.hosts[0], step.hosts[-1]
        numa = bool(params["numa"])
        timeout = self.timeout_s(params)
        tcp = params["protocol"] == "tcp"
        servers = [Command(host=server, role="server",
                           argv=tuple(numa_prefix(server, numa) + self.server_args(server, step.port, tcp)),
                           background=True, ready_pattern=READY_PATTERN, timeout_s=timeout + 30.0,
                           label=f"server-{server.name}")]
        clients: list[Command] = []
        streams = int(params["load_streams"])
        if streams:
            direction = params["load_direction"]
            ways = [(server, client)] if direction == "forward" else [(client, server)] \
                if direction == "reverse" else [(server, client), (client, server)]
            seconds = int(parse_duration(params["duration"]) + LOAD_LEAD_S + LOAD_MARGIN_S)
            load = {"mode": "throughput", "size": params["load_size"], "duration": seconds, "protocol": "tcp"}
            port = step.port + 1
            for receiver, sender in ways:
                for i in range(streams):
                    tag = f"{sender.name}-to-{receiver.name}-{i}"
                    servers.append(Command(
                        host=receiver, role="load-server",
                        argv=tuple(numa_prefix(receiver, numa) + self.server_args(receiver, port, True)),
                        background=True, ready_pattern=READY_PATTERN, timeout_s=timeout + 30.0,
                        label=f"load-server-{tag}"))
                    clients.append(Command(
                        host=sender, role="load", argv=tuple(numa_prefix(sender, numa)
                                                              + self.client_args(load, receiver, port)),
                        timeout_s=timeout, label=f"load-{tag}"))
                    port += 1
        clients.append(Command(
            host=client, role="client",
            argv=tuple(numa_prefix(client, numa) + self.client_args(params, server, step.port)),
            timeout_s=timeout, label=f"client-{client.name}", start_delay_s=LOAD_LEAD_S if streams else 0.0))
        return servers + clients

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        """The probe's summary, and one ``kind: load`` record per bulk-load flow."""
        params = self._p(step)
        server = step.hosts[0]
        records: list[Record] = []
        for res in results:
            if res.command.role not in ("client", "load"):
                continue
            text = res.stdout + "\n" + res.stderr
            try:
                rows = parse_output(text) if res.ok else []
                if not rows:
                    raise classify_error(text, res.rc) or _no_result(text, res.rc)
            except ToolFailure as exc:
                err = exc
                if res.timed_out:
                    err = ToolFailure("timeout", f"did not finish within {res.command.timeout_s:.0f} s")
                raise ToolFailure(err.kind, f"step {step.id}, {res.command.name} on "
                                            f"{res.command.host.name}: {err.message}") from exc
            argv, sender = res.command.argv, res.command.host.name
            others = [h.name for h in step.hosts if h.name != sender]
            receiver = (others[0] if others else sender) if res.command.role == "load" else server.name
            rec: Record = step.sample_labels()
            rec.update({"sockperf_mode": argv[argv.index("-i") - 1], "protocol": "tcp" if "--tcp" in argv
                        else "udp", "size_bytes": int(argv[argv.index("-m") + 1]),
                        "client_host": sender, "server_host": receiver})
            if res.command.role == "load":
                rec.update({"kind": "load", "load_flow": res.command.name})
            else:
                rec.update({"load_streams": int(params["load_streams"]),
                            "load_direction": params["load_direction"] if params["load_streams"] else None})
            rec.update(rows[0])
            records.append(rec)
        return records

    @staticmethod
    def classify(result: CommandResult) -> ToolFailure | None:
        """The known error in one command's output (e.g. a server that never got ready), or None."""
        return classify_error(result.stdout + "\n" + result.stderr, result.rc)

    def parse_text(self, text: str) -> list[Record]:
        """Records from one saved sockperf client output."""
        return parse_output(text)


ADAPTER = SockperfAdapter()
