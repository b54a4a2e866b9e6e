"""Path spread judged on a stored run, against known truth: the shipped path-spread suite planned
on the 8-rail DGX inventory, with samples carrying exactly the planner's labels. Rail 0 of the
pair reaches 150 Gbit/s with one queue pair and 385 with eight (concentrated on few paths); the
other rails reach line rate with one. The all-reduce with one QP per connection sits flat at half
the hosts' aggregate (8 x 400 Gbit/s = 400 GB/s); with four it reaches 95%."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchharness.analysis.verdicts import evaluate
from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.execution.execute import _suite_snapshot
from benchharness.planning.plan import build_plan
from benchharness.results.store import RunDir

ROOT = Path(__file__).resolve().parents[1]
CONCENTRATED = {1: 150.0, 2: 260.0, 4: 330.0, 8: 385.0, 16: 386.0}
AGGREGATE_GBYTES = 8 * 400.0 / 8


def synthetic_run(path: Path) -> RunDir:
    suite = load_suite("path-spread")
    inventory = load_inventory(str(ROOT / "inventories" / "dgx-b200-8rail.ini"))
    plan = build_plan(suite, inventory.hosts, inventory=inventory)
    run = RunDir.create(path)
    samples: list[dict[str, Any]] = []
    for step in plan.steps:
        labels = step.sample_labels()
        if step.test == "qp-sweep":
            qps = int(step.params["qps"])
            bw = CONCENTRATED[qps] if "rail0" in str(labels.get("endpoints")) else 385.0
            samples.append({**labels, "size_bytes": 1 << 20, "perftest_test": "ib_write_bw",
                            "bw_avg_gbps": bw * (1 + 0.001 * step.repetition)})
        else:
            share = 0.5 if step.test == "allreduce-qps1" else 0.95
            for size in (1 << 30, 2 << 30, 4 << 30, 8 << 30):
                samples.append({**labels, "kind": "summary", "collective": "all_reduce", "placement": "out-of-place",
                                "size_bytes": size, "busbw_GBps": AGGREGATE_GBYTES * share})
    run.append_samples(samples)
    run.write_run_info({"run_id": path.name, "suite": _suite_snapshot(suite), "inventory": inventory.snapshot(),
                        "hosts": [h.name for h in inventory.hosts], "state": "complete", "tags": []})
    return run


def test_path_spread_verdicts_name_the_concentrated_rail_and_the_flat_collective(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "run")
    got = [v for v in evaluate(run, run.run_info()) if v.check == "path spread"]
    by_test: dict[str, list[Any]] = {}
    for v in got:
        by_test.setdefault(str(v.test), []).append(v)
    (qp,) = by_test["qp-sweep"]
    assert qp.status == "warn" and "rail0" in qp.message and "rail1" not in qp.message, qp
    assert "one queue pair reaches 150" in qp.message and 0.37 < (qp.value or 0) < 0.39
    (flat,) = by_test["allreduce-qps1"]
    assert flat.status == "warn" and "50% of capacity 400" in flat.message, flat
    (fine,) = by_test["allreduce-qps4"]
    assert fine.status == "pass", fine


def test_path_spread_key_is_checked(tmp_path: Path) -> None:
    import pytest

    from benchharness.core.errors import ConfigError

    bad = tmp_path / "s.yaml"
    bad.write_text("tests:\n  - name: t\n    tool: iperf3\n    path_spread: maybe\n")
    with pytest.raises(ConfigError, match=r"s.yaml:4.*path_spread: 'maybe' is not one of warn, fail"):
        load_suite(str(bad))
