"""Pure parser for iperf3's human-readable output (no ``-J``): saved logs, old releases, servers.

Layouts read, as ``iperf_locale.c`` prints them from 3.0 to 3.17:

- stream lines ``[  5]   0.00-1.00   sec   129 KBytes  1.05 Mbits/sec ...`` and ``[SUM]`` lines, with
  a role tag under ``--bidir`` (3.7+): ``[  5][TX-C]`` / ``[  7][RX-S]`` are the client -> server
  flow, ``[RX-C]`` / ``[TX-S]`` the server -> client one, each with its own streams, ``[SUM]``
  lines and sender/receiver summary, so a bidirectional text gives a forward and a reverse
  summary as its ``-J`` document does; the rate column is ``Bandwidth`` before 3.2 and
  ``Bitrate`` after, in ``Mbits/sec`` (``-f k|m|g|t`` and the default) or ``MBytes/sec``
  (``-f K|M|G|T``: 1024-based, like the transfer column); TCP senders add ``Retr`` (and ``Cwnd`` in intervals); UDP receivers add
  ``Jitter`` and ``Lost/Total Datagrams``, UDP senders ``Total Datagrams``;
- the summary after the ``- - -`` line: ``sender`` / ``receiver`` labels since 3.1, none in 3.0
  (``Test Complete. Summary Results:``) and on old UDP clients;
- server logs (``Server listening on``, ``Accepted connection from``), several tests one after
  the other (each a ``doc``), where ``receiver`` means client -> server;
- ``iperf3: error - ...`` lines, classified like the JSON ``error``;
- ``--timestamps[=FORMAT]`` (3.10+): each line after a date and time (``"%c "`` by default:
  ``Wed May 14 11:21:02 2025 [  5] ...``) or, with ``"%s "``, after seconds since the epoch;
- ``-T``/``--title STR``: each line after ``STR:  ``; ``-O N``: intervals marked ``(omitted)``;
- a client stopped by a signal prints its summary, then ``iperf3: interrupt - the client has
  terminated``: the far end's line of that summary is ``0.00 Bytes`` (its figures never came), so
  the summary is ``partial`` and read from the line this end measured; a terminal's ``^C`` echo
  is glued to the line after it;
- several tests in one text (clients run one after the other, a server log, a loop's ``| grep``
  output): each its own ``run``, split at each command line, ``Connecting to host``, ``Server
  listening on`` / ``Accepted connection from``, or an interval line after a summary.

Transfer units are binary (KBytes = 1024 bytes), rates decimal (Mbits/sec = 10^6 bit/s); the
records use the JSON parser's field names, with ``parsed_from: text``.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record
from benchharness.tools.iperf3_parse import classify_error
from benchharness.tools.textclean import clean

#: What ``bench parse iperf3-text`` reads (``bench parse --list``).
READS = {"iperf3-text": "iperf3 text output, 3.0 to 3.18 and Windows iperf3.exe builds: TCP and UDP clients "
                        "and server logs, Bandwidth / Bitrate columns in bits/sec or (-f K|M|G) Bytes/sec, "
                        "Retr and Cwnd, UDP jitter and loss (0/0 datagrams' 'nan%' read as no loss rate), -P "
                        "[SUM] lines, -R, --bidir [TX-C]/[RX-C] roles, -O '(omitted)' intervals (omitted: true), "
                        "3.0 'Test Complete. Summary Results:', --timestamps lines (the default '%c ' date, "
                        "other strftime dates and times, '%s' epoch seconds), -T/--title prefixes, prompts, "
                        "'$ cmd' lines and logger prefixes; a client stopped by ^C ('iperf3: interrupt - the "
                        "client has terminated', the ^C glued to a line): partial, a 0.00 Bytes line of the "
                        "far end not taken for a measurement; several tests in one paste (a server log, "
                        "clients one after the other, 'cmd1 && cmd2') as run 1, 2, ...; "
                        "interval and summary records (intervals without a summary: no_results, the "
                        "intervals kept with it)"}

_BYTES = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_LINE = re.compile(
    r"^\s*\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[A-Z]+-[A-Z])\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s*sec\s+"
    r"(?P<xfer>\d+(?:\.\d+)?)\s*(?P<xunit>[KMGT]?)Bytes\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s*(?P<runit>[KMGT]?)(?P<rkind>bits|Bytes)/sec"
    r"(?P<rest>.*)$")
#: ``Lost/Total (pct%)``: 0/0 datagrams print the percentage as ``nan%`` (``-nan%`` on glibc)
_UDP_RX = re.compile(r"^\s*(?P<jitter>\d+(?:\.\d+)?)\s*ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s*"
                     r"\((?P<pct>-?(?:nan|inf|[\d.e+-]+))(?:%|&#37;)\)", re.IGNORECASE)
#: ``-O N``: the first N seconds' interval lines end with ``(omitted)`` and count in no summary
_OMITTED = re.compile(r"\(omitted\)\s*$")
_LABEL = re.compile(r"\b(sender|receiver)\s*$")
_ERROR = re.compile(r"^\s*iperf3?: (?:error - )?(.+?)\s*$")
_SERVER = re.compile(r"^\s*Server listening on \d+|^\s*Accepted connection from ")
_TEST_START = re.compile(r"^\s*Server listening on \d+")
#: ``--bidir`` role tags (``iperf_api.c``: "[TX-C]" a client stream that sends ...) -> direction.
_ROLE_DIRECTION = {"TX-C": "forward", "RX-S": "forward", "RX-C": "reverse", "TX-S": "reverse"}
_SEPARATOR = re.compile(r"^\s*(?:- ){6,}-?\s*$|^\s*Test Complete\. Summary Results:")


#: ``--timestamps="%s "``: seconds since the epoch before each line (other strftime formats, the
#: default ``"%c "`` included, are dates and times that ``textclean`` strips for every tool). No
#: iperf3 line starts with a number, so a leading 9 to 11 digit count of seconds is the stamp.
_EPOCH_STAMP = re.compile(r"^\s*\d{9,11}(?:[.,]\d+)?(?:[ \t]|(?=\[))")


#: ``^C`` a terminal echoed when the run was interrupted, glued to the next line iperf3 printed.
_CTRL_C = re.compile(r"^(\s*)\^C")
#: ``-T``/``--title STR``: iperf3 prints ``STR:  `` before each line (``iperf_printf`` in iperf_api.c).
_TITLED = re.compile(r"^\s*(?P<title>[^\s\[:][^:\n]{0,63}?):  (?=\s*(?:\[|Connecting to host|Server listening"
                     r"|Accepted connection|Reverse mode|(?:- ){6}|iperf Done))")


def _lines(text: str) -> list[str]:
    lines = [_CTRL_C.sub(r"\1", _EPOCH_STAMP.sub("", line, count=1)) for line in clean(text).splitlines()]
    titles = {m["title"] for line in lines if (m := _TITLED.match(line))}
    if not titles:
        return lines
    # one title per client (a paste may hold several); only lines that start with one lose it
    prefix = re.compile(r"^\s*(?:" + "|".join(re.escape(t) for t in sorted(titles, key=len, reverse=True))
                        + r"):  ")
    return [prefix.sub("", line, count=1) for line in lines]


def looks_like_text(text: str) -> bool:
    """True when ``text`` holds at least one iperf3 interval or summary line."""
    return any(_LINE.match(line) for line in _lines(text))


#: A client's or a server's command line (after a prompt, ``$``, ``sudo``, or alone).
_COMMAND = re.compile(r"(?:^|[\s$#>:])(?:sudo\s+)?(?:\S*/)?iperf3(?:\.exe)?\s+(?P<args>-.*)$")
_CLIENT_ARG = re.compile(r"(?:^|\s)(?:-c|--client)(?:\s|=|$)|(?:^|\s)-[a-zA-Z]*c\s")
_SERVER_ARG = re.compile(r"(?:^|\s)(?:-s|--server)(?:\s|$)|(?:^|\s)-[a-zA-Z]*s(?:\s|$)")
_CLIENT_START = re.compile(r"^\s*Connecting to host ")
_SERVER_START = re.compile(r"^\s*(?:Server listening on \d+|Accepted connection from )")


class _Block:
    """The lines of one test: a client's output, or one test of a server log."""

    def __init__(self, kind: str | None, command: str | None) -> None:
        self.lines: list[str] = []
        self.kind = kind            # "client", "server" or None (not told)
        self.command = command      # the iperf3 command line that ran it, when the paste shows one
        self.streams = False        # holds an interval or summary line
        self.labelled = False       # a sender / receiver summary line was read
        self.in_summary = False     # inside the summary table after "- - -" and "[ ID]"
        self.after_separator = False


def _command_kind(args: str) -> str | None:
    if _CLIENT_ARG.search(" " + args):
        return "client"
    if _SERVER_ARG.search(" " + args):
        return "server"
    return None


def _blocks(lines: list[str]) -> list[_Block]:
    """One block of lines per test. A test starts at a client's command line or ``Connecting to
    host``, at a server's ``Server listening on`` / ``Accepted connection from``, and, where a paste
    keeps only stream lines (``| grep SUM``), at an interval line after a sender/receiver line."""
    blocks = [_Block(None, None)]
    for line in lines:
        cur = blocks[-1]
        started: str | None = None
        cmd = _COMMAND.search(line)
        if cmd and not _LINE.match(line):
            started = _command_kind(cmd["args"])
            if not started:
                cmd = None
        elif _CLIENT_START.match(line):
            started = "client"
        elif _SERVER_START.match(line):
            started = "server"
        m = _LINE.match(line)
        if started:
            own = cmd["args"] if cmd and not _LINE.match(line) else None  # this test's own command line
            if cur.streams or (cur.kind not in (None, started)):
                blocks.append(_Block(started, own))
            else:
                cur.kind = cur.kind or started
                cur.command = own or cur.command
        elif m and cur.labelled and not cur.in_summary and not _LABEL.search(m["rest"]):
            blocks.append(_Block(cur.kind, cur.command))
        cur = blocks[-1]
        cur.lines.append(line)
        if _SEPARATOR.match(line):
            cur.after_separator = True
            continue
        if cur.after_separator and line.strip():
            cur.in_summary = line.lstrip().startswith("[ ID]") or line.lstrip().startswith("Test Complete")
            cur.after_separator = False
        if m:
            cur.streams = True
            cur.labelled = cur.labelled or bool(_LABEL.search(m["rest"]))
    return [b for b in blocks if b.streams]


def _rate_gbps(rate: float, prefix: str, kind: str) -> float:
    """Gbit/s of a rate column: ``Mbits/sec`` (decimal prefixes) or, under ``-f K|M|G|T``,
    ``MBytes/sec`` (binary prefixes, as ``unit_snprintf`` in iperf3's ``units.c`` divides)."""
    if kind == "Bytes":
        return rate * _BYTES[prefix] * 8 / 1e9
    return rate * _BITS[prefix] / 1e9


def _row(m: re.Match[str]) -> Record:
    start, end = float(m["start"]), float(m["end"])
    rec: Record = {"stream": m["id"], "role": m["role"], "t_start_s": start, "t_end_s": end, "duration_s": round(end - start, 6),
                   "bytes": round(float(m["xfer"]) * _BYTES[m["xunit"]]),
                   "bw_avg_gbps": _rate_gbps(float(m["rate"]), m["runit"], m["rkind"])}
    rest = m["rest"]
    if omitted := _OMITTED.search(rest):
        rec["omitted"] = True
        rest = rest[:omitted.start()]
    label = _LABEL.search(rest)
    if label:
        rec["label"] = label.group(1)
        rest = rest[:label.start()]
    if udp := _UDP_RX.match(rest):
        rec.update(jitter_ms=float(udp["jitter"]), lost_packets=int(udp["lost"]), packets=int(udp["total"]))
        if not re.search(r"nan|inf", udp["pct"], re.IGNORECASE):  # no datagram: no loss rate
            rec["loss_pct"] = float(udp["pct"])
    else:
        numbers = re.findall(r"-?\d+(?:\.\d+)?\s*[KMG]?(?:Bytes)?", rest)
        if numbers and re.fullmatch(r"-?\d+", numbers[0].strip()):
            rec["count"] = int(numbers[0])  # Retr (TCP sender) or Total Datagrams (UDP sender)
    return rec


def _parse_block(lines: list[str], server: bool, reverse: bool, udp_hint: bool,
                 interrupted: str | None = None) -> list[Record]:
    header_udp = udp_hint or any("Datagrams" in line for line in lines)
    intervals: list[Record] = []
    summaries: list[Record] = []
    in_summary = after_separator = False
    for line in lines:
        if _SEPARATOR.match(line):
            after_separator = True
            continue
        if after_separator and line.strip():
            # "- - -" also parts the periods of a -P run; the summary is the one a title line follows
            in_summary = in_summary or line.lstrip().startswith("[ ID]")
            after_separator = False
        m = _LINE.match(line)
        if not m:
            continue
        row = _row(m)
        if in_summary or "label" in row:
            summaries.append(row)
        else:
            intervals.append(row)
    protocol = "udp" if header_udp else "tcp"
    roles = {r["role"] for r in intervals + summaries} - {None}
    if not roles:
        direction = _block_direction(intervals, summaries, server, reverse, protocol)
        return _flow_records(intervals, summaries, protocol, server, direction, interrupted)
    unknown = sorted(roles - set(_ROLE_DIRECTION))
    if unknown:
        raise ToolFailure("parse_error", f"iperf3 text output: unknown stream role [{unknown[0]}]")
    untagged = next((r for r in intervals + summaries if r["role"] is None), None)
    if untagged is not None:
        raise ToolFailure("parse_error", f"iperf3 text output: the line [{untagged['stream']}] "
                          f"{untagged['t_start_s']}-{untagged['t_end_s']} sec has no --bidir role tag "
                          "while others have one")
    out: list[Record] = []
    for direction in ("forward", "reverse"):  # --bidir: each flow its own streams and summary
        mine = {role for role in roles if _ROLE_DIRECTION[role] == direction}
        out += _flow_records([r for r in intervals if r["role"] in mine],
                             [r for r in summaries if r["role"] in mine], protocol, server, direction,
                             interrupted)
    return out


def _flow_records(intervals: list[Record], summaries: list[Record], protocol: str, server: bool,
                  direction: str, interrupted: str | None = None) -> list[Record]:
    """Interval and summary records of the streams of one direction."""
    streams = len({r["stream"] for r in intervals + summaries if r["stream"] != "SUM"}) or None
    base: Record = {"protocol": protocol, "streams": streams, "parsed_from": "text"}
    if server:
        base["role"] = "server"
    out = [_interval_record(r, base, direction) for r in intervals if _wanted(r, intervals)]
    return out + _summary_records(summaries, base, direction, interrupted, server)


def _wanted(row: Record, rows: list[Record]) -> bool:
    """The SUM line when there is one for a period, else the single stream's line."""
    has_sum = any(r["stream"] == "SUM" for r in rows)
    return row["stream"] == "SUM" if has_sum else True


def _block_direction(intervals: list[Record], summaries: list[Record], server: bool, reverse: bool,
                     protocol: str) -> str:
    """forward = client -> server. Both summary lines (sender, receiver) describe that one flow.

    A client says ``Reverse mode``; a server log does not, so its side is read from its lines: a
    summary with only a ``sender`` (or ``receiver``) line, else sender-only interval columns
    (TCP ``Retr``, UDP ``Total Datagrams``) against the receiver's UDP jitter and loss.
    """
    if not server:
        return "reverse" if reverse else "forward"
    labels = {r.get("label") for r in summaries} - {None}
    if labels == {"sender"}:
        return "reverse"
    if labels == {"receiver"}:
        return "forward"
    if protocol == "udp":
        return "forward" if any("jitter_ms" in r for r in intervals) else "reverse"
    return "reverse" if any("count" in r for r in intervals) else "forward"


def _metrics(row: Record) -> Record:
    keys = ("bw_avg_gbps", "bytes", "duration_s", "jitter_ms", "lost_packets", "packets", "loss_pct")
    return {k: row[k] for k in keys if k in row}


def _interval_record(row: Record, base: Record, direction: str) -> Record:
    rec: Record = {**base, "kind": "interval", "direction": direction,
                   "t_start_s": row["t_start_s"], "t_end_s": row["t_end_s"], **_metrics(row),
                   "omitted": bool(row.get("omitted"))}
    if "count" in row and base["protocol"] == "tcp":
        rec["retransmits"] = row["count"]
    return rec


def _summary_records(rows: list[Record], base: Record, direction: str, interrupted: str | None = None,
                     server: bool = False) -> list[Record]:
    """One summary: the receiver line's figures, the sender's rate and retransmits beside (as the
    JSON parser does); a summary with the sender line only is ``partial``.

    A line of ``0.00 Bytes`` beside a counterpart that moved data is no measurement where that end
    could not know it: a client interrupted before the server's results came (its receiver line, or
    under ``-R`` its sender line, prints zero) and a 3.0/3.1 server's line for the far end. A run
    cut short by a signal is ``partial`` with the printed reason."""
    rows = [r for r in rows if _wanted(r, rows)]
    if not rows:
        return []
    found = {r.get("label") or "unlabelled": r for r in rows}
    rx, tx = found.get("receiver"), found.get("sender")
    unknown = None
    if rx is not None and tx is not None and (interrupted or server):
        if rx["bytes"] == 0 and tx["bytes"] > 0:
            rx, unknown = None, "receiver"
        elif tx["bytes"] == 0 and rx["bytes"] > 0:
            tx, unknown = None, "sender"
    main = rx or tx or found["unlabelled"]
    rec: Record = {**base, "kind": "summary", "direction": direction, **_metrics(main),
                   "measured_at": "receiver" if rx else "sender"}
    if tx is not None:
        rec["bw_sent_gbps"] = tx["bw_avg_gbps"]
        rec["bytes_sent"] = tx["bytes"]
        if "count" in tx and base["protocol"] == "tcp":
            rec["retransmits"] = tx["count"]
    reasons = []
    if interrupted:
        reasons.append(interrupted)
    if rx is None and tx is not None:
        reasons.append("the receiver line prints 0.00 Bytes: its figures never reached this end"
                       if unknown == "receiver" else "no receiver summary line")
    if reasons:
        rec["partial"] = True
        rec["partial_reason"] = "; ".join(reasons)
    return [rec]


_REVERSE_ARG = re.compile(r"(?:^|\s)(?:--reverse|-[a-zA-Z]*R[a-zA-Z]*)(?:\s|$)")
_UDP_ARG = re.compile(r"(?:^|\s)(?:--udp|-[a-zA-Z]*u[a-zA-Z]*)(?:\s|$)")
#: a client stopped by a signal (``iperf_got_sigend``: "interrupt - the client has terminated"), or the
#: server's note of it ("the client has terminated"): the summary printed covers the time until then
_INTERRUPT = re.compile(r"^\s*iperf3?: (?:error - )?(?P<what>(?:interrupt - )?the (?:client|server) has terminated"
                        r"(?: by signal .*)?)\s*$")


def parse_text_output(text: str) -> list[Record]:
    """Records of one saved human-readable iperf3 output; ToolFailure when it holds no result.

    Several tests in one paste (a server log, clients run one after the other, a loop's output)
    are read test by test: each record carries ``run`` (1, 2, ...) and ``doc`` (0-based)."""
    lines = _lines(text)
    server_text = any(_SERVER.match(line) for line in lines)
    reverse_text = any(re.match(r"^\s*Reverse mode", line) for line in lines)
    udp_text = any(re.search(r"\s-u\b|--udp\b", line) for line in lines)
    blocks = _blocks(lines)
    out: list[Record] = []
    for index, block in enumerate(blocks):
        if block.kind is None:
            server, reverse, udp = server_text, reverse_text, udp_text
        else:
            server = block.kind == "server"
            args = block.command or ""
            told = any(_CLIENT_START.match(line) for line in block.lines)  # a client prints "Reverse mode"
            reverse = not server and (any(re.match(r"^\s*Reverse mode", line) for line in block.lines)
                                      or (not told and bool(_REVERSE_ARG.search(args))))
            udp = bool(_UDP_ARG.search(args)) if block.command else udp_text
        interrupted = next((m["what"] for line in block.lines if (m := _INTERRUPT.match(line))), None)
        records = _parse_block(block.lines, server, reverse, udp, interrupted)
        if len(blocks) > 1:
            for rec in records:
                rec["run"] = index + 1
                rec["doc"] = index
        out.extend(records)
    if not any(r["kind"] == "summary" for r in out):
        for line in lines:
            if (m := _ERROR.match(line)) and "Done" not in line:
                raise ToolFailure(classify_error(m.group(1)), f"iperf3: {m.group(1)}")
        what = "only interval lines, no summary" if out else "no interval or summary line"
        # the intervals printed are kept with the failure, never counted as the test's result
        raise ToolFailure("no_results", f"iperf3 text output holds {what}", records=out)
    return out


def parse_text(text: str) -> list[dict[str, Any]]:
    """``bench parse iperf3-text FILE``."""
    return parse_text_output(text)


PARSERS = {"iperf3-text": parse_text}
