"""A run's verdicts and headline metrics as Prometheus text exposition.

For node_exporter's textfile collector (``bench run ... prom=FILE``, ``bench export RUN prom=FILE``;
node_exporter reads ``*.prom`` files of its ``--collector.textfile.directory``), and optionally
pushed to a Pushgateway (``push=URL``). Written with ``prometheus_client`` (its registry, gauges,
``write_to_textfile`` - atomic - and ``push_to_gateway``), so the escaping of label values and the
format are the library's, not ours. Labels: ``suite``, ``test``, ``host``, ``rail``,
``nic_serial`` (and ``check`` on verdicts, ``metric`` on headline metrics).

Families:
- ``bench_verdict_status``: 0 pass, 1 warn, 2 fail, -1 info (not judged), one per verdict
- ``bench_verdict_value`` / ``bench_verdict_limit``: the evidence, where the verdict has it
- ``bench_metric_median``: the median of each headline metric (bandwidth, bus bandwidth, latency,
  message rate) per test, host and rail, over the run's summary samples
- ``bench_run_exit_code``: the run itself
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest, push_to_gateway, write_to_textfile

from benchharness.core.errors import StorageError
from benchharness.core.model import split_endpoint
from benchharness.results.store import RunDir

STATUS_VALUE = {"pass": 0, "warn": 1, "fail": 2, "info": -1}
HEADLINE = ("bw_avg_gbps", "busbw_GBps", "lat_p99_us", "lat_typical_us", "msg_rate_mpps")
LABELS = ("suite", "test", "host", "rail", "nic_serial")


def _serials(info: Mapping[str, Any], run: RunDir) -> dict[str, str]:
    from benchharness.results import runview
    from benchharness.results.nics import host_nics

    return {k: n.serial for k, n in host_nics(info, runview.read_facts(run)).items() if n.serial}


def registry_of(run: RunDir) -> CollectorRegistry:
    """A registry holding the run's verdicts and headline metrics."""
    info = run.run_info()
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {"name": info.get("suite")}
    suite_name = str((suite or {}).get("name") or "bench")
    serials = _serials(info, run)
    reg = CollectorRegistry()
    status = Gauge("bench_verdict_status", "Verdict of one check: 0 pass, 1 warn, 2 fail, -1 info (not judged)",
                   [*LABELS, "check"], registry=reg)
    value = Gauge("bench_verdict_value", "The observed value a verdict judged", [*LABELS, "check"], registry=reg)
    limit = Gauge("bench_verdict_limit", "The limit a verdict held the value to", [*LABELS, "check"], registry=reg)
    seen: set[tuple[str, ...]] = set()
    for v in info.get("verdicts") or []:
        if not isinstance(v, Mapping):
            continue
        host, rail = str(v.get("host") or ""), str(v.get("rail") or "")
        serial = serials.get(f"{host}.{rail}" if rail else host) or serials.get(host, "")
        labels = (suite_name, str(v.get("test") or ""), host, rail, serial, str(v.get("check") or ""))
        if labels in seen:  # one series per label set: the first (roll-ups come first) wins
            continue
        seen.add(labels)
        status.labels(*labels).set(STATUS_VALUE.get(str(v.get("status")), -1))
        for gauge, key in ((value, "value"), (limit, "limit")):
            if isinstance(v.get(key), int | float) and not isinstance(v.get(key), bool):
                gauge.labels(*labels).set(float(v[key]))
    medians = Gauge("bench_metric_median", "Median of a headline metric over the run's summary samples",
                    [*LABELS, "metric"], registry=reg)
    values: dict[tuple[str, ...], list[float]] = {}
    for rec in run.summary_samples():
        for metric in HEADLINE:
            x = rec.get(metric)
            if isinstance(x, int | float) and not isinstance(x, bool):
                who = str(rec.get("endpoints") or rec.get("hosts") or rec.get("host") or "")
                host, rail_name = split_endpoint(who) if "," not in who else (who, None)
                serial = serials.get(who, "") if "," not in who else ""
                values.setdefault((suite_name, str(rec.get("test") or ""), host, rail_name or "", serial, metric),
                                  []).append(float(x))
    for series, xs in values.items():
        medians.labels(*series).set(statistics.median(xs))
    Gauge("bench_run_exit_code", "Exit code of the run (0 pass, 1 a verdict failed, 3 steps failed)",
          ["suite", "run_id"], registry=reg).labels(suite_name, str(info.get("run_id") or run.path.name)).set(
        float(info.get("exit_code") or 0))
    return reg


def exposition(run: RunDir) -> str:
    """The run as Prometheus text exposition."""
    return generate_latest(registry_of(run)).decode("utf-8")


def write_textfile(run: RunDir, out: Path) -> Path:
    """Write the run's exposition to ``out`` for node_exporter's textfile collector (atomically)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(out), registry_of(run))
    return out


def push(run: RunDir, gateway: str, job: str = "bench", timeout_s: float = 30.0) -> None:
    """Push the run's exposition to a Pushgateway (``http://host:9091``), grouped by suite (an
    HTTP PUT to ``/metrics/job/<job>/suite/<suite>``, replacing that group's metrics). A gateway
    that cannot be reached or refuses is a StorageError naming it; the run itself stays stored."""
    info = run.run_info()
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {"name": info.get("suite")}
    try:
        push_to_gateway(gateway, job=job, registry=registry_of(run), timeout=timeout_s,
                        grouping_key={"suite": str((suite or {}).get("name") or "bench")})
    except (OSError, ValueError) as exc:  # urllib's URLError / HTTPError are OSErrors
        raise StorageError(f"push={gateway}: the Pushgateway did not take the metrics: {exc}") from None
