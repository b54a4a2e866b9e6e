"""Local transport: real processes, real process groups."""

from __future__ import annotations

import os
import time

from benchharness.core.model import Host
from benchharness.transport import transport_for
from benchharness.transport.base import wrap_command

LOCAL = Host("localhost", "127.0.0.1", local=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split()[2] != "Z"


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in a process group, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def test_run_returns_code_and_output() -> None:
    rc, out, err, timed_out = transport_for(LOCAL).run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (rc, out, err, timed_out) == (3, "out\n", "err\n", False)


def test_run_timeout_kills_the_whole_group(tmp_path) -> None:
    pidfile = tmp_path / "child.pid"
    # The shell forks a grandchild; stopping must kill it too, not only the leader.
    _, _, _, timed_out = transport_for(LOCAL).run(
        ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], timeout=0.5)
    assert timed_out
    child = int(pidfile.read_text())
    deadline = time.time() + 3
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_missing_binary_looks_like_command_not_found() -> None:
    rc, _, err, _ = transport_for(LOCAL).run(["no-such-benchmark-tool"])
    assert rc == 127
    assert "command not found" in err


def test_background_process_ready_pattern_and_stop() -> None:
    proc = transport_for(LOCAL).start(["sh", "-c", "echo starting; sleep 0.2; echo Server listening; sleep 30"])
    assert proc.wait_for_output("Server listening", timeout=5)
    assert proc.poll() is None
    pgid = proc.pgid()
    assert pgid is not None
    proc.stop(grace_s=0.5)
    assert proc.poll() is not None
    assert _group_members(pgid) == []


def test_wait_for_output_gives_up_when_process_exits() -> None:
    proc = transport_for(LOCAL).start(["sh", "-c", "echo nope; exit 1"])
    started = time.monotonic()
    assert not proc.wait_for_output("ready", timeout=10)
    assert time.monotonic() - started < 5


def test_wrap_command_quotes_hostile_values_and_reports_pgid(tmp_path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"x; touch {marker}; echo $(id)"
    line = wrap_command(["printf", "%s\n", hostile], env={"NCCL_IB_HCA": f"'; touch {marker}; '"}, limit_s=5)
    proc = transport_for(LOCAL).start(["sh", "-c", line])
    assert proc.wait(10) == 0
    assert proc.stdout == hostile + "\n"
    assert not marker.exists()
    assert proc.pgid() is not None
    assert "BENCH_PGID" not in proc.stderr


def test_wrap_command_limit_kills_on_the_host_itself() -> None:
    proc = transport_for(LOCAL).start(["sh", "-c", wrap_command(["sleep", "30"], limit_s=1)])
    assert proc.wait(15) not in (None, 0)
