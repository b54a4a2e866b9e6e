"""A CPU cgroup per lab host, so that each host's CPU time is its own.

Lab hosts share this machine's cores and its ``/proc/stat``; a host's sshd (and so everything a
run starts on it over ssh) runs in a cgroup of its own, and the inventory names it
(``telemetry_cpu_cgroup``) for the sampler's ``--cpu-cgroup``: the host's CPU-seconds per GB are
then that cgroup's, untouched by other hosts or other work on the machine. cgroup v1's
``cpuacct`` (per core) is used where it is mounted; elsewhere (cgroup v2 only) the hosts have no
cgroup and the sampler reads the machine's CPU.

``ip netns exec`` mounts a fresh ``/sys`` without the cgroup file systems, so the lab's cgroup
folder is also bind-mounted into the lab's own folder (``<lab>/cpu-cgroup``), where a host's
programs can read it; the bind mount goes before the lab folder is removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from pathlib import Path

V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
MOUNT_DIR = "cpu-cgroup"
_MS_BIND = 4096
_MNT_DETACH = 2


def base() -> Path | None:
    """Where lab cgroups go: ``cpuacct`` (v1) or the v2 root; None when neither is writable."""
    if (V1_CPUACCT / "cpuacct.usage_all").is_file() and os.access(V1_CPUACCT, os.W_OK):
        return V1_CPUACCT / "bench-lab"
    # The v2 hierarchy is left alone: entering a v2 cgroup from the host's shell failed inside the
    # soft-RoCE VM's guest (sshd never started), and no v2 machine has run the lab's CPU test yet.
    return None


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def make(lab: str, lab_dir: Path, hosts: list[str]) -> dict[str, tuple[str, str]]:
    """Each host's cgroup: host -> (its path here, the path its own programs read it by); empty
    where the machine offers no writable cgroup or the bind mount fails."""
    root = base()
    if root is None:
        return {}
    mine = root / lab
    seen = lab_dir / MOUNT_DIR
    try:
        for h in hosts:
            (mine / h).mkdir(parents=True, exist_ok=True)
        seen.mkdir(exist_ok=True)
        if _libc().mount(str(mine).encode(), str(seen).encode(), None, _MS_BIND, None) != 0:
            raise OSError(ctypes.get_errno(), f"bind mount of {mine} on {seen}")
    except OSError:
        remove(lab_dir, [str(mine / h) for h in hosts])
        return {}
    return {h: (str(mine / h), str(seen / h)) for h in hosts}


def remove(lab_dir: Path, paths: list[str]) -> None:
    """Undo ``make`` once the hosts' processes have ended: the bind mount, each host's cgroup and
    the lab's cgroup folder."""
    seen = lab_dir / MOUNT_DIR
    if seen.is_dir():
        _libc().umount2(str(seen).encode(), _MNT_DETACH)
        with contextlib.suppress(OSError):
            seen.rmdir()
    for p in paths:
        for d in (Path(p), Path(p).parent):
            with contextlib.suppress(OSError):
                d.rmdir()
