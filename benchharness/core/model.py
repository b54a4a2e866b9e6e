"""Small data classes shared by every room: hosts, steps, commands and their results."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Record = dict[str, Any]
"""One tidy sample row: labels plus unit-bearing metric fields (e.g. ``bw_avg_gbps``)."""


@dataclass(frozen=True)
class Rail:
    """One NIC of a host (a "rail": on GPU nodes one per GPU, on the GPU's PCIe switch)."""

    index: int
    netdev: str | None = None
    rdma_dev: str | None = None
    rdma_port: int = 1
    data_ip: str | None = None
    gid_index: int | None = None
    numa_node: int | None = None
    line_rate_gbps: float | None = None
    #: GPUs nearest this NIC (PIX/PXB in ``nvidia-smi topo -m``), nearest first.
    nearest_gpus: tuple[int, ...] = ()
    serial: str | None = None
    pci_address: str | None = None
    #: ``InfiniBand`` or ``Ethernet`` (RoCE) as the port reports it; None: inferred (see ``link``).
    link_layer: str | None = None
    #: RoCE traffic class (DSCP << 2) for perftest ``--tclass``, ``NCCL_IB_TC``, ``UCX_IB_TRAFFIC_CLASS``.
    traffic_class: int | None = None

    @property
    def link(self) -> str | None:
        """``infiniband`` or ``ethernet`` (RoCE): ``link_layer``, else inferred from the netdev name."""
        return link_of(self.link_layer, self.netdev)

    @property
    def name(self) -> str:
        """``rail<i>``, as samples, reports and verdicts name it."""
        return f"rail{self.index}"

    @property
    def nearest_gpu(self) -> int | None:
        """The GPU that work on this NIC should use (the first of ``nearest_gpus``), None if unknown."""
        return self.nearest_gpus[0] if self.nearest_gpus else None


def link_of(link_layer: str | None, netdev: str | None) -> str | None:
    """``infiniband`` / ``ethernet`` from an inventory ``link_layer``, else from the netdev's name:
    IPoIB interfaces are ``ib*`` (``ib0``, ``ibp24s0``); any other named netdev is Ethernet (RoCE).
    None when neither is known."""
    if link_layer:
        return "infiniband" if str(link_layer).strip().lower() in ("infiniband", "ib") else "ethernet"
    if netdev:
        return "infiniband" if str(netdev).startswith("ib") else "ethernet"
    return None


#: Host variables that describe one NIC; a rail view of a host (``Host.on_rail``) sets them all.
RAIL_VARS = ("netdev", "rdma_dev", "rdma_port", "gid_index", "numa_node", "nic_line_rate_gbps", "nic_serial",
             "link_layer", "traffic_class")
#: Separator of host and rail in an endpoint name (``gpu01.rail3``), as findings name a NIC.
ENDPOINT_SEP = "."
_ENDPOINT_RE = re.compile(r"^(.+)\.(rail\d+)$")


def endpoint(host: str, rail: str | None) -> str:
    """``gpu01.rail3``: one NIC of one host, as verdicts, isolation and JUnit name it (no rail: the host)."""
    return f"{host}{ENDPOINT_SEP}{rail}" if rail else host


def split_endpoint(name: str) -> tuple[str, str | None]:
    """``"gpu01.rail3"`` -> ``("gpu01", "rail3")``; a plain host name -> ``(name, None)``."""
    m = _ENDPOINT_RE.match(name)
    return (m.group(1), m.group(2)) if m else (name, None)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def _float_or_none(value: Any) -> float | None:
    try:
        return float(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Host:
    """A benchmark host as the inventory describes it."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = None
    #: OpenSSH ProxyCommand, with %h %p %r already expanded.
    proxy_command: str | None = None
    strict_host_keys: bool = True
    data_ip: str | None = None
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    local: bool = False
    #: The host's NICs as the inventory lists them; empty: the single NIC its variables describe.
    rails: tuple[Rail, ...] = field(default=(), compare=False, hash=False)
    #: The rest of the SSH view (transport.sshconfig): config_file, key_files, connect_timeout,
    #: keepalive_s, keepalive_count, ignored options, target (the name ssh_config was read for).
    ssh: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: A rail view's host's every NIC (``on_rail`` keeps them): traffic beside a measurement may
    #: load a neighbouring rail of the same host (``neighbour_view``).
    host_rails: tuple[Rail, ...] = field(default=(), compare=False, hash=False)

    @property
    def traffic_ip(self) -> str:
        """Address that test traffic goes to: ``data_ip`` when set, else the management address."""
        return self.data_ip or self.address

    def var(self, name: str, default: Any = None) -> Any:
        """A benchmark variable of this host (``netdev``, ``rdma_dev``, ``gpus`` ...)."""
        return self.vars.get(name, default)

    def nics(self) -> tuple[Rail, ...]:
        """Every NIC of the host: its rails, or one rail 0 from ``netdev``, ``rdma_dev`` ... vars."""
        if self.rails:
            return self.rails
        return (Rail(index=0, netdev=self.var("netdev"), rdma_dev=self.var("rdma_dev"),
                     rdma_port=_int_or_none(self.var("rdma_port")) or 1, data_ip=self.data_ip,
                     gid_index=_int_or_none(self.var("gid_index")), numa_node=_int_or_none(self.var("numa_node")),
                     line_rate_gbps=_float_or_none(self.var("nic_line_rate_gbps")),
                     serial=self.var("nic_serial"), link_layer=self.var("link_layer"),
                     traffic_class=_int_or_none(self.var("traffic_class"))),)

    def on_rail(self, rail: Rail) -> Host:
        """This host as seen by a tool on one rail: that NIC's address and variables, ``rail`` var set.

        Tool adapters read ``traffic_ip`` and ``var("rdma_dev")`` ...; on a rail view those are
        the rail's, so every pair tool runs per rail unchanged.
        """
        port = rail.rdma_port if self.rails or self.var("rdma_port") is not None else None
        values = {"netdev": rail.netdev, "rdma_dev": rail.rdma_dev, "rdma_port": port,
                  "gid_index": rail.gid_index, "numa_node": rail.numa_node,
                  "nic_line_rate_gbps": rail.line_rate_gbps or self.var("nic_line_rate_gbps"),
                  "nic_serial": rail.serial or (None if self.rails else self.var("nic_serial")),
                  "link_layer": rail.link_layer, "traffic_class": rail.traffic_class}
        merged = {**{k: v for k, v in self.vars.items() if k not in values}, "rail": rail.name}
        merged.update({k: v for k, v in values.items() if v is not None})  # unset: tools' defaults
        if rail.nearest_gpus:
            merged["nearest_gpus"] = list(rail.nearest_gpus)
        return dataclasses.replace(self, data_ip=rail.data_ip or self.data_ip, vars=merged, rails=(rail,),
                                   host_rails=self.host_rails or self.rails)

    def neighbour_view(self) -> Host | None:
        """The rail view of the next NIC of this rail view's host (the last rail's is the first),
        or None for a host with one NIC."""
        rails = self.host_rails
        if len(rails) < 2 or len(self.rails) != 1:
            return None
        here = next((i for i, r in enumerate(rails) if r.index == self.rails[0].index), None)
        if here is None:
            return None
        whole = dataclasses.replace(self, rails=rails, host_rails=(), vars={
            k: v for k, v in self.vars.items() if k != "rail"})
        return whole.on_rail(rails[(here + 1) % len(rails)])

    @property
    def rail(self) -> str | None:
        """The rail a rail view stands for (``rail2``), None for the whole host."""
        value = self.var("rail")
        return str(value) if value else None


@dataclass(frozen=True)
class Step:
    """One tool invocation between some hosts, with one set of parameters.

    ``hosts`` is ordered by the pattern: for pair patterns ``(server, client)``, for incast
    ``(receiver, sender, sender, ...)``, for collectives every member with the launcher first.
    """

    id: str
    test: str
    tool: str
    params: Mapping[str, Any]
    hosts: tuple[Host, ...]
    pattern: str = "pairs"
    repetition: int = 0
    round: int = 0
    port: int = 0
    labels: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def sample_labels(self) -> Record:
        """Labels that every sample of this step carries."""
        # The step's own identity wins over case labels (a tool parameter may be called "test").
        return {**self.labels, "test": self.test, "tool": self.tool, "step": self.id,
                "rep": self.repetition, "round": self.round, "pattern": self.pattern}


@dataclass(frozen=True)
class Command:
    """A command line to run on one host; built by a tool adapter, executed by a transport."""

    host: Host
    role: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    background: bool = False
    ready_pattern: str | None = None
    timeout_s: float = 120.0
    label: str = ""
    #: Files to copy to the host before the command starts: (local path, remote path).
    uploads: tuple[tuple[str, str], ...] = ()
    #: Seconds after the step's first client starts that this client starts (staggered starts).
    start_delay_s: float = 0.0

    @property
    def name(self) -> str:
        """Unique name of this command inside its step, used for raw output files."""
        return self.label or f"{self.role}-{self.host.name}"


@dataclass
class CommandResult:
    """What happened to one command: exit code, output, timing, and how it ended."""

    command: Command
    rc: int | None
    stdout: str
    stderr: str
    started: float
    ended: float
    timed_out: bool = False
    stopped: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and (self.rc == 0 or self.stopped)


@dataclass(frozen=True)
class Verdict:
    """One pass/fail check with its evidence."""

    check: str
    status: str  # "pass" | "fail" | "warn" | "info"
    message: str
    host: str | None = None
    test: str | None = None
    value: float | None = None
    limit: float | None = None
    #: The host's NIC the verdict is about (``rail1``), None for the host as a whole.
    rail: str | None = None
