"""Transports: how commands reach a host (local subprocess or SSH)."""

from __future__ import annotations

from typing import Any

from benchharness.core.model import Host
from benchharness.transport.base import Process, Transport


def transport_for(host: Host, launcher: Any = None) -> Transport:
    """The transport a host needs: the launcher's (e.g. Slurm job steps) when the run has one,
    else local for the local machine and SSH otherwise."""
    if launcher is not None:
        transport: Transport = launcher.transport(host)
        return transport
    if host.local:
        from benchharness.transport.local import LocalTransport

        return LocalTransport(host)
    from benchharness.transport.ssh import SSHTransport

    return SSHTransport(host)


__all__ = ["Process", "Transport", "transport_for"]
