"""Pure parsers for perftest output (ib_write_bw, ib_send_lat ...): tables, header facts, JSON, errors.

Formats handled, as perftest's ``perftest_parameters.[ch]`` print them:

* bandwidth tables in ``MB/sec`` (4.x) and ``MiB/sec`` (newer): both are 2^20 bytes/s, converted
  to ``bw_*_gbps`` with the tool's figure kept as ``bw_*_MBps_tool``; ``Gb/sec`` with
  ``--report_gbits`` (10^9 bit/s, exact); optional ``CPU_Util[%]`` column;
* latency tables with or without average/stdev/percentiles (3.x prints min/max/typical only),
  duration-mode latency (``t_avg`` and, in 4.x, ``tps average``), ``-a`` sweeps (many rows);
* lines that interrupt a table (CPU frequency warnings, histogram dumps, socket errors);
* ``--out_json`` files, including the invalid JSON of releases that print unquoted keys and
  trailing commas;
* error outputs, classified as :class:`~benchharness.core.errors.ToolFailure` kinds.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record
from benchharness.tools.common import NUMA_MARKER
from benchharness.tools.textclean import clean, known_error, rank_label

#: What ``bench parse perftest`` reads (``bench parse --list``).
READS = {"perftest": "ib_write_bw / ib_read_bw / ib_send_bw / ib_atomic_bw and ib_*_lat (perftest 2.0 to 25.x, "
                     "MLNX_OFED and linux-rdma; IB and RoCE; clients and servers): MB/sec, MiB/sec and "
                     "--report_gbits tables, -a sweeps, -b bidirectional, -D duration (peak 0.00 = not measured), "
                     "-q/-l/--run_infinitely rows, rdma_cm, CUDA / ROCm / DMA-BUF runs, 6-decimal rows, rows "
                     "whose tab-separated figures a paste ran together, CPU-frequency warnings inside tables, "
                     "latency in usec or cycles with percentiles; a --out_json file (also with unquoted keys); "
                     "failures (no device, connect, QP, completion errors, clock estimate) named by kind; "
                     "several runs in one paste (a server's and a client's output, a sweep run after run): "
                     "each run its own rows (run = 1, 2 ...), test and side (the waiting banner, else the "
                     "command line the output follows, the last one above it: a client names its server; "
                     "--force-link IB style long options read with their values); tables pasted without "
                     "their titles one after the other (runs, the test named by the command line); figures "
                     "in Markdown emphasis (**5544.28**); console sessions run after run (each run's client "
                     "command above perftest's notices and interleaved kernel lines, a shell's '[1]+  Done' "
                     "job reports no command); lines labelled by a launcher's ranks ('[rank 1] ', "
                     "'[1,0]<stdout>:', srun -l '0: ', '[default0]:') read rank by rank (rank kept); '> ' "
                     "quoted replies; vendors seen: mlx4/mlx5 (ConnectX-3 to -7, BlueField), HiSilicon hns, "
                     "rxe, pib, AMD ROCm hosts [the adapter runs perftest 4.5+]"}

MIB = 1 << 20
#: Line the adapter's client wrapper prints before the ``--out_json`` file it appends to stdout.
JSON_MARKER = "=== bench: perftest out_json ==="
_VERBS = {"Send": "send", "RDMA_Write": "write", "RDMA_Read": "read", "Atomic": "atomic"}
_TITLE_RE = re.compile(
    r"^\s*(Send|RDMA_Write|RDMA_Read|Atomic)\s+(?:(?:CMP_AND_SWAP|FETCH_AND_ADD)\s+)?"
    r"(Bidirectional\s+)?(?:Post List\s+)?(BW|Latency)\s+(?:forwarding\s+)?(?:Multicast\s+)?Test\s*$")
_FACT_RE = re.compile(r"([A-Za-z][\w.* \-]*?)\s*:\s*(\S+)")
_DASHES_RE = re.compile(r"^-{20,}\s*$")
_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
_WAITING = ("Waiting for client to connect", "Waiting for client rdma_cm QP to connect")

# (kind, pattern) in the order they are tried; the first matching line is quoted.
_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("tool_missing", r"command not found|: not found\s*$|failed to run command|execution of .*"
                         r"No such file or directory|^env: .*No such file or directory"),
        ("numa_failed", r"^<[^>]+> is invalid$|^libnuma: Warning"),
        ("no_device", r"No IB devices found|Unable to find the Infiniband/RoCE device"
                      r"|IB device \S+ not found"),
        ("no_device", r"Did not detect devices"),
        ("listen_failed", r"Couldn't listen to port"),
        ("connect_failed", r"Couldn't connect to \S+|Unable to open file descriptor for socket "
                           r"connection|Received \d+ times ADDR_ERROR|rdma_(?:bind_addr|resolve_addr|connect)"
                           r" failed|Unexpected CM event|Unable to perform rdma_client function"
                           r"|Unable to init the socket connection"),
        ("modify_qp_failed", r"Failed to modify QP\b.*\bto (?:RTR|RTS|INIT)"),
        ("create_qp_failed", r"Couldn't create (?:rdma (?:new |old )?)?QP|Unable to create QP"),
        ("completion_error", r"Failed status \d+: wr_id"),
        ("completion_error", r"Completion with error at (?:client|server)"),
        # the clock estimate failed: perftest then prints inf for every figure of the table
        ("clock", r"Correlation coefficient r\^2: [\d.]+ < 0\.9"),
    ))
_HINTS = {
    "tool_missing": "install perftest (and numactl) on the host",
    "numa_failed": "check numa_node in the inventory against numactl -H, or set numa: false",
    "no_device": "check rdma_dev in the inventory and that the RDMA driver is loaded (ibv_devices)",
    "listen_failed": "the port is in use; another server may still be running",
    "connect_failed": "check that the server started and that data_ip is reachable",
    "modify_qp_failed": "check gid_index, MTU and the fabric link (ibv_devinfo -v)",
    "create_qp_failed": "check device resources and memlock limits (ulimit -l)",
    "completion_error": "a work request failed on the fabric: check MTU, gid_index and both ends' options",
    "clock": "perftest could not estimate the CPU clock, so its figures are inf (a noisy timer: "
             "a loaded host or a software-emulated VM); run the step again (bench run resume=RUN)",
}

#: perftest's sampled clock estimate failed: it then uses /proc/cpuinfo's MHz, or prints inf when
#: that is missing too (get_cpu_mhz in src/get_clock.c); a table with figures says it fell back.
_CLOCK_ESTIMATE_FAILED = dict(_ERRORS)["clock"]

# Header fact → flat record field and converter.
_FLAT_FACTS: dict[str, tuple[str, Any]] = {
    "Device": ("device", str),
    "Link type": ("link_type", str),
    "Mtu": ("mtu", lambda v: int(v.split("[")[0])),
    "GID index": ("gid_index", int),
    "Transport type": ("transport", str),
    "Connection type": ("connection", str),
    "Number of qps": ("qps", int),
    # printed only when set above 1 (-l) and on bandwidth tests (-Q): how a message rate was reached
    "Post List": ("post_list", int),
    "CQ Moderation": ("cq_mod", int),
    "TX depth": ("tx_depth", int),
}


def parse_header(text: str) -> dict[str, str]:
    """Facts of the block after the test title (``Device``, ``Mtu`` ...), as the tool wrote them."""
    facts: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if _TITLE_RE.match(line):
            inside = True
            continue
        if inside and _DASHES_RE.match(line):
            break
        if inside:
            for key, value in _FACT_RE.findall(line):
                if not key.strip().upper().startswith("WARNING"):
                    facts.setdefault(key.strip(), value.strip())
    return facts


def header_fields(facts: dict[str, str]) -> Record:
    """The flat record fields (``device``, ``link_type``, ``mtu`` ...) from header facts."""
    out: Record = {}
    for key, (name, convert) in _FLAT_FACTS.items():
        if key in facts:
            try:
                out[name] = convert(facts[key])
            except ValueError:
                out[name] = facts[key]
    return out


# perftest's options that take a value (getopt_long's optstring and the long options with has_arg = 1
# in perftest_parameters.c, 4.x to 25.x); the others are switches. getopt_long takes a long option's
# value after '=' or as the next word (``--force-link IB``), so a long option's value is no host.
_VALUED = set("wypdimsntuSxcqIoMrQAlDfBTLEJjKkXW")
_LONG_VALUED = frozenset({
    "port", "ib-dev", "ib-port", "mtu", "size", "iters", "tx-depth", "qp", "rx-depth", "duration", "cq-mod",
    "gid-index", "sl", "connection", "inline_size", "outs", "post_list", "recv_post_list", "margin",
    "burst_size", "rate_limit", "rate_units", "rate_limit_type", "limit_bw", "limit_msgrate", "output",
    "atomic_type", "tclass", "tos", "hop_limit", "flow_label", "dlid", "source_ip", "dest_ip",
    "bind_source_ip", "local_ip", "remote_ip", "source_mac", "dest_mac", "local_mac", "remote_mac",
    "source_port", "dest_port", "local_port", "remote_port", "ethertype", "mmap", "mmap-offset", "use_cuda",
    "use_cuda_bus_id", "cuda_mem_type", "use_rocm", "use_neuron", "use_hl", "use_mlu", "use_musa",
    "use_musa_bus_id", "use_opencl", "opencl_platform_id", "use_ib_dm_dmabuf", "gpu_touch", "force-link",
    "pkey_index", "vlan_pcp", "qp-timeout", "retry_count", "reply_every", "typical_pkt_size", "latency_gap",
    "cpu_id", "pin_cores", "numa_node", "out_json_file", "payload_file_path", "report-counters",
    "congest_type", "cqe_poll", "flows", "flows_burst", "log_dci_streams", "log_active_dci_streams",
    "wait_destroy", "aes_block_size", "data_enc_keys_number", "kek_path", "credentials_path",
    "data_enc_key_app_path", "tph_mem", "ph", "MGID", "vector"
})
_COMMAND_RE = re.compile(r"\bib_(write|read|send|atomic)_(bw|lat)((?:\s+\S+)*)\s*$")
# a shell's job-control report ('[1]+  Done    ib_read_bw -d hns_2 -n 5 > /dev/null 2>&1'): a
# background job that ended, not the command whose output follows
_JOB_RE = re.compile(r"^\s*\[\d+\][+-]?\s+(?:Done|Exit \d+|Killed|Terminated|Stopped|Running)\b")


def _command_at(line: str) -> re.Match[str] | None:
    """The perftest command a line starts (after a prompt), None for other lines and job reports."""
    return None if _JOB_RE.match(line) else _COMMAND_RE.search(line)


def _command(text: str) -> re.Match[str] | None:
    """The perftest command line whose output ``text`` holds: the last one before the output's first
    test title or table (a server's command pasted above its client's, the client's output after
    both); a text without a title or table: its first one. A command line after the output started
    the next output, never this one."""
    found: list[re.Match[str]] = []
    for line in text.splitlines():
        if _TITLE_RE.match(line) or _table_kind(line):
            return found[-1] if found else None
        m = _command_at(line)
        if m:
            found.append(m)
    return found[0] if found else None


def _side_of_command(text: str) -> str | None:
    """``server`` or ``client`` from the perftest command line in ``text`` (a client names its server
    after the options; a server names none); None without a command line."""
    m = _command(text)
    if m is None:
        return None
    host, expects_value = None, False
    for arg in m.group(3).split():
        if expects_value:
            expects_value = False
        elif arg.startswith("--"):
            expects_value = "=" not in arg and arg[2:] in _LONG_VALUED
        elif arg.startswith("-") and len(arg) > 1:
            expects_value = arg[-1] in _VALUED and len(arg) == 2
        elif re.fullmatch(r"[\w.:%-]+", arg):
            host = arg
    return "client" if host else "server"


def describe(text: str) -> Record:
    """Which test, direction and side an output belongs to, from its title and banner (or, without
    the server's waiting banner, its command line)."""
    # a server prints its waiting banner before the test title; one after the table is another run's
    title = next((m.start() for m in re.finditer(r"^.*$", text, re.MULTILINE) if _TITLE_RE.match(m.group(0))),
                 len(text))
    waiting = any(w in text[:title] for w in _WAITING)
    out: Record = {"role": "server" if waiting else _side_of_command(text) or "client"}
    for line in text.splitlines():
        m = _TITLE_RE.match(line)
        if m:
            kind = "bw" if m.group(3) == "BW" else "lat"
            out["perftest_test"] = f"ib_{_VERBS[m.group(1)]}_{kind}"
            out["bidir"] = bool(m.group(2))
            break
    else:  # a table pasted without its title: the command line names the test
        command = _command(text)
        if command:
            out["perftest_test"] = f"ib_{command.group(1)}_{command.group(2)}"
            args = command.group(3).split()
            out["bidir"] = "-b" in args or "--bidirectional" in args
    return out


def _table_kind(line: str) -> tuple[str, str] | None:
    """(kind, unit) of a result table header line, or None."""
    if not line.lstrip().startswith("#bytes"):
        return None
    m = re.search(r"BW peak\[([^\]]+)\]", line)
    if m:
        return ("bw", m.group(1))
    m = re.search(r"t_min\[([^\]]+)\]", line)
    if m:
        return ("lat", m.group(1))
    m = re.search(r"t_avg\[([^\]]+)\]", line)
    if m:
        return ("lat_dur", m.group(1))
    return None


def _unglue(token: str) -> list[str] | None:
    """Two fixed-point figures a copy ran together (``11018.2511016.86``): perftest prints its rates
    with 2 decimals (``REPORT_FMT``) or 6 (``REPORT_FMT_EXT``, MsgRate), separated only by tabs in
    some formats, which a paste can drop. None when ``token`` does not split that way."""
    for decimals in (2, 6):
        pieces = re.findall(rf"\d+\.\d{{{decimals}}}", token)
        if len(pieces) > 1 and "".join(pieces) == token:
            return pieces
    return None


# a figure a reader emphasised in Markdown (``**5544.28**``, ``*0.94*``, ```920.13```): the figure
_EMPHASIS_RE = re.compile(r"^(\*{1,2}|_{1,2}|`)(-?[\d.]+)\1$")


def _numbers(line: str, line_no: int = 0) -> list[float] | None:
    tokens = [m.group(2) if (m := _EMPHASIS_RE.match(t)) else t for t in line.split()]
    if not tokens or "." in tokens[0] or not _NUMBER_RE.match(tokens[0]):
        return None
    out: list[str] = []
    for token in tokens:
        if _NUMBER_RE.match(token):
            out.append(token)
            continue
        pieces = _unglue(token) if re.fullmatch(r"[\d.]+", token) else None
        if pieces is None:
            if re.fullmatch(r"[\d.]+", token) and len(tokens) >= 3:  # a row of figures, one unreadable
                raise ToolFailure("unreadable", f"perftest: line {line_no}: figures run together that do not "
                                                f"split at 2 or 6 decimals: {line.strip()[:80]!r}")
            return None
        out.extend(pieces)
    return [float(t) for t in out]


def _gbps(value: float, unit: str) -> float:
    if unit == "Gb/sec":
        return value
    if unit in ("MB/sec", "MiB/sec"):
        return round(value * MIB * 8 / 1e9, 6)
    raise ToolFailure("no_result", f"perftest: unknown bandwidth unit {unit!r}")


def _bw_row(nums: list[float], unit: str, qos: bool, cpu: bool) -> Record:
    if qos:  # " #bytes    #sl      #iterations    BW peak ..."
        size, _sl, iters, peak, avg, rate = nums[:6]
    else:
        size, iters, peak, avg, rate = nums[:5]
    rec: Record = {"size_bytes": int(size), "iterations": int(iters)}
    # Duration mode and -N measure no peak; perftest then prints 0.00, which is no measurement.
    if peak > 0 or avg == 0:
        rec["bw_peak_gbps"] = _gbps(peak, unit)
    rec["bw_avg_gbps"] = _gbps(avg, unit)
    rec["msg_rate_mpps"] = rate
    if unit != "Gb/sec":
        if "bw_peak_gbps" in rec:
            rec["bw_peak_MBps_tool"] = peak
        rec["bw_avg_MBps_tool"] = avg
    if cpu and len(nums) > (6 if qos else 5):
        rec["cpu_util_pct"] = nums[-1]
    return rec


def _lat_row(nums: list[float], kind: str, unit: str, cpu: bool) -> Record:
    sfx = "us" if unit == "usec" else "cycles"
    rec: Record = {"size_bytes": int(nums[0]), "iterations": int(nums[1])}
    values = nums[2:-1] if cpu else nums[2:]
    if cpu:
        rec["cpu_util_pct"] = nums[-1]
    if kind == "lat_dur":
        names = ["lat_avg", "tps_avg"]
    else:
        names = ["lat_min", "lat_max", "lat_typical", "lat_avg", "lat_stdev", "lat_p99", "lat_p999"]
    for name, value in zip(names, values, strict=False):
        rec[name if name == "tps_avg" else f"{name}_{sfx}"] = value
    return rec


def parse_tables(text: str) -> list[Record]:
    """Every result row of every table in ``text``, converted; no header facts, no errors."""
    rows: list[Record] = []
    kind: tuple[str, str] | None = None
    qos = cpu = False
    part: str | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        found = _table_kind(line)
        if found:
            kind, qos, cpu = found, "#sl" in line, "CPU_Util" in line
            continue
        stripped = line.strip()
        if stripped.startswith(("Local results", "Remote results")):
            part = stripped.split()[0].lower()
            continue
        if kind is None:
            continue
        nums = _numbers(line, line_no)
        if nums is None:
            continue  # a warning, a histogram line, an error: tables resume after them
        if kind[0] == "bw":
            if len(nums) < (6 if qos else 5):
                continue
            rec = _bw_row(nums, kind[1], qos, cpu)
        else:
            if len(nums) < 3:
                continue
            rec = _lat_row(nums, kind[0], kind[1], cpu)
        if part:
            rec["report_part"] = part
        rows.append(rec)
    return rows


def bw_unit(text: str) -> str | None:
    """Unit of the bandwidth table in ``text`` (``MB/sec``, ``MiB/sec``, ``Gb/sec``), if any."""
    for line in text.splitlines():
        found = _table_kind(line)
        if found and found[0] == "bw":
            return found[1]
    return None


def _lenient_json(text: str) -> Any:
    """json.loads, else the same after quoting bare keys/values and dropping trailing commas."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    fixed = []
    for line in text.splitlines():
        m = re.match(r'^(\s*)([A-Za-z_][\w.* ]*?)\s*:\s*(.*?)\s*$', line)
        if m:
            value = m.group(3)
            comma = value.endswith(",")
            value = value.rstrip(",").strip()
            if value and value not in "{[" and not _NUMBER_RE.match(value) and not value.startswith('"'):
                value = json.dumps(value)
            line = f'{m.group(1)}"{m.group(2)}": {value}{"," if comma else ""}'
        fixed.append(line)
    joined = re.sub(r",(\s*[}\]])", r"\1", "\n".join(fixed))
    try:
        return json.loads(joined)
    except ValueError:
        return None


_JSON_TEST_RE = re.compile(r"^(Send|RDMA_Write|RDMA_Read|Atomic)_(?:\w+_)?(BW|Latency)_Test$")


def parse_out_json(text: str, unit: str | None) -> list[Record] | None:
    """Records from a ``--out_json`` file; None when it is unreadable or holds no results.

    The file does not say its bandwidth unit, so ``unit`` comes from the stdout table header
    (or the step's ``report_gbits``); without it a bandwidth file is not used.
    """
    data = _lenient_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        return None
    res, info = data["results"], data.get("test_info") or {}
    rec: Record = {}
    try:
        rec["size_bytes"] = int(res["MsgSize"])
        rec["iterations"] = int(res["n_iterations"])
        if "BW_average" in res:
            if unit is None:
                return None
            rec.update(_bw_row([rec["size_bytes"], rec["iterations"], float(res.get("BW_peak", 0)),
                                float(res["BW_average"]), float(res.get("MsgRate", 0))],
                               unit, False, False))
        elif "t_min" in res:
            names = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99",
                     "percentile_99.9")
            rec.update(_lat_row([rec["size_bytes"], rec["iterations"],
                                 *[float(res[n]) for n in names if n in res]], "lat", "usec", False))
        elif "t_avg" in res:
            values = [float(res["t_avg"])] + ([float(res["tps_average"])] if "tps_average" in res else [])
            rec.update(_lat_row([rec["size_bytes"], rec["iterations"], *values], "lat_dur", "usec", False))
        else:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    m = _JSON_TEST_RE.match(str(info.get("test", "")))
    if m:
        rec["perftest_test"] = f"ib_{_VERBS[m.group(1)]}_{'bw' if m.group(2) == 'BW' else 'lat'}"
        rec["bidir"] = "_Bidirectional_" in str(info["test"])
    facts = {"Device": info.get("Device"), "Link type": info.get("Link_type"),
             "Mtu": info.get("Mtu"), "GID index": info.get("GID_index"),
             "Transport type": info.get("Transport_type"),
             "Connection type": info.get("Connection_type"), "Number of qps": info.get("Number_of_qps")}
    rec.update(header_fields({k: str(v) for k, v in facts.items() if v is not None}))
    rec["parsed_from"] = "out_json"
    return [rec]


def json_block(text: str) -> str | None:
    """The first ``{ ... }`` block of whole lines in ``text`` (a ``cat`` of an ``--out_json`` file
    between shell prompts), by brace depth; None when there is none."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("{")), None)
    if start is None:
        return None
    depth = 0
    for i in range(start, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        if depth <= 0:
            return "\n".join(lines[start:i + 1])
    return None


def split_json(stdout: str) -> tuple[str, str | None]:
    """(tool stdout, appended ``--out_json`` file text or None) of a wrapped client's stdout."""
    head, sep, tail = stdout.partition(JSON_MARKER + "\n")
    return (head, tail) if sep else (stdout, None)


def numa_node(stderr: str) -> int | None:
    """The NUMA node the adapter's wrapper pinned to, from its stderr line; None if unpinned."""
    m = re.search(NUMA_MARKER + r"(\d+)", stderr)
    return int(m.group(1)) if m else None


def classify_error(text: str, rc: int | None = None) -> ToolFailure | None:
    """The ToolFailure an output shows (quoting the tool's line), or None when none is known."""
    return known_error("perftest", text, _ERRORS, _HINTS, rc)


def no_result(text: str, rc: int | None = None) -> ToolFailure:
    """The ToolFailure for an output with no result table and no known error: its last lines."""
    lines = [ln.strip() for ln in clean(text).splitlines()
             if ln.strip() and not ln.startswith(NUMA_MARKER) and not _DASHES_RE.match(ln)]
    tail = " | ".join(lines[-3:]) if lines else "(no output)"
    code = "" if rc is None else f", exit code {rc}"
    return ToolFailure("no_result", f"perftest printed no result table{code}; last lines: {tail!r}")


def parse_output(stdout: str, stderr: str = "", rc: int | None = None,
                 gbits: bool | None = None) -> list[Record]:
    """Records from one perftest run (stdout, maybe with an appended JSON file, and stderr).

    Raises ToolFailure when the output holds no result row. A valid ``--out_json`` file is used
    when it covers every stdout row (it holds one size only, so ``-a`` sweeps come from stdout).
    """
    out, json_text = split_json(clean(stdout))
    stderr = clean(stderr)
    rows = parse_tables(out)
    unit = bw_unit(out) or (None if gbits is None else ("Gb/sec" if gbits else "MiB/sec"))
    from_json = parse_out_json(json_text, unit) if json_text else None
    if from_json and len(from_json) >= len(rows):
        rows = from_json
    else:
        for row in rows:
            row["parsed_from"] = "stdout"
    if not rows and json_text is None and "test_info" in out and (block := json_block(out)):
        # a saved --out_json file on its own (``bench parse perftest FILE``)
        rows = parse_out_json(block, unit) or []
    if not rows:
        both = out + "\n" + stderr
        raise classify_error(both, rc) or no_result(both, rc)
    common = {**describe(out), **header_fields(parse_header(out))}
    node = numa_node(stderr)
    if node is not None:
        common["numa_node"] = node
    if _CLOCK_ESTIMATE_FAILED.search(out + "\n" + stderr):  # the figures use /proc/cpuinfo's MHz
        common["cpu_mhz_source"] = "proc_cpuinfo"
    return [{**common, **row} for row in rows]


# lines that belong to the run whose title follows them: the dashes above a title, a server's
# "Waiting for client" banner, the command line (or prompt) that started the run
_LEADS_IN = re.compile(r"^\s*(?:-{20,}|\*{5,}|\* Waiting for client.*\*|Waiting for client.*)\s*$"
                       r"|\bib_(?:write|read|send|atomic)_(?:bw|lat)\b")


_ROW_RE = re.compile(r"^\s*\d+\s+\d+\s+\S")


def _openers(lines: list[str]) -> list[int]:
    """Indexes of the lines that open a run: each test title, and a table's column titles pasted
    without a test title after another table's rows (two outputs cut to their tables); the column
    titles perftest repeats under ' Local results:' / ' Remote results:' (--report-both) stay in
    their run."""
    openers: list[int] = []
    rows = titled = False
    before = ""
    for i, line in enumerate(lines):
        if _TITLE_RE.match(line):
            openers.append(i)
            rows, titled = False, True
        elif _table_kind(line):
            if not titled and not before.startswith(("Local results", "Remote results")) \
                    and (rows or not openers):
                openers.append(i)
            rows = titled = False
        elif _ROW_RE.match(line):
            rows = True
        if line.strip() and not _DASHES_RE.match(line):
            before = line.strip()
    return openers


def split_runs(text: str) -> list[str]:
    """The outputs of a text that holds several runs (a sweep pasted run after run, a server's and a
    client's output one after the other), each from its test title (or, for tables pasted without
    their titles, its column titles) back to the lines that lead into it (dashes, the server's
    waiting banner, its command line); one text for one run."""
    lines = text.splitlines()
    titles = _openers(lines)
    starts = [0]
    for before, title in itertools.pairwise(titles):
        start = title
        while start - 1 > before and (not lines[start - 1].strip() or _LEADS_IN.search(lines[start - 1])):
            start -= 1
        # the run's command line above the notices perftest prints before its title ('Device not
        # recognized to implement inline feature', 'cqe = 5, less than minimum CQE number') or the
        # kernel lines a console interleaves: the last one after the previous run's last row
        rows = [i for i in range(before + 1, start) if _table_kind(lines[i]) or _ROW_RE.match(lines[i])]
        command = [i for i in range((rows[-1] if rows else before) + 1, start) if _command_at(lines[i])]
        if command:
            start = command[-1]
        starts.append(start)
    return ["\n".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


def _rank_streams(text: str) -> list[tuple[int, str]] | None:
    """Each process's output of a text whose lines carry launcher ranks' labels (two ranks' tables
    interleaved line by line), in the order the ranks first show, labels removed; lines without a
    label (a prompt, the launcher's command) go with every rank. None when the result tables are
    not all labelled or none is."""
    lines = text.splitlines()
    ranks: dict[int, list[str]] = {}
    order: list[tuple[int | None, str]] = []
    for line in lines:
        labelled_line = rank_label(line)  # tools/textclean.py: the launchers' labels
        if labelled_line is None:
            if line.lstrip().startswith("#bytes"):
                return None
            order.append((None, line))
            continue
        rank, body = labelled_line
        ranks.setdefault(rank, [])
        order.append((rank, body))
    labelled = [body for owner, body in order if owner is not None]
    if not ranks or not any(_table_kind(body) or _TITLE_RE.match(body) for body in labelled):
        return None
    for rank in ranks:
        ranks[rank] = [body for owner, body in order if owner in (None, rank)]
    return [(rank, "\n".join(body)) for rank, body in ranks.items()]


def parse_text(text: str) -> list[Record]:
    """Records from one saved output (``bench parse perftest FILE``); errors raise ToolFailure.

    A text with several runs gives each run's rows with ``run`` = 1, 2 ... and that run's own header
    facts (test, side, device); a run that failed with a known error fails the text, keeping the
    other runs' rows; a run that printed no table (a server's banner alone) gives no rows. Lines
    labelled with launcher ranks ('[rank 1] ', '[1,0]<stdout>:', '0: ') are each rank's own output:
    its runs carry ``rank``."""
    streams = _rank_streams(text)
    if streams is not None and len(streams) == 1:  # one rank: its output, read as any other
        text, streams = streams[0][1], None
    parts: list[tuple[int | None, str]] = \
        [(None, part) for part in split_runs(clean(text))] if streams is None else \
        [(rank, part) for rank, stream in streams for part in split_runs(clean(stream))]
    if len(parts) == 1 and streams is None:
        return parse_output(text)
    records: list[Record] = []
    failures: list[tuple[int, ToolFailure]] = []
    for number, (rank, part) in enumerate(parts, 1):
        labels: Record = {"run": number} if rank is None else {"run": number, "rank": rank}
        try:
            records += [{**row, **labels} for row in parse_output(part)]
        except ToolFailure as exc:
            failures.append((number, exc))
    known = [(n, f) for n, f in failures if f.kind != "no_result"]
    if known or not records:
        number, failure = (known or failures)[0]
        raise ToolFailure(failure.kind, f"run {number} of {len(parts)}: {failure.message}", records=records)
    return records
