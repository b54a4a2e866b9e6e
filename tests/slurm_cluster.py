"""A real, local Slurm on a loopback lab, for tests: Debian's munged, slurmctld and slurmd.

Each lab host is a Slurm node: its ``slurmd`` runs inside the host's network namespace
(``nsenter --net``; the mount namespace stays the machine's, so slurmd finds its cgroups), and
``slurmctld`` runs in the first host's namespace under a UTS namespace of its own, so every
daemon listens only on lab addresses. One ``munged`` with a fresh key serves them all through a
socket in the cluster's directory. Everything lives in one temporary directory (config, state,
spool, logs, pid files, ``TmpFS`` per node so that PMIx's per-node directories do not collide on
the shared disk) and is stopped and removed on exit. Clients need ``SLURM_CONF`` (``env``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchharness.lab.control import LabInfo, netns_pids

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "salloc", "sinfo", "scancel", "nsenter", "unshare")
START_TIMEOUT_S = 30.0


def slurm_missing() -> str | None:
    """Why a local Slurm cannot start here (a skip reason), or None."""
    missing = [d for d in DAEMONS if not shutil.which(d)]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} missing): "
                "apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        return "a local Slurm on the lab needs root"
    return None


@dataclass
class LocalSlurm:
    """A running local Slurm: its directory, config and the environment its clients need."""

    dir: Path
    conf: Path
    nodes: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (sinfo, squeue, scontrol ...) against this cluster."""
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False)

    def log(self, name: str) -> str:
        """A daemon's log (``slurmctld``, ``slurmd-h1``, ``munged``) for failure messages."""
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _conf(d: Path, lab: LabInfo, cpus: int, ctl_name: str) -> str:
    ctl = lab.hosts[0]
    lines = [
        f"# local Slurm on bench lab {lab.name} (tests/slurm_cluster.py)",
        f"ClusterName=bench{lab.name.replace('-', '')}", f"SlurmctldHost={ctl_name}({ctl.address})",
        "AuthType=auth/munge", f"AuthInfo=socket={d / 'munge' / 'munge.sock'}", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool' / '%n'}", f"TmpFS={d / 'tmp' / '%n'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={d / 'slurmctld.log'}", f"SlurmdLogFile={d / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "MpiDefault=none", "ReturnToService=2",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none", "SlurmctldTimeout=30", "SlurmdTimeout=60", "InactiveLimit=0",
        "KillWait=2", "MinJobAge=30",
    ]
    lines += [f"NodeName={h.name} NodeAddr={h.address} CPUs={cpus} State=UNKNOWN" for h in lab.hosts]
    lines += ["PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]
    return "\n".join(lines)


def _start(argv: list[str], what: str, log: Path) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        raise RuntimeError(f"{what} did not start: {proc.stderr.strip()} {' | '.join(tail)}")


def _stop_pidfile(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def local_slurm(lab: LabInfo) -> Iterator[LocalSlurm]:
    """Munge, slurmctld and one slurmd per lab host; all stopped and removed on exit."""
    d = Path(tempfile.mkdtemp(prefix=f"bh-slurm-{lab.name}-"))
    d.chmod(0o755)  # munged wants every directory above its socket searchable
    munge = d / "munge"
    munge.mkdir(mode=0o711)
    for sub in ("state", "spool", "tmp"):
        (d / sub).mkdir()
    for h in lab.hosts:
        (d / "tmp" / h.name).mkdir()
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    ctl_name = f"{lab.name}-ctl"
    conf = d / "slurm.conf"
    conf.write_text(_conf(d, lab, os.cpu_count() or 1, ctl_name))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    env.pop("SLURM_JOB_ID", None)
    cluster = LocalSlurm(d, conf, [h.name for h in lab.hosts], env)
    try:
        _start(["munged", f"--socket={munge / 'munge.sock'}", f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}"], "munged", d / "munged.log")
        ctl_ns = f"--net=/run/netns/{lab.hosts[0].netns}"
        _start(["nsenter", ctl_ns, "unshare", "--uts", "sh", "-c", 'hostname "$1" && exec slurmctld -f "$2"',
                "sh", ctl_name, str(conf)], "slurmctld", d / "slurmctld.log")
        for h in lab.hosts:
            _start(["nsenter", f"--net=/run/netns/{h.netns}", "slurmd", "-f", str(conf), "-N", h.name],
                   f"slurmd {h.name}", d / f"slurmd-{h.name}.log")
        deadline = time.monotonic() + START_TIMEOUT_S
        states = ""
        while time.monotonic() < deadline:
            states = cluster.run("sinfo", "-h", "-N", "-o", "%N %t").stdout
            if states and all(line.split()[1] == "idle" for line in states.splitlines() if line.split()):
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"Slurm nodes not idle after {START_TIMEOUT_S:.0f} s: {states!r}; "
                               f"slurmctld.log: {cluster.log('slurmctld')[-500:]}")
        yield cluster
    finally:
        cluster.run("scancel", "--full", "--user=root", timeout=10)
        for h in lab.hosts:
            _stop_pidfile(d / f"slurmd-{h.name}.pid")
        _stop_pidfile(d / "slurmctld.pid")
        for h in lab.hosts:  # steps whose slurmd went first
            for pid in netns_pids(h.netns):
                with contextlib.suppress(OSError):
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd":
                        os.kill(pid, signal.SIGKILL)
        _stop_pidfile(munge / "munged.pid")
        shutil.rmtree(d, ignore_errors=True)
