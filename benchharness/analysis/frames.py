"""Tidy DataFrames from run directories, per-case statistics, line-rate share and run labels.

pandas and numpy are imported inside functions so that ``bench --help`` stays fast.

Column conventions (see ``benchharness.results.store``): a numeric column whose name ends in a unit
suffix (``_gbps``, ``_GBps``, ``_us`` ...) is a **metric**; every other column is a **label**.
Statistics are taken per *case*: the labels without the repetition bookkeeping
(``step``, ``rep``, ``round``, ``kind``, time offsets).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.core.metrics import gbps_factor, is_metric_name, unit_of
from benchharness.results import cases, runview
from benchharness.results.columnar import flat_label
from benchharness.results.store import RunDir, json_loader

CASE_KEYS = "case_keys"
"""``DataFrame.attrs`` entry holding the case-defining labels of the run(s) a frame came from."""

if TYPE_CHECKING:
    import pandas as pd


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Numeric columns that are metrics."""
    import pandas as pd

    return [c for c in df.columns
            if is_metric_name(str(c)) and pd.api.types.is_numeric_dtype(df[c])
            and not pd.api.types.is_bool_dtype(df[c])]


def label_columns(df: pd.DataFrame) -> list[str]:
    """Every column that is not a metric (and not a time offset such as ``t_start_s``)."""
    metrics = set(metric_columns(df))
    return [c for c in df.columns if c not in metrics and not str(c).endswith("_s")]


def case_columns(df: pd.DataFrame, hosts: bool = True) -> list[str]:
    """Labels that define a case (``results.cases``): test, swept parameters, size and row labels
    of the run(s) the frame was loaded from, and host labels unless ``hosts`` is False."""
    return cases.case_columns(df.columns, df.attrs.get(CASE_KEYS), hosts=hosts)


def _is_interval(line: str) -> bool:
    # The store writes compact JSON; spaced JSON (hand-made files) is accepted too.
    return "interval" in line and ('"kind":"interval"' in line or '"kind": "interval"' in line)


def _is_telemetry(line: str) -> bool:
    """Counter-delta rows of the telemetry, which no test table or chart reads."""
    return '"kind":"counters"' in line or '"kind": "counters"' in line


def _field(line: str, name: str) -> str:
    """A string field's raw text, found without parsing the JSON line."""
    k = line.find(f'"{name}"')
    if k < 0:
        return ""
    q1 = line.find('"', line.find(":", k) + 1)
    q2 = line.find('"', q1 + 1)
    return line[q1 + 1:q2] if q1 >= 0 and q2 > q1 else ""


def _split_lines(run: RunDir, intervals: bool, steps_per_test: int | None) -> tuple[list[str], list[str]]:
    """Summary lines and (selected) interval lines of ``samples.jsonl``, in one pass."""
    path = run.path / "samples.jsonl"
    summary: list[str] = []
    chosen: list[str] = []
    if not path.exists():
        return summary, chosen
    steps: dict[str, list[str]] = {}
    last_step, last_keep = None, True
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not _is_interval(line):
                if not _is_telemetry(line):
                    summary.append(line)
                continue
            if not intervals:
                continue
            if steps_per_test is not None:
                if last_step is not None and f'"step":"{last_step}"' in line:
                    step = last_step  # the common case, without scanning the line for fields
                else:
                    step = _field(line, "step")
                if step != last_step:  # interval lines of a step are contiguous: decide once
                    seen = steps.setdefault(_field(line, "test"), [])
                    keep = step in seen or len(seen) < steps_per_test
                    if keep and step not in seen:
                        seen.append(step)
                    last_step, last_keep = step, keep
                if not last_keep:
                    continue
            chosen.append(line)
    return summary, chosen


def _parse(lines: Iterable[str]) -> list[dict[str, Any]]:
    loads = json_loader()
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except ValueError:  # a line cut by a crash: the rest is still good
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records


def _finish(run: RunDir, df: pd.DataFrame, label: str | None) -> pd.DataFrame:
    if "kind" not in df.columns:
        df["kind"] = "summary"
    df["kind"] = df["kind"].fillna("summary")
    # Telemetry counter rows and tool footers live in the same file; they are not measurements
    # of the test and must not add columns to its tables.
    measured = df["kind"].isin(("summary", "interval"))
    if not measured.all():
        df = df[measured].dropna(axis=1, how="all").copy()
    for col in df.columns:
        if df[col].dtype == object:
            first = df[col].first_valid_index()  # one look, not a scan of every row
            if first is not None and isinstance(df[col].at[first], list | tuple | dict):
                df[col] = df[col].map(flat_label)
    info = run.run_info()
    df["run_id"] = str(info.get("run_id") or run.path.name)
    df["run"] = label or run_label([info])[0]
    df.attrs[CASE_KEYS] = cases.run_case_keys(info)
    return df


def _columnar(run: RunDir, kinds: Sequence[str], tests: Sequence[str] | None,
              columns: Sequence[str] | None, steps: Sequence[str] | None = None,
              row_groups: Sequence[int] | None = None) -> pd.DataFrame | None:
    """Rows of ``kinds`` (and ``tests``, ``steps``) from the columnar copy, only ``columns``
    (None: all) and only columns some selected row has; None when there is no columnar copy."""
    from benchharness.results import columnar

    if columnar.ensure(run) is None:
        return None
    filters: list[columnar.Filter] = [("kind", "in", list(kinds))]
    if tests is not None:
        filters.append(("test", "in", list(tests)))
    if steps is not None:
        filters.append(("step", "in", list(steps)))
    present = columnar.present_columns(run, kinds, tests)  # columns no selected row has stay unread
    wanted = present if columns is None else list(dict.fromkeys(["kind", *columns]))
    table = columnar.read(run, wanted, filters, row_groups)
    keep = [n for n in table.column_names if table.column(n).null_count < table.num_rows]
    if keep != table.column_names:
        table = table.select(keep)
    return columnar.to_pandas(table)


def test_names(run: RunDir) -> list[str]:
    """Tests that have summary rows, in the order they first appear in the run."""
    from benchharness.results import columnar

    if columnar.ensure(run) is not None:
        import pyarrow.compute as pc

        table = columnar.read(run, ["test"], [("kind", "=", "summary")])
        if "test" not in table.column_names:
            return []
        return [str(t) for t in pc.unique(table.column("test")).to_pylist() if t is not None]
    df = load_samples(run)
    return [str(t) for t in dict.fromkeys(df["test"].dropna())] if "test" in df else []


def load_samples(run: RunDir, intervals: bool = False, label: str | None = None,
                 columns: Sequence[str] | None = None, tests: Sequence[str] | None = None) -> pd.DataFrame:
    """Samples of one run as a DataFrame, summary rows only (``intervals=True``: every row).

    Adds ``run_id`` and ``run`` (a readable label; ``label`` overrides it). List-valued labels
    (``hosts``) become comma-joined strings so that they can be grouped. Read from the columnar
    copy (``results.columnar``, built or rebuilt when missing or stale): only ``columns`` (None:
    all) of the rows of ``tests`` (None: all) are decoded. Without pyarrow, or where the copy
    cannot be written, the JSON lines are read (interval lines skipped before parsing).
    """
    kinds = ("summary", "interval") if intervals else ("summary",)
    df = _columnar(run, kinds, tests, columns)
    if df is None:
        summary, chosen = _split_lines(run, intervals, None)
        df = _select(_parse(summary + chosen), tests, columns)
    return _finish(run, df, label)


def load_run(run: RunDir, steps_per_test: int | None = 8, label: str | None = None,
             tests: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(summary rows, interval rows)`` of one run (of ``tests``; None: all); with
    ``steps_per_test``, intervals of only the first that many steps per test (enough for an
    over-time chart): the other steps' interval rows are never decoded."""
    summary = _columnar(run, ("summary",), tests, None)
    if summary is not None:
        from benchharness.results import columnar

        steps, groups = None, None
        if steps_per_test is not None:
            first, groups = columnar.first_steps(run, "interval", tests, steps_per_test)
            steps = [s for mine in first.values() for s in mine]
        chosen = _columnar(run, ("interval",), tests, None, steps, groups)
        assert chosen is not None
        return _finish(run, summary, label), _finish(run, chosen, label)
    lines, picked = _split_lines(run, True, steps_per_test)
    return (_finish(run, _select(_parse(lines), tests, None), label),
            _finish(run, _select(_parse(picked), tests, None), label))


def _select(records: list[dict[str, Any]], tests: Sequence[str] | None,
            columns: Sequence[str] | None) -> pd.DataFrame:
    import pandas as pd

    if tests is not None:
        wanted = set(tests)
        records = [r for r in records if r.get("test") in wanted]
    df = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    if columns is not None:
        df = df[[c for c in dict.fromkeys(["kind", *columns]) if c in df.columns]]
    return df


def summarize(df: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Statistics per case and metric, in long form.

    Columns: the ``by`` labels (default: ``case_columns(df)``), ``metric``, ``unit``, ``n``,
    ``median``, ``mean``, ``min``, ``max``, ``stdev``, ``cv`` (stdev/mean), ``ci95_low``,
    ``ci95_high`` and ``ci_coverage``. The CI is the distribution-free order-statistic interval
    of the median (see ``benchharness.analysis.stats``); below 6 samples it is [min, max] and
    ``ci_coverage`` tells its true, lower coverage.
    """
    import numpy as np
    import pandas as pd

    from benchharness.analysis.stats import median_ci_rank

    by = list(by) if by is not None else case_columns(df)
    metrics = [m for m in metric_columns(df) if m not in by]
    columns = [*by, "metric", "unit", "n", "median", "mean", "min", "max", "stdev", "cv",
               "ci95_low", "ci95_high", "ci_coverage"]
    if df.empty or not metrics:
        return pd.DataFrame(columns=columns)
    if by:
        try:
            grouped = df.groupby(by, dropna=False, sort=True)
            codes = grouped.ngroup().to_numpy()
        except TypeError:  # mixed types in one label column: keep first-seen order
            grouped = df.groupby(by, dropna=False, sort=False)
            codes = grouped.ngroup().to_numpy()
        keys = df[by].iloc[_first_rows(codes)].reset_index(drop=True)
    else:
        codes = np.zeros(len(df), dtype=np.int64)
        keys = pd.DataFrame(index=[0])
    n_groups = len(keys)
    parts = []
    for metric in metrics:
        values = df[metric].to_numpy(dtype=float, na_value=np.nan)
        mask = ~np.isnan(values)
        c, v = codes[mask], values[mask]
        order = np.lexsort((v, c))
        c, v = c[order], v[order]
        n = np.bincount(c, minlength=n_groups)
        present = np.flatnonzero(n)
        if present.size == 0:
            continue
        starts = (np.cumsum(n) - n)[present]
        count = n[present]
        median = (v[starts + (count - 1) // 2] + v[starts + count // 2]) / 2
        mean = np.bincount(c, weights=v, minlength=n_groups)[present] / count
        dev = v - np.repeat(mean, count)
        var = np.bincount(np.repeat(np.arange(present.size), count), weights=dev * dev)
        with np.errstate(invalid="ignore", divide="ignore"):
            stdev = np.where(count > 1, np.sqrt(var / np.maximum(count - 1, 1)), np.nan)
            cv = np.where(mean != 0, stdev / np.abs(mean), np.nan)
        ranks = {int(k): median_ci_rank(int(k)) for k in np.unique(count)}
        rank = np.array([ranks[int(k)][0] for k in count])
        cover = np.array([ranks[int(k)][1] for k in count])
        low = np.where(count > 1, v[starts + np.maximum(rank - 1, 0)], np.nan)
        high = np.where(count > 1, v[starts + count - np.maximum(rank, 1)], np.nan)
        part = keys.iloc[present].reset_index(drop=True)
        part = part.assign(metric=metric, unit=unit_of(metric), n=count, median=median, mean=mean,
                           min=v[starts], max=v[starts + count - 1], stdev=stdev, cv=cv,
                           ci95_low=low, ci95_high=high,
                           ci_coverage=np.where(count > 1, cover, np.nan))
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def _first_rows(codes: Any) -> Any:
    import numpy as np

    _, first = np.unique(codes, return_index=True)
    return first


def line_rate_share(df: pd.DataFrame, run_info: Mapping[str, Any],
                    facts: Mapping[str, Any] | None = None,
                    run: RunDir | None = None) -> pd.DataFrame:
    """Add ``<metric>_line_rate_pct`` for each bandwidth metric present, against the capacity the
    verdicts' ``line_rate`` checks use (``analysis/capacity.py``).

    A row's hosts are its ``endpoints`` (per-rail rows: each NIC's own rate), else its ``server``,
    ``client``, ``host``, ``pair``, ``hosts`` labels; rates are inventory ``nic_line_rate_gbps``
    (per NIC), else the link speed detected in ``telemetry/facts`` (pass ``facts`` or ``run``).
    A pair is held to its slower NIC, twice that when both directions are summed (``bidir``); a
    collective (pattern ``group``/``scaling``, or more than two hosts) to its smallest host's
    aggregate of rails. Rows whose hosts have no known rate get NaN. GB/s count 8 bits per byte.
    """
    import numpy as np

    from benchharness.analysis.capacity import GROUP_PATTERNS, capacity_gbps, is_bidirectional
    from benchharness.core.model import split_endpoint

    if facts is None:
        facts = runview.read_facts(run) if run is not None else {}
    rates = runview.line_rates(run_info, facts)
    out = df.copy()
    host_cols = [c for c in ("endpoints", "server", "client", "host", "pair", "hosts") if c in out.columns]
    what_cols = [c for c in ("test", "pattern", "bidir") if c in out.columns]
    line_rate = np.full(len(out), np.nan)
    if rates and host_cols:
        known = list(rates)
        suite = run_info.get("suite")
        tests = {str(t.get("name")): t for t in (suite.get("tests") or [] if isinstance(suite, Mapping) else [])
                 if isinstance(t, Mapping)}
        cols = host_cols + what_cols
        codes = out.groupby(cols, dropna=False, sort=False).ngroup().to_numpy()
        combos = out[cols].iloc[_first_rows(codes)].to_numpy()
        per_combo = np.full(len(combos), np.nan)
        for i, combo in enumerate(combos):
            row = dict(zip(cols, combo, strict=True))
            names: list[str] = []
            ends = row.get("endpoints") if isinstance(row.get("endpoints"), str) and row.get("endpoints") else None
            for part in [ends] if ends else [row[c] for c in host_cols]:
                if isinstance(part, (str, list | tuple)):
                    names.extend(n for n in runview.split_hosts(part, known) if n not in names)
            test = tests.get(str(row.get("test")), {})
            pattern = row.get("pattern") if isinstance(row.get("pattern"), str) else test.get("pattern")
            group = pattern in GROUP_PATTERNS or len({split_endpoint(n)[0] for n in names}) > 2
            case = {"bidir": row["bidir"]} if isinstance(row.get("bidir"), (bool, str)) else {}
            rate, _ = capacity_gbps(names, rates, group=group, bidir=is_bidirectional(case, test))
            per_combo[i] = rate if rate is not None else np.nan
        line_rate = per_combo[codes]
    for metric in metric_columns(df):
        factor = gbps_factor(metric)
        if factor is None or metric.endswith("_tool"):
            continue
        out[f"{metric}_line_rate_pct"] = out[metric].to_numpy(dtype=float) * factor / line_rate * 100.0
    return out


def run_label(run_infos: Sequence[Mapping[str, Any]],
              facts: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """Readable labels for runs: the ``label=`` given at run time, else the NIC model and firmware
    (as the probe read them when ``facts``, each run's host -> probe facts, are given; else from the
    inventory), then whatever else differs between them: host group, suite, run labels, date. A
    single run is labelled by its suite (and NIC model). Reports show the date as a second line."""
    facts = list(facts) if facts is not None else [{} for _ in run_infos]
    dims = [_dimensions(info, f) for info, f in zip(run_infos, facts, strict=True)]
    if not dims:
        return []
    given = [str((info.get("labels") or {}).get("label") or "") for info in run_infos]
    if all(given) and len(set(given)) == len(given):  # names the user chose (`label=`) win
        return given
    if len(dims) == 1:
        d = dims[0]
        parts = [d.get("suite", ""), d.get("nic_model", "")]
        return [" · ".join(p for p in parts if p) or str(run_infos[0].get("run_id", "run"))]
    order = ["nic_model", "nic_firmware", "group", "suite", "labels", "date", "time"]
    differing = [k for k in order if len({d.get(k) for d in dims}) > 1]
    if "date" in differing and len(differing) > 1:
        differing.remove("date")
    if "time" in differing and differing != ["time"]:
        differing.remove("time")
    if "date" in differing or "time" in differing:
        differing = [k for k in ("date", "time") if len({d.get(k) for d in dims}) > 1][:1] + \
            [k for k in differing if k not in ("date", "time")]
    labels = []
    for info, d, mine in zip(run_infos, dims, given, strict=True):
        if mine and given.count(mine) == 1:
            labels.append(mine)
            continue
        # what was tested leads: the NIC model and firmware, then what else tells runs apart
        nic = [d["nic_model"]] if d.get("nic_model") else []
        nic += [f"fw {d['nic_firmware']}"] if d.get("nic_firmware") else []
        rest = [k for k in differing if k not in ("nic_model", "nic_firmware")] if nic else differing
        parts = nic + [("fw " if k == "nic_firmware" else "") + str(d.get(k) or "?") for k in rest]
        labels.append(" · ".join(parts) or str(info.get("run_id", "run")))
    for dim in ("time", "run_id"):  # only runs that share a name get more of one, where it tells them apart
        extra = [str(d.get(dim) or info.get(dim) or i) for i, (d, info) in enumerate(zip(dims, run_infos, strict=True))]
        apart = {lab for lab in labels if labels.count(lab) > 1 and
                 len({e for e, other in zip(extra, labels, strict=True) if other == lab}) > 1}
        labels = [f"{lab} · {e}" if lab in apart else lab for lab, e in zip(labels, extra, strict=True)]
    if len(set(labels)) < len(labels):  # the same run twice: number them
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    return labels


def _dimensions(info: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> dict[str, str]:
    inv = runview.inventory_hosts(info)
    used = [h for h in runview.run_host_names(info) if h in inv] or list(inv)

    def joined(key: str) -> str:
        values = sorted({str(inv[h][key]) for h in used if inv[h].get(key) not in (None, "")})
        return "+".join(values)

    model, firmware = joined("nic_model"), joined("nic_firmware")
    if facts:  # the probe's reading (ethtool -i) over the inventory's word
        from benchharness.results.nics import host_nics

        found = list(host_nics(info, facts).values())
        model = "+".join(sorted({n.model for n in found if n.model})) or model
        firmware = "+".join(sorted({n.firmware for n in found if n.firmware})) or firmware
    groups: set[str] | None = None
    for host in used:
        mine = {str(g) for g in inv[host].get("groups", []) or [] if g not in ("all", "ungrouped")}
        groups = mine if groups is None else groups & mine
    suite = info.get("suite")
    started = info.get("started")
    stamp = ""
    if isinstance(started, int | float):
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(started))
    elif started:
        stamp = str(started).replace("T", " ")[:16]
    labels = info.get("labels") or {}
    return {
        "nic_model": model, "nic_firmware": firmware,
        "group": "+".join(sorted(groups or [])),
        "suite": str(suite.get("name", "")) if isinstance(suite, Mapping) else str(suite or ""),
        "labels": ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
        if isinstance(labels, Mapping) else str(labels),
        "date": stamp[:10], "time": stamp,
    }
