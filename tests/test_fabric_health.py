"""Fabric health under load: degradation of sustained steps, heat (peak, least-squares slope),
counter series from the sampler's snapshot lines, per-rail counters per GB, the report section."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError
from benchharness.report.html import render_run_report
from benchharness.results import fabric
from benchharness.telemetry import load, series
from benchharness.telemetry.health import HealthError, families, parse_health
from tests import fabric_runs

SAMPLER = Path(__file__).resolve().parents[1] / "benchharness" / "onhost" / "sampler.py"


def test_load_limits_parse_and_fail_clearly() -> None:
    got = parse_health({"degradation": "5%", "sustained_s": "2m", "temp_peak_c": 85, "throttle": "none"})
    assert got == {"degradation": 0.05, "sustained_s": 120.0, "temp_peak_c": 85.0, "throttle": "none"}
    assert parse_health({"throttle": False}) == {"throttle": "none"}  # YAML's bare "no"
    with pytest.raises(HealthError, match="degradation is a share"):
        parse_health({"degradation": "150%"})
    with pytest.raises(HealthError, match="throttle must be one of none, thermal"):
        parse_health({"throttle": "some"})
    with pytest.raises(HealthError, match="at least one limit"):
        parse_health({"sustained_s": 60})


def test_suite_load_limit_error_names_file_and_line(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("tests:\n  - name: t\n    tool: iperf3\n    health:\n      degradation: 5%\n"
                     "      temp_peak_c: hot\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_suite(str(suite))
    assert "s.yaml:6" in str(exc.value) and "temp_peak_c" in str(exc.value)


def test_thirds_are_time_weighted_and_need_samples() -> None:
    flat_then_drop = [(float(t), t + 1.0, 100.0 if t < 60 else 90.0 if t < 120 else 80.0) for t in range(180)]
    got = load.thirds(flat_then_drop)
    assert got is not None and got.first_gbps == pytest.approx(100.0) and got.last_gbps == pytest.approx(80.0)
    assert got.drop == pytest.approx(0.20) and got.n_first == got.n_last == 60
    # unequal interval lengths: a long slow interval weighs more than a short fast one
    mixed = [(0.0, 1.0, 100.0), (1.0, 2.0, 100.0), (2.0, 3.0, 50.0), (3.0, 4.0, 50.0), (4.0, 4.5, 100.0),
             (4.5, 6.0, 40.0)]
    got = load.thirds(mixed)
    assert got is not None and got.last_gbps == pytest.approx((0.5 * 100 + 1.5 * 40) / 2.0)
    assert load.thirds([(0.0, 1.0, 5.0), (1.0, 2.0, 5.0), (2.0, 3.0, 5.0)]) is None  # one per third


def test_slope_is_least_squares_per_minute() -> None:
    assert load.slope_per_min([(0.0, 40.0), (60.0, 43.0), (120.0, 46.0)]) == pytest.approx(3.0)
    noisy = [(float(t), 50.0 + 0.05 * t + (1.0 if t % 2 else -1.0)) for t in range(0, 120)]
    assert load.slope_per_min(noisy) == pytest.approx(3.0, abs=0.1)
    assert load.slope_per_min([(5.0, 40.0), (5.0, 41.0)]) is None
    kinds = {h.sensor: h.kind for h in load.heat({"gpu0": [(0, 1)], "hwmon/hwmon2/mlx5/asic": [(0, 1)],
                                                   "eth1 module": [(0, 1)], "cpu": [(0, 1)]})}
    assert kinds == {"gpu0": "gpu", "hwmon/hwmon2/mlx5/asic": "nic", "eth1 module": "transceiver", "cpu": "other"}


def test_throttle_modes() -> None:
    active = ["SW Power Cap", "HW Thermal Slowdown", "Idle"]
    assert load.throttled(active, "none") == ["SW Power Cap", "HW Thermal Slowdown"]
    assert load.throttled(active, "thermal") == ["HW Thermal Slowdown"]
    assert load.throttled(["Idle", "Applications Clocks Setting"], "none") == []


def test_sampler_prints_interval_snapshots_and_series_are_deltas(tmp_path: Path) -> None:
    """The real sampler over a fake sysfs root: a snapshot line every second, deltas between them."""
    stats = tmp_path / "sys" / "class" / "net" / "eth9" / "statistics"
    stats.mkdir(parents=True)
    for name in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        (stats / name).write_text("1000\n")
    proc = subprocess.run([sys.executable, str(SAMPLER), "--root", str(tmp_path), "--no-psutil", "--interval", "0.5",
                           "--netdev", "eth9", "--edge-snapshots", "--counters-every", "1", "--count", "5"],
                          capture_output=True, text=True, timeout=60, check=True)
    phases = [json.loads(x).get("phase") for x in proc.stdout.splitlines() if '"snapshot"' in x]
    assert phases[0] == "start" and phases[-1] == "end" and phases.count("interval") >= 1
    rows = series.intervals(proc.stdout)
    assert len(rows) == len(phases) - 1 and all(r["t1"] > r["t0"] for r in rows)
    assert all(r["counters"] == {} for r in rows)  # nothing moved: zero deltas are dropped
    text = "\n".join(json.dumps({"type": "snapshot", "phase": p, "ts": t, "counters": c}) for p, t, c in (
        ("start", 10.0, {"ethtool:eth1:rx_bytes_phy": 5, "ethtool:eth1:rx3_bytes": 1}),
        ("interval", 20.0, {"ethtool:eth1:rx_bytes_phy": 105, "ethtool:eth1:rx3_bytes": 9}),
        ("end", 30.0, {"ethtool:eth1:rx_bytes_phy": 305, "ethtool:eth1:rx3_bytes": 20})))
    assert series.intervals(text) == [{"t0": 10.0, "t1": 20.0, "counters": {"ethtool:eth1:rx_bytes_phy": 100}},
                                      {"t0": 20.0, "t1": 30.0, "counters": {"ethtool:eth1:rx_bytes_phy": 200}}]
    assert series.intervals("\n".join(text.splitlines()[::2])) == []  # start and end only: no series


def test_families_missing_is_not_zero() -> None:
    got = families({"ethtool:eth1:rx_prio3_pause_duration": 0, "net:eth1:rx_packets": 10})
    assert got["pause_us"] == 0 and got["ecn"] is None and got["link_flaps"] is None


def test_stored_run_rails_series_and_verdicts(tmp_path: Path) -> None:
    run = fabric_runs.build(tmp_path)
    totals = {(r.host, r.rail): r for r in fabric.rail_totals(run)}
    bad = totals[("h1", "rail1")]
    assert bad.totals["pause_us"] == int(0.10 * fabric_runs.SECONDS * 1e6)  # 10% of the step, in us
    assert bad.totals["discards"] == 7 * (fabric_runs.SECONDS // 10)
    assert totals[("h1", "rail0")].totals["pause_us"] is None  # eth1 exposes none: not zero
    pts = fabric.rail_series(run)["h1.rail1"]
    assert [round(p.gbps or 0) for p in pts][:2] == [100, 100] and round(pts[-1].gbps or 0) == 80
    assert all(p.pause_share == pytest.approx(0.10) for p in pts)
    verdicts = {(v.check, v.host, v.rail): v for v in fabric.load_verdicts(fabric.load_rows(run))}
    deg = verdicts[("health: degradation", "h1", "rail1")]
    assert deg.status == "fail" and deg.value == pytest.approx(0.20) and "20.0% lost" in deg.message
    assert verdicts[("health: degradation", "h1", "rail0")].status == "pass"
    assert verdicts[("health: temperature slope", "h1", None)].status == "fail"
    assert verdicts[("health: temperature slope", "h2", None)].status == "pass"
    assert verdicts[("health: temperature peak", "h1", None)].status == "pass"


def test_degradation_from_counter_series_without_tool_intervals(tmp_path: Path) -> None:
    run = fabric_runs.build(tmp_path, interval_samples=False, series_every=5.0)
    got = {(r.host, r.rail): r for r in fabric.load_rows(run) if r.limit == "degradation"}
    assert got[("h1", "rail1")].status == "fail" and "counter series" in got[("h1", "rail1")].message
    assert got[("h2", "rail1")].status == "pass"


def test_no_interval_data_is_info_not_pass(tmp_path: Path) -> None:
    run = fabric_runs.build(tmp_path, interval_samples=False, series_every=0)
    rows = [r for r in fabric.load_rows(run) if r.limit == "degradation"]
    assert [r.status for r in rows] == ["info"] and "counters_interval is off" in rows[0].message


def test_report_section_escapes_everything(tmp_path: Path) -> None:
    run = fabric_runs.build(tmp_path, evil=True)
    html = render_run_report(run).read_text(encoding="utf-8")
    section = html[html.index('<section id="fabric-health">'):]
    section = section[:section.index("</section>")]
    assert "Counters per rail, per GB moved" in section and "Pause share per rail" in section
    assert "Temperatures under load" in section and "not exposed" in section
    assert "<b>h2</b>" not in html and "&lt;b&gt;h2&lt;/b&gt;" in section
    assert "<i>mlx5</i>" not in html


def test_soak_and_bursty_suites_on_both_8rail_nodes() -> None:
    """soak: every rail, both directions, GPU memory of the host's vendor beside each NIC; bursty:
    the perftest rate limiter (perftest --help: --rate_limit, --burst_size, --rate_limit_type)."""
    from benchharness.config.inventory import load_inventory
    from benchharness.planning.plan import build_plan
    from benchharness.tools import get_tool

    root = Path(__file__).resolve().parents[1]
    soak = load_suite("soak")
    assert soak.settings["duration"] == 600 and soak.settings["counters_interval"] == 60
    assert soak.tests[0].health is not None and soak.tests[0].health["degradation"] == 0.05
    for inv, opt in (("dgx-b200-8rail.ini", "--use_cuda"), ("mi300x-8rail.ini", "--use_rocm")):
        hosts = load_inventory(str(root / "inventories" / inv)).hosts
        plan = build_plan(soak, hosts)
        lines = [c.argv for s in plan.steps for c in get_tool(s.tool).commands(s, plan.launcher)]
        assert len(plan.steps) == 8 and len(plan.rounds) == 1  # every rail at once
        assert all("-b" in a and "-D" in a and a[a.index("-D") + 1] == "600" for a in lines)
        assert sorted({a[-1] for a in lines if a[-1].startswith(opt)}) == [f"{opt}={g}" for g in range(8)]
        bursty = build_plan(load_suite("bursty"), hosts)
        burst = [c.argv for s in bursty.steps if s.test == "rdma-burst"
                 for c in get_tool(s.tool).commands(s, bursty.launcher)]
        assert burst and all("--rate_limit_type=SW" in a and "--burst_size=64" in a for a in burst)
    # a host without gpu_vendor measures host memory
    from benchharness.core.model import Host

    plain = [Host(n, a, vars={"rdma_dev": "rxe0", "netdev": "eth0"}) for n, a in (("a", "198.18.0.1"), ("b", "198.18.0.2"))]
    plan = build_plan(soak, plain)
    assert not any("--use_" in x for s in plan.steps for c in get_tool(s.tool).commands(s, plan.launcher)
                   for x in c.argv)


def test_perftest_rate_limit_type_and_gpu_memory_are_checked() -> None:
    from benchharness.tools.perftest import ADAPTER

    base = {**ADAPTER.params, "test": "ib_write_bw"}
    with pytest.raises(ValueError, match="rate_limit_type: one of HW, SW, PP"):
        ADAPTER.check_params({**base, "rate_limit_type": "fast"})
    with pytest.raises(ValueError, match=r"rate_limit_type.*only bandwidth tests"):
        ADAPTER.check_params({**base, "test": "ib_write_lat", "rate_limit_type": "SW"})
    with pytest.raises(ValueError, match="gpu_memory: set it or use_cuda"):
        ADAPTER.check_params({**base, "gpu_memory": "nearest", "use_cuda": 0})
    with pytest.raises(ValueError, match="gpu_memory: perftest refuses"):
        ADAPTER.check_params({**base, "test": "ib_write_lat", "gpu_memory": "nearest"})


def test_counters_interval_setting_is_checked_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("settings:\n  duration: 1\n  counters_interval: 0.5\ntests:\n  - {name: t, tool: iperf3}\n")
    with pytest.raises(ConfigError, match=r"s\.yaml:3.*counters_interval must be 0 \(off\) or seconds"):
        load_suite(str(path))


def test_nvidia_smi_performance_real_outputs_and_the_throttle_judge() -> None:
    from benchharness.telemetry.parsers.gpu_throttle import parse_performance

    real = Path(__file__).parent / "fixtures" / "health" / "real"  # see its SOURCES
    (gb10,) = parse_performance((real / "nvidia_smi_performance_gb10_580.txt").read_text())
    assert gb10["gpu"] == "0000000F:01:00.0" and gb10["active"] == []
    assert gb10["reasons"]["HW Thermal Slowdown"] is False and len(gb10["reasons"]) == 9
    assert gb10["counters_us"] == {"SW Power Capping": 50284264713, "Sync Boost": 0, "SW Thermal Slowdown": 0,
                                   "HW Thermal Slowdown": 0, "HW Power Braking": 0}
    (old,) = parse_performance((real / "nvidia_smi_clocks_throttle_reasons_idle.txt").read_text())
    assert old["active"] == ["Idle"] and len(old["reasons"]) == 8
    assert load.throttled(old["active"], "none") == []  # idle is not a throttle
    hot = (real / "nvidia_smi_performance_gb10_580.txt").read_text().replace(
        "HW Thermal Slowdown           : Not Active", "HW Thermal Slowdown           : Active")
    (got,) = parse_performance(hot)
    assert load.throttled(got["active"], "thermal") == ["HW Thermal Slowdown"]
    assert parse_performance("GPU 00000000:01:00.0\n    Clocks Event Reasons                  : N/A\n") == []
