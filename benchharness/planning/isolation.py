"""Bad-link isolation after all-pairs tests: flag weak pairs, retest them, name the suspect host.

1. Score: per all-pairs test and case (its suite parameters), each pair's median bandwidth
   (both directions pooled) and latency, as a share of the best pair of that case. A pair's
   score is the median of its shares over the cases.
2. Flag: bandwidth below ``isolation_bw_share`` (default 0.9) of the best pair, or latency above
   ``isolation_lat_factor`` (default 2.0) times the best.
3. Retest: every flagged pair runs once more per case (steps ``<id>-retest``, samples labelled
   ``retest: true``) into the same run directory; a pair whose retest is still below the
   thresholds (against the first pass's best) is a confirmed bad pair.
4. Name: the host in the most confirmed bad pairs is the suspect; that host's pairs are set
   aside and the rest are looked at again, so two bad hosts are both found. A tie, or a single
   bad pair (either end could be at fault), names nobody, and the note says so.

The result is informational: it is stored (``isolation.json``, ``run.json`` ``isolation``) and
shown, but it does not change the exit code; pass/fail thresholds belong to the verdicts.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from benchharness.core.model import Record, Step, endpoint, split_endpoint
from benchharness.planning import schedule

if TYPE_CHECKING:
    from benchharness.planning.plan import Plan
    from benchharness.results.store import RunDir

DEFAULT_BW_SHARE = 0.9
DEFAULT_LAT_FACTOR = 2.0
BW_METRIC = "bw_avg_gbps"
LAT_METRICS = ("lat_p50_us", "lat_typical_us", "lat_avg_us")
RETEST_SUFFIX = "-retest"
PATTERN = "all-pairs"

Pair = tuple[str, str]
CaseKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass
class PairScore:
    """How one pair of one test compares with the best pair (medians over its cases)."""

    test: str
    pair: Pair
    bw_gbps: float | None = None
    bw_share: float | None = None
    lat_us: float | None = None
    lat_factor: float | None = None
    cases: int = 0

    def bad(self, bw_share: float, lat_factor: float) -> bool:
        """Below ``bw_share`` of the best bandwidth, or above ``lat_factor`` times the best latency."""
        return ((self.bw_share is not None and self.bw_share < bw_share)
                or (self.lat_factor is not None and self.lat_factor > lat_factor))

    def as_dict(self) -> dict[str, Any]:
        return {"test": self.test, "pair": list(self.pair), "bw_gbps": _r(self.bw_gbps),
                "bw_share": _r(self.bw_share), "lat_us": _r(self.lat_us),
                "lat_factor": _r(self.lat_factor), "cases": self.cases}


@dataclass
class Baseline:
    """The best pair's median per case: highest bandwidth, lowest latency."""

    bw: dict[CaseKey, float] = field(default_factory=dict)
    lat: dict[CaseKey, float] = field(default_factory=dict)


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def pair_of(record: Mapping[str, Any]) -> Pair | None:
    """The two hosts of a pair sample, sorted (a pair is measured in one orientation only); for
    per-rail steps the two endpoints (``h1.rail0``, ``h2.rail0``)."""
    a, b = record.get("server"), record.get("client")
    ends = str(record.get("endpoints") or "").split(",")
    if len(ends) == 2 and all(ends):
        a, b = ends
    elif a is None or b is None:
        hosts = str(record.get("hosts") or "").split(",")
        if len(hosts) != 2:
            return None
        a, b = hosts
    if a == b:
        return None
    x, y = sorted((str(a), str(b)))
    return (x, y)


def _usable(record: Mapping[str, Any], retest: bool) -> bool:
    return (record.get("pattern") == PATTERN and record.get("kind", "summary") == "summary"
            and not record.get("partial") and bool(record.get("retest")) == retest)


def _case(record: Mapping[str, Any], keys: Sequence[str]) -> CaseKey:
    return str(record.get("test")), tuple((k, str(record.get(k))) for k in keys)


def _latency(record: Mapping[str, Any]) -> float | None:
    for metric in LAT_METRICS:
        value = record.get(metric)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _values(samples: Iterable[Record], case_keys: Mapping[str, Sequence[str]], retest: bool
            ) -> dict[CaseKey, dict[Pair, tuple[list[float], list[float]]]]:
    out: dict[CaseKey, dict[Pair, tuple[list[float], list[float]]]] = {}
    for rec in samples:
        pair = pair_of(rec)
        if pair is None or not _usable(rec, retest):
            continue
        bw, lat = rec.get(BW_METRIC), _latency(rec)
        per_pair = out.setdefault(_case(rec, case_keys.get(str(rec.get("test")), ())), {})
        bws, lats = per_pair.setdefault(pair, ([], []))
        if isinstance(bw, int | float) and not isinstance(bw, bool):
            bws.append(float(bw))
        if lat is not None:
            lats.append(lat)
    return out


def baseline(samples: Iterable[Record], case_keys: Mapping[str, Sequence[str]]) -> Baseline:
    """The best pair per case in the first pass (retest samples are left out)."""
    best = Baseline()
    for case, pairs in _values(samples, case_keys, retest=False).items():
        bws = [statistics.median(b) for b, _ in pairs.values() if b]
        lats = [statistics.median(lat) for _, lat in pairs.values() if lat]
        if bws and max(bws) > 0:
            best.bw[case] = max(bws)
        if lats and min(lats) > 0:
            best.lat[case] = min(lats)
    return best


def pair_scores(samples: Iterable[Record], case_keys: Mapping[str, Sequence[str]],
                best: Baseline | None = None, retest: bool = False) -> list[PairScore]:
    """Each pair's share of the best pair, per all-pairs test; sorted by test, then worst first.

    ``case_keys`` names, per test, the parameters that make a case (the suite's ``params``);
    samples of one case are compared only with each other. ``retest`` scores the retest
    samples against ``best`` (the first pass's baseline).
    """
    samples = list(samples)
    best = best or baseline(samples, case_keys)
    per: dict[tuple[str, Pair], dict[str, list[float]]] = {}
    for case, pairs in _values(samples, case_keys, retest).items():
        for pair, (bws, lats) in pairs.items():
            acc = per.setdefault((case[0], pair), {"bw": [], "share": [], "lat": [], "factor": []})
            if bws:
                acc["bw"].append(statistics.median(bws))
                if case in best.bw:
                    acc["share"].append(statistics.median(bws) / best.bw[case])
            if lats:
                acc["lat"].append(statistics.median(lats))
                if case in best.lat:
                    acc["factor"].append(statistics.median(lats) / best.lat[case])
    out = []
    for (test, pair), acc in per.items():
        med = {k: statistics.median(v) if v else None for k, v in acc.items()}
        out.append(PairScore(test, pair, med["bw"], med["share"], med["lat"], med["factor"],
                             max(len(acc["bw"]), len(acc["lat"]))))
    return sorted(out, key=lambda s: (s.test, s.bw_share if s.bw_share is not None else 1.0,
                                      -(s.lat_factor or 0.0), s.pair))


def name_suspects(bad_pairs: Iterable[Pair]) -> tuple[list[str], str]:
    """Suspect hosts of distinct bad pairs, and a sentence that says why (or why nobody)."""
    remaining = sorted(set(bad_pairs))
    if not remaining:
        return [], "no bad pairs"
    suspects: list[str] = []
    notes: list[str] = []
    while remaining:
        counts = Counter(h for pair in remaining for h in pair)
        top = max(counts.values())
        leaders = sorted(h for h, n in counts.items() if n == top)
        if len(leaders) > 1:
            notes.append(f"tie: {', '.join(leaders)} are each in {top} bad pair(s); no suspect named "
                         f"for {_pairs_text(remaining)}")
            break
        host = leaders[0]
        mine = [p for p in remaining if host in p]
        suspects.append(host)
        notes.append(f"{host} is in {len(mine)} of {len(remaining)} bad pairs ({_pairs_text(mine)})")
        remaining = [p for p in remaining if host not in p]
    return suspects, "; ".join(notes)


def _pairs_text(pairs: Iterable[Pair]) -> str:
    return ", ".join(f"{a}-{b}" for a, b in pairs)


# ---------------------------------------------------------------- retests

def retest_plan(plan: Plan, flagged: Iterable[tuple[str, Pair]]) -> Plan:
    """A plan that runs each flagged (test, pair) once more per case, disjoint pairs together.

    Steps keep their parameters and hosts; ids get ``-retest``, rounds continue after the
    plan's last, ports restart at ``base_port`` in each round, labels gain ``retest: true``.
    """
    from benchharness.planning.plan import Plan, ports_reserved

    wanted = set(flagged)
    originals: dict[tuple[str, tuple[tuple[str, str], ...]], list[Step]] = {}
    for step in plan.steps:
        names = tuple(sorted(endpoint(h.name, h.rail) for h in step.hosts))
        if step.pattern != PATTERN or step.repetition != 0 or len(names) != 2:
            continue
        if (step.test, (names[0], names[1])) in wanted:
            key = (step.test, tuple(sorted((k, str(v)) for k, v in step.params.items())))
            originals.setdefault(key, []).append(step)
    base_port = int(plan.suite.settings["base_port"])
    rounds: list[list[Step]] = []
    for steps in originals.values():
        by_hosts = {_ends(s): s for s in steps}
        for group in schedule.pack_rounds([_ends(s) for s in steps]):
            number = len(plan.rounds) + len(rounds)
            port, retests = base_port, []
            for hosts in group:
                step = by_hosts[hosts]
                retests.append(dataclasses.replace(step, id=step.id + RETEST_SUFFIX, round=number, port=port,
                                                   labels={**step.labels, "retest": True}))
                port += ports_reserved(step.tool, step.pattern, step.params, step.hosts)  # e.g. iperf3's processes
            rounds.append(retests)
    used = {h.name for r in rounds for s in r for h in s.hosts}
    return Plan(plan.suite, rounds, [h for h in plan.hosts if h.name in used], plan.launcher)


def _ends(step: Step) -> tuple[str, ...]:
    """A step's endpoints (``h1.rail0``; plain host names without rails): what packs into rounds."""
    return tuple(endpoint(h.name, h.rail) for h in step.hosts)


def nic_serials(plan: Plan) -> dict[str, str]:
    """Endpoint (``h3.rail1``) or host -> NIC serial, from the inventory (rails, ``nic_serial``)."""
    out: dict[str, str] = {}
    for host in plan.hosts:
        for rail in host.rails:
            if rail.serial:
                out[endpoint(host.name, rail.name)] = rail.serial
        if host.var("nic_serial") and not host.rails:
            out[host.name] = str(host.var("nic_serial"))
    return out


class _Runner(Protocol):
    def run(self) -> Any: ...


@dataclass
class Isolation:
    """What isolation found: every pair's score, the retests, the confirmed bad pairs, suspects."""

    bw_share: float
    lat_factor: float
    scores: list[PairScore]
    flagged: list[PairScore]
    retests: list[PairScore] = field(default_factory=list)
    confirmed: list[PairScore] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    note: str = "no bad pairs"
    retest_steps: int = 0
    interrupted: bool = False
    #: How each retest step ended (the retest Runner's StepOutcomes).
    outcomes: list[Any] = field(default_factory=list)
    #: Suspect (host, or host.rail) -> its NIC's serial number, where the inventory knows it.
    serials: dict[str, str] = field(default_factory=dict)
    #: Endpoint -> the fabric health checks it failed (``results.health``): a suspect even when
    #: its bandwidth passes (a NIC paused 30% of the time, a flapping link).
    health: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The line stored in run.json."""
        return {"bad_pairs": sorted(list(p) for p in {s.pair for s in self.confirmed}),
                "suspects": self.suspects,
                "suspect_nics": [self.nic(s) for s in self.suspects],
                "health_suspects": self.health,
                "note": self.note, "flagged": len(self.flagged), "pairs": len(self.scores)}

    def as_dict(self) -> dict[str, Any]:
        """Everything, for ``isolation.json``."""
        retest = {(s.test, s.pair): s for s in self.retests}
        confirmed = {(s.test, s.pair) for s in self.confirmed}
        pairs = []
        for s in self.scores:
            row = s.as_dict()
            row["flagged"] = s in self.flagged
            if (s.test, s.pair) in retest:
                row["retest"] = retest[(s.test, s.pair)].as_dict()
            row["confirmed"] = (s.test, s.pair) in confirmed
            pairs.append(row)
        return {"bw_share": self.bw_share, "lat_factor": self.lat_factor, **self.summary(),
                "retest_steps": self.retest_steps, "interrupted": self.interrupted, "pair_scores": pairs}

    def nic(self, suspect: str) -> dict[str, str | None]:
        """A suspect as host, rail and NIC serial (None where unknown)."""
        host, rail = split_endpoint(suspect)
        return {"host": host, "rail": rail, "serial": self.serials.get(suspect)}

    def lines(self) -> list[str]:
        """Console lines."""
        health = [f"isolation: SUSPECT {who} by its counters: {'; '.join(checks)}"
                  for who, checks in self.health.items()]
        if not self.scores:
            return ["isolation: no all-pairs samples to compare", *health]
        out = [*health, f"isolation: {len(self.flagged)} of {len(self.scores)} pairs below "
               f"{self.bw_share:.0%} of the best pair's bandwidth or above {self.lat_factor:g}x its "
               f"latency; {len(self.confirmed)} confirmed by a retest"]
        for s in self.confirmed:
            again = next((r for r in self.retests if (r.test, r.pair) == (s.test, s.pair)), None)
            out.append(f"  bad pair {s.pair[0]}-{s.pair[1]} ({s.test}): {_share_text(s)}"
                       + (f", retest {_share_text(again)}" if again else ""))
        if self.suspects:
            out.append(f"isolation: SUSPECT {', '.join(self.suspects)}: {self.note}")
            for who in self.suspects:
                if who in self.serials or split_endpoint(who)[1]:
                    nic = self.nic(who)
                    out.append(f"  suspect NIC: host {nic['host']}" + (f", {nic['rail']}" if nic["rail"] else "")
                               + (f", serial {nic['serial']}" if nic["serial"] else ""))
        elif self.confirmed:
            out.append(f"isolation: no suspect named: {self.note}")
        return out


def _share_text(score: PairScore) -> str:
    parts = []
    if score.bw_share is not None:
        parts.append(f"{score.bw_gbps or 0:.3g} Gbit/s = {score.bw_share:.0%} of best")
    if score.lat_factor is not None:
        parts.append(f"latency {score.lat_us or 0:.3g} us = {score.lat_factor:.2g}x best")
    return ", ".join(parts)


def health_suspects(run_dir: RunDir) -> dict[str, list[str]]:
    """Endpoints whose step counters failed the suite's ``health:`` limits (``results.health``)."""
    from benchharness.results import health

    if not (run_dir.path / "run.json").exists():
        return {}  # no suite snapshot: no health limits
    return health.bad_endpoints(health.rows(run_dir))


def settings_of(settings: Mapping[str, Any]) -> tuple[float, float]:
    """``(bw_share, lat_factor)`` from suite settings, with the defaults."""
    return (float(settings.get("isolation_bw_share", DEFAULT_BW_SHARE)),
            float(settings.get("isolation_lat_factor", DEFAULT_LAT_FACTOR)))


def isolate(plan: Plan, run_dir: RunDir, make_runner: Callable[[Plan], _Runner],
            echo: Callable[[str], None] = print) -> Isolation:
    """Score the run's all-pairs samples, retest flagged pairs, name suspects, and store it all.

    ``make_runner`` runs the retest plan into ``run_dir`` (the caller's Runner). Writes
    ``isolation.json`` and prints what it found through ``echo``.
    """
    bw_share, lat_factor = settings_of(plan.suite.settings)
    case_keys = {t.name: sorted(t.params) for t in plan.suite.tests}
    samples = run_dir.samples()
    best = baseline(samples, case_keys)
    scores = pair_scores(samples, case_keys, best)
    result = Isolation(bw_share, lat_factor, scores, [s for s in scores if s.bad(bw_share, lat_factor)])
    if result.flagged:
        retests = retest_plan(plan, [(s.test, s.pair) for s in result.flagged])
        result.retest_steps = len(retests.steps)
        echo(f"isolation: retesting {len(result.flagged)} pair(s) below the thresholds "
             f"({len(retests.steps)} steps in {len(retests.rounds)} rounds)")
        outcome = make_runner(retests).run()
        result.interrupted = bool(getattr(outcome, "interrupted", False))
        result.outcomes = list(getattr(outcome, "outcomes", []))
        result.retests = pair_scores(run_dir.samples(), case_keys, best, retest=True)
        again = {(s.test, s.pair): s for s in result.retests}
        result.confirmed = [s for s in result.flagged
                            if (s.test, s.pair) in again and again[(s.test, s.pair)].bad(bw_share, lat_factor)]
        result.suspects, result.note = name_suspects(s.pair for s in result.confirmed)
        serials = nic_serials(plan)
        result.serials = {s: serials[s] for s in result.suspects if s in serials}
    result.health = health_suspects(run_dir)
    for who in result.health:
        if who not in result.suspects:
            result.suspects.append(who)
            result.note += ("; " if result.note else "") + f"{who}: fabric health counters failed"
    serials = nic_serials(plan)
    result.serials.update({s: serials[s] for s in result.suspects if s in serials})
    run_dir.write_json("isolation.json", result.as_dict())
    for line in result.lines():
        echo(line)
    return result
