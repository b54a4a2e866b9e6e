"""End to end on the loopback lab: real sshd in namespaces, real iperf3, the real `bench` command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchharness.lab import control as lab
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


def summaries(run: RunDir) -> list[dict]:
    return [s for s in run.samples() if s.get("kind", "summary") == "summary"]


def test_tcp_suite_over_real_ssh_covers_every_pair(lab3: LabInfo, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = bench("run", "suite=tcp", f"hosts={lab3.inventory}", "duration=1", f"out={out}")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == f"report: {out / 'report.html'}"
    run = RunDir(out)
    info = run.run_info()
    assert info["state"] == "complete" and info["exit_code"] == 0
    assert info["hosts"] == ["h1", "h2", "h3"]
    tcp = [s for s in summaries(run) if s["protocol"] == "tcp"]
    assert {frozenset((s["server"], s["client"])) for s in tcp} == {
        frozenset(p) for p in (("h1", "h2"), ("h2", "h3"), ("h1", "h3"))}
    assert all(s["bw_avg_gbps"] > 0.1 for s in tcp)
    assert {s["direction"] for s in tcp} == {"forward", "reverse"}  # bidirectional
    udp = [s for s in summaries(run) if s["protocol"] == "udp"]
    assert udp and all(s["msg_rate_mpps"] > 0 and 0 <= s["loss_pct"] <= 100 for s in udp)
    # every command line, its output and exit code are kept per step and host
    metas = [json.loads(p.read_text()) for p in run.raw_files()]
    assert {m["host"] for m in metas} == {"h1", "h2", "h3"}
    assert all("iperf3" in m["argv"] and m["rc"] == 0 for m in metas)
    assert (out / "report.html").stat().st_size > 1000
    # telemetry: the facts of every host, probed over SSH, and the counter deltas of every step
    for host in ("h1", "h2", "h3"):
        facts = json.loads((out / "telemetry" / "facts" / f"{host}.json").read_text())
        assert facts["host"]["hostname"] == host
        assert [n["netdev"] for n in facts["nics"]["devices"]] == ["eth0"]
    steps = {s["step"]: s for s in run.steps()}
    for step_id, entry in steps.items():
        counters = json.loads((out / "telemetry" / "counters" / f"{step_id}.json").read_text())
        assert set(counters) == set(entry["hosts"])
        moved = [c["counters"].get("net:eth0:tx_bytes", 0) for c in counters.values()]
        assert max(moved) > 1_000_000  # the test traffic shows in the NIC counters


def test_doctor_probes_every_lab_host(lab3: LabInfo) -> None:
    res = bench("doctor", f"hosts={lab3.inventory}")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["h1", "h2", "h3"]
    assert "eth0" in lines[0] and "mtu 1500" in lines[0]
    assert lines[-1].startswith("3 host(s): 0 failed")


def test_bench_measures_what_iperf3_by_hand_measures(lab_maker, tmp_path: Path) -> None:
    """Fidelity: the same shaped pair, bench against iperf3 by hand, within 10%."""
    with lab_maker("tfid", 2, shape={"h2": "2gbit"}) as info:
        h1, h2 = info.hosts
        out = tmp_path / "run"
        res = bench("run", "suite=quick", f"hosts={info.inventory}", "length=128K", "duration=3", f"out={out}")
        assert res.returncode == 0, res.stderr
        via_bench = [s["bw_avg_gbps"] for s in summaries(RunDir(out))]
        server = subprocess.Popen(["ip", "netns", "exec", h1.netns, "iperf3", "-s", "-1", "-p", "5990",
                                   "-B", h1.address], stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        by_hand = json.loads(subprocess.run(
            ["ip", "netns", "exec", h2.netns, "iperf3", "-c", h1.address, "-p", "5990", "-t", "3",
             "-l", "128K", "-J"], capture_output=True, text=True, timeout=30).stdout)
        server.wait(10)
        hand_gbps = by_hand["end"]["sum_received"]["bits_per_second"] / 1e9
    assert len(via_bench) == 1
    assert 1.5 < hand_gbps < 2.1  # the 2gbit shaping holds
    assert abs(via_bench[0] / hand_gbps - 1) < 0.10


def test_streams_as_processes_share_a_shaped_link_and_add_up(lab_maker, tmp_path: Path) -> None:
    """iperf3 before 3.16 (here 3.12): streams=2 is two iperf3 processes, started together, whose
    sum is the flow's sample; on a 2 Gbit/s link the sum is about 2 Gbit/s, not twice that."""
    with lab_maker("tproc", 2, shape={"h2": "2gbit"}) as info:
        out = tmp_path / "run"
        res = bench("run", "suite=quick", f"hosts={info.inventory}", "length=128K", "duration=3", "streams=2",
                    f"out={out}")
        assert res.returncode == 0, res.stderr
    run = RunDir(out)
    (summary,) = summaries(run)
    per = [s for s in run.samples() if s.get("kind") == "process"]
    assert summary["processes"] == 2 and summary["streams"] == 2
    assert 1.5 < summary["bw_avg_gbps"] < 2.1  # the shaped rate in total
    assert len(per) == 2 and len({p["port"] for p in per}) == 2 and all(p["bw_avg_gbps"] > 0.1 for p in per)
    assert abs(sum(p["bw_avg_gbps"] for p in per) - summary["bw_avg_gbps"]) < 1e-6
    clients = [json.loads(p.read_text()) for p in run.raw_files()]
    clients = [m for m in clients if m["role"] == "client"]
    assert len(clients) == 2 and all("-P" not in m["argv"] for m in clients)


def test_unreachable_host_fails_its_steps_and_keeps_the_rest(lab_maker, tmp_path: Path) -> None:
    with lab_maker("tdown", 3) as info:
        h3 = info.hosts[2]
        assert h3.sshd_pid
        os.kill(h3.sshd_pid, signal.SIGTERM)
        time.sleep(0.3)
        out = tmp_path / "run"
        res = bench("run", "suite=quick", f"hosts={info.inventory}", "length=128K", "duration=1", f"out={out}")
    assert res.returncode == 3, res.stdout + res.stderr
    run = RunDir(out)
    info_json = run.run_info()
    assert info_json["state"] == "partial"
    failed = [f for f in info_json["failures"] if f["kind"] == "unreachable"]
    assert len(failed) == 2 and all(f["host"] == "h3" for f in failed)
    assert "h3" in res.stdout and "unreachable" in res.stdout
    kept = summaries(run)
    assert kept and {(s["server"], s["client"]) for s in kept} <= {("h1", "h2"), ("h2", "h1")}


def test_interrupt_stops_every_remote_process_and_keeps_samples(lab3: LabInfo, lab_base: Path,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "run"
    # Ctrl-C as in a terminal: a shell without job control starts background commands with
    # SIGINT ignored, and a Python started so never turns SIGINT into KeyboardInterrupt (CI
    # scripts often run so); the child gets the default disposition back, as a terminal's has.
    proc = subprocess.Popen([sys.executable, "-m", "benchharness", "run", "suite=quick",
                             f"hosts={lab3.inventory}", "duration=20", f"out={out}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until iperf3 really runs on the lab hosts
        running = lab.lab_processes(lab3.name, r"\biperf3\b", base_dir=lab_base)
        if sum(len(v) for v in running.values()) >= 2:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("iperf3 never started on the lab hosts")
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    left = lab.lab_processes(lab3.name, r"\biperf3\b", base_dir=lab_base)
    assert left == {"h1": [], "h2": [], "h3": []}
    run = RunDir(out)
    assert run.run_info()["state"] == "interrupted"
    # the interrupted step's raw output is kept
    assert any(p.name.startswith("client-") for p in run.raw_files())


def test_allreduce_suite_through_real_mpirun_over_ssh(lab3: LabInfo, tmp_path: Path) -> None:
    """The CPU all-reduce on 3 lab hosts: mpirun over the lab's ssh, busbw for every size, #wrong 0."""
    out = tmp_path / "run"
    res = bench("run", "suite=allreduce", f"hosts={lab3.inventory}", "maxbytes=1M", "repeat=1", "nccl_algo=default", f"out={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    rows = summaries(RunDir(out))
    sizes = {r["size_bytes"] for r in rows}
    assert sizes == {8 << i for i in range(18)}  # 8 B .. 1 MiB, x2
    assert all(r["wrong"] == 0 and r["busbw_GBps"] >= 0 for r in rows)
    assert {r["placement"] for r in rows} == {"out-of-place", "in-place"}
    footer = [s for s in RunDir(out).samples() if s.get("kind") == "footer"]
    assert footer and footer[0]["nranks"] == 3
    assert {r["host"] for r in footer[0]["ranks"]} == {"h1", "h2", "h3"}


def test_ucx_suite_between_lab_hosts(lab3: LabInfo, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = bench("run", "suite=ucx", f"hosts={lab3.inventory}", f"out={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    rows = summaries(RunDir(out))
    assert any(r.get("bw_avg_gbps", 0) > 0 for r in rows)
    assert any(r.get("lat_avg_us", 0) > 0 for r in rows)


def test_perftest_without_rdma_is_a_classified_step_failure(lab3: LabInfo, tmp_path: Path) -> None:
    """This kernel has no RDMA: the real ib_write_bw runs and says so; the run exits 3 with no_device."""
    out = tmp_path / "run"
    res = bench("run", "suite=rdma-bw", f"hosts={lab3.inventory}", "size=64K", "bidir=false", f"out={out}",
                timeout=600)
    assert res.returncode == 3, res.stdout + res.stderr
    info = RunDir(out).run_info()
    assert info["failures"] and all(f["kind"] == "no_device" for f in info["failures"])
    # no measurement turned into a number; only the hosts' counter deltas of those steps are kept
    assert [s for s in RunDir(out).samples() if s.get("kind") != "counters"] == []
