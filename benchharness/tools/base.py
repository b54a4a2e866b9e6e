"""What a tool adapter is. Adapters build command lines and parse outputs; they never open connections."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchharness.core.model import Command, CommandResult, Record, Step


@dataclass(frozen=True)
class ToolFacts:
    """What the harness knows of one program on a host, in one place: how to ask its version, how
    to read the answer, the oldest version the adapter's command lines and parsers rely on, and the
    packages that provide it. The probe (run on hosts, stdlib only) receives ``probe_entry()`` of
    each; doctor, preflight, the host summary and ``bench provision`` read the rest."""

    name: str
    #: The command that prints the version (None: the probe finds it another way, or not at all).
    version_argv: tuple[str, ...] | None = None
    #: Regular expression whose first group is the version, searched in stdout + stderr.
    version_pattern: str = r"(\d+\.\d+(?:\.\d+)*)"
    min_version: str | None = None
    #: Debian/Ubuntu and RHEL-family packages that provide it (``bench provision``, doctor's hints).
    apt: tuple[str, ...] = ()
    dnf: tuple[str, ...] = ()
    #: Preflight fails a host that lacks it (the pair tools every suite may use).
    required: bool = False

    def parse_version(self, text: str) -> str | None:
        """The version in a ``version_argv`` output, or None."""
        m = re.search(self.version_pattern, text)
        return m.group(1) if m else None

    def probe_entry(self) -> dict[str, Any]:
        """What the probe needs to ask this version on a host (JSON-ready)."""
        return {"argv": list(self.version_argv or ()), "pattern": self.version_pattern}

    def install_hint(self) -> str:
        """``apt-get install iperf3 (dnf install iperf3)``; empty when no package provides it."""
        hints = [f"{tool} install {' '.join(pkgs)}" for tool, pkgs in (("apt-get", self.apt), ("dnf", self.dnf))
                 if pkgs]
        return " / ".join(hints)


def version_tuple(text: str) -> tuple[int, ...]:
    """``"3.16"`` -> ``(3, 16)``: versions compared number by number."""
    return tuple(int(x) for x in re.findall(r"\d+", text))


class ToolAdapter(Protocol):
    """One benchmark tool (iperf3, perftest, nccl-tests ...). One module under ``tools/`` each.

    A module registers its adapter by defining a module-level ``ADAPTER`` (or ``ADAPTERS``, a
    list, when one module serves several names such as ``nccl-tests`` and ``rccl-tests``).
    """

    name: str
    description: str
    #: Parameters a suite may set for this tool, with their defaults (None: no default).
    params: Mapping[str, Any]
    #: Patterns this tool can run in (``pairs``, ``all-pairs``, ``incast``, ``group`` ...).
    patterns: Sequence[str]
    #: The programs it runs on hosts (``ToolFacts``): versions, minimums, packages.
    requirements: Sequence[ToolFacts]
    #: Optional: metrics its records repeat from other fields (a figure restated under a second
    #: name, or a count that is a rate times a fixed duration). A comparison leaves them out so
    #: that one measured fact is not judged, and counted as evidence, twice.
    #: restated_metrics: frozenset[str]
    #: Optional: what its ``parse_text`` reads, for ``bench parse --list`` (commands, versions),
    #: unless a module's ``READS`` says it.
    #: reads: str

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError naming the parameter when a value is wrong for this tool."""

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        """Command lines for a step; background commands (servers) start first.

        ``launcher`` is how the run reaches its hosts (``ssh``, or ``slurm``: job steps, and
        ``srun`` instead of ``mpirun`` for collectives).
        """

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        """Records from a finished step; raise ToolFailure when the tool reported an error."""

    def parse_text(self, text: str) -> list[Record]:
        """Records from one saved output file (``bench parse TOOL FILE``)."""
