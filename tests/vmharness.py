"""A throw-away virtual machine for the tests that need a kernel feature this machine lacks.

The machine's kernel may have no soft-RoCE (``rdma_rxe``); Debian's ``linux-image-amd64`` has it
as a module. ``run_in_vm`` boots that kernel under qemu (software emulation: KVM is not assumed)
with this machine's ``/`` shared read-only over virtio-9p and a writable results folder as a
second share, runs one command inside as the guest's first process, and powers the guest off.

* The initramfs (``build_initramfs``) holds bash, kmod, mount, mkdir and switch_root with their
  libraries, and the virtio-pci and 9p modules with their dependencies; it is cached per kernel
  under ``cache_dir``. Its ``/init`` mounts the root share, tmpfs on ``/tmp``, ``/run``,
  ``/var/tmp`` and ``/var/log`` (those of this machine stay hidden), the other shares, and
  ``switch_root``s into the guest script.
* The guest script (PID 1) adds the ``/dev/fd`` links devtmpfs lacks, runs the command with its
  output in ``<results>/output.log``, writes the exit code to ``<results>/status`` (qemu exits 0
  whatever happens inside), syncs and powers off through sysrq ``o``.
* Limits follow the machine's measured speed. The guest writes ``<results>/booted`` when its
  command starts; the time from qemu's start to that mark (``boot_s``) over the fastest boot seen
  (``REFERENCE_BOOT_S``) is this machine's emulation ``speed`` factor, recorded beside the
  initramfs (``speed.json``) and handed to the guest in ``<results>/speed.json``. The command's
  limit is ``work_s`` (its time at reference speed, with margin) times that factor; the boot has a
  hang guard of its own. A guest that reports its steps in ``<results>/progress.jsonl`` gets them
  named when it is stopped: which one was running, and how long each took. A step that announces
  its own limit (``limit_s``, scaled by the speed the guest measured just before it: the load may
  have grown since the boot) may run that long plus ``RUNNING_GRACE_S``, past the command's limit.
* The guest's clock: TCG gives every vCPU the host's TSC, but Debian's kernel finds the TSCs
  "unsynchronized", marks the TSC unstable and falls back to the HPET, so every
  ``gettimeofday`` is a system call and an emulated MMIO read. A host preemption between a
  program's ``rdtsc`` and its ``gettimeofday`` then skews their pairing, which is exactly what
  perftest's CPU-clock estimate regresses (r^2 of 200 TSC/wall-clock pairs must be >= 0.9; it fell
  to 0.49 on a loaded machine). With an invariant TSC (``-cpu max,+invtsc``) and
  ``clocksource=tsc tsc=reliable`` the guest reads the time in the vDSO from the same TSC, a few
  instructions after ``rdtsc``, and the estimate holds (docs/performance.md has the figures).
  qemu also runs at nice ``QEMU_NICE``, so load beside the VM seldom preempts a vCPU there.
* A watchdog kills qemu, by its own pid, when the boot or the command outlives its limit.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QEMU = "qemu-system-x86_64"
#: What the initramfs needs to mount 9p over virtio-pci.
INITRAMFS_MODULES = ("virtio_pci", "9pnet_virtio", "9p")
INITRAMFS_TOOLS = ("bash", "mount", "mkdir", "switch_root", "kmod", "sleep")
#: Mounted as tmpfs in the guest (over this machine's, which the read-only share would show).
GUEST_TMPFS = ("/tmp", "/run", "/var/tmp", "/var/log")
MODULE_NEEDED = "rdma_rxe"
#: qemu start to the guest's command, in seconds, on the fastest machine seen (2 cores, quiet):
#: the reference speed the limits scale from. A machine whose boot takes 3x longer gets 3x the time.
REFERENCE_BOOT_S = 7.0
#: Hang guard for the boot alone (qemu start to the guest's command), whatever the speed.
BOOT_TIMEOUT_S = 300.0
#: Kernel options: the TSC as the guest's clock (see the module docstring), quiet console.
KERNEL_APPEND = "console=ttyS0 panic=-1 quiet loglevel=4 clocksource=tsc tsc=reliable"
#: Guest boots kept in speed.json beside the initramfs.
SPEED_HISTORY = 20


@dataclass
class VmResult:
    """What a guest command left: its exit code (None: it never finished), output and console,
    the measured boot and speed factor, the limit the command had, and the steps it reported."""

    status: int | None
    output: str
    console: str
    wall_s: float
    timed_out: bool
    pid: int
    boot_s: float | None = None
    speed: float | None = None
    limit_s: float | None = None
    progress: list[dict[str, Any]] = field(default_factory=list)
    ended_at: float | None = None  # epoch seconds when qemu was gone

    def timings(self) -> str:
        """``boot 9 s (speed 1.3x), limit 700 s; lab up 8 s, doctor 14 s, ... RUNNING rdma-bw 300 s``."""
        head = (f"boot {self.boot_s:.0f} s (speed {self.speed:.2f}x of the {REFERENCE_BOOT_S:.0f} s reference)"
                if self.boot_s is not None and self.speed is not None else "the guest never reported its boot")
        if self.limit_s is not None:
            head += f", command limit {self.limit_s:.0f} s"
        steps = [f"{name} {wall:.0f} s" for name, wall in finished_steps(self.progress)]
        running = running_step(self.progress, self.ended_at)
        if running is not None:
            steps.append(f"RUNNING {running[0]} (for {running[1]:.0f} s when stopped)")
        return head + ("; " + ", ".join(steps) if steps else "")

    def describe(self) -> str:
        """One paragraph on how the guest ended, for an assertion message."""
        if self.timed_out:
            what = ("the VM did not boot within its hang guard" if self.boot_s is None
                    else "the VM's command ran past its limit and was killed")
            return f"{what}: {self.timings()}; console: {self.console[-1500:]}"
        return f"guest status {self.status}: {self.timings()}; output: {self.output[-2500:]}"


def finished_steps(progress: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """(name, seconds) of every step that reported its end, in order."""
    return [(str(p["name"]), float(p["wall_s"])) for p in progress if p.get("event") == "end"]


def running_step(progress: Sequence[dict[str, Any]], now: float | None = None) -> tuple[str, float] | None:
    """(name, seconds until ``now``, epoch) of the step that started and never ended, if any."""
    ended = {p["name"] for p in progress if p.get("event") == "end"}
    started = [p for p in progress if p.get("event") == "start" and p["name"] not in ended]
    if not started:
        return None
    last = started[-1]
    return str(last["name"]), max(0.0, (now if now is not None else float(last["t"])) - float(last["t"]))


def read_progress(results: Path) -> list[dict[str, Any]]:
    """The guest's step records (``progress.jsonl``); a line cut by the kill is skipped."""
    out = []
    try:
        lines = (results / "progress.jsonl").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def record_speed(cache_dir: Path, boot_s: float) -> dict[str, Any]:
    """Append a boot to ``speed.json`` beside the initramfs; returns the record (boots, median)."""
    path = cache_dir / "speed.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    earlier = [float(b) for b in data.get("boots_s", [])][-(SPEED_HISTORY - 1):]
    boots = [*earlier, round(boot_s, 2)]
    record = {"reference_boot_s": REFERENCE_BOOT_S, "boots_s": boots,
              "median_boot_s": sorted(boots)[len(boots) // 2], "cpus": os.cpu_count()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)
    return record


def find_kernel(module: str = MODULE_NEEDED) -> tuple[Path, str] | None:
    """The newest ``/boot/vmlinuz-*`` whose modules under /lib/modules include ``module``."""
    found = []
    for image in Path("/boot").glob("vmlinuz-*"):
        release = image.name.removeprefix("vmlinuz-")
        dep = Path("/lib/modules") / release / "modules.dep"
        try:
            if re.search(rf"/{re.escape(module)}\.ko(\.\w+)?:", dep.read_text()):
                found.append((image, release))
        except OSError:
            continue
    return max(found, key=lambda item: [int(n) for n in re.findall(r"\d+", item[1])]) if found else None


def skip_reason() -> str | None:
    """Why no VM can run here (not root, no qemu, no kernel with rdma_rxe), or None."""
    if os.geteuid() != 0:
        return "the soft-RoCE VM needs root (qemu's 9p share of / and the lab inside)"
    if not shutil.which(QEMU):
        return f"{QEMU} is not installed (Debian: qemu-system-x86; ./setup.sh installs it)"
    if find_kernel() is None:
        return (f"no kernel under /boot with {MODULE_NEEDED} in its modules "
                "(Debian: linux-image-amd64; ./setup.sh installs it)")
    return None


def _module_order(release: str, names: Iterable[str]) -> list[str]:
    """Module files (relative to /lib/modules/<release>) in load order, dependencies first."""
    deps: dict[str, list[str]] = {}
    for line in (Path("/lib/modules") / release / "modules.dep").read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
    by_name = {re.sub(r"\.ko(\.\w+)?$", "", Path(p).name).replace("-", "_"): p for p in deps}
    order: list[str] = []

    def visit(path: str) -> None:
        if path in order:
            return
        for dep in reversed(deps.get(path, [])):  # modules.dep lists the deepest dependency last
            visit(dep)
        order.append(path)

    for name in names:
        visit(by_name[name])
    return order


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False).stdout
    libs = re.findall(r"=>\s*(/\S+)", out) + re.findall(r"^\s*(/\S+)\s+\(", out, re.MULTILINE)
    return sorted(set(libs))


class _Cpio:
    """A gzip'ed cpio archive in the kernel's ``newc`` format."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.ino = 1
        self.dirs: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        header = b"070701" + b"".join(f"{v:08x}".encode() for v in fields)
        self.ino += 1
        blob = header + name.encode() + b"\0"
        blob += b"\0" * (-len(blob) % 4)
        self.parts.append(blob + data + b"\0" * (-len(data) % 4))

    def mkdir(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, 0o040755)

    def file(self, path: str, data: bytes, mode: int = 0o755) -> None:
        self.mkdir(str(Path(path).parent))
        self._entry(path.strip("/"), 0o100000 | mode, data)

    def symlink(self, path: str, target: str) -> None:
        self.mkdir(str(Path(path).parent))
        self._entry(path.strip("/"), 0o120777, target.encode())

    def write(self, target: Path) -> None:
        self._entry("TRAILER!!!", 0)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(gzip.compress(b"".join(self.parts), compresslevel=6))
        os.replace(tmp, target)


_INIT = """#!{bash}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in {modules}; do
  /initramfs/insmod "/modules/$m" || echo "initramfs: insmod $m failed"
done
opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot || {{ echo "initramfs: cannot mount the root share"; exit 1; }}
for d in {tmpfs}; do mount -t tmpfs -o mode=1777 tmpfs "/newroot$d"; done
while read -r tag path; do
  [ -n "$tag" ] || continue
  mkdir -p "/newroot$path" 2>/dev/null
  mount -t 9p -o "$opts" "$tag" "/newroot$path" || echo "initramfs: cannot mount share $tag on $path"
done < /shares
read -r guest < /guest
exec switch_root /newroot {bash} "$guest"
"""

_GUEST = """#!/bin/bash
# PID 1 of the guest, after switch_root: run the command, record its status, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp/home LANG=C.UTF-8
mkdir -p /dev/pts /dev/shm "$HOME"
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tmpfs tmpfs /dev/shm 2>/dev/null
ln -sf /proc/self/fd /dev/fd; ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout; ln -sf /proc/self/fd/2 /dev/stderr
ip link set lo up 2>/dev/null
hostname bench-vm 2>/dev/null
results={results}
cat /proc/uptime > "$results/booted"
cd {cwd} && {env} bash -c {command} > "$results/output.log" 2>&1 < /dev/null
echo $? > "$results/status.tmp" && mv "$results/status.tmp" "$results/status"
sync
echo s > /proc/sysrq-trigger
echo o > /proc/sysrq-trigger
sleep 30
"""


def build_initramfs(release: str, cache_dir: Path) -> Path:
    """The initramfs for kernel ``release`` (cached): tools, 9p/virtio modules and ``/init``."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"initramfs-{release}.cpio.gz"
    if target.exists():
        return target
    archive = _Cpio()
    binaries = {}
    for tool in INITRAMFS_TOOLS:
        path = shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")
        if path is None:
            raise RuntimeError(f"the VM initramfs needs {tool}, which is not installed")
        binaries[tool] = os.path.realpath(path)
    files = set(binaries.values())
    for binary in binaries.values():
        files.update(_libraries(binary))
    for path in sorted(files):
        archive.file(path, Path(path).read_bytes())
    archive.symlink("/initramfs/insmod", binaries["kmod"])  # kmod acts on the name it is called by
    modules = _module_order(release, INITRAMFS_MODULES)
    for rel in modules:
        archive.file(f"/modules/{rel}", (Path("/lib/modules") / release / rel).read_bytes(), 0o644)
    init = _INIT.format(bash=binaries["bash"],
                        modules=" ".join(shlex.quote(m) for m in modules), tmpfs=" ".join(GUEST_TMPFS))
    archive.file("/init", init.encode())
    archive.write(target)
    return target


def _under_tmpfs(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in GUEST_TMPFS)


def run_in_vm(command: str, results: Path, cache_dir: Path, cwd: Path, work_s: float,
              env: dict[str, str] | None = None, extra_paths: Sequence[Path] = (),
              memory_mb: int = 2048, cpus: int = 2, boot_timeout_s: float = BOOT_TIMEOUT_S,
              nic_queues: int = 0) -> VmResult:
    """Boot the VM, run ``command`` (bash) in ``cwd`` inside it, power off; see the module docstring.

    ``nic_queues`` > 0 gives the guest a virtio-net NIC with that many queue pairs, RSS and an
    MSI-X vector per queue (a real multi-queue NIC: its IRQs, channels and indirection table). Its
    tap backend lives in a network namespace of its own, made for this boot and removed after it,
    and is never brought up: nothing leaves the guest.

    ``work_s`` is the command's limit at reference speed; the real limit is ``work_s`` times the
    speed factor this boot measured (never less than ``work_s``). ``results`` is shared writable at
    the same path. Paths that a guest tmpfs would hide (``cwd``, ``extra_paths`` such as a
    virtual environment under /tmp) are shared too.
    """
    found = find_kernel()
    if found is None:
        raise RuntimeError(skip_reason() or "no kernel")
    image, release = found
    initrd = build_initramfs(release, cache_dir)
    results = results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    for name in ("status", "output.log", "console.log", "booted", "speed.json", "progress.jsonl"):
        (results / name).unlink(missing_ok=True)
    shares = [("results", results, False)]
    for i, path in enumerate(p.resolve() for p in (cwd, *extra_paths)):
        if _under_tmpfs(path) and not _under_tmpfs_shared(path, [s[1] for s in shares]):
            shares.append((f"extra{i}", path, True))
    env_words = " ".join(shlex.quote(f"{k}={v}") for k, v in (env or {}).items())
    guest = results / "guest-init.sh"
    guest.write_text(_GUEST.format(results=shlex.quote(str(results)), cwd=shlex.quote(str(cwd.resolve())),
                                   env=f"env {env_words}" if env_words else "", command=shlex.quote(command)))
    guest.chmod(0o755)
    # the initramfs reads the share list and the guest script's path from small extra files
    initrd_run = results / "initramfs.cpio.gz"
    extra = _Cpio()
    extra.file("/shares", "".join(f"{tag} {path}\n" for tag, path, _ in shares).encode(), 0o644)
    extra.file("/guest", f"{guest}\n".encode(), 0o644)
    extra_path = results / "initramfs-extra.cpio.gz"
    extra.write(extra_path)
    initrd_run.write_bytes(initrd.read_bytes() + extra_path.read_bytes())
    argv = qemu_argv(image, initrd_run, shares, memory_mb, cpus, nic_queues)
    netns = f"bhvm-{os.getpid()}" if nic_queues else None
    if netns:
        subprocess.run(["ip", "netns", "add", netns], check=True, capture_output=True)
        argv = ["ip", "netns", "exec", netns, *argv]  # ip execs qemu: the pid stays qemu's
    console = results / "console.log"
    start = time.monotonic()
    deadline = start + boot_timeout_s
    boot_s = speed = limit_s = None
    timed_out = False
    with open(console, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=_before_qemu)
        try:
            seen: dict[str, float] = {}  # guest command -> when the host first saw it start
            polls = 0
            while proc.poll() is None:
                now = time.monotonic()
                if boot_s is None and (results / "booted").exists():
                    boot_s = now - start
                    speed = boot_s / REFERENCE_BOOT_S
                    limit_s = work_s * max(1.0, speed)
                    deadline = now + limit_s
                    record_speed(cache_dir, boot_s)
                    (results / "speed.json").write_text(json.dumps(
                        {"boot_s": round(boot_s, 2), "speed": round(max(1.0, speed), 3), "limit_s": round(limit_s)}))
                polls += 1
                if boot_s is not None and polls % 5 == 0:
                    deadline = max(deadline, _running_deadline(read_progress(results), seen, now))
                if now > deadline:
                    timed_out = True
                    break
                time.sleep(0.2)
        finally:  # the watchdog (and an interrupted test): qemu by its own pid, then reaped
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if netns:
                subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)
    wall = time.monotonic() - start
    status_file = results / "status"
    status = int(status_file.read_text().strip()) if status_file.exists() else None
    output = (results / "output.log").read_text(errors="replace") if (results / "output.log").exists() else ""
    return VmResult(status, output, console.read_text(errors="replace"), wall, timed_out, proc.pid,
                    boot_s, speed, limit_s, read_progress(results), time.time())


#: qemu's nice value: its vCPU threads outweigh ordinary load beside the VM (CFS weight 29154
#: against 1024 at nice 0), so the host rarely preempts a vCPU between a guest program's rdtsc and
#: its clock read, which is what perftest's clock estimate cannot bear (docs/performance.md).
QEMU_NICE = -15


def _before_qemu() -> None:
    """In the qemu child before exec: raise its priority (root may; otherwise it stays as is)."""
    try:
        os.nice(QEMU_NICE)
    except OSError:
        pass


#: What the host adds to a guest command's own limit before it stops the VM (the guest stops the
#: command itself at its limit, and needs a moment to record that).
RUNNING_GRACE_S = 60.0


def _running_deadline(progress: Sequence[dict[str, Any]], seen: dict[str, float], now: float) -> float:
    """The host's deadline for the guest command that is running: when the host first saw it start
    plus the limit the guest announced for it (scaled by the speed the guest measured) plus grace;
    0 when none runs. A loaded machine thus gets longer, but never unbounded, time."""
    ended = {p["name"] for p in progress if p.get("event") == "end"}
    for p in progress:
        if p.get("event") == "start" and p["name"] not in ended and "limit_s" in p:
            first = seen.setdefault(str(p["name"]), now)
            return first + float(p["limit_s"]) + RUNNING_GRACE_S
    return 0.0


def qemu_argv(image: Path, initrd: Path, shares: Sequence[tuple[str, Path, bool]], memory_mb: int,
              cpus: int, nic_queues: int = 0) -> list[str]:
    """qemu's command line: TCG on every host core, an invariant TSC, ``/`` and the shares over 9p;
    with ``nic_queues``, a multi-queue virtio-net NIC with RSS on a tap that is never brought up."""
    argv = [QEMU, "-accel", "tcg,thread=multi", "-cpu", "max,+invtsc", "-smp", str(cpus), "-m", str(memory_mb),
            "-machine", "q35", "-nic", "none", "-no-reboot", "-nographic", "-monitor", "none",
            "-kernel", str(image), "-initrd", str(initrd), "-append", KERNEL_APPEND,
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"]
    for tag, path, readonly in shares:
        argv += ["-virtfs", f"local,path={path},mount_tag={tag},security_model=none,multidevs=remap"
                 + (",readonly=on" if readonly else "")]
    if nic_queues:
        argv += ["-netdev", f"tap,id=mq0,ifname=bhmq0,script=no,downscript=no,queues={nic_queues}",
                 "-device", f"virtio-net-pci,netdev=mq0,mq=on,rss=on,vectors={2 * nic_queues + 2}"]
    return argv


def _under_tmpfs_shared(path: Path, shared: Sequence[Path]) -> bool:
    return any(path == s or s in path.parents for s in shared)
