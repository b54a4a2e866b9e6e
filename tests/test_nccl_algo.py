"""NCCL_ALGO for the NIC curve: the allreduce suite measures NCCL_ALGO=Ring beside what NCCL picks
as deployed, and every sample says which (``nccl_algo``), parsed from a real published
``all_reduce_perf`` output run with NCCL_ALGO=RING (tests/fixtures/real/SOURCES)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.core.model import CommandResult, Host, Step
from benchharness.planning.plan import build_plan
from benchharness.results.cases import case_columns
from benchharness.tools.nccl_tests import NCCL, check_collective_params

RING_OUTPUT = Path(__file__).parent / "fixtures" / "real" / "nccl-tests" / "all_reduce_ring_banner_cut_to_in_place.txt"
GPU2 = Path(__file__).parent / "fixtures" / "inventories" / "gpucluster" / "gpu2.ini"
HOSTS = (Host("gpu01", "10.1.0.11", user="root", vars={"gpus": 8}), Host("gpu02", "10.1.0.12", user="root", vars={"gpus": 8}))


def _step(**params: object) -> Step:
    return Step(id="s1", test="allreduce", tool="nccl-tests", hosts=HOSTS, pattern="group",
                params={"op": "all_reduce", "require_network": "any", "require_gdr": "any", **params})


def _exported(step: Step) -> dict[str, str]:
    (cmd,) = NCCL.commands(step)
    argv = list(cmd.argv)
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv[:-1]) if a == "-x" and "=" in argv[i + 1])


def _labels(step: Step) -> set[str]:
    (cmd,) = NCCL.commands(step)
    res = CommandResult(command=cmd, rc=0, stdout=RING_OUTPUT.read_text(), stderr="", started=0.0, ended=1.0)
    rows = [r for r in NCCL.parse_step(step, [res]) if r.get("kind") == "summary"]
    assert rows and all(r["busbw_GBps"] > 0 for r in rows)
    return {r["nccl_algo"] for r in rows}


def test_ring_is_forced_and_named_on_every_sample() -> None:
    ring, default = _step(nccl_algo="Ring"), _step(nccl_algo="default")
    assert _exported(ring)["NCCL_ALGO"] == "Ring" and "NCCL_ALGO" not in _exported(default)
    assert _labels(ring) == {"Ring"} and _labels(default) == {"default"} and _labels(_step()) == {"default"}
    # a suite's own env wins, and the label says what NCCL was really told
    tree = _step(nccl_algo="Ring", env={"NCCL_ALGO": "Tree"})
    assert _exported(tree)["NCCL_ALGO"] == "Tree" and _labels(tree) == {"Tree"}


def test_allreduce_suite_plans_the_ring_curve_beside_the_default() -> None:
    inv = load_inventory(GPU2)
    plan = build_plan(load_suite("allreduce", {"repeat": "1"}), inv.hosts, inventory=inv)
    by_algo = {s.params["nccl_algo"]: s for s in plan.steps}
    assert set(by_algo) == {"default", "Ring"}
    assert _exported(by_algo["Ring"])["NCCL_ALGO"] == "Ring" and "NCCL_ALGO" not in _exported(by_algo["default"])
    assert "nccl_algo" in case_columns(["test", "size_bytes", "nccl_algo", "busbw_GBps"], hosts=False)


@pytest.mark.parametrize("bad", ["Ring; reboot", "", 3, "Ring,"])
def test_a_bad_nccl_algo_is_named(bad: object) -> None:
    with pytest.raises(ValueError, match="nccl_algo"):
        check_collective_params({"nccl_algo": bad})


def _cells(runs: dict[str, dict[str | None, float]]) -> object:
    """Comparison cells of an all-reduce per run and nccl_algo: busbw = level x size/1M, two sizes."""
    import pandas as pd

    rows = [{"run": run, "test": "allreduce", "metric": "busbw_GBps", "collective": "all_reduce",
             "placement": "out-of-place", "nccl_algo": algo, "size_bytes": size, "median": level * size / 2**20,
             "ratio": 1.0, "ratio_ci_low": 1.0, "ratio_ci_high": 1.0, "n": 5, "nranks": 16, "nhosts": 2}
            for run, levels in runs.items() for algo, level in levels.items() for size in (2**20, 2**21)]
    return pd.DataFrame(rows)


def test_the_projection_takes_the_ring_curve_every_run_measured() -> None:
    from benchharness.analysis.projection import collective_curves

    both = collective_curves(_cells({"A": {"default": 300.0, "Ring": 100.0}, "B": {"default": 200.0, "Ring": 50.0}}),
                             ["A", "B"], "all_reduce")
    assert both["A"]["curve"].busbw == (100.0, 200.0) and both["B"]["curve"].busbw == (50.0, 100.0)
    # a run from before the label (as deployed) against one with both: the shared default curve
    old = collective_curves(_cells({"A": {None: 300.0}, "B": {"default": 200.0, "Ring": 50.0}}), ["A", "B"], "all_reduce")
    assert old["A"]["curve"].busbw == (300.0, 600.0) and old["B"]["curve"].busbw == (200.0, 400.0)
