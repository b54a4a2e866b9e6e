"""Runs inside the soft-RoCE VM (tests/vmharness.py): the real ``bench`` commands on an rxe lab.

``python tests/rdma_vm_guest.py RESULTS`` first loads virtio_net for the VM's multi-queue NIC and
runs the real host probe on this guest (``RESULTS/probe-mq.json``: its channels, RSS table and
queue IRQs), then brings up ``bench lab up hosts=2 rdma=rxe``, runs
``bench doctor``, the rdma-bw suite, the RDMA part of acceptance (thresholds for emulation, read
latency, and UCX over verbs in the same run), takes the lab down, and writes ``RESULTS/guest.json``: every command
with its exit code, output and wall time, the rxe GID table, and what was left running or
configured after ``lab down``. The assertions are on the host side (tests/test_rdma_vm.py).

Each command's limit is its time at reference speed (``STEP_WORK_S``, with margin) times the
machine's speed factor: the one the host measured from this boot (``RESULTS/speed.json``), raised
when a short CPU loop timed before the command runs slower than it did at boot (the load beside
the VM grew). Each command's start (with its limit) and end go to ``RESULTS/progress.jsonl`` as
they happen: the host's watchdog gives a running command its announced limit, and a VM stopped by
it still says which command was running. A command past its limit is killed with its whole
process group (its SSH sessions and tools would otherwise hold the output pipes open).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUITES = HERE / "fixtures" / "rdma_vm"
LAB = "vm"
INVENTORY = Path("/run/benchharness/labs") / LAB / "inventory.ini"
#: Each command's limit at reference speed (tests/vmharness.py REFERENCE_BOOT_S), about 4x what it
#: takes there: a hang guard that scales with the machine, never a performance bound.
STEP_WORK_S = {"nic probe": 60, "lab up": 60, "doctor": 90, "rdma-bw": 150, "acceptance-rxe": 360,
               "report": 90, "lab down": 60}


def machine_speed(results: Path, wait_s: float = 60) -> float:
    """The speed factor the host measured from this boot (>= 1; 1 when it never arrived)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            return max(1.0, float(json.loads((results / "speed.json").read_text())["speed"]))
        except (OSError, ValueError, KeyError):
            time.sleep(0.5)
    return 1.0


def cpu_loop_s() -> float:
    """Seconds for a fixed pure-Python loop: this guest's CPU speed right now."""
    start = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += i * i
    return time.perf_counter() - start


class Speed:
    """The speed factor for the next command: the boot's, times how much slower the CPU loop runs
    now than it ran at boot (never less than the boot's)."""

    def __init__(self, boot: float) -> None:
        self.boot = boot
        self.loop_at_boot = min(cpu_loop_s() for _ in range(3))

    def now(self) -> float:
        ratio = min(cpu_loop_s() for _ in range(2)) / self.loop_at_boot
        return self.boot * max(1.0, ratio)


def progress(results: Path, record: dict[str, Any]) -> None:
    """Append one start/end record to progress.jsonl at once (the host reads it after a kill)."""
    with open(results / "progress.jsonl", "a") as out:
        out.write(json.dumps({**record, "t": round(time.time(), 2)}) + "\n")
        out.flush()
        os.fsync(out.fileno())


def bench(results: Path, speed: Speed, name: str, *args: str) -> dict[str, Any]:
    """Run ``bench ARGS`` within its scaled limit; its record (argv, rc, stdout, stderr, wall_s,
    limit_s, speed) goes into the log."""
    argv = [sys.executable, "-m", "benchharness", *args]
    factor = speed.now()
    timeout = STEP_WORK_S[name] * factor
    progress(results, {"event": "start", "name": name, "limit_s": round(timeout), "speed": round(factor, 2)})
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # bench stops its tools and keeps what it measured
        try:
            out, err = proc.communicate(timeout=20 * factor)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # bench and everything it started
            out, err = proc.communicate()
        rc, err = None, f"{err}\ntimed out after {timeout:.0f} s"
    rec = {"name": name, "argv": args, "rc": rc, "stdout": out, "stderr": err,
           "wall_s": round(time.monotonic() - start, 1), "limit_s": round(timeout), "speed": round(factor, 2)}
    progress(results, {"event": "end", "name": name, "rc": rc, "wall_s": rec["wall_s"]})
    print(f"[guest] {name}: rc={rc} {rec['wall_s']} s", flush=True)
    return rec


def nic_probe(results: Path, speed: Speed) -> dict[str, Any]:
    """``modprobe virtio_net`` (no udev here), wait for its netdev, run the real probe of this guest."""
    factor = speed.now()
    timeout = STEP_WORK_S["nic probe"] * factor
    progress(results, {"event": "start", "name": "nic probe", "limit_s": round(timeout), "speed": round(factor, 2)})
    start = time.monotonic()
    load = subprocess.run(["modprobe", "virtio_net"], capture_output=True, text=True, check=False)
    netdevs: list[str] = []
    while time.monotonic() - start < 10 * factor and not netdevs:
        netdevs = [p.name for p in Path("/sys/class/net").iterdir()
                   if (p / "device" / "driver").resolve().name == "virtio_net"]
        time.sleep(0.2)
    probe = HERE.parent / "benchharness" / "onhost" / "probe.py"
    try:
        proc = subprocess.run([sys.executable, str(probe), "--timeout", str(round(10 * factor))],
                              capture_output=True, text=True, timeout=timeout, check=False)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", f"timed out after {timeout:.0f} s"
    (results / "probe-mq.json").write_text(out)
    rec = {"name": "nic probe", "argv": ["probe.py"], "rc": rc, "stdout": "", "stderr": load.stderr + err,
           "netdevs": netdevs, "wall_s": round(time.monotonic() - start, 1), "limit_s": round(timeout),
           "speed": round(factor, 2)}
    progress(results, {"event": "end", "name": "nic probe", "rc": rc, "wall_s": rec["wall_s"]})
    print(f"[guest] nic probe: rc={rc} {rec['wall_s']} s, netdevs {netdevs}", flush=True)
    return rec


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def gid_table(dev: str) -> list[dict[str, Any]]:
    """The non-zero GIDs of ``dev`` port 1 with their types (sysfs, initial namespace)."""
    port = Path("/sys/class/infiniband") / dev / "ports" / "1"
    rows = []
    for entry in sorted((port / "gids").glob("*"), key=lambda p: int(p.name)):
        gid = _read(entry)
        if gid and set(gid.replace(":", "")) != {"0"}:
            rows.append({"index": int(entry.name), "gid": gid, "type": _read(port / "gid_attrs" / "types" / entry.name),
                         "netdev": _read(port / "gid_attrs" / "ndevs" / entry.name)})
    return rows


def leftovers() -> dict[str, Any]:
    """What runs and what is configured once the lab is down (user processes, netns, rxe, links)."""
    me = {os.getpid(), os.getppid(), 1}
    procs = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in me:
            continue
        cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip() \
            if (d / "cmdline").exists() else ""
        if cmd:  # kernel threads have an empty command line
            procs.append(f"{d.name} {cmd}")
    run = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    rdma = subprocess.run(["rdma", "link", "show"], capture_output=True, text=True, check=False).stdout
    return {"processes": procs, "netns": sorted(p.name for p in Path("/run/netns").glob("*")),
            "links": [ln.split(":")[1].strip().split("@")[0] for ln in run.splitlines()],
            "rdma_links": rdma.strip().splitlines(),
            "ib_devices": sorted(p.name for p in Path("/sys/class/infiniband").glob("*"))}


def main(results: Path) -> int:
    started = time.monotonic()
    log: dict[str, Any] = {"steps": [], "kernel": os.uname().release}
    steps = log["steps"]

    def save() -> None:
        log["wall_s"] = round(time.monotonic() - started, 1)
        (results / "guest.json").write_text(json.dumps(log, indent=1) + "\n")

    runs = results / "runs"
    speed = Speed(machine_speed(results))
    log["speed"] = speed.boot
    steps.append(nic_probe(results, speed))
    save()
    up = bench(results, speed, "lab up", "lab", "up", "hosts=2", "rdma=rxe", f"name={LAB}")
    steps.append(up)
    if up["rc"] == 0:
        log["inventory"] = INVENTORY.read_text()
        log["gids"] = {dev: gid_table(dev) for dev in sorted(p.name for p in Path("/sys/class/infiniband").glob("*"))}
        inv = f"hosts={INVENTORY}"
        steps.append(bench(results, speed, "doctor", "doctor", inv, f"out={results / 'doctor.json'}"))
        steps.append(bench(results, speed, "rdma-bw", "run", "suite=rdma-bw", inv, "size=64K", "bidir=false",
                               "duration=2", f"out={runs / 'rdma-bw'}"))
        steps.append(bench(results, speed, "acceptance-rxe", "run", f"suite={SUITES / 'acceptance-rxe.yaml'}", inv,
                               f"out={runs / 'acceptance-rxe'}", f"junit={results / 'acceptance-rxe.xml'}"))
        # bench report renders the run again on the host side (tests/test_rdma_vm.py): Python's
        # start-up with the report's libraries took 42 s here under TCG
        log["lab_processes_before_down"] = subprocess.run(
            ["ip", "netns", "pids", f"bh-{LAB}-h1"], capture_output=True, text=True, check=False).stdout.split()
    save()
    steps.append(bench(results, speed, "lab down", "lab", "down", f"name={LAB}"))
    time.sleep(1)
    log["after_down"] = leftovers()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
