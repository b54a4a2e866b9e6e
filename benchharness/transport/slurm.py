"""Slurm as the launcher: every command becomes a job step started by ``srun`` on the controller.

No SSH is involved. A command for host H runs as::

    srun --jobid=J --nodelist=H -N1 -n1 --overlap --quiet [--time=M] -- ARGV

inside one allocation ``J`` for the whole run: the one ``bench run`` was started in
(``SLURM_JOB_ID``, e.g. under ``salloc``), or one the harness makes with ``salloc --no-shell
--exclusive`` over the plan's nodes and cancels when the run ends. A command that is already an
``srun`` line (collectives: ``srun -N <n> --mpi=pmix ...``) runs as it is, inside the same
allocation. Stopping a command sends SIGTERM to its ``srun``, which forwards it to the step's
tasks; Slurm's step time limit bounds a step even if the harness dies.

Host variables: ``slurm_node`` (the Slurm node name; default the inventory name),
``slurm_partition``, ``slurm_account``, ``slurm_args`` (extra srun/salloc arguments, a list or a
shell-quoted string). The environment (``SLURM_CONF`` ...) is the controller's own.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence

from benchharness.core.errors import ToolFailure, TransportError
from benchharness.core.model import Host
from benchharness.core.values import argv_list
from benchharness.transport.base import Process, Transport
from benchharness.transport.local import LocalProcess

SALLOC_TIMEOUT_S = 120.0
_GRANTED = re.compile(r"job allocation (\d+)")


def node_name(host: Host) -> str:
    """The Slurm node a host is: host var ``slurm_node``, else its inventory name."""
    return str(host.var("slurm_node") or host.name)




def site_args(host: Host) -> list[str]:
    """``--partition`` and ``--account`` from host vars, then ``slurm_args``."""
    out = []
    if host.var("slurm_partition"):
        out.append(f"--partition={host.var('slurm_partition')}")
    if host.var("slurm_account"):
        out.append(f"--account={host.var('slurm_account')}")
    return out + argv_list(host.var("slurm_args"), "slurm_args")


def step_argv(host: Host, argv: Sequence[str], jobid: str | None, limit_s: float | None) -> list[str]:
    """The ``srun`` line that runs ``argv`` as a one-task job step on ``host``'s node (pure)."""
    out = ["srun"]
    if jobid:
        out.append(f"--jobid={jobid}")
    out += [f"--nodelist={node_name(host)}", "-N1", "-n1", "--overlap", "--quiet",
            f"--job-name=bench-{host.name}"]
    if limit_s:
        out.append(f"--time={max(1, math.ceil(limit_s / 60))}")
    return [*out, *site_args(host), "--", *argv]


def join_allocation(argv: Sequence[str], jobid: str | None) -> list[str]:
    """An adapter's own ``srun`` line, placed in allocation ``jobid`` unless it names one (pure)."""
    if not jobid or any(a.startswith(("--jobid", "--jobid=")) for a in argv):
        return list(argv)
    return [argv[0], f"--jobid={jobid}", *argv[1:]]


class SlurmLauncher:
    """One run's link to Slurm: the allocation its steps run in, and a transport per host."""

    name = "slurm"

    def __init__(self, hosts: Sequence[Host], env: Mapping[str, str] | None = None) -> None:
        self.hosts = list(hosts)
        self.env = dict(os.environ if env is None else env)
        self.jobid: str | None = self.env.get("SLURM_JOB_ID") or None
        self._owned = False
        self._lock = threading.Lock()

    def check(self) -> None:
        """TransportError when ``srun`` is missing on the controller."""
        for tool in ("srun", "salloc", "scancel"):
            if not shutil.which(tool, path=self.env.get("PATH")):
                raise TransportError("controller", f"launcher=slurm needs {tool}, which is not on PATH "
                                                   "(install slurm-client, or run with launcher=ssh)")

    def allocation(self) -> str:
        """The job id the run's steps go into; made with ``salloc --no-shell`` on first use."""
        with self._lock:
            if self.jobid is None:
                self.jobid = self._allocate()
                self._owned = True
            return self.jobid

    def _allocate(self) -> str:
        nodes = sorted({node_name(h) for h in self.hosts})
        first = self.hosts[0] if self.hosts else None
        argv = ["salloc", "--no-shell", "--exclusive", f"-N{len(nodes)}", f"--nodelist={','.join(nodes)}",
                "--job-name=bench", f"--immediate={int(SALLOC_TIMEOUT_S)}",
                *(site_args(first) if first else [])]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, env=self.env,
                                  timeout=SALLOC_TIMEOUT_S + 10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TransportError("controller", f"{shlex.join(argv)}: {exc}") from exc
        match = _GRANTED.search(proc.stderr + proc.stdout)
        if proc.returncode != 0 or not match:
            why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise TransportError("controller", f"Slurm allocation of {','.join(nodes)} failed: {why[0]}")
        return match.group(1)

    def transport(self, host: Host) -> SlurmTransport:
        """The transport that starts ``host``'s commands as job steps."""
        return SlurmTransport(host, self)

    def close(self) -> None:
        """Cancel the allocation if the harness made it (a user's own allocation is left alone)."""
        with self._lock:
            if self._owned and self.jobid:
                subprocess.run(["scancel", self.jobid], capture_output=True, env=self.env, timeout=30,
                               check=False)
            if self._owned:
                self.jobid, self._owned = None, False


class SlurmTransport(Transport):
    """Runs one host's commands as Slurm job steps, started from the controller."""

    def __init__(self, host: Host, launcher: SlurmLauncher) -> None:
        super().__init__(host)
        self.launcher = launcher

    def connection(self) -> str:
        """Makes sure the allocation exists (the runner calls this for every host before round 1)."""
        return self.launcher.allocation()

    def argv_for(self, argv: Sequence[str], limit_s: float | None) -> list[str]:
        """What actually runs on the controller for ``argv``."""
        jobid = self.launcher.allocation()
        if os.path.basename(argv[0]) == "srun":
            return join_allocation(argv, jobid)
        return step_argv(self.host, argv, jobid, limit_s)

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              limit_s: float | None = None, stdin: bool = False) -> Process:
        if not argv:
            raise TransportError(self.host.name, "empty command line")
        full_env = {**self.launcher.env, **(env or {})}
        # The local deadline is a backstop; Slurm's --time is the limit that holds on the node.
        return LocalProcess(self.argv_for(argv, limit_s), full_env, limit_s + 60 if limit_s else None, stdin)

    def _copy(self, argv: Sequence[str], stdin_path: str | None, stdout_path: str | None, what: str) -> None:
        jobid = self.launcher.allocation()
        full = step_argv(self.host, argv, jobid, 300)
        try:
            with open(stdin_path or os.devnull, "rb") as src, \
                    open(stdout_path, "wb") if stdout_path else open(os.devnull, "wb") as dst:
                proc = subprocess.run(full, stdin=src, stdout=dst, stderr=subprocess.PIPE,
                                      env=self.launcher.env, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolFailure(f"{what}_failed", f"{self.host.name}: {shlex.join(full)}: {exc}") from exc
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise ToolFailure(f"{what}_failed", f"{self.host.name}: {shlex.join(argv)}: {err[0]}")

    def put(self, local_path: str, remote_path: str) -> None:
        """Copy through the step's standard input (works without a shared file system)."""
        folder = os.path.dirname(remote_path) or "."
        script = 'mkdir -p "$1" && cat > "$2.bench-tmp" && mv "$2.bench-tmp" "$2"'
        self._copy(["sh", "-c", script, "bench-put", folder, remote_path], local_path, None, "upload")

    def get(self, remote_path: str, local_path: str) -> None:
        self._copy(["cat", remote_path], None, local_path, "download")

    def close(self) -> None:
        """Nothing per host: the launcher owns the allocation."""

