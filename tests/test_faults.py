"""Fault injection on the loopback lab: every fault ends with a clear kind, the right exit code,
the samples measured before it kept, and no benchmark process left on any lab host.

One 2-host lab (``fltm-<tag>``) serves the whole module. Each test drives the real ``bench`` command and
injects its fault for real: a stopped or crashed tool, a wrong key, a changed host key, a missing
program, a taken port, a cut link, SIGTERM, a full disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import lab_name

from benchharness.core.model import Command, CommandResult, Host
from benchharness.execution import faults
from benchharness.lab import control as lab
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir
from benchharness.transport.base import shell_exit_code

pytestmark = pytest.mark.long(100)  # its lab tests share one lab: about 100 s on one worker (tests/turns.py)

LAB = lab_name("fltm")
BENCH_PROCS = r"iperf3|ib_write_bw|ucx_perftest|mpirun|sleep"
TWO_STEPS = ("suite=quick", "length=[16K,128K]")
#: Telemetry off where it plays no part in the fault, to keep the module short (lab time is precious).
QUIET = ("telemetry=off",)


def bench(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


def bench_bg(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "benchharness", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def flab(lab_base: Path) -> Iterator[LabInfo]:
    if os.geteuid() != 0:
        pytest.skip("the loopback lab needs root (network namespaces, veth, sshd)")
    info = lab.lab_up(2, name=LAB, base_dir=lab_base)
    try:
        yield info
    finally:
        lab.lab_down(LAB, base_dir=lab_base)


@pytest.fixture
def no_leftovers(flab: LabInfo, lab_base: Path) -> Iterator[Callable[[float], None]]:
    """Call it after the run (with how long host-side limits may take); it is also checked at teardown."""

    def check(wait_s: float = 0.0) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            left = lab.lab_processes(LAB, BENCH_PROCS, base_dir=lab_base)
            if not any(left.values()):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"benchmark processes left on the lab hosts: {left}")
            time.sleep(0.2)

    yield check
    check()


def pids(info: LabInfo, host: int, program: str, flag: str | None = None) -> list[int]:
    """Pids in lab host ``host``'s namespace running ``program`` (with ``flag`` among its args)."""
    found = []
    for pid in lab.netns_pids(info.hosts[host].netns):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == program and (flag is None or flag in argv):
            found.append(pid)
    return found


def wait_pid(info: LabInfo, host: int, program: str, flag: str | None = None, *,
             exclude: frozenset[int] | set[int] = frozenset(), timeout: float = 90) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in pids(info, host, program, flag) if p not in exclude]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{program} never ran on h{host + 1}")


def inventory_with(info: LabInfo, tmp: Path, old: str = "", new: str = "", extra_vars: str = "") -> Path:
    text = info.inventory.read_text()
    if old:
        assert old in text
        text = text.replace(old, new)
    if extra_vars:
        text = text.replace("[lab:vars]\n", f"[lab:vars]\n{extra_vars}\n")
    path = tmp / "inventory.ini"
    path.write_text(text)
    return path


def steps_by_id(run: RunDir) -> dict[str, dict]:
    return {s["step"]: s for s in run.steps()}


def summaries(run: RunDir, step: str | None = None) -> list[dict]:
    return [s for s in run.samples() if s.get("kind") == "summary" and (step is None or s["step"] == step)]


def one_line_failures(res: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in res.stdout.splitlines() if ln.lstrip().startswith("FAILED")]


# -- the tool ------------------------------------------------------------------------------------

@pytest.mark.lab
def test_hung_tool_is_killed_at_its_timeout_and_the_run_goes_on(flab: LabInfo, tmp_path: Path,
                                                                no_leftovers) -> None:
    out = tmp_path / "run"
    proc = bench_bg("run", *TWO_STEPS, f"hosts={flab.inventory}", "duration=2", "timeout=4", *QUIET,
                    f"out={out}")
    client = wait_pid(flab, 1, "iperf3", "-c")
    time.sleep(0.3)
    os.kill(client, signal.SIGSTOP)  # hung: alive, silent, and deaf to SIGTERM
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stdout + stderr
    run = RunDir(out)
    hung, fine = sorted(steps_by_id(run).values(), key=lambda s: s["step"])
    assert (hung["status"], hung["kind"]) == ("failed", "timeout")
    assert "client-h2-5201 on h2 ran past its 4 s limit and was killed" in hung["message"]
    assert hung["ended"] - hung["started"] < 20
    assert fine["status"] == "ok" and len(summaries(run, fine["step"])) == 1
    raw = json.loads((out / "raw" / hung["step"] / "client-h2-5201.json").read_text())
    assert raw["timed_out"] is True
    assert not Path(f"/proc/{client}").exists()  # the whole group was killed on the host
    no_leftovers()


@pytest.mark.lab
def test_missing_tool_is_tool_missing(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    """Per-host tool paths are common on clusters; a wrong one must say so, not "no results"."""
    inv = inventory_with(flab, tmp_path, extra_vars="mpirun=/opt/nowhere/bin/mpirun")
    out = tmp_path / "run"
    res = bench("run", "suite=allreduce", f"hosts={inv}", "maxbytes=1K", "repeat=1", "nccl_algo=default", *QUIET, f"out={out}")
    assert res.returncode == 3, res.stdout + res.stderr
    (failure,) = RunDir(out).run_info()["failures"]
    assert failure["kind"] == "tool_missing"
    assert failure["message"].startswith("h1: /opt/nowhere/bin/mpirun: No such file or directory")
    assert summaries(RunDir(out)) == []
    no_leftovers()


@pytest.mark.lab
def test_server_whose_port_is_taken_never_gets_ready(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    taker = subprocess.Popen(["ip", "netns", "exec", flab.hosts[0].netns, sys.executable, "-c",
                              "import socket, sys, time\n"
                              "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                              "s.bind((sys.argv[1], 5201)); s.listen(); print('up', flush=True)\n"
                              "time.sleep(120)", flab.hosts[0].address], stdout=subprocess.PIPE, text=True)
    try:
        assert taker.stdout and taker.stdout.readline().strip() == "up"
        out = tmp_path / "run"
        res = bench("run", "suite=quick", f"hosts={flab.inventory}", "length=16K", "duration=1", *QUIET,
                    f"out={out}")
    finally:
        taker.kill()
        taker.wait()
    assert res.returncode == 3, res.stdout + res.stderr
    (step,) = RunDir(out).steps()
    assert step["kind"] == "port_in_use"
    assert step["message"].startswith("h1: server server-h1-5201: its port is taken by another process")
    assert "Address already in use" in step["message"]
    no_leftovers()


@pytest.mark.lab
def test_tool_crash_mid_run_fails_its_step_only(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    out = tmp_path / "run"
    proc = bench_bg("run", *TWO_STEPS, f"hosts={flab.inventory}", "duration=3", *QUIET, f"out={out}")
    client = wait_pid(flab, 1, "iperf3", "-c")
    time.sleep(0.5)
    os.kill(client, signal.SIGSEGV)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stdout + stderr
    run = RunDir(out)
    crashed, fine = sorted(steps_by_id(run).values(), key=lambda s: s["step"])
    assert (crashed["status"], crashed["kind"]) == ("failed", "crashed")
    assert "client-h2-5201 on h2 was killed by SIGSEGV" in crashed["message"]
    assert "setsid" not in crashed["message"]
    assert fine["status"] == "ok" and len(summaries(run, fine["step"])) == 1
    no_leftovers()


# -- the hosts -----------------------------------------------------------------------------------

@pytest.mark.lab
def test_wrong_key_is_auth_failed_naming_the_host(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    key = tmp_path / "wrong_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    inv = inventory_with(flab, tmp_path, str(flab.key), str(key))
    started = time.monotonic()
    res = bench("run", "suite=quick", f"hosts={inv}", "length=16K", "duration=1", *QUIET,
                f"out={tmp_path / 'run'}")
    assert time.monotonic() - started < 60
    assert res.returncode == 3, res.stdout + res.stderr
    (line,) = one_line_failures(res)
    assert f"authentication failed for root@{flab.hosts[0].address}:22 with key {key}" in line
    info = RunDir(tmp_path / "run").run_info()
    assert {f["kind"] for f in info["failures"]} == {"auth_failed"}
    assert set(info["down_hosts"]) == {"h1", "h2"}
    no_leftovers()


@pytest.mark.lab
def test_changed_host_key_is_refused(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind_blob = " ".join(other.with_suffix(".pub").read_text().split()[:2])
    known = tmp_path / "known_hosts"
    known.write_text("".join(f"{h.address} {kind_blob}\n" for h in flab.hosts))
    inv = inventory_with(flab, tmp_path, str(flab.known_hosts), str(known))
    res = bench("run", "suite=quick", f"hosts={inv}", "length=16K", "duration=1", *QUIET,
                f"out={tmp_path / 'run'}")
    assert res.returncode == 3, res.stdout + res.stderr
    (line,) = one_line_failures(res)
    assert "host_key_changed" in line and f"host key of root@{flab.hosts[0].address}:22 has CHANGED" in line
    assert str(known) in line  # says which file to fix
    assert summaries(RunDir(tmp_path / "run")) == []
    no_leftovers()


@pytest.mark.lab
def test_link_cut_mid_run_fails_fast_and_leaves_nothing(flab: LabInfo, tmp_path: Path, no_leftovers) -> None:
    """``ip link set eth0 down`` on h2 during the first of three steps; ansible_timeout=3 as a user
    would set it. The cut step fails as unreachable, the other two at once, nothing hangs."""
    inv = inventory_with(flab, tmp_path, extra_vars="ansible_timeout=3")
    out = tmp_path / "run"
    ns = flab.hosts[1].netns
    proc = bench_bg("run", "suite=quick", "length=[16K,128K,1M]", f"hosts={inv}", "duration=3",
                    "timeout=4", f"out={out}")
    try:
        wait_pid(flab, 1, "iperf3", "-c")
        time.sleep(0.5)
        subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "down"], check=True)
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
        subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "up"], check=True)
    assert proc.returncode == 3, stdout + stderr
    first, *rest = sorted(steps_by_id(RunDir(out)).values(), key=lambda s: s["step"])
    assert (first["kind"], first["host"]) == ("unreachable", "h2")
    assert first["message"].startswith("h2: stopped answering during the step (link down or host hung)")
    assert first["ended"] - first["started"] < 30
    assert len(rest) == 2 and all(s["kind"] == "unreachable" and s["ended"] - s["started"] < 1 for s in rest)
    assert RunDir(out).run_info()["down_hosts"].keys() == {"h2"}
    # Once the link is back: what bench could not stop ends by its host-side limit (timeout + 10 s).
    no_leftovers(20)


@pytest.mark.lab
def test_cut_host_ends_its_tools_and_sampler_by_itself(lab_maker, lab_base: Path, tmp_path: Path) -> None:
    """h2's link goes down mid-step and stays down: the run ends with exit 3, h1-h3 keeps its
    samples, and everything the run started on any host (tools, telemetry sampler, wrappers)
    has ended by itself 10 s after the step's time limit, though bench could not reach h2."""
    left_pattern = r"iperf3|sampler\.py|bench-step"
    with lab_maker("tcut3", 3) as info:
        inv = info.inventory.read_text().replace("[lab:vars]\n", "[lab:vars]\nansible_timeout=3\n")
        (tmp_path / "inventory.ini").write_text(inv)
        out = tmp_path / "run"
        ns = info.hosts[1].netns
        proc = bench_bg("run", "suite=quick", "length=128K", f"hosts={tmp_path / 'inventory.ini'}",
                        "duration=3", "timeout=5", f"out={out}")
        try:
            wait_pid(info, 1, "iperf3")
            wait_pid(info, 1, "python3", "--interval")  # the sampler runs on h2 too
            time.sleep(0.5)
            subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "down"], check=True)
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 3, stdout + stderr
            run = RunDir(out)
            steps = sorted(run.steps(), key=lambda s: s["started"])
            cut = next(s for s in steps if s["status"] == "failed")
            assert cut["host"] == "h2" and cut["kind"] == "unreachable", cut
            ok = [s for s in steps if s["status"] == "ok"]
            assert [sorted(s["hosts"]) for s in ok] == [["h1", "h3"]], steps
            kept = [r for r in summaries(run) if {r["server"], r["client"]} == {"h1", "h3"}]
            assert kept and all(r["bw_avg_gbps"] > 0 for r in kept)
            assert cut["limit_s"] and cut["limit_s"] < 60, cut
            wait = cut["started"] + cut["limit_s"] + 10 - time.time()
            if wait > 0:
                time.sleep(wait)
            left = lab.lab_processes(info.name, left_pattern, base_dir=lab_base)
            assert not any(left.values()), f"still running 10 s after the step's limit: {left}"
        finally:
            proc.kill()
            subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "up"], check=False)


# -- the controller ------------------------------------------------------------------------------

@pytest.mark.lab
def test_sigterm_keeps_samples_and_resume_runs_only_the_rest(flab: LabInfo, tmp_path: Path,
                                                             no_leftovers) -> None:
    out = tmp_path / "run"
    args = (*TWO_STEPS, f"hosts={flab.inventory}", "duration=2")
    proc = bench_bg("run", *args, f"out={out}")
    first = wait_pid(flab, 1, "iperf3", "-c")
    wait_pid(flab, 1, "iperf3", "-c", exclude={first})  # the second step is measuring
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    no_leftovers()
    run = RunDir(out)
    assert run.run_info()["state"] == "interrupted"
    done, stopped = sorted(steps_by_id(run).values(), key=lambda s: s["step"])
    assert done["status"] == "ok" and len(summaries(run, done["step"])) == 1
    assert (stopped["status"], stopped["kind"]) == ("skipped", "interrupted")
    assert (out / "raw" / stopped["step"] / "client-h2-5201.json").exists()  # its raw output is kept

    res = bench("run", *args, f"resume={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    steps = run.steps()
    assert [s["step"] for s in steps].count(done["step"]) == 1  # not run again
    assert {s["step"]: s["status"] for s in steps} == {done["step"]: "ok", stopped["step"]: "ok"}
    assert sorted(s["step"] for s in summaries(run)) == sorted([done["step"], stopped["step"]])
    samples = run.samples()
    assert len({json.dumps(s, sort_keys=True) for s in samples}) == len(samples)
    assert run.run_info()["state"] == "complete"
    no_leftovers()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "bench-fault-tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.lab
def test_full_disk_is_a_clear_error_and_damages_nothing(flab: LabInfo, small_disk: Path,
                                                        no_leftovers) -> None:
    out = small_disk / "run"
    proc = bench_bg("run", "suite=quick", "length=[16K,128K,1M]", f"hosts={flab.inventory}", "duration=1",
                    f"out={out}")
    try:
        deadline = time.monotonic() + 90
        while not (out / "steps.jsonl").exists() or not (out / "steps.jsonl").read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "the first step never finished"
            time.sleep(0.05)
        before = {p: p.read_bytes() for p in (out / "raw").rglob("*") if p.is_file()}
        fd = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk up to the last byte
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 4, stdout + stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("bench: ")]
    assert "No space left on device" in line and f"resume={out}" in line
    no_leftovers()
    run = RunDir(out)
    assert run.run_info()["suite"]["name"] == "quick"  # still whole JSON
    for name in ("steps.jsonl", "samples.jsonl"):
        for text in (out / name).read_text().splitlines():
            json.loads(text)  # no torn line
    first = run.steps()[0]
    assert first["status"] == "ok" and len(summaries(run, first["step"])) == 1
    for path, data in before.items():  # what was written before the disk filled is untouched
        assert path.read_bytes() == data
    assert not list(out.rglob(".*.tmp"))  # no half-written temporaries left taking space


# -- classification, without a lab ---------------------------------------------------------------
# Texts below are what Debian 12's coreutils `timeout`, util-linux `setsid -w`, dash and iperf3 3.12
# print (seen on the lab); the lab tests above check the same paths end to end.

def result(rc: int | None, stderr: str = "", stdout: str = "", *, stopped: bool = False,
           timed_out: bool = False) -> CommandResult:
    cmd = Command(Host("h1", "198.18.254.1"), "server", ("iperf3", "-s"), label="server-h1-5201")
    return CommandResult(cmd, rc, stdout, stderr, 0.0, 1.0, timed_out=timed_out, stopped=stopped)


def test_signal_deaths_are_named_unless_bench_stopped_the_command() -> None:
    assert faults.killed_by(result(139)) == "SIGSEGV"
    assert faults.killed_by(result(-11)) == "SIGSEGV"  # a local process, as Popen reports it
    assert faults.killed_by(result(143, stopped=True)) is None
    assert faults.killed_by(result(137, timed_out=True)) is None
    assert faults.killed_by(result(-1)) is None and faults.killed_by(result(1)) is None


def test_setsid_exit_status_becomes_the_shells_128_plus_signal() -> None:
    said = "setsid: child 4242 did not exit normally: Success\n"
    assert shell_exit_code(11, said) == 139
    assert shell_exit_code(1, "iperf3: error\n") == 1


def test_missing_programs_are_told_apart_from_other_exit_codes() -> None:
    gone = faults.missing_tool([result(127, "timeout: failed to run command '/opt/x/iperf3': "
                                            "No such file or directory\n")])
    assert gone is not None and gone.kind == "tool_missing"
    assert gone.message.startswith("h1: /opt/x/iperf3: No such file or directory")
    shell = faults.missing_tool([result(127, "sh: 1: exec: ib_write_bw: not found\n")])
    assert shell is not None and "ib_write_bw: not found" in shell.message
    assert faults.missing_tool([result(127, "mpirun noticed that process rank 1 exited\n")]) is None
    assert faults.missing_tool([result(1, "iperf3: error - not found\n")]) is None


def test_a_server_that_cannot_listen_is_port_in_use() -> None:
    said = "iperf3: error - unable to start listener for connections: Address already in use\niperf3: exiting\n"
    failure = faults.not_ready(result(1, said), 30)
    assert failure.kind == "port_in_use" and "Address already in use" in failure.message
    silent = faults.not_ready(result(None, stdout="starting\n"), 30)
    assert (silent.kind, silent.message) == ("server_not_ready",
                                              "h1: server server-h1-5201 not ready after 30 s: starting")


def test_failure_messages_are_one_line() -> None:
    usage = "x failed (stderr: iperf3: unrecognized option '--bad'\nUsage: iperf3\n" + "  -p\n" * 50 + "end)"
    assert faults.one_line(usage) == "x failed (stderr: iperf3: unrecognized option '--bad' [... 51 lines ...] end)"
    assert len(faults.one_line("y" * 5000)) == 600


def test_a_write_cut_short_leaves_whole_lines_only(tmp_path: Path) -> None:
    """A file size limit (EFBIG) stands in for a full disk: the append fails cleanly, nothing is torn."""
    script = (
        "import json, resource, signal, sys\n"
        "from benchharness.core.errors import StorageError\n"
        "from benchharness.results.store import RunDir\n"
        "run = RunDir.create(__import__('pathlib').Path(sys.argv[1]))\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (5000, 5000))\n"
        "try:\n"
        "    for i in range(1000):\n"
        "        run.append_samples([{'i': i, 'pad': 'x' * 300}])\n"
        "except StorageError as exc:\n"
        "    print(exc.message)\n")
    res = subprocess.run([sys.executable, "-c", script, str(tmp_path / "run")], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"cannot write {tmp_path / 'run' / 'samples.jsonl'}: File too large")
    text = (tmp_path / "run" / "samples.jsonl").read_text()
    assert text.endswith("\n")
    assert [json.loads(line)["i"] for line in text.splitlines()] == list(range(len(text.splitlines())))


def test_ssh_failures_have_kinds_of_their_own() -> None:
    import paramiko

    from benchharness.transport.ssh import ssh_error_kind

    assert ssh_error_kind(paramiko.AuthenticationException("Authentication failed.")) == "auth_failed"
    unknown = paramiko.SSHException("Server '198.18.254.1' not found in known_hosts")
    assert ssh_error_kind(unknown) == "host_key_unknown"
    assert ssh_error_kind(TimeoutError()) == "unreachable"
