"""What the checks of one run need besides its samples: line rates, baseline, history, NICs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchharness.config.thresholds import Policy
from benchharness.core.model import Record
from benchharness.results import measures
from benchharness.results.catalog import Catalog
from benchharness.results.nics import Nic
from benchharness.results.store import RunDir


@dataclass
class Context:
    """What checks of one run need besides its samples: line rates, baseline, history, NICs."""

    run: RunDir
    info: Mapping[str, Any]
    policy: Policy
    baseline_ref: str
    rates: dict[str, float]
    nics: dict[str, Nic]
    _baseline: tuple[RunDir | None, list[Record]] | None = field(default=None, repr=False)

    @property
    def suite(self) -> str:
        suite = self.info.get("suite")
        return str(suite.get("name") or "") if isinstance(suite, Mapping) else str(suite or "")

    @property
    def run_id(self) -> str:
        return str(self.info.get("run_id") or self.run.path.name)

    def catalog(self) -> Catalog:
        return Catalog(self.run.path.parent)

    def baseline(self) -> tuple[RunDir | None, list[Record]]:
        """The baseline run (resolved once) and its summary records."""
        if self._baseline is None:
            found = self.catalog().resolve(self.baseline_ref, self.suite, exclude=self.run_id) \
                if self.baseline_ref else None
            records = [r for r in found.samples() if measures.is_summary(r)] if found else []
            self._baseline = (found, records)
        return self._baseline
