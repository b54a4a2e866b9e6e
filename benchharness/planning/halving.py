"""Halving search for the nodes that drag a collective down: a pure planner of rounds.

A collective over N nodes runs at the pace of its slowest member, so "all_reduce over 512 nodes
reaches 60% of what it should" has an answer short of all-pairs: test the halves at the same
time, keep the half that misses, halve it again (NVIDIA's cluster readiness tooling splits the
pool in halves; ClusterKit retests bad pairs in halving rounds). Each round is a list of disjoint
groups that run concurrently; the caller runs them (``execution/bisect.py``) and hands back one
figure per group (bus bandwidth: by its definition comparable across group sizes).

- A group *passes* when its figure reaches ``share`` of the reference: ``limit`` when given, else
  the median of the round's figures and of the groups that passed before (the best of them
  while there are fewer than three): healthy groups, the many, set the bar, and one fast
  outlier does not raise it for everyone.
- Round 0 tests every node together when a ``limit`` is known (a pass ends the search);
  without one it starts with the halves.
- A failing group is halved, unless there are enough nodes known to be good to test each
  member beside a good partner (groups of ``pair_at`` or fewer): one round then names them.
- A node that failed beside a good partner is retested beside another, randomly chosen good
  partner (the confirmation pass); only a node that fails both is named.
- A failing group whose halves both pass names nobody and says so (the fault needs both halves:
  a link between them, or scale).
- Bounded: at most ``max_rounds`` rounds (the caller also bounds the time).

Every figure is kept as evidence: which groups a named node was in, and what they reached.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchharness.core.model import Verdict

DEFAULT_SHARE = 0.7
#: The check a node's verdict is filed under (JUnit testcase, Prometheus label).
CHECK = "bisect: collective pace"
DEFAULT_PAIR_AT = 4


@dataclass(frozen=True)
class GroupResult:
    """One group's figure in one round (None: the group could not run, which counts as a miss)."""

    round: int
    members: tuple[str, ...]
    value: float | None
    purpose: str = "halve"
    passed: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"round": self.round, "members": list(self.members), "value": self.value,
                "purpose": self.purpose, "passed": self.passed}


@dataclass
class HalvingSearch:
    """The search's state: call ``next_round`` for groups, ``record`` their figures, repeat
    until ``next_round`` returns nothing; ``suspects`` and ``evidence`` say what it found."""

    hosts: Sequence[str]
    share: float = DEFAULT_SHARE
    limit: float | None = None
    max_rounds: int | None = None
    pair_at: int = DEFAULT_PAIR_AT
    seed: int = 0
    results: list[GroupResult] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str = ""
    _round: int = 0
    _pending: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    _failing: list[tuple[str, ...]] = field(default_factory=list)
    _single: list[str] = field(default_factory=list)
    _confirm: list[str] = field(default_factory=list)
    _started: bool = False
    _reference: float | None = None

    def __post_init__(self) -> None:
        self.hosts = list(dict.fromkeys(self.hosts))
        if len(self.hosts) < 2:
            raise ValueError("a halving search needs at least 2 hosts")
        if self.limit is None and len(self.hosts) < 4:
            raise ValueError("with fewer than 4 hosts the halves have no peers to be compared with: "
                             "give the figure the collective should reach (limit=)")
        if not 0 < self.share <= 1:
            raise ValueError(f"share must be in (0, 1], got {self.share}")
        if self.max_rounds is None:
            self.max_rounds = math.ceil(math.log2(len(self.hosts))) + 2
        self._rng = random.Random(self.seed)

    # -- what is known ------------------------------------------------------------------------
    @property
    def reference(self) -> float | None:
        """What the last round's groups were held to (``limit`` when given)."""
        return self.limit if self.limit is not None else self._reference

    def _round_reference(self, values: Sequence[float | None]) -> float | None:
        """Without a limit: the median of this round's figures and of the groups that passed
        before (healthy groups are the many), or the best of them while there are fewer than
        three; one fast outlier group does not raise the bar for everyone."""
        if self.limit is not None:
            return self.limit
        pool = [v for v in values if v is not None]
        pool += [r.value for r in self.results if r.passed and r.value is not None]
        if not pool:
            return None
        return statistics.median(pool) if len(pool) >= 3 else max(pool)

    def good(self) -> list[str]:
        """Nodes that were in a passing group and never failed beside a good partner."""
        bad = set(self._single) | set(self._confirm) | set(self.suspects)
        seen = [h for r in self.results if r.passed for h in r.members]
        return [h for h in dict.fromkeys(seen) if h not in bad]

    def _passes(self, value: float | None, ref: float | None) -> bool:
        return value is not None and ref is not None and value >= self.share * ref

    # -- rounds -------------------------------------------------------------------------------
    def next_round(self) -> list[tuple[str, ...]]:
        """The next round's disjoint groups (empty when the search is over)."""
        if not self._started:
            self._started = True
            if self.limit is not None:
                self._pending = [(tuple(self.hosts), "all")]
            else:
                self._pending = [(half, "halve") for half in _halves(tuple(self.hosts))]
            return self._groups()
        if self._round >= (self.max_rounds or 0):
            if self._failing or self._single or self._confirm:
                self.stopped = f"stopped after {self._round} rounds (max_rounds) with nodes left unresolved"
            self._pending = []
            return []
        self._pending = self._plan()
        return self._groups()

    def _groups(self) -> list[tuple[str, ...]]:
        return [g for g, _ in self._pending]

    def _plan(self) -> list[tuple[tuple[str, ...], str]]:
        out: list[tuple[tuple[str, ...], str]] = []
        busy: set[str] = set()
        good = self.good()
        self._rng.shuffle(good)

        def partner(exclude: set[str]) -> str | None:
            for g in good:
                if g not in busy and g not in exclude:
                    return g
            return None

        # confirmation: a node that failed beside one good partner, beside another
        for host in list(self._confirm):
            before = {m for r in self.results if host in r.members for m in r.members}
            p = partner(before | {host}) or partner({host})
            if p is None:
                continue
            out.append(((host, p), "confirm"))
            busy.update((host, p))
        # singles: each member of a small failing group beside a good partner
        for host in list(self._single):
            p = partner({host})
            if p is None or host in busy:
                continue
            out.append(((host, p), "single"))
            busy.update((host, p))
        # failing groups: test each member beside a good partner when there are enough, else halve
        for group in list(self._failing):
            if busy & set(group):
                continue
            free = [g for g in good if g not in busy and g not in group]
            if (len(group) <= self.pair_at and len(free) >= len(group)) or (len(group) == 2 and free):
                for host in group:
                    p = partner({host, *group})
                    if p is None:
                        break
                    out.append(((host, p), "single"))
                    busy.update((host, p))
                self._failing.remove(group)
                self._single += [h for h in group if h not in self._single]
            elif len(group) >= 4 or (len(group) == 3 and not free):
                halves = _halves(group)
                out += [(h, "halve") for h in halves if len(h) >= 2]
                busy.update(group)
                self._failing.remove(group)
            else:
                self.notes.append(f"{_names(group)} missed, but no healthy node is free to test its "
                                  "members beside; nobody named there")
                self._failing.remove(group)
        return out

    def record(self, values: Sequence[float | None]) -> None:
        """The figures of the round ``next_round`` gave, in its order."""
        if len(values) != len(self._pending):
            raise ValueError(f"round {self._round}: {len(self._pending)} groups, {len(values)} figures")
        ref = self._reference = self._round_reference(values)
        judged = [GroupResult(self._round, g, v, purpose, self._passes(v, ref))
                  for (g, purpose), v in zip(self._pending, values, strict=True)]
        self.results += judged
        self._pending = []
        self._round += 1
        for r in judged:
            self._judge(r)

    def _judge(self, r: GroupResult) -> None:
        if r.purpose == "all":
            if not r.passed:
                self._failing.append(r.members)
            return
        if r.purpose == "halve":
            if not r.passed:
                self._failing.append(r.members)
            return
        host = r.members[0]
        if r.purpose == "single":
            if host in self._single:
                self._single.remove(host)
            if not r.passed:
                self._confirm.append(host)
            return
        if r.purpose == "confirm":
            self._confirm.remove(host)
            if not r.passed:
                self.suspects.append(host)
            else:
                self.notes.append(f"{host} missed beside one healthy partner but not beside another: "
                                  "not named (intermittent, or its first partner's link)")

    def finish_notes(self) -> list[str]:
        """Why groups that missed named nobody (both halves passed)."""
        out = list(self.notes)
        for r in self.results:
            if r.passed is False and r.purpose in ("all", "halve") and len(r.members) >= 4:
                kids = [x for x in self.results if x.round == r.round + 1 and x.purpose == "halve"
                        and set(x.members) <= set(r.members)]
                if len(kids) == 2 and all(k.passed for k in kids):
                    out.append(f"{_names(r.members)} missed but both its halves passed: the fault needs "
                               "both halves (a link between them, or scale); nobody named there")
        if self.limit is None and self.results and all(r.passed for r in self.results if r.round == 0):
            out.append("every group of the first round reached the best one's pace: without limit= the "
                       "search finds only nodes slower than their peers (give the figure the collective "
                       "should reach to judge every node against it)")
        if self.stopped:
            out.append(self.stopped)
        return out

    # -- what was found -----------------------------------------------------------------------
    def evidence(self, host: str) -> list[GroupResult]:
        """Every group ``host`` was in, in order."""
        return [r for r in self.results if host in r.members]

    @property
    def rounds(self) -> int:
        return self._round

    def as_dict(self) -> dict[str, Any]:
        return {"hosts": list(self.hosts), "share": self.share, "limit": self.limit,
                "reference": self.reference, "rounds": self.rounds, "max_rounds": self.max_rounds,
                "suspects": list(self.suspects), "notes": self.finish_notes(),
                "results": [r.as_dict() for r in self.results],
                "evidence": {h: [r.as_dict() for r in self.evidence(h)] for h in self.suspects}}

    def verdicts(self, test: str | None = None, unit: str = "GB/s") -> list[Verdict]:
        """One verdict per node (JUnit, Prometheus, the catalog): ``fail`` for a named node with
        every group it was in, ``pass`` for a node cleared by a passing group, ``info`` for one the
        search never cleared (stopped early, or in a group that missed while nobody was named)."""
        ref = self.reference
        bar = ref * self.share if ref is not None else None

        def groups(rows: list[GroupResult]) -> str:
            return "; ".join(f"round {r.round} {r.purpose} {_names(r.members)} {_fmt(r.value)} {unit} "
                             f"{'pass' if r.passed else 'MISS'}" for r in rows)

        out = []
        for host in self.hosts:
            mine = self.evidence(host)
            if host in self.suspects:
                worst = min((r.value for r in mine if r.value is not None), default=None)
                out.append(Verdict(CHECK, "fail", f"{host} drags the collective down: {groups(mine)}",
                                   host=host, test=test, value=worst, limit=bar))
            elif any(r.passed for r in mine):
                best = next(r for r in mine if r.passed)
                out.append(Verdict(CHECK, "pass", f"{host} cleared: {groups([best])}", host=host, test=test,
                                   value=best.value, limit=bar))
            else:
                why = self.stopped or "its groups missed but the search named nobody in them"
                out.append(Verdict(CHECK, "info", f"{host} not cleared ({why}): {groups(mine) or 'never tested'}",
                                   host=host, test=test))
        return out

    def lines(self, unit: str = "GB/s") -> list[str]:
        """Console lines: the named nodes with their evidence, or why nobody was named."""
        ref = self.reference
        head = (f"halving search: {len(self.hosts)} nodes, {self.rounds} round(s), reference "
                f"{_fmt(ref)} {unit} x {self.share:.0%}"
                + (" (limit)" if self.limit is not None else " (median of healthy groups, last round)"))
        out = [head]
        for host in self.suspects:
            out.append(f"  SUSPECT {host}:")
            for r in self.evidence(host):
                out.append(f"    round {r.round} {r.purpose:<7} {_names(r.members)}: {_fmt(r.value)} {unit} "
                           f"{'pass' if r.passed else 'MISS'}")
        if not self.suspects:
            out.append("  no node named")
        out += [f"  note: {n}" for n in self.finish_notes()]
        return out


def _halves(group: tuple[str, ...]) -> list[tuple[str, ...]]:
    mid = (len(group) + 1) // 2
    return [group[:mid], group[mid:]]


def _names(group: Sequence[str]) -> str:
    return "[" + ",".join(group) + "]"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
