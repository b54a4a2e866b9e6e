"""What a tool adapter is. Adapters build command lines and parse outputs; they never open connections."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from benchharness.core.model import Command, CommandResult, Record, Step


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
