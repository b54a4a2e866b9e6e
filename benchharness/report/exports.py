"""Exports for other tools: samples as CSV, a Markdown summary, the comparison as JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchharness.analysis import comparison, scorecard, stats
from benchharness.analysis import frames as analysis
from benchharness.config.workloads import Workload
from benchharness.report.charts import fmt
from benchharness.report.sections import label_text, varying
from benchharness.results.store import RunDir


def samples_csv(runs: Sequence[RunDir], out: Path) -> Path:
    """Every sample of the runs (summary and interval rows) as one CSV with ``run_id``/``run``."""
    import pandas as pd

    infos = [r.run_info() for r in runs]
    labels = analysis.run_label(infos)
    frames = [analysis.load_samples(r, intervals=True, label=lab) for r, lab in zip(runs, labels, strict=True)]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    front = [c for c in ("run", "run_id", "test", "tool", "step", "rep", "round", "kind") if c in df]
    df = df[front + [c for c in df.columns if c not in front]]
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    return out


def _md(text: Any) -> str:
    """A table cell: pipes and newlines escaped."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def markdown_summary(runs: Sequence[RunDir], threshold: float | None = None,
                     workload: Workload | None = None) -> str:
    """Markdown for a ticket or PR: per-test statistics for one run; for several the verdicts, the
    scorecard (``Comparison.scorecard``, the rows of the HTML page and ``format=json``) and the
    headline bands."""
    runs = list(runs)
    if len(runs) == 1:
        return _single(runs[0])
    return _multi(runs, threshold, workload)


def _single(run: RunDir) -> str:
    info = run.run_info()
    suite = info.get("suite")
    name = suite.get("name") if isinstance(suite, dict) else suite
    lines = [f"# {_md(name or 'run')} — {_md(info.get('run_id', run.path.name))}", "",
             f"State: **{_md(info.get('state', 'unknown'))}**, exit code {_md(info.get('exit_code'))}, "
             f"failures: {len(info.get('failures') or [])}", ""]
    df = analysis.load_samples(run)
    if df.empty or "test" not in df:
        return "\n".join([*lines, "No samples."]) + "\n"
    for test in dict.fromkeys(df["test"].dropna()):
        sub = df[df["test"] == test].dropna(axis=1, how="all")
        show = varying(sub, analysis.case_columns(sub))
        summary = analysis.summarize(sub, by=show)
        summary = summary[~summary["metric"].str.endswith("_tool")]
        lines += [f"## {_md(test)}", ""]
        headers = [("size" if c == "size_bytes" else c) for c in show] + \
            ["metric", "median", "95% CI", "cv", "n"]
        rows = [[*(label_text(c, r[c]) for c in show), f"{r['metric']} [{r['unit']}]", fmt(r["median"]),
                 f"{fmt(r['ci95_low'])} – {fmt(r['ci95_high'])}",
                 f"{r['cv'] * 100:.1f}%" if math.isfinite(r["cv"]) else "–", r["n"]]
                for r in summary.to_dict("records")]
        lines += [*_md_table(headers, rows), ""]
    return "\n".join(lines) + "\n"


def _compare(runs: Sequence[RunDir], threshold: float | None, workload: Workload | None) -> comparison.Comparison:
    if threshold is None:
        return comparison.compare(list(runs), workload=workload)
    return comparison.compare(list(runs), threshold=threshold, workload=workload)


def _scorecard_cell(cell: scorecard.Cell) -> str:
    """One run's cell as the HTML page shows it: figure, verdict, interval, n, source."""
    head = f"**{cell.text}**" if cell.best else cell.text
    bits = [f"{head} [{cell.verdict}]" if cell.verdict else head]
    bits += [x for x in (cell.interval, cell.n, cell.source) if x]
    return "; ".join(bits)


def scorecard_markdown(rows: Sequence[scorecard.Row], labels: Sequence[str]) -> list[str]:
    """The scorecard as a Markdown table: one row per criterion, a column per run, the best run
    in bold and the row's decision last."""
    return _md_table(["criterion", *labels, "best"],
                     [[r.title, *(_scorecard_cell(c) for c in r.cells), r.decision] for r in rows])


def _multi(runs: list[RunDir], threshold: float | None = None, workload: Workload | None = None) -> str:
    comp = _compare(runs, threshold, workload)
    lines = [f"# Comparison: {' vs '.join(_md(lab) for lab in comp.labels)}", "",
             f"Baseline: **{_md(comp.baseline)}**. {stats.METHOD}; within "
             f"{comp.threshold * 100:g}% is equivalent.", "",
             *(f"- {_md(s['text'])}" for s in comp.statements), ""]
    if comp.scorecard:
        lines += ["## Scorecard", "", *scorecard_markdown(comp.scorecard, comp.labels), ""]
    rows = [[r.get("test", ""), r["band"], r["metric"], r["verdict"], r["detail"],
             *(f"×{r[f'ratio[{lab}]']:.3f}" if r.get(f"ratio[{lab}]") is not None else "–"
               for lab in comp.labels)] for r in comp.headline()]
    lines += [*_md_table(["test", "band", "metric", "result", "evidence", *comp.labels], rows), ""]
    if comp.verdicts:
        lines += ["## Failed checks", ""]
        lines += [f"- {_md(v['run'])}: {_md(v.get('check'))} — {_md(v.get('message'))}"
                  for v in comp.verdicts]
        lines.append("")
    if comp.warnings:
        lines += ["## Telemetry warnings", ""]
        lines += [f"- {_md(w['run'])} / {_md(w.get('host'))}: {_md(w.get('kind'))} — "
                  f"{_md(w.get('message'))}" for w in comp.warnings]
        lines.append("")
    return "\n".join(lines) + "\n"


def comparison_json(runs: Sequence[RunDir], threshold: float | None = None,
                    workload: Workload | None = None) -> dict[str, Any]:
    """The comparison as JSON-ready data (``Comparison.to_dict``), with a format version."""
    comp = _compare(runs, threshold, workload)
    from benchharness.analysis import parity
    from benchharness.report import scaling_section
    from benchharness.report.compare import packet_rate_rows
    from benchharness.results import frameworks

    return {"format": "benchharness-comparison", "version": 2, **comp.to_dict(),
            "parity": parity.parity(list(runs), comp.labels).to_dict(),
            "scaling": scaling_section.comparison_json(comp.cells, comp.keys),
            "frameworks": frameworks.side_by_side(list(runs), comp.labels),
            "packet_rate": packet_rate_rows(list(runs), comp)}
