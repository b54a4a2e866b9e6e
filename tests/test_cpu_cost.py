"""CPU cost per GB and the busiest core: the one sampler reader, the pure cost, the real sampler's
per-core and cgroup times against a known load, a stored run's report and its limits."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchharness.report.html import render_run_report
from benchharness.results import cpu, fabric, runview
from benchharness.results.store import RunDir
from benchharness.telemetry.cpu_cost import step_cost
from benchharness.telemetry.health import HealthError, parse_health
from benchharness.telemetry.parsers.sampler import read_sampler
from tests.sampler_lines import HostTree, real_lines

SAMPLER = Path(__file__).resolve().parents[1] / "benchharness" / "onhost" / "sampler.py"
_spec = importlib.util.spec_from_file_location("synth", Path(__file__).parent / "fixtures" / "runs" / "synth.py")
assert _spec and _spec.loader
synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synth)


def _lines(tmp: Path, busy: list[float], softirq: list[float], gbps: float, n: int = 10) -> list[dict]:
    return real_lines(HostTree(tmp), 1000.0, 1.0, [{"busy": busy, "softirq": softirq, "gbps": gbps}] * n)


def test_cost_per_gb_and_busiest_core_from_the_real_sampler_lines(tmp_path: Path) -> None:
    """Known truth: 4 cores, busy 50/50/50/90% (core 3 with 60% of it in softirq), 10 Gbit/s each
    way for 10 s: 24 CPU-s over 25 GB = 0.96 CPU-s/GB; busiest core cpu3 at 90%, softirq 60%."""
    text = "".join(json.dumps(x) + "\n" for x in _lines(tmp_path, [0.5, 0.5, 0.5, 0.9], [0, 0, 0, 0.6], 10.0))
    lines = read_sampler(text).lines
    assert len(lines) == 10 and lines[0].cores[3].name == "cpu3"
    cost = step_cost(lines)
    assert cost is not None and cost.scope == "host"
    assert cost.gb == pytest.approx(25.0)
    assert cost.cpu_s == pytest.approx(24.0)
    assert cost.cpu_s_per_gb == pytest.approx(0.96)
    assert cost.busiest_core == "cpu3" and cost.busiest_pct == pytest.approx(90.0)
    assert cost.busiest_softirq_share == pytest.approx(0.6, abs=0.01)


def test_no_traffic_is_not_a_cost(tmp_path: Path) -> None:
    cost = step_cost(read_sampler("".join(json.dumps(x) + "\n" for x in _lines(tmp_path, [0.5], [], 0.0))).lines)
    assert cost is not None and cost.cpu_s > 0 and cost.cpu_s_per_gb is None


def test_a_cut_line_and_snapshots_are_told_apart() -> None:
    text = ('{"type": "snapshot", "phase": "start", "ts": 1.0, "counters": {"net:lo:rx_bytes": 5}}\n'
            '{"ts": 2.0, "interval_s": 1.0, "cpu": {"total_pct": 3.0, "per_core_pct": [3.0]}}\n{"ts": 3.0, "cp')
    out = read_sampler(text)
    assert [s.phase for s in out.snapshots] == ["start"] and out.snapshots[0].counters == {"net:lo:rx_bytes": 5}
    assert len(out.lines) == 1 and out.lines[0].cpu_total_pct == 3.0 and out.lines[0].cores == ()


def _cpu_of(pid: int) -> float:
    """utime + stime of a process, seconds (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpuacct() -> Path | None:
    root = Path("/sys/fs/cgroup/cpuacct")
    return root if (root / "cpuacct.usage_percpu").is_file() and os.access(root, os.W_OK) else None


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) not installed")
def test_the_real_sampler_sees_a_busy_core_and_a_cgroups_own_time(tmp_path: Path) -> None:
    """``yes`` pinned to core 1 inside a cgroup of its own: the sampler's per-core times show core 1
    busy, ``--cpu-cgroup`` counts yes's own CPU time (``/proc/PID/stat``) for that cgroup, all on
    core 1, and about none for an empty one (whatever else runs on this machine)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two cores")
    root = _cpuacct()
    busy_cg = empty_cg = None
    if root is not None:
        busy_cg, empty_cg = root / f"bench-test-{os.getpid()}-busy", root / f"bench-test-{os.getpid()}-empty"
        busy_cg.mkdir()
        empty_cg.mkdir()
    yes = subprocess.Popen(["sh", "-c", '[ -n "$1" ] && echo $$ > "$1/cgroup.procs"; exec taskset -c 1 yes',
                            "sh", str(busy_cg or "")], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        before = _cpu_of(yes.pid)
        samplers = [[sys.executable, str(SAMPLER), "--interval", "1", "--count", "2", "--no-psutil",
                     *(["--cpu-cgroup", str(cg)] if cg else [])] for cg in (busy_cg, empty_cg)]
        procs = [subprocess.Popen(a, stdout=subprocess.PIPE, text=True) for a in samplers]
        outs = [p.communicate(timeout=30)[0] for p in procs]
        spent = _cpu_of(yes.pid) - before  # yes's own CPU seconds, a window around the samplers'
    finally:
        yes.kill()
        yes.wait()
        for cg in (busy_cg, empty_cg):
            if cg:
                for _ in range(50):
                    try:
                        cg.rmdir()
                        break
                    except OSError:
                        time.sleep(0.1)
    lines = read_sampler(outs[0]).lines
    cost = step_cost(lines)
    assert cost is not None and len(lines) == 2
    core1 = sum(c.busy_s for ln in lines for c in ln.cores if c.name == "cpu1")
    assert core1 / cost.seconds > 0.8  # yes keeps core 1 busy (other work may add to it, never less)
    assert cost.busiest_pct is not None and cost.busiest_pct >= 100 * core1 / cost.seconds - 1e-6
    if busy_cg is not None:
        # the cgroup's time is yes's time (which a loaded machine may cut below a whole core)
        assert cost.scope == "cgroup" and 0.6 * spent - 0.05 < cost.cpu_s < spent + 0.05, (cost, spent)
        assert set(lines[0].cgroup.cores) >= {"cpu0", "cpu1"}  # type: ignore[union-attr]
        assert max(lines[0].cgroup.cores, key=lines[0].cgroup.cores.__getitem__) == "cpu1"  # type: ignore[union-attr]
        empty = step_cost(read_sampler(outs[1]).lines)
        assert empty is not None and empty.scope == "cgroup" and empty.cpu_s < 0.05, empty


def test_a_run_built_from_real_sampler_lines_has_a_cpu_chart_and_cost_table(tmp_path: Path) -> None:
    run = synth.build_run(tmp_path / "run", name="r", reps=1)
    series = runview.sampler_series(run)
    assert series["cpu_pct"] and all(len(p) >= 20 for p in series["cpu_pct"].values())
    assert runview.max_temperatures(run)  # the hottest sensor, from the same lines
    html = render_run_report(run, tmp_path / "r.html").read_text()
    assert "CPU use per host" in html and "Hottest sensor per host" in html
    assert "CPU cost per host" in html and "CPU-s/GB" in html


def _two_host_run(tmp: Path, limits: dict) -> RunDir:
    """One iperf3 test over one step: h1 busy 40% of 4 cores, h2 10%, both 5 Gbit/s each way."""
    run = RunDir.create(tmp / "run")
    run.append_step({"step": "s1", "test": "t", "tool": "iperf3", "hosts": ["h1", "h2"], "status": "ok",
                     "started": 1000.0, "ended": 1010.0})
    for host, busy in (("h1", 0.4), ("h2", 0.1)):
        lines = real_lines(HostTree(tmp / host), 1000.0, 1.0, [{"busy": [busy] * 4, "gbps": 5.0}] * 10)
        run.write_text(f"telemetry/samples/s1/{host}.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    run.write_run_info({"run_id": "x", "suite": {"name": "s", "tests": [{"name": "t", "health": limits}]},
                        "hosts": ["h1", "h2"], "state": "complete"})
    return run


def test_cpu_limits_judged_and_the_costly_host_named(tmp_path: Path) -> None:
    limits = parse_health({"cpu_s_per_gb": 1.0, "cpu_vs_peers": 1.5, "busiest_core_pct": "90%"})
    assert limits == {"cpu_s_per_gb": 1.0, "cpu_vs_peers": 1.5, "busiest_core_pct": 90.0}
    run = _two_host_run(tmp_path, limits)
    verdicts = {(v.check, v.host): v for v in fabric.load_verdicts(fabric.load_rows(run))}
    # h1: 16 CPU-s / 12.5 GB = 1.28 CPU-s/GB; h2: 4 / 12.5 = 0.32
    assert verdicts[("health: CPU per GB", "h1")].status == "fail"
    assert verdicts[("health: CPU per GB", "h1")].value == pytest.approx(1.28, rel=0.01)
    assert verdicts[("health: CPU per GB", "h2")].status == "pass"
    assert verdicts[("health: CPU per GB vs peers", "h1")].status == "fail"
    assert "h1" in verdicts[("health: CPU per GB vs peers", "h1")].message
    assert verdicts[("health: CPU per GB vs peers", "h1")].value == pytest.approx(4.0, rel=0.02)
    assert verdicts[("health: CPU per GB vs peers", "h2")].status == "pass"
    assert verdicts[("health: busiest core", "h1")].status == "pass"  # 40% of a core
    assert cpu.run_summary(run)["cpu_s_per_gb_max"] == pytest.approx(1.28, rel=0.01)


@pytest.mark.parametrize("bad", [{"cpu_vs_peers": 0.9}, {"busiest_core_pct": 120}, {"cpu_s_per_gb": -1}])
def test_bad_cpu_limits_say_why(bad: dict) -> None:
    with pytest.raises(HealthError, match=next(iter(bad))):
        parse_health(bad)


def test_bench_compare_shows_cpu_cost_per_run(tmp_path: Path) -> None:
    from benchharness.report.compare import render_comparison

    a = synth.build_run(tmp_path / "a", name="a", reps=1, seed=1)
    b = synth.build_run(tmp_path / "b", name="b", reps=1, seed=2)
    html = render_comparison([a, b], tmp_path / "c.html").read_text()
    assert "CPU cost per run" in html
    summary = cpu.run_summary(a)
    assert summary["cpu_s_per_gb_median"] is not None and summary["cpu_s_per_gb_median"] > 0
    assert f"{summary['cpu_s_per_gb_median']:.3g}" in html
