"""Self-contained HTML reports: one file, inline CSS and SVG, no external URL, prints well.

Templates (``templates/*.j2``) are rendered with autoescaping on: hostnames, tool output and
labels are data, never markup. The only ``Markup`` inserted is SVG built by ``charts`` (which
escapes every string it draws).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from benchharness.analysis import frames as analysis
from benchharness.report import charts
from benchharness.report.pages import duration, environment, finite, when, write_html
from benchharness.results import runview
from benchharness.results.store import RunDir
from benchharness.telemetry import summary as fact_summary

MAX_LIST = 200


def header(run: RunDir, info: Mapping[str, Any]) -> dict[str, Any]:
    """What, where, when and how it ended."""
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {"name": info.get("suite")}
    assert isinstance(suite, Mapping)
    versions = info.get("tool_versions") or {}
    return {"run_id": info.get("run_id", run.path.name), "suite": suite.get("name") or "–",
            "description": suite.get("description") or "",
            "hosts": runview.run_host_names(info), "started": when(info.get("started")),
            "ended": when(info.get("ended")), "duration": duration(info.get("started"), info.get("ended")),
            "state": str(info.get("state") or "unknown"), "exit_code": info.get("exit_code"),
            "bench_version": info.get("bench_version") or versions.get("benchharness") or "–",
            "tool_versions": versions if isinstance(versions, Mapping) else {},
            "labels": info.get("labels") if isinstance(info.get("labels"), Mapping) else {},
            "label": analysis.run_label([info])[0]}


def summary(run: RunDir, info: Mapping[str, Any]) -> dict[str, Any]:
    """Step counts, failures (run.json and failed steps), verdicts."""
    counts: dict[str, int] = {}
    failed_steps = []
    total = 0
    for s in run.iter_steps():  # one pass, never the whole list: runs may have a million steps
        total += 1
        counts[str(s.get("status", "?"))] = counts.get(str(s.get("status", "?")), 0) + 1
        if s.get("status") == "failed":
            failed_steps.append(s)
    failures = [dict(f) for f in info.get("failures") or [] if isinstance(f, Mapping)]
    known_steps = {f.get("step") for f in failures}
    for s in failed_steps:
        if s.get("step") not in known_steps:
            hosts = s.get("hosts")
            failures.append({"step": s.get("step"), "host": ", ".join(map(str, hosts))
                             if isinstance(hosts, list) else hosts, "kind": s.get("kind"),
                             "message": s.get("message")})
    verdicts = verdict_rows(info.get("verdicts"))
    failures = [{k: f.get(k) for k in ("step", "host", "kind", "message")} for f in failures]
    return {"counts": counts, "total": total, "failures": failures[:MAX_LIST],
            "failures_total": len(failures), "verdicts": verdicts,
            "verdicts_failed": sum(1 for v in verdicts if str(v.get("status")).lower() == "fail")}


def verdict_rows(verdicts: Any) -> list[dict[str, Any]]:
    """Verdict dicts with every field the templates use (missing ones None)."""
    keys = ("check", "status", "message", "host", "test", "value", "limit")
    rows = [{k: v.get(k) for k in keys} for v in verdicts or [] if isinstance(v, Mapping)]
    for row in rows:
        row["status"] = str(row["status"] or "info")
        for k in ("value", "limit"):
            row[k] = row[k] if finite(row[k]) else None
    return rows


def telemetry(run: RunDir, info: Mapping[str, Any]) -> dict[str, Any]:
    """Host facts, each host's rails (one row per NIC, with its findings), preflight verdicts,
    warnings, sampler charts and counter deltas."""
    facts = runview.read_facts(run)
    host_rows, nic_rows, nic_cols = [], [], []
    for host, hf in facts.items():
        if fact_summary.is_probe_facts(hf):  # the probe's own format: the facts a reader wants
            host_rows.append((host, list(fact_summary.host_row(hf).items())))
            rows = [fact_summary.nic_row(nic) for nic in runview.nic_entries(hf)]
        else:  # anything else is shown as it is, flattened
            top = {k: v for k, v in (hf.items() if isinstance(hf, Mapping) else [])
                   if k not in ("nics", "nic")}
            host_rows.append((host, list(runview.flatten(top, limit=24).items())))
            rows = [runview.flatten(nic, limit=24) for nic in runview.nic_entries(hf)]
        for row in rows:
            nic_cols += [k for k in row if k not in nic_cols]
            nic_rows.append((host, row))
    nic_cols = nic_cols[:14]
    series = runview.sampler_series(run)
    figures = []
    t0 = min((pts[0][0] for per in series.values() for pts in per.values() if pts), default=0.0)
    for measure, title, unit in (("temp_c", "Hottest sensor per host", "°C"),
                                 ("cpu_pct", "CPU use per host (mean of cores)", "%")):
        per_host = series.get(measure, {})
        lines = [charts.Series(name=h, points=charts.downsample([(t - t0, v) for t, v in pts]))
                 for h, pts in sorted(per_host.items())]
        chart = charts.line_chart(lines, title=title, x_label="time since first sample [s]",
                                  y_label=f"{measure} [{unit}]", y_zero=measure != "temp_c")
        if chart:
            figures.append({"svg": chart, "caption": title})
    counters, counters_total = runview.counter_rows(run)
    cpu_table = cpu_rows(run)
    rails = [(host, rows) for host, rows in sorted(runview.rail_rows(run, info).items()) if rows]
    return {"facts": host_rows, "nics": nic_rows, "nic_cols": nic_cols,
            "rails": rails, "rail_cols": runview.RAIL_COLUMNS,
            "preflight": verdict_rows(runview.read_preflight(run)),
            "warnings": runview.telemetry_warnings(run, info), "figures": figures,
            "counters": counters, "counters_total": counters_total, "cpu": cpu_table}


def cpu_rows(run: RunDir) -> list[dict[str, Any]]:
    """The CPU cost table: per test, host and rail over its steps (``results/cpu.py``), beside
    throughput and iperf3's own CPU figure."""
    from benchharness.results import cpu

    rows = cpu.cpu_rows(run)
    tool: dict[tuple[str, str, str | None], list[float]] = {}
    for r in rows:
        if r.iperf3_cpu_pct is not None:
            tool.setdefault((r.test, r.host, r.rail), []).append(r.iperf3_cpu_pct)
    out = []
    for (test, host, rail), c in sorted(cpu.per_host(rows).items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        own = tool.get((test, host, rail))
        out.append({"test": test, "host": host, "rail": rail or "", "gb": c.gb, "gbps": c.gbps, "cpu_s": c.cpu_s,
                    "scope": c.scope, "cpu_s_per_gb": c.cpu_s_per_gb, "busiest_core": c.busiest_core or "",
                    "busiest_pct": c.busiest_pct, "softirq": c.busiest_softirq_share,
                    "iperf3_cpu_pct": sum(own) / len(own) if own else None})
    return out


def run_context(run: RunDir) -> dict[str, Any]:
    """Everything the single-run template needs. With the columnar copy, one test at a time:
    only that test's rows are decoded, so memory follows the largest test, not the run."""
    from benchharness.report import scaling_section
    from benchharness.report.bisect_section import bisect_section
    from benchharness.report.fabric_section import fabric_section
    from benchharness.report.packet_rate_section import packet_rate_section
    from benchharness.report.power_section import power_section
    from benchharness.report.sections import test_section
    from benchharness.results import columnar, frameworks

    info = run.run_info()
    head = header(run, info)
    facts = runview.read_facts(run)
    parts: Iterator[tuple[Any, Any]]
    if columnar.ensure(run) is not None:
        parts = ((analysis.load_run(run, steps_per_test=8, label=head["label"], tests=[t]))
                 for t in analysis.test_names(run))
    else:  # the JSON lines, read once
        parts = iter([analysis.load_run(run, steps_per_test=8, label=head["label"])])
    tests: list[dict[str, Any]] = []
    for df, intervals in parts:
        if df.empty or "test" not in df:
            continue
        if "test" not in intervals:
            intervals["test"] = None
        summary_rows = df.drop(columns=["t_start_s"], errors="ignore")
        summary_rows = analysis.line_rate_share(summary_rows, info, facts=facts)
        for test in dict.fromkeys(summary_rows["test"].dropna()):
            sub = summary_rows[summary_rows["test"] == test].dropna(axis=1, how="all")
            section = test_section(str(test), sub, intervals[intervals["test"] == test])
            if (figure := scaling_section.run_figure(sub)) is not None:  # busbw vs host count
                section["figures"] = [*section["figures"], figure]
            tests.append(section)
        del df, intervals, summary_rows
        columnar.release_memory()
    return {"h": head, "s": summary(run, info), "tests": tests, "t": telemetry(run, info),
            "iso": run.read_json("isolation.json") or {}, "fh": fabric_section(run, info),
            "bi": bisect_section(run, info), "pw": power_section(run), "fw": frameworks.matrix(run),
            "pr": packet_rate_section(run), "generated": when(dt.datetime.now(dt.UTC).timestamp())}


def render_run_report(run: RunDir, out: Path | None = None) -> Path:
    """Render one run to a self-contained HTML file (default ``<run>/report.html``)."""
    html = environment().get_template("run.html.j2").render(**run_context(run))
    return write_html(html, out or run.path / "report.html")
