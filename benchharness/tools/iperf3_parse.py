"""Pure parser for iperf3's ``-J`` (JSON) client output: documents -> tidy records.

Written against iperf3 3.12 (``iperf_api.c``: ``iperf_print_intermediate`` and
``iperf_print_results``), keeping to fields that 3.x releases share:

- ``start.test_start``: protocol, num_streams, blksize (the ``-l`` length used), reverse, duration.
- ``intervals[]``: ``sum`` (and ``sum_bidir_reverse`` with ``--bidir``), each with a ``sender``
  flag saying whether the client was the sending end of those streams.
- ``end``: TCP ``sum_sent`` / ``sum_received`` (+ ``*_bidir_reverse``); UDP ``sum`` (sender bytes
  with the receiver's jitter and loss) and, since 3.11, ``sum_sent`` / ``sum_received``.
  The ``sender`` flag of UDP ``sum_sent`` / ``sum_received`` does not follow the direction in
  3.12 (it is true / false whatever ``-R`` says), so end sums take their direction from
  ``test_start.reverse`` and from their key, never from that flag.
- ``error``: iperf3's error text. 3.12 exits 0 with an ``error`` document for a refused
  connection, so the document, not the exit code, decides. A SIGINT/SIGTERM'd client writes
  ``"interrupt - the client has terminated"`` with the intervals measured so far.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record
from benchharness.tools.textclean import clean

# (pattern in iperf3's error text, kind). First match wins.
_ERROR_KINDS: tuple[tuple[str, str], ...] = (
    (r"^interrupt", "interrupted"),
    (r"server is busy", "server_busy"),
    (r"unable to connect|connection refused|no route to host|network is unreachable"
     r"|unable to resolve|name or service not known|connect.*timed? ?out", "connect_failed"),
    (r"control socket has closed|server has terminated|unable to receive results"
     r"|unable to read from stream socket|connection reset", "server_terminated"),
    (r"unable to start listener|address already in use", "port_in_use"),
)


#: What ``bench parse iperf3`` reads (``bench parse --list``).
READS = {"iperf3": "iperf3 -J client documents (3.x fields as 3.0.11 to 3.12 write them: TCP and UDP, "
                   "-P, -R, --bidir; 3.11+ UDP sum_sent / sum_received; interrupted or cut short, after a ^C "
                   "echo; an error document (3.0.11 'error - unable to connect ...') named by kind); "
                   "--json-stream event lines (3.17+: start / interval / end / error events, one run per "
                   "start; interval events alone read as a run cut short); when no JSON is there, its text "
                   "output as iperf3-text reads it; 'iperf3: error - ...' lines named by kind"}

def classify_error(message: str) -> str:
    """A stable kind for one of iperf3's error texts (``tool_error`` when unknown)."""
    low = message.lower()
    for pattern, kind in _ERROR_KINDS:
        if re.search(pattern, low):
            return kind
    return "tool_error"


def split_documents(text: str) -> list[dict[str, Any]]:
    """Every JSON object in ``text``, in order: iperf3 may write several back to back.

    Text between documents (a stray warning line) is skipped; a truncated last document
    is dropped. ToolFailure ``unparsable`` when there is no complete document at all.
    """
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("\n{", pos + 1)
            pos = pos + 1 if pos != -1 else -1
            continue
        if isinstance(obj, dict):
            docs.append(obj)
        pos = text.find("{", end)
    if not docs:
        head = text.strip().splitlines()[0][:200] if text.strip() else "(empty)"
        raise ToolFailure("unparsable", f"iperf3 printed no complete JSON document; output starts: {head}")
    return docs


#: ``--json-stream`` (iperf3 3.17+, ``JSONStream_Output`` in iperf_api.c): one unformatted object a
#: line, ``{"event": NAME, "data": ...}``; each event's data is the part of the ``-J`` document it names
_STREAM_EVENTS = frozenset({"start", "interval", "end", "error", "server_output_json", "server_output_text"})


def _is_stream_event(obj: Mapping[str, Any]) -> bool:
    return set(obj) <= {"event", "data"} and obj.get("event") in _STREAM_EVENTS


def join_stream_events(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--json-stream`` events read back into ``-J`` documents: ``start`` opens one (a second
    ``start`` opens the next run's), each ``interval`` is one of its ``intervals``, ``end`` its end
    sums, ``error`` its error text. Whole ``-J`` documents pass through as they are."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for obj in docs:
        if not _is_stream_event(obj):
            out.append(obj)
            current = None
            continue
        event, data = obj["event"], obj.get("data")
        if current is None or (event == "start" and ("start" in current or current["intervals"]
                                                     or "end" in current)):
            current = {"intervals": []}
            out.append(current)
        if event == "interval" and isinstance(data, dict):
            current["intervals"].append(data)
        elif event == "error":
            current["error"] = str(data)
        elif event in ("start", "end", "server_output_json", "server_output_text"):
            current[event] = data
    return out


def parse_output(text: str) -> list[Record]:
    """Records of one client's saved ``-J`` output (all its documents).

    With several documents each record also carries ``doc`` (0-based). Raises ToolFailure
    when any document reports an error other than an interruption.
    """
    try:
        docs = split_documents(text)
    except ToolFailure:
        # a logger or terminal may have prefixed every line (timestamps, colours): strip and retry
        cleaned = clean(text)
        if cleaned == text:
            raise
        docs = split_documents(cleaned)
    docs = join_stream_events(docs)
    out: list[Record] = []
    for index, doc in enumerate(docs):
        try:
            records = parse_document(doc)
        except ToolFailure as exc:
            if len(docs) > 1:
                raise ToolFailure(exc.kind, f"document {index + 1} of {len(docs)}: {exc.message}") from exc
            raise
        if len(docs) > 1:
            for rec in records:
                rec["doc"] = index
        out.extend(records)
    return out


def parse_document(doc: Mapping[str, Any]) -> list[Record]:
    """Records of one iperf3 JSON document: interval records, then one summary per direction."""
    error = doc.get("error")
    kind = classify_error(str(error)) if error else None
    if error and kind != "interrupted":
        raise ToolFailure(kind or "tool_error", f"iperf3: {error}")

    test = (doc.get("start") or {}).get("test_start") or {}
    base: Record = {
        "protocol": str(test.get("protocol", "")).lower() or None,
        "streams": test.get("num_streams"),
        "size_bytes": test.get("blksize"),
    }
    reverse = bool(test.get("reverse"))
    intervals = _interval_records(doc.get("intervals") or [], base, reverse)
    end = doc.get("end") or {}
    why_partial = _partial_reason(error, end, intervals, test)
    if why_partial is None:
        return intervals + _end_records(end, base, reverse)
    if not intervals:
        raise ToolFailure(kind or "no_results", f"iperf3 produced no results ({why_partial})")
    summaries = _summaries_from_intervals(intervals, end)
    for rec in summaries:
        rec["partial"] = True
        rec["partial_reason"] = why_partial
    return intervals + summaries


def _partial_reason(error: Any, end: Mapping[str, Any], intervals: list[Record],
                    test: Mapping[str, Any]) -> str | None:
    """Why the end sums cannot be trusted, or None for a complete run."""
    if error:
        return str(error)
    received = end.get("sum_received") or end.get("sum")
    if not received:
        return "no end summary"
    sent = end.get("sum_sent") or {}
    if not received.get("bytes") and sent.get("bytes"):
        return "the server's results never arrived"
    duration = test.get("duration") or 0
    counted = [r for r in intervals if not r.get("omitted")]
    if duration and not test.get("bytes") and not test.get("blocks") and counted:
        covered = max(r["t_end_s"] for r in counted)
        step = max(r["duration_s"] for r in counted)
        if covered + step / 2 < duration:
            return f"intervals cover {covered:.2f} s of {duration} s"
    return None


def _direction(flag: Any, reverse: bool) -> str:
    """``forward`` (client -> server) or ``reverse``, from an interval sum's ``sender`` flag."""
    if flag is None:
        return "reverse" if reverse else "forward"
    return "forward" if flag else "reverse"


def _interval_records(intervals: Iterable[Mapping[str, Any]], base: Record, reverse: bool) -> list[Record]:
    out: list[Record] = []
    for interval in intervals:
        for key in ("sum", "sum_bidir_reverse"):
            s = interval.get(key)
            if not s:
                continue
            rec: Record = {**base, "direction": _direction(s.get("sender"), reverse), "kind": "interval",
                           "measured_at": "sender" if s.get("sender", not reverse) else "receiver",
                           "t_start_s": s.get("start"), "t_end_s": s.get("end"),
                           "omitted": bool(s.get("omitted", False))}
            rec.update(_metrics(s))
            out.append(rec)
    return out


def _metrics(s: Mapping[str, Any]) -> Record:
    """Unit-bearing metrics of one iperf3 sum object (interval or end)."""
    seconds = float(s.get("seconds") or 0.0)
    rec: Record = {"bw_avg_gbps": float(s.get("bits_per_second", 0.0)) / 1e9,
                   "bytes": s.get("bytes"), "duration_s": seconds}
    if "retransmits" in s:
        rec["retransmits"] = s["retransmits"]
    if "packets" in s:
        rec["packets"] = s["packets"]
        delivered = s["packets"] - s.get("lost_packets", 0)
        rec["msg_rate_mpps"] = delivered / seconds / 1e6 if seconds > 0 else 0.0
    for src, dst in (("jitter_ms", "jitter_ms"), ("lost_packets", "lost_packets"),
                     ("lost_percent", "loss_pct")):
        if src in s:
            rec[dst] = s[src]
    return rec


#: A sending iperf3 at or above this share of a core (``cpu_utilization_percent``) ran out of CPU:
#: the sender, not the NIC or the path, set the packet rate (iperf3 < 3.16 sends from one thread).
SENDER_CPU_BOUND_PCT = 90.0


def sender_cpu(rec: Record, direction: str) -> Record:
    """``sender_cpu_pct`` (the sending end's iperf3 CPU: the client's for forward, the server's for
    reverse) and ``sender_cpu_bound`` when it reached ``SENDER_CPU_BOUND_PCT``; {} when not reported."""
    pct = rec.get("cpu_local_pct" if direction == "forward" else "cpu_remote_pct")
    if not isinstance(pct, int | float) or isinstance(pct, bool):
        return {}
    return {"sender_cpu_pct": float(pct), "sender_cpu_bound": float(pct) >= SENDER_CPU_BOUND_PCT}


def _cpu(end: Mapping[str, Any], remote: bool = True) -> Record:
    cpu = end.get("cpu_utilization_percent") or {}
    out: Record = {}
    if "host_total" in cpu:
        out["cpu_local_pct"] = cpu["host_total"]
    if remote and "remote_total" in cpu:
        out["cpu_remote_pct"] = cpu["remote_total"]
    return out


def _end_records(end: Mapping[str, Any], base: Record, reverse: bool) -> list[Record]:
    """One summary per direction from the end sums, with the receiver's figures as the truth."""
    pairs = [("reverse" if reverse else "forward", "sum_sent", "sum_received", "sum")]
    if "sum_received_bidir_reverse" in end or "sum_sent_bidir_reverse" in end:
        pairs.append(("reverse", "sum_sent_bidir_reverse", "sum_received_bidir_reverse",
                      "sum_bidir_reverse"))
    out: list[Record] = []
    for direction, sent_key, received_key, udp_key in pairs:
        received = end.get(received_key) or end.get(udp_key)
        if not received:
            continue
        sent = end.get(sent_key) or {}
        rec: Record = {**base, "direction": direction, "kind": "summary", "measured_at": "receiver"}
        rec.update(_metrics(received))
        if sent:
            rec["bw_sent_gbps"] = float(sent.get("bits_per_second", 0.0)) / 1e9
            rec["bytes_sent"] = sent.get("bytes")
            if "retransmits" in sent:
                rec["retransmits"] = sent["retransmits"]
        rec.update(_cpu(end))
        rec.update(sender_cpu(rec, direction))
        out.append(rec)
    return out


def _summaries_from_intervals(intervals: list[Record], end: Mapping[str, Any]) -> list[Record]:
    """Summaries rebuilt from the (non-omitted) interval records of a run that was cut short."""
    out: list[Record] = []
    for direction in ("forward", "reverse"):
        rows = [r for r in intervals if r["direction"] == direction and not r["omitted"]]
        if not rows:
            continue
        first = rows[0]
        seconds = sum(r["duration_s"] for r in rows)
        total = sum(r["bytes"] or 0 for r in rows)
        rec: Record = {k: first[k] for k in ("protocol", "streams", "size_bytes", "direction")}
        rec.update({"kind": "summary", "measured_at": first["measured_at"],
                    "bw_avg_gbps": total * 8 / seconds / 1e9 if seconds > 0 else 0.0,
                    "bytes": total, "duration_s": seconds})
        for key in ("retransmits", "packets", "lost_packets"):
            if key in first:
                rec[key] = sum(r[key] for r in rows)
        if "packets" in rec:
            delivered = rec["packets"] - rec.get("lost_packets", 0)
            rec["msg_rate_mpps"] = delivered / seconds / 1e6 if seconds > 0 else 0.0
            if "lost_packets" in rec:
                rec["loss_pct"] = 100.0 * rec["lost_packets"] / rec["packets"] if rec["packets"] else 0.0
        if "jitter_ms" in first:
            rec["jitter_ms"] = rows[-1]["jitter_ms"]
        # The server's CPU figure only arrives with its results, which an interrupted run lacks.
        rec.update(_cpu(end, remote=False))
        out.append(rec)
    return out
