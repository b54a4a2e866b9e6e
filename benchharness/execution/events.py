"""What the runner tells its watchers while a run goes: a step started, a step finished."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchharness.core.model import Step


@dataclass(frozen=True)
class StepEvent:
    """One step's start or end, with where the run stands (``done`` of ``total`` steps)."""

    kind: Literal["started", "finished"]
    step: Step
    done: int
    total: int
    round: int  # 1-based
    rounds: int
    status: str = ""  # finished: ok | failed | skipped
    failure: str = ""  # finished and not ok: "<kind>: <message>"

    def line(self) -> str:
        """``[done/total] round r/R <step> <status>[ <kind>: <message>]``, as logs show it."""
        what = self.status if self.kind == "finished" else "started"
        detail = f" {self.failure}" if self.failure else ""
        return f"[{self.done}/{self.total}] round {self.round}/{self.rounds} {self.step.id} {what}{detail}"
