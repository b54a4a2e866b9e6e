"""ucx_perftest adapter: UCP/UCT bandwidth and latency between two hosts, and its output parser.

The server (``ucx_perftest -p PORT``) takes every test parameter from the client, so only the
client carries ``-t``/``-s``/``-n``. The server prints "Waiting for connection..." once it
listens; ucx_perftest does not flush stdout when it is a pipe, so it runs under ``stdbuf -oL``.
Transports come from the environment (``UCX_TLS``, ``UCX_NET_DEVICES``), ``tcp`` by default;
``env:`` adds UCX variables of the suite's own (``UCX_RNDV_THRESH``, ``UCX_UD_TIMEOUT`` ...) to
both sides, over the derived ones.

Output (ucx ``src/tools/perf/perftest.c``): a table whose ``Final:`` row holds iterations, the
percentile / average / overall latency (``latency (usec)`` for ping-pong tests, ``overhead
(usec)`` for streaming ones), bandwidth in MB/s (``/ (1024.0 * 1024.0)``, i.e. MiB/s) and message
rate in msg/s, each as a moment average and an overall average. Before 1.10 there is no Stage
column and the last row is the final one; with ``-T`` > 1 the final row has the overall columns
only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.core.units import parse_duration, parse_size
from benchharness.core.values import argv_list
from benchharness.tools.base import ToolFacts
from benchharness.tools.common import reject_unknown
from benchharness.tools.mpi_launch import check_env
from benchharness.tools.textclean import clean, known_error

MIB = 1 << 20
UCP_TESTS = ("tag_bw", "tag_lat", "tag_sync_bw", "tag_sync_lat", "ucp_put_bw", "ucp_put_lat",
             "ucp_get", "ucp_add", "ucp_fadd", "ucp_swap", "ucp_cswap", "stream_bw", "stream_lat",
             "ucp_am_bw", "ucp_am_lat")
UCT_TESTS = ("am_bw", "am_lat", "put_bw", "put_lat", "add_lat", "get", "fadd", "swap", "cswap",
             "add_mr")
READY_PATTERN = r"Waiting for connection"
#: UCX on the hosts: ``ucx_info -v`` prints ``# Version 1.13.1`` (before 1.10: ``# UCT version=1.9.0``).
UCX = ToolFacts("ucx", ("ucx_info", "-v"), r"[Vv]ersion\s*[= ]\s*(\d+(?:\.\d+)+)", apt=("ucx-utils",), dnf=("ucx",))

_NUM = r"-?[\d,]+(?:\.\d+)?"
#: What ``bench parse ucx_perftest`` reads (``bench parse --list``).
READS = {"ucx_perftest": "ucx_perftest client output (UCX 1.8 to 1.18: UCP and UCT tests such as tag_bw, "
                         "am_lat, put_bw; latency or overhead columns, with or without the Stage and typical "
                         "columns, the 'Test' column of -f; -T threads with [thread N] rows): one record per test "
                         "(several tests under '=== name ===' banners or -b batch rulers, named ucx_test), from "
                         "its Final: row (-f: its only row; without a label column: the last row), never a "
                         "progress row; MB/s = MiB/s; UCX WARN / PROTO_INFO lines and prompts skipped; progress "
                         "rows without a final one are refused (no_result); the test box (Test:, Message size:) "
                         "before the header or, from a server started in the same shell, between the header "
                         "and the rows gives ucx_test_desc and size_bytes, and before 1.10 (every test titled "
                         "'latency') a bandwidth / message rate test's columns read as overhead"}

#: a result row: ``Final:``, ``[thread N]`` (progress), a batch test's name (``-f``) or nothing, then figures
_ROW_RE = re.compile(r"^\s*(Final:|\[thread \d+\]|[A-Za-z_][\w/.:-]*(?=\s))?\s*((?:" + _NUM + r"\s+)*" + _NUM
                     + r")\s*$")
_BANNER_RE = re.compile(r"^\s*={3,}\s*([^=\s][^=]*?)\s*={3,}\s*$")
_NAMED_RULER_RE = re.compile(r"^\+([A-Za-z_][^-+|]*)-*\+[-+]*$")
_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        # an abort wins over the warnings printed before it (e.g. "transport 'dc' is not available")
        ("fatal", r"\bFatal: "),
        ("tool_missing", r"command not found|: not found\s*$|failed to run command"
                         r"|^env: .*No such file or directory"),
        # UCS_ERR_UNREACHABLE ("Destination is unreachable") from ucp_ep_create: no transport reaches
        # the peer from the chosen devices (UCX_NET_DEVICES / UCX_TLS)
        ("connect_failed", r"connect\(\) failed|client failed|Connection refused|No route to host"
                           r"|Destination is unreachable"),
        ("no_device", r"no usable transports/devices|Failed to run test: No such device"),
        ("no_device", r"transport '[^']+' is not available"),
        ("bad_args", r"Invalid option argument|Invalid argument for|Unsupported operation"),
    ))
_HINTS = {"fatal": "UCX aborted, backtrace in the raw output; over soft-RoCE (rxe) UCX 1.13's UD "
                   "wire-up times out: use tls: tcp there",
          "tool_missing": "install ucx-utils on the host",
          "connect_failed": "check that the server started, that data_ip is reachable and that the "
                            "net_devices / tls given can reach it",
          "no_device": "check tls / net_devices against ucx_info -d on the host",
          "bad_args": "check the suite's ucx_perftest parameters"}


def _col_name(label: str) -> str:
    """``50.0%ile`` -> ``p50``, ``99.9%ile`` -> ``p999``, ``typical`` -> ``typical``."""
    m = re.match(r"([\d.]+)%ile", label)
    if not m:
        return "typical"
    rank = m.group(1).rstrip("0").rstrip(".")
    return "p" + rank.replace(".", "")


def _sections(lines: list[str]) -> list[dict[str, Any]]:
    """One section per test: each ``# iterations`` header starts one (named by a ``=== name ===``
    banner line above it, as scripts print between runs), and within a header the ruler that a
    batch run (``-b FILE``) prints with the test's name in it (``+tag_bw/64-----+---...``) starts
    the next; each section holds its header, its usec title and description lines, and its rows."""
    sections: list[dict[str, Any]] = []
    banner: str | None = None
    context: dict[str, str] = {}
    for line in lines:
        if m := _BANNER_RE.match(line):
            banner = m.group(1)
            continue
        if m := re.match(r"^\s*\|\s*(Test|Message size):\s*(.*?)\s*\|", line):
            if sections and not sections[-1]["rows"] and m.group(1) not in sections[-1]:
                # the server's test box between the client's header and its rows (both ends
                # writing to one terminal): the box of the test under way
                sections[-1][m.group(1)] = m.group(2)
            else:
                context[m.group(1)] = m.group(2)
            continue
        if "(usec)" in line:
            context["usec"] = line
            continue
        if "# iterations" in line:
            sections.append({"name": banner, "header": line, "rows": [], **context})
            banner = None
            context = {}
            continue
        if not sections:
            continue
        if m := _NAMED_RULER_RE.match(line):
            current = sections[-1]
            if current["rows"] or current["name"]:
                sections.append({**current, "rows": []})
            sections[-1]["name"] = m.group(1)
            continue
        if m := _ROW_RE.match(line):
            nums = [float(t.replace(",", "")) for t in m.group(2).split()]
            sections[-1]["rows"].append(((m.group(1) or "").strip(), nums))
    return sections


def _finals(section: dict[str, Any]) -> list[tuple[str, list[float]]]:
    """The final rows of one section. ``Stage`` header: the ``Final:`` row, never a progress row
    (``[thread N]`` or unlabelled); ``Test`` header (``-f``, UCX 1.11+): ucx_perftest prints the
    final row only, after the test's batch name (or 10 blanks); no label column (before the Stage
    column): the last row."""
    label = section["header"].split("|")[1].strip() if section["header"].count("|") > 2 else ""
    rows: list[tuple[str, list[float]]] = [r for r in section["rows"] if len(r[1]) in (4, 8)]
    if label == "Test":
        return [r for r in rows if not r[0].startswith("[thread")]
    if label and label != "# iterations":
        return [r for r in rows if r[0] == "Final:"][-1:]
    return rows[-1:]


def parse_output(text: str, pingpong: bool | None = None) -> list[Record]:
    """The final result of each test in one ucx_perftest client output; ToolFailure when there is none.

    The usec columns are one-way latency for ping-pong tests (``lat_*``) and per-message
    overhead for streaming ones (``overhead_*``); ``pingpong`` says which when the caller knows
    the test, else the column title does (releases before 1.10 title both "latency": there the
    test box's ``Test:`` line, "tag match bandwidth", names a streaming test). Several
    tests in one text (a script's ``=== name ===`` banners, ``-b`` batch files) are one record
    each, with ``ucx_test`` set to the name printed; a test cut before its final row has none.
    """
    text = clean(text)
    out: list[Record] = []
    for section in _sections(text.splitlines()):
        header = section["header"]
        staged = header.count("|") > 2 and header.split("|")[1].strip() not in ("", "# iterations")
        cols = [c.strip() for c in header.split("|")]
        pct = _col_name(cols[3 if staged else 2] if len(cols) > 3 else "")
        # before 1.10 streaming tests are titled "latency" too: the test box's name then tells
        streaming = re.search(r"bandwidth|message rate", section.get("Test", ""))
        is_pingpong = pingpong if pingpong is not None else \
            "latency (usec)" in section.get("usec", "") and not streaming
        kind = "lat" if is_pingpong else "overhead"
        for name, final in _finals(section):
            rec: Record = {}
            test_name = section["name"] or (name if name and name != "Final:" else None)
            if test_name:
                rec["ucx_test"] = test_name
            rec["iterations"] = int(final[0])
            if len(final) == 8:
                rec[f"{kind}_{pct}_us"] = final[1]
                lat_all, bw_mib, rate = final[3], final[5], final[7]
            else:  # -T > 1: iterations, overall latency, overall bandwidth, overall message rate
                lat_all, bw_mib, rate = final[1], final[2], final[3]
            rec[f"{kind}_avg_us"] = lat_all
            rec["bw_avg_gbps"] = round(bw_mib * MIB * 8 / 1e9, 6)
            rec["bw_avg_MBps_tool"] = bw_mib
            rec["msg_rate_mpps"] = round(rate / 1e6, 6)
            if section.get("Message size", "").isdigit():
                rec["size_bytes"] = int(section["Message size"])
            if section.get("Test"):
                rec["ucx_test_desc"] = section["Test"]
            out.append(rec)
    if not out:
        raise classify_error(text) or _no_result(text)
    return out


def classify_error(text: str, rc: int | None = None) -> ToolFailure | None:
    """The ToolFailure an output shows, quoting the tool's line; None when none is known."""
    return known_error("ucx_perftest", text, _ERRORS, _HINTS, rc)


def _no_result(text: str, rc: int | None = None) -> ToolFailure:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("+", "|"))]
    tail = " | ".join(lines[-3:]) if lines else "(no output)"
    code = "" if rc is None else f", exit code {rc}"
    return ToolFailure("no_result", f"ucx_perftest printed no final result{code}; last lines: {tail!r}")


class UcxPerftestAdapter:
    """Adapter for ``ucx_perftest`` (ucx-utils); see the module docstring."""

    name = "ucx_perftest"
    description = "UCX bandwidth and latency with ucx_perftest (tag_bw, tag_lat, stream_bw ...)"
    params: Mapping[str, Any] = {
        "test": "tag_bw", "size": 65536, "iters": 10000, "warmup": None, "tls": "tcp",
        "net_devices": None, "memory_type": None, "threads": None, "uct_device": None,
        "uct_transport": None, "extra_args": None, "timeout": None, "env": {},
    }
    patterns: Sequence[str] = ("pairs", "all-pairs", "ring", "incast", "self")
    requirements: Sequence[ToolFacts] = (UCX,)

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError naming the parameter when a value is wrong for ucx_perftest."""
        reject_unknown(self.name, params, self.params)
        test = params.get("test", "tag_bw")
        if test not in UCP_TESTS + UCT_TESTS:
            raise ValueError(f"test: one of {', '.join(UCP_TESTS + UCT_TESTS)}, not {test!r}")
        if test in UCT_TESTS and not (params.get("uct_device") and params.get("uct_transport")):
            raise ValueError(f"test: {test} is a UCT test; set uct_device and uct_transport")
        parse_size(params.get("size", 65536))
        for name in ("iters", "warmup", "threads"):
            v = params.get(name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{name}: a non-negative integer, not {v!r}")
        argv_list(params.get("extra_args"), "extra_args")
        env = params.get("env")
        if env is not None:
            if not isinstance(env, Mapping):
                raise ValueError("env: a mapping of NAME: value (UCX_TLS: rc ...)")
            check_env(env)

    def _p(self, step: Step) -> dict[str, Any]:
        merged = {**self.params, **{k: v for k, v in step.params.items() if v is not None}}
        self.check_params(merged)
        return merged

    @staticmethod
    def env(params: Mapping[str, Any], host: Host) -> dict[str, str]:
        """UCX_TLS and UCX_NET_DEVICES for a host: the suite's, else the host's data NIC.

        ``tls: auto`` is RC and DC verbs (``rc,dc``: UCX's aliases for rc_verbs/rc_mlx5 and
        dc_mlx5) on a host with an RDMA device, TCP on one without (the lab). An inventory
        ``gid_index`` becomes ``UCX_IB_GID_INDEX`` and ``traffic_class`` ``UCX_IB_TRAFFIC_CLASS`` on
        RoCE ports (UCX's own GID choice may be another one); InfiniBand ports get neither.
        """
        tls = str(params.get("tls") or "tcp")
        if tls == "auto":
            tls = "rc,dc,sm,self" if host.var("rdma_dev") else "tcp"
        env = {"UCX_TLS": tls}
        devices = params.get("net_devices")
        if devices is None:
            found = []
            if host.var("rdma_dev") and tls != "tcp":
                found.append(f"{host.var('rdma_dev')}:{host.var('rdma_port', 1)}")
            if host.var("netdev") and ("tcp" in tls.split(",") or tls == "all"):
                found.append(str(host.var("netdev")))
            devices = ",".join(found) or None
        if devices and devices != "all":
            env["UCX_NET_DEVICES"] = str(devices)
        roce = host.nics()[0].link == "ethernet"  # an IB port needs no GID index or traffic class
        if host.var("gid_index") is not None and host.var("rdma_dev") and tls != "tcp" and roce:
            env["UCX_IB_GID_INDEX"] = str(host.var("gid_index"))  # RoCE: the GID perftest uses too
        if host.var("traffic_class") is not None and host.var("rdma_dev") and tls != "tcp" and roce:
            env["UCX_IB_TRAFFIC_CLASS"] = str(host.var("traffic_class"))
        return {**env, **check_env(params.get("env") or {})}

    @staticmethod
    def timeout_s(params: Mapping[str, Any]) -> float:
        """Bound for the client: a floor of 1 Gbit/s and 200 us per iteration, plus setup."""
        if params.get("timeout") is not None:
            return float(parse_duration(params["timeout"]))
        size = parse_size(params.get("size", 65536))
        iters = (params.get("iters") or 1_000_000) + (params.get("warmup") or 10_000)
        threads = params.get("threads") or 1
        return round(20.0 + iters * threads * (size * 8 / 1e9 + 200e-6), 1)

    def client_args(self, params: Mapping[str, Any], server: Host, port: int) -> list[str]:
        """``ucx_perftest <server> -p PORT -t TEST -s SIZE -n ITERS ...``."""
        args = ["ucx_perftest", server.traffic_ip, "-p", str(port), "-t", str(params["test"]),
                "-s", str(parse_size(params["size"]))]
        for name, flag in (("iters", "-n"), ("warmup", "-w"), ("memory_type", "-m"),
                           ("threads", "-T"), ("uct_device", "-d"), ("uct_transport", "-x")):
            if params.get(name) is not None:
                args += [flag, str(params[name])]
        return args + argv_list(params.get("extra_args"), "extra_args")

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        """Servers (background, ready on "Waiting for connection") first, then the clients."""
        params = self._p(step)
        if not step.hosts:
            raise ValueError(f"step {step.id}: no hosts")
        if len(step.hosts) == 1:
            pairs = [(step.hosts[0], step.hosts[0], step.port)]
        elif step.pattern == "incast":
            pairs = [(step.hosts[0], h, step.port + i) for i, h in enumerate(step.hosts[1:])]
        else:
            pairs = [(step.hosts[0], step.hosts[1], step.port)]
        many = len(pairs) > 1 or pairs[0][0] == pairs[0][1]
        timeout = self.timeout_s(params)
        servers, clients = [], []
        for server, client, port in pairs:
            tag = f"-p{port}" if many else ""
            servers.append(Command(
                host=server, role="server", argv=("stdbuf", "-oL", "ucx_perftest", "-p", str(port)),
                env=self.env(params, server), background=True, ready_pattern=READY_PATTERN,
                timeout_s=timeout + 30.0, label=f"server-{server.name}{tag}"))
            clients.append(Command(
                host=client, role="client", argv=tuple(self.client_args(params, server, port)),
                env=self.env(params, client), timeout_s=timeout, label=f"client-{client.name}{tag}"))
        return servers + clients

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        """Records from the clients; ToolFailure quoting the tool when a client has none."""
        params = self._p(step)
        servers = [r for r in results if r.command.role == "server"]
        records: list[Record] = []
        for res in results:
            if res.command.role != "client":
                continue
            port = res.command.argv[res.command.argv.index("-p") + 1]
            server = next((s for s in servers if s.command.argv[-1] == port), None)
            text = res.stdout + "\n" + res.stderr
            try:
                rows = parse_output(text, "lat" in params["test"]) if res.ok else []
                if not rows:
                    raise classify_error(text, res.rc) or _no_result(text, res.rc)
            except ToolFailure as exc:
                err = exc
                if res.timed_out:
                    err = ToolFailure("timeout", f"did not finish within {res.command.timeout_s:.0f} s")
                if server is not None and not server.ok and err.kind in ("connect_failed", "no_result"):
                    srv_err = classify_error(server.stdout + "\n" + server.stderr, server.rc)
                    if srv_err is not None:
                        raise ToolFailure(srv_err.kind, f"step {step.id}, {server.command.name} on "
                                                        f"{server.command.host.name}: {srv_err.message}") from exc
                raise ToolFailure(err.kind, f"step {step.id}, {res.command.name} on "
                                            f"{res.command.host.name}: {err.message}") from exc
            for row in rows:
                rec: Record = step.sample_labels()
                rec.update({"ucx_test": params["test"], "role": "client",
                            "size_bytes": parse_size(params["size"]),
                            "tls": res.command.env.get("UCX_TLS") or params.get("tls") or "tcp",
                            "client_host": res.command.host.name,
                            "server_host": server.command.host.name if server else None})
                rec.update(row)
                records.append(rec)
        return records

    @staticmethod
    def classify(result: CommandResult) -> ToolFailure | None:
        """The known error in one command's output (e.g. a server that never got ready), or None."""
        return classify_error(result.stdout + "\n" + result.stderr, result.rc)

    def parse_text(self, text: str) -> list[Record]:
        """Records from one saved ucx_perftest client output."""
        return parse_output(text)


ADAPTER = UcxPerftestAdapter()
