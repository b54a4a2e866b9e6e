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
  ``Wed May 14 11:21:02 2025 [  5] ...``) or, with ``"%s "``, after seconds since the epoch.

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
                        "and server logs (several tests in one log), Bandwidth / Bitrate columns in bits/sec or "
                        "(-f K|M|G) Bytes/sec, Retr and Cwnd, UDP jitter and loss, -P [SUM] lines, -R, "
                        "--bidir [TX-C]/[RX-C] roles, 3.0 'Test Complete. Summary Results:', --timestamps lines "
                        "(the default '%c ' date, other strftime dates and times, '%s' epoch seconds), prompts "
                        "and logger prefixes; interval and summary records (intervals without a summary: "
                        "no_results, the intervals kept with it)"}

_BYTES = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_LINE = re.compile(
    r"^\s*\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[A-Z]+-[A-Z])\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s*sec\s+"
    r"(?P<xfer>\d+(?:\.\d+)?)\s*(?P<xunit>[KMGT]?)Bytes\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s*(?P<runit>[KMGT]?)(?P<rkind>bits|Bytes)/sec"
    r"(?P<rest>.*)$")
_UDP_RX = re.compile(r"^\s*(?P<jitter>\d+(?:\.\d+)?)\s*ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s*"
                     r"\((?P<pct>-?[\d.e+-]+)(?:%|&#37;)\)")
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


def _lines(text: str) -> list[str]:
    return [_EPOCH_STAMP.sub("", line, count=1) for line in clean(text).splitlines()]


def looks_like_text(text: str) -> bool:
    """True when ``text`` holds at least one iperf3 interval or summary line."""
    return any(_LINE.match(line) for line in _lines(text))


def _blocks(lines: list[str]) -> list[list[str]]:
    """One block of lines per test: a server log restarts at each ``Server listening on``."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if _TEST_START.match(line) and any(_LINE.match(x) for x in blocks[-1]):
            blocks.append([])
        blocks[-1].append(line)
    return [b for b in blocks if any(_LINE.match(x) for x in b)]


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
    label = _LABEL.search(rest)
    if label:
        rec["label"] = label.group(1)
        rest = rest[:label.start()]
    if udp := _UDP_RX.match(rest):
        rec.update(jitter_ms=float(udp["jitter"]), lost_packets=int(udp["lost"]), packets=int(udp["total"]),
                   loss_pct=float(udp["pct"]))
    else:
        numbers = re.findall(r"-?\d+(?:\.\d+)?\s*[KMG]?(?:Bytes)?", rest)
        if numbers and re.fullmatch(r"-?\d+", numbers[0].strip()):
            rec["count"] = int(numbers[0])  # Retr (TCP sender) or Total Datagrams (UDP sender)
    return rec


def _parse_block(lines: list[str], server: bool, reverse: bool, udp_hint: bool) -> list[Record]:
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
        return _flow_records(intervals, summaries, protocol, server, direction)
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
                             [r for r in summaries if r["role"] in mine], protocol, server, direction)
    return out


def _flow_records(intervals: list[Record], summaries: list[Record], protocol: str, server: bool,
                  direction: str) -> list[Record]:
    """Interval and summary records of the streams of one direction."""
    streams = len({r["stream"] for r in intervals + summaries if r["stream"] != "SUM"}) or None
    base: Record = {"protocol": protocol, "streams": streams, "parsed_from": "text"}
    if server:
        base["role"] = "server"
    out = [_interval_record(r, base, direction) for r in intervals if _wanted(r, intervals)]
    return out + _summary_records(summaries, base, direction)


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
                   "t_start_s": row["t_start_s"], "t_end_s": row["t_end_s"], **_metrics(row)}
    if "count" in row and base["protocol"] == "tcp":
        rec["retransmits"] = row["count"]
    return rec


def _summary_records(rows: list[Record], base: Record, direction: str) -> list[Record]:
    """One summary: the receiver line's figures, the sender's rate and retransmits beside (as the
    JSON parser does); a summary with the sender line only is ``partial``."""
    rows = [r for r in rows if _wanted(r, rows)]
    if not rows:
        return []
    found = {r.get("label") or "unlabelled": r for r in rows}
    rx, tx = found.get("receiver"), found.get("sender")
    main = rx or tx or found["unlabelled"]
    rec: Record = {**base, "kind": "summary", "direction": direction, **_metrics(main),
                   "measured_at": "receiver" if rx else "sender"}
    if tx is not None:
        rec["bw_sent_gbps"] = tx["bw_avg_gbps"]
        rec["bytes_sent"] = tx["bytes"]
        if "count" in tx and base["protocol"] == "tcp":
            rec["retransmits"] = tx["count"]
    if rx is None and tx is not None:
        rec["partial"] = True
        rec["partial_reason"] = "no receiver summary line"
    return [rec]


def parse_text_output(text: str) -> list[Record]:
    """Records of one saved human-readable iperf3 output; ToolFailure when it holds no result."""
    lines = _lines(text)
    server = any(_SERVER.match(line) for line in lines)
    reverse = any(re.match(r"^\s*Reverse mode", line) for line in lines)
    udp_hint = any(re.search(r"\s-u\b|--udp\b", line) for line in lines)
    blocks = _blocks(lines)
    out: list[Record] = []
    for index, block in enumerate(blocks):
        records = _parse_block(block, server, reverse, udp_hint)
        if len(blocks) > 1:
            for rec in records:
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
