"""Transports: how commands reach a host (local subprocess or SSH)."""

from __future__ import annotations

from benchharness.model import Host
from benchharness.transport.base import Process, Transport


def transport_for(host: Host) -> Transport:
    """The transport a host needs: local for the local machine, SSH otherwise."""
    if host.local:
        from benchharness.transport.local import LocalTransport

        return LocalTransport(host)
    from benchharness.transport.ssh import SSHTransport

    return SSHTransport(host)


__all__ = ["Process", "Transport", "transport_for"]
