"""Launchers: how a run's commands reach its hosts. ``ssh`` (default) or ``slurm``.

``bench run launcher=slurm`` (or host var ``bench_launcher: slurm`` in the inventory) starts every
command as a Slurm job step from the controller, and collectives with one multi-node ``srun``
instead of ``mpirun``; see docs/slurm.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from benchharness.core.errors import UsageError
from benchharness.core.model import Host
from benchharness.transport.base import Transport

LAUNCHERS = ("ssh", "slurm")
HOST_VAR = "bench_launcher"


class Launcher(Protocol):
    """Makes the transport of each host and holds what the hosts share (a Slurm allocation)."""

    name: str

    def transport(self, host: Host) -> Transport: ...
    def close(self) -> None: ...


def launcher_name(requested: str | None, hosts: Sequence[Host]) -> str:
    """``launcher=`` from the command line, else the hosts' ``bench_launcher`` var, else ssh."""
    if requested:
        name = requested
    else:
        found = {str(h.var(HOST_VAR)) for h in hosts if h.var(HOST_VAR)}
        if len(found) > 1:
            raise UsageError(f"hosts disagree on {HOST_VAR}: {', '.join(sorted(found))}; "
                             "one run uses one launcher")
        name = found.pop() if found else "ssh"
    if name not in LAUNCHERS:
        raise UsageError(f"launcher={name!r} is unknown; expected one of {', '.join(LAUNCHERS)}")
    return name


def make_launcher(name: str, hosts: Sequence[Host], env: dict[str, str] | None = None) -> Any:
    """The launcher object for ``name`` (None for ssh: the runner's default transports)."""
    if name == "ssh":
        return None
    from benchharness.transport.slurm import SlurmLauncher

    launcher = SlurmLauncher(hosts, env)
    try:
        launcher.check()
    except Exception as exc:
        raise UsageError(str(getattr(exc, "message", exc))) from exc
    return launcher
