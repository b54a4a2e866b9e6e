"""Known truth for capacities: the shipped acceptance suite, planned on the 8-rail DGX inventory,
judges synthetic runs whose samples carry exactly the labels the planner gives its steps.

A node whose bidirectional RDMA bandwidth is 40% of its capacity (2 x 400 Gbit/s per NIC) and
whose all-reduce bus bandwidth is 10% of its aggregate (8 x 400 Gbit/s = 400 GB/s) must fail; a
node at 95% of both must pass. Before capacities were derived, 320 Gbit/s bidirectional passed
80% of one direction's 400, and 40 GB/s passed 75% of one NIC's 50 GB/s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchharness.analysis.capacity import capacity_gbps, host_aggregate, is_bidirectional
from benchharness.analysis.verdicts import evaluate
from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.execution.execute import _suite_snapshot
from benchharness.planning.plan import build_plan
from benchharness.results.store import RunDir

ROOT = Path(__file__).resolve().parents[1]
BIDIR = "rdma-write-bw-bidir"
ALLREDUCE = "allreduce"
CAPACITY_BIDIR_GBPS = 2 * 400.0      # one NIC, both directions
AGGREGATE_GBYTES = 8 * 400.0 / 8     # eight NICs of 400 Gbit/s, in GB/s


def synthetic_run(path: Path, share: float) -> RunDir:
    """Samples for the bidirectional test and the all-reduce of the acceptance plan at ``share``
    of capacity; the run.json holds the suite and inventory as ``bench run`` writes them."""
    suite = load_suite("acceptance")
    inventory = load_inventory(str(ROOT / "inventories" / "dgx-b200-8rail.ini"))
    plan = build_plan(suite, inventory.hosts, inventory=inventory)
    run = RunDir.create(path)
    samples: list[dict[str, Any]] = []
    for step in plan.steps:
        if step.test == BIDIR:
            for size in (1 << 20, 8 << 20):
                samples.append({**step.sample_labels(), "size_bytes": size, "bidir": True,
                                "perftest_test": "ib_write_bw", "bw_avg_gbps": CAPACITY_BIDIR_GBPS * share})
        elif step.test == ALLREDUCE:
            for size in (256 << 20, 1 << 30, 8 << 30):
                samples.append({**step.sample_labels(), "kind": "summary", "collective": "all_reduce",
                                "placement": "out-of-place", "size_bytes": size,
                                "busbw_GBps": AGGREGATE_GBYTES * share})
    assert samples, "the acceptance plan has both tests"
    run.append_samples(samples)
    snapshot = _suite_snapshot(suite)
    snapshot["tests"] = [t for t in snapshot["tests"] if t["name"] in (BIDIR, ALLREDUCE)]
    for t in snapshot["tests"]:  # the line-rate checks only: baselines and peers are other questions
        t["checks"] = [c for c in t["checks"] if "line_rate" in str(c.get("min", ""))]
    snapshot["verdicts"] = None
    run.write_run_info({"run_id": path.name, "suite": snapshot, "inventory": inventory.snapshot(),
                        "hosts": [h.name for h in inventory.hosts], "state": "complete", "tags": []})
    return run


def line_rate_verdicts(run: RunDir) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {BIDIR: [], ALLREDUCE: []}
    for v in evaluate(run, run.run_info()):
        if v.test in out and ("line_rate" in v.check or "line rate" in v.check):
            out[v.test].append(v)
    return out


def test_a_node_at_40_percent_bidir_and_10_percent_allreduce_fails(tmp_path: Path) -> None:
    found = line_rate_verdicts(synthetic_run(tmp_path / "bad40", share=0.40))
    bidir = found[BIDIR]
    assert bidir and all(v.status == "fail" for v in bidir)
    # every rail of both hosts is named, each against 80% of 2 x 400 Gbit/s
    assert {(v.host, v.rail) for v in bidir} == {(f"dgx0{h}", f"rail{r}") for h in (1, 2) for r in range(8)}
    assert all(v.limit == pytest.approx(0.8 * 800.0) and v.value == pytest.approx(320.0) for v in bidir)
    assert all("2 x line rate 400 Gbit/s" in v.message for v in bidir)
    found10 = line_rate_verdicts(synthetic_run(tmp_path / "bad10", share=0.10))
    allreduce = found10[ALLREDUCE]  # two hosts: one verdict each, against each one's aggregate
    assert {v.host for v in allreduce} == {"dgx01", "dgx02"} and all(v.status == "fail" for v in allreduce)
    assert all(v.limit == pytest.approx(0.75 * 400.0) and v.value == pytest.approx(40.0) for v in allreduce)
    assert all("aggregate of the host's NICs 3200 Gbit/s" in v.message for v in allreduce)


def test_a_node_at_95_percent_passes(tmp_path: Path) -> None:
    found = line_rate_verdicts(synthetic_run(tmp_path / "good", share=0.95))
    assert found[BIDIR] and all(v.status == "pass" for v in found[BIDIR])
    allreduce = found[ALLREDUCE]
    assert len(allreduce) == 2 and all(v.status == "pass" and v.value == pytest.approx(380.0) for v in allreduce)


def test_capacity_rules() -> None:
    rates = {"a": 400.0, "a.rail0": 400.0, "a.rail1": 200.0, "b": 400.0, "b.rail0": 400.0, "b.rail1": 400.0}
    assert host_aggregate(rates, "a") == 600.0 and host_aggregate({"c": 100.0}, "c") == 100.0
    assert capacity_gbps(["a.rail1", "b.rail1"], rates, group=False, bidir=False)[0] == 200.0  # per-rail rate
    assert capacity_gbps(["a.rail0", "b.rail0"], rates, group=False, bidir=True)[0] == 800.0
    assert capacity_gbps(["a", "b"], rates, group=True, bidir=False)[0] == 600.0  # the smaller aggregate
    assert capacity_gbps(["a", "x"], rates, group=False, bidir=False) == (None, "line rate unknown")
    assert is_bidirectional({"bidir": True}, {}) and is_bidirectional({}, {"params": {"bidir": True}})
    assert not is_bidirectional({"bidir": False}, {"params": {"bidir": True}})
