"""NIC and optics price and power in the training projection's USD and MWh (``analysis/nic_cost.py``,
``projection.NicCost``): figures computed by hand, the inventory variables of two compared runs,
a run that lacks them, and NIC power measured by the real sampler over hwmon."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sampler_lines import HostTree, real_lines
from torch_runs import captured, captured_run

from benchharness.analysis import nic_cost
from benchharness.analysis import projection as pj
from benchharness.analysis.comparison import compare
from benchharness.config.inventory_vars import validate_bench_vars
from benchharness.config.workloads import load_workload, workload_from
from benchharness.core.errors import ConfigError
from benchharness.results.store import RunDir

TREES = Path(__file__).parent / "fixtures" / "telemetry" / "trees"
PROBE = Path(pj.__file__).parents[1] / "onhost" / "probe.py"


def _one_node_year() -> pj.Workload:
    """One 8-GPU node, no data parallelism (no all-reduce), 3.6 s per step, 8,766,000 steps: exactly
    8,766 hours (one year of 365.25 days), so every NIC figure can be worked out by hand."""
    return workload_from({"name": "year", "parameters": "7B", "gpus": 8, "gpus_per_node": 8,
                          "parallel": {"data": 1, "tensor": 8, "pipeline": 1}, "compute_ms_per_step": 3600,
                          "steps": 8_766_000, "gpu_hour_usd": 2.5, "node_power_kw": 10.2}, "w.yaml")


def test_nic_price_and_power_enter_usd_and_mwh_as_computed_by_hand() -> None:
    w = _one_node_year()
    curve = pj.Curve((1e6, 1e9), (45.0, 45.0), 2)
    plain = pj.project(w, curve)
    assert plain.step_ms == 3600 and plain.gpu_hours == pytest.approx(8766 * 8)
    assert plain.usd == pytest.approx(175_320.0)  # 8,766 h x 8 GPUs x $2.5
    assert plain.mwh == pytest.approx(89.4132)  # 8,766 h x 10.2 kW
    # $1,500 NIC + one $700 optic, 25 W + 12 W, on each of the node's 8 NICs
    got = pj.project(w, curve, nic=pj.NicCost(2200.0, 37.0))
    assert got.step_ms == plain.step_ms and got.days == plain.days
    assert got.nic_capex_usd == pytest.approx(17_600.0)  # 8 x $2,200
    assert got.nic_usd == pytest.approx(3_520.0)  # one year of a 5-year service life
    assert got.usd == pytest.approx(175_320.0 + 3_520.0)
    assert got.nic_mwh == pytest.approx(2.594736)  # 8,766 h x 8 x 37 W
    assert got.mwh == pytest.approx(89.4132 + 2.594736)
    # a 4-year service life charges a quarter of the price per year
    four = workload_from({"name": "y4", "parameters": "7B", "gpus": 8, "gpus_per_node": 8,
                          "parallel": {"data": 1, "tensor": 8, "pipeline": 1}, "compute_ms_per_step": 3600,
                          "steps": 8_766_000, "nic_service_years": 4}, "w.yaml")
    assert pj.project(four, curve, nic=pj.NicCost(2200.0, None)).nic_usd == pytest.approx(4_400.0)
    with pytest.raises(ConfigError, match="nic_service_years > 0"):
        workload_from({"name": "x", "parameters": "1B", "gpus": 8, "compute_ms_per_step": 1, "steps": 1,
                       "nic_service_years": 0}, "w.yaml")


def test_two_runs_whose_nics_differ_differ_by_the_hand_computed_dollars_and_energy() -> None:
    w = _one_node_year()
    flat = pj.Curve((1e6, 1e9), (45.0, 45.0), 2)
    entry = {"curve": flat, "test": "t", "sizes": [1e6, 1e9], "ratio": [1.0, 1.0], "ratio_low": [1.0, 1.0],
             "ratio_high": [1.0, 1.0]}
    nics = {"A": pj.NicCost(1800.0, 30.0, "inventory", "inventory"),
            "B": pj.NicCost(2200.0, 37.0, "inventory", "inventory")}
    used, notes = pj.nic_terms(nics, ["A", "B"])
    rows = pj.compare_projection(w, {"A": entry, "B": entry}, ["A", "B"], nics=used)
    b = rows[1]
    assert b["delta_days"] == 0
    assert b["delta_usd"] == pytest.approx(8 * 400 / 5)  # 8 NICs, $400 dearer, a fifth of it this year
    assert b["delta_mwh"] == pytest.approx(8766 * 8 * 7 / 1e6)
    assert notes == ["NICs and optics in A: $1,800 per NIC (inventory) and 30 W per NIC (inventory)",
                     "NICs and optics in B: $2,200 per NIC (inventory) and 37 W per NIC (inventory)"]
    text = pj.projection_sentence(w, b, "A", rows[0])
    assert "NICs and optics included: $2,200 and 37 W per NIC in B, $1,800 and 30 W in A" in text


def test_a_figure_one_run_lacks_enters_no_run(tmp_path: Path) -> None:
    nics = {"A": pj.NicCost(1800.0, 30.0, "inventory nic_price_usd", "inventory nic_power_w"),
            "B": pj.NicCost(None, 25.0, "", "measured")}
    used, notes = pj.nic_terms(nics, ["A", "B"])
    assert used["A"].price_usd is None and used["B"].price_usd is None
    assert (used["A"].power_w, used["B"].power_w) == (30.0, 25.0)
    assert "NIC and optics price left out of every run's projection: none for B " \
           "(inventory nic_price_usd / optic_price_usd)" in notes
    _, none = pj.nic_terms({}, ["A", "B"])
    assert none == ["NIC and optics price not in the projection: no run has it (inventory nic_price_usd / "
                    "optic_price_usd)", "NIC and optics power not in the projection: no run has it (inventory "
                    "nic_power_w / optic_power_w, or measured NIC power)"]


def _with_inventory(run: RunDir, label: str, hvars: dict) -> RunDir:
    hosts = {h: {"vars": validate_bench_vars(h, dict(hvars), lambda var: ("inventory", None))} for h in ("h1", "h2", "h3")}
    run.write_run_info({**run.run_info(), "labels": {"label": label}, "inventory": {"hosts": hosts}})
    return run


def test_bench_compare_puts_each_runs_inventory_nics_into_usd_and_mwh_and_says_where_from(tmp_path: Path) -> None:
    """Two runs of the same captured all-reduce curves (so the days agree) on NICs whose inventory
    price and power differ: the dollars and MWh differ by exactly the NICs' share."""
    outputs = [captured(f"all_reduce_200mbit_r{r}.txt") for r in range(3)]
    a = _with_inventory(captured_run(tmp_path / "a", "a", outputs), "A",
                        {"nic_price_usd": "1500", "optic_price_usd": 700, "nic_power_w": 25, "optic_power_w": 12})
    b = _with_inventory(captured_run(tmp_path / "b", "b", outputs), "B",
                        {"nic_price_usd": 1200, "optic_price_usd": 600, "optics_per_nic": 2, "nic_power_w": 20,
                         "optic_power_w": 10})
    comp = compare([a, b])
    w = load_workload("llama-70b-1024")
    ra, rb = comp.projection["rows"]
    assert ra["days"] == rb["days"]
    assert (ra["nic_price_usd"], rb["nic_price_usd"], ra["nic_power_w"], rb["nic_power_w"]) == (2200, 2400, 37, 40)
    hours = ra["gpu_hours"] / w.gpus
    fleet = 128 * 8
    assert hours > 5 * 8766  # 626 s steps on the lab's 200 Mbit/s links
    assert rb["delta_usd"] == pytest.approx(fleet * 200)
    assert rb["delta_mwh"] == pytest.approx(hours * fleet * 3 / 1e6)
    assert ra["nic_price_source"] == "inventory nic_price_usd 1,500 + 1 x inventory optic_price_usd 700"
    assert rb["nic_power_source"] == "inventory nic_power_w 20 + 2 x inventory optic_power_w 10"
    (sentence,) = [s["text"] for s in comp.statements if s["decision"] == "projection"]
    assert "NICs and optics included: $2,400 and 40 W per NIC in B, $2,200 and 37 W in A" in sentence
    (fleet_note,) = [n for n in comp.projection["notes"] if n.startswith("1,024 NICs")]
    assert fleet_note.startswith("1,024 NICs with their optics (8 per node, a 5-year service life): A $2.25M to buy, ")
    # the lab's slow curve makes the run longer than the service life: it is charged the price, no more
    assert ra["nic_usd"] == pytest.approx(fleet * 2200)
    # the scorecard's price row reads the same NIC-with-optics figure, from the same place
    price = next(r for r in comp.scorecard if r.key == "price")
    assert [(c.value, c.source) for c in price.cells] == [
        (2200, "inventory nic_price_usd 1,500 + 1 x inventory optic_price_usd 700"),
        (2400, "inventory nic_price_usd 1,200 + 2 x inventory optic_price_usd 600")]
    assert price.best == "A"
    doc = comp.to_dict()["projection"]["rows"]
    assert doc[1]["nic_price_source"].startswith("inventory nic_price_usd 1,200")
    from benchharness.report.charts import fmt
    from benchharness.report.compare import render_comparison

    page = render_comparison([a, b], tmp_path / "c.html").read_text(encoding="utf-8")
    assert "of which NICs and optics (USD / MWh)" in page
    assert f"{fmt(rb['nic_usd'])} / {fmt(rb['nic_mwh'])}" in page
    assert "inventory nic_price_usd 1,200 + 2 x inventory optic_price_usd 600" in page


def test_inventory_refuses_a_negative_optic_power() -> None:
    with pytest.raises(ConfigError, match=r"host h1: optic_power_w=-3 is not valid"):
        validate_bench_vars("h1", {"optic_power_w": -3}, lambda var: ("inventory", None))


def test_measured_nic_power_replaces_the_inventory_figure(tmp_path: Path) -> None:
    """The real probe reads the NIC's driver (mlx5_core) from a stored tree; the real sampler reads
    an hwmon power sensor of chip mlx5 (18.5 W, then 21.5 W); the run's NIC power is their mean,
    plus the inventory's optic, and the source says measured."""
    tree = tmp_path / "tree"
    shutil.copytree(TREES / "healthy", tree, symlinks=True)
    facts = json.loads(subprocess.run([sys.executable, str(PROBE), "--root", str(tree), "--no-commands"],
                                      capture_output=True, text=True, check=True, timeout=60).stdout)
    host = HostTree(tmp_path / "h1")
    mon = host.root / "sys" / "class" / "hwmon" / "hwmon7"
    mon.mkdir(parents=True)
    (mon / "name").write_text("mlx5\n")
    (mon / "power1_label").write_text("asic\n")
    (mon / "power1_input").write_text("18500000\n")
    lines = real_lines(host, 1000.0, 1.0, [{"busy": [0.5] * 4, "gbps": 10.0}])
    (mon / "power1_input").write_text("21500000\n")
    lines += real_lines(host, 1001.0, 1.0, [{"busy": [0.5] * 4, "gbps": 10.0}])
    run = RunDir.create(tmp_path / "run")
    run.write_json("telemetry/facts/h1.json", facts)
    run.write_text("telemetry/samples/0000-t-h1-h2-r0/h1.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    info = {"hosts": ["h1"], "inventory": {"hosts": {"h1": {"vars": {"nic_power_w": 99, "optic_power_w": 12}}}}}
    got = nic_cost.run_nic_cost(run, info)
    assert got.power_w == pytest.approx(20.0 + 12.0)
    assert got.power_source == ("measured: hwmon mlx5 power, mean of 1 NIC-steps on 1 hosts + "
                                "1 x inventory optic_power_w 12")
    assert got.price_usd is None and got.price_source == ""
    # a sensor of another chip is not the NIC's: the inventory figure stays
    (mon / "name").write_text("coretemp\n")
    other = real_lines(host, 1002.0, 1.0, [{"busy": [0.5] * 4}])
    run.write_text("telemetry/samples/0000-t-h1-h2-r0/h1.jsonl", "".join(json.dumps(x) + "\n" for x in other))
    assert nic_cost.run_nic_cost(run, info).power_w == pytest.approx(99 + 12)


def test_gb200_trays_and_mi355x_nodes_carry_their_own_power_and_rails() -> None:
    """The shipped GB200 file's node is a compute tray of 4 GPUs and 4 NICs at 6,667 W; the MI355X's
    an 8-GPU node at 14 kW. The same curve gives the same step on both (same compute), and the
    energy differs by trays x tray power against nodes x node power."""
    gb, mi = load_workload("llama-70b-1024-gb200"), load_workload("llama-70b-1024-mi355x")
    assert (gb.gpus_per_node, gb.nics, gb.nodes, gb.node_power_kw) == (4, 4, 256, 6.667)
    assert (mi.gpus_per_node, mi.nics, mi.nodes, mi.node_power_kw) == (8, 8, 128, 14.0)
    # a tray-wide curve (4 ranks per tray, 4 rails) is divided by 4 for TP 8's one-rank-per-tray group
    assert pj.dp_bandwidth_factor(gb, pj.Curve((1e6, 1e9), (180.0, 180.0), 16, ranks_per_node=4)) == 0.25
    one_nic = pj.Curve((1e6, 1e9), (45.0, 45.0), 16, ranks_per_node=1)
    a, b = pj.project(gb, one_nic), pj.project(mi, one_nic)
    assert a.step_ms == pytest.approx(b.step_ms)
    hours = a.gpu_hours / 1024
    assert a.mwh == pytest.approx(hours * 256 * 6.667 / 1000) and b.mwh == pytest.approx(hours * 128 * 14.0 / 1000)
