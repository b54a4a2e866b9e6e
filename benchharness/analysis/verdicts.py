"""Pass/fail verdicts of a run: the suite's checks over the stored samples, per host and NIC.

``evaluate(run_dir, info)`` is called by ``execute.run_suite`` once the steps have run. For each
check bound of each test it compares one value per case and host set (``measures.units``) with
its limit, then attributes failures to hosts:

* a host **fails** a check when, in some case, every pair (or single-host unit) it is in fails:
  a slow NIC makes each of its pairs slow, while its peers pass with the other hosts;
* a failing pair whose two hosts both pass elsewhere is reported as a **pair** failure (the path
  between them), and a failing group (collective) as a **group** failure: neither names a host.

Then regressions against recent nights (checks with ``regression: true``, history from the
catalog), and roll-ups: one ``acceptance`` verdict per host (with its NIC; failed preflight checks
count) and one for the run. A suite without checks, without ``verdicts:`` and
without ``preflight: enforce`` gets no verdicts at all.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.analysis import path_spread, stragglers
from benchharness.analysis.capacity import (
    GROUP_PATTERNS,
    MSG_RATE_VAR,
    capacity_gbps,
    is_bidirectional,
    rated_msg_rate,
)
from benchharness.analysis.verdict_context import Context
from benchharness.analysis.verdicts_history import regression_verdicts
from benchharness.config.thresholds import Check, Threshold, format_sizes, parse_check, parse_policy
from benchharness.core.errors import UsageError
from benchharness.core.metrics import gbps_factor, higher_is_better, unit_of
from benchharness.core.model import Record, Verdict, endpoint, split_endpoint
from benchharness.results import fabric, health, measures, runview
from benchharness.results.catalog import Catalog
from benchharness.results.measures import Unit
from benchharness.results.nics import Nic, host_nics
from benchharness.results.store import RunDir

ROLLUP = "acceptance"


def _num(value: float) -> str:
    return f"{value:.4g}"


def check_baseline_ref(ref: str, suite: str, root: Any) -> str:
    """The run id that ``baseline=ref`` names now; UsageError when nothing matches (before a run)."""
    from pathlib import Path

    cat = Catalog(Path(root))
    cat.sync()
    found = cat.resolve(ref, suite)
    if found is None:
        raise UsageError(f"baseline={ref}: no run tagged {ref!r} and no such run under {cat.root} "
                         f"(`bench list` shows runs, `bench tag RUN {ref}` sets a tag)")
    return found.path.name


# ---------------------------------------------------------------- one check bound

def _reference(op: str, th: Threshold, metric: str, unit: Unit, found: Sequence[Unit],
               ctx: Context, baseline: Sequence[Unit], spec: Mapping[str, Any]) -> tuple[float | None, str]:
    """The reference value of a relative threshold for one unit, and how to describe it."""
    if th.reference is None:
        return None, ""
    if th.reference == "line_rate":
        group = unit.is_group or spec.get("pattern") in GROUP_PATTERNS  # a 2-host collective is no pair
        rate, what = capacity_gbps(unit.hosts, ctx.rates, group=group,
                                   bidir=is_bidirectional(dict(unit.case), spec))
        return (None, what) if rate is None else (rate / (gbps_factor(metric) or 1.0), what)
    if th.reference == "nic_msg_rate":
        return rated_msg_rate(unit.hosts, runview.inventory_hosts(ctx.info), bidir=is_bidirectional(dict(unit.case), spec))
    if th.reference == "best_peer":
        peers = [u.value for u in found if u.case == unit.case]
        best = max(peers) if higher_is_better(metric) else min(peers)
        return best, f"best peer {_num(best)}"
    same = [u for u in baseline if u.case == unit.case]
    exact = [u.value for u in same if u.hosts == unit.hosts]
    if exact:
        return exact[0], f"baseline {_num(exact[0])}"
    if same:
        value = statistics.median(u.value for u in same)
        return value, f"baseline {_num(value)} (median of its {len(same)} host sets)"
    return None, "not in baseline"


@dataclass
class _Judged:
    unit: Unit
    limit: float
    ok: bool
    ref: str

    def margin(self, op: str) -> float:
        diff = self.unit.value - self.limit if op == ">=" else self.limit - self.unit.value
        return diff / abs(self.limit) if self.limit else diff


def _judge(op: str, th: Threshold, check: Check, found: Sequence[Unit], ctx: Context,
           baseline: Sequence[Unit], spec: Mapping[str, Any]) -> tuple[list[_Judged], list[Unit]]:
    judged, unknown = [], []
    for unit in found:
        ref_value, ref_text = _reference(op, th, check.metric, unit, found, ctx, baseline, spec)
        limit = th.limit(ref_value)
        if limit is None:
            unknown.append(unit)
            continue
        ok = unit.value >= limit if op == ">=" else unit.value <= limit
        judged.append(_Judged(unit, limit, ok, ref_text))
    return judged, unknown


def _evidence(j: _Judged, op: str, th: Threshold, unit: str) -> str:
    cmp = ("≥" if j.ok else "<") if op == ">=" else ("≤" if j.ok else ">")
    ref = f" = {th.value * 100:g}% of {j.ref}" if th.reference else ""
    case = measures.case_text(j.unit.case) or "the only case"
    return f"at {case}: {_num(j.unit.value)} {unit} {cmp} limit {_num(j.limit)}{ref}"


def bound_verdicts(test: str, check: Check, op: str, th: Threshold, found: Sequence[Unit],
                   ctx: Context) -> list[Verdict]:
    """Verdicts of one bound of one check: per host, per unattributed pair, per group."""
    name, unit_name = check.label(op, th), unit_of(check.metric)
    baseline: list[Unit] = []
    if th.reference == "baseline":
        base_run, records = ctx.baseline()
        if base_run is None:
            return [Verdict(name, "warn", f"no baseline run ({ctx.baseline_ref or 'none given'}): not checked; "
                            f"pass baseline=RUN|TAG|latest-pass or tag a run", test=test)]
        keys = measures.swept_keys(_test_spec(ctx.info, test))
        baseline = measures.units(measures.test_records(records, test), check.metric, keys,
                                  stat=check.stat, select=check.matches)
    judged, unknown = _judge(op, th, check, found, ctx, baseline, _test_spec(ctx.info, test))
    out: list[Verdict] = []
    if unknown and th.reference == "line_rate":
        for host in sorted({h for u in unknown for h in u.hosts
                            if h not in ctx.rates and split_endpoint(h)[0] not in ctx.rates}):
            out.append(Verdict(name, "fail", f"{host}: no line rate known; set nic_line_rate_gbps in the "
                               f"inventory (or collect telemetry facts)", host=host, test=test))
    elif unknown and th.reference == "nic_msg_rate":
        inventory = runview.inventory_hosts(ctx.info)
        for host in sorted({split_endpoint(h)[0] for u in unknown for h in u.hosts
                            if (inventory.get(split_endpoint(h)[0]) or {}).get(MSG_RATE_VAR) is None}):
            out.append(Verdict(name, "fail", f"{host}: no rated message rate known; set {MSG_RATE_VAR} in the "
                               f"inventory (the NIC's datasheet figure)", host=host, test=test))
    elif unknown and not judged:
        base_run, _ = ctx.baseline()
        return [Verdict(name, "warn", f"baseline {base_run.path.name if base_run else '?'} has none of these "
                        f"cases: not checked", test=test)]
    out += _attribute(test, name, op, th, judged, unit_name)
    return out


def _attribute(test: str, name: str, op: str, th: Threshold, judged: Sequence[_Judged],
               unit_name: str) -> list[Verdict]:
    cases = list(dict.fromkeys(j.unit.case for j in judged))
    pairs = [j for j in judged if not j.unit.is_group]
    blamed: dict[str, list[_Judged]] = {}  # host -> its worst failing unit per failing case
    unexplained: list[_Judged] = []
    for case in cases:
        here = [j for j in pairs if j.unit.case == case]
        passing = {h for j in here if j.ok for h in j.unit.hosts}
        for j in here:
            if j.ok:
                continue
            culprits = [h for h in j.unit.hosts if h not in passing]
            if not culprits:
                unexplained.append(j)
            for h in culprits:
                blamed.setdefault(h, []).append(j)
    out: list[Verdict] = []
    for host in sorted({h for j in pairs for h in j.unit.hosts}):
        mine = [j for j in pairs if host in j.unit.hosts]
        n_cases = len({j.unit.case for j in mine})
        if host in blamed:
            bad = blamed[host]
            worst = min(bad, key=lambda j: j.margin(op))
            n_bad = len({j.unit.case for j in bad})
            out.append(Verdict(name, "fail", f"{host}: fails in {n_bad} of {n_cases} cases (every pair with "
                               f"this host is out of bounds there); worst {_evidence(worst, op, th, unit_name)}",
                               host=host, test=test, value=worst.unit.value, limit=worst.limit))
        else:
            # In each case the host passes through its best unit; report the tightest of those.
            best_per_case = [max((j for j in mine if j.unit.case == c), key=lambda j: j.margin(op))
                             for c in dict.fromkeys(j.unit.case for j in mine)]
            closest = min(best_per_case, key=lambda j: j.margin(op))
            others = sum(1 for j in mine if not j.ok)
            note = f"; its {others} failing pair(s) are explained by the other host" if others else ""
            out.append(Verdict(name, "pass", f"{host}: within limits in all {n_cases} cases; closest "
                               f"{_evidence(closest, op, th, unit_name)}{note}", host=host, test=test,
                               value=closest.unit.value, limit=closest.limit))
    for j in unexplained:
        out.append(Verdict(name, "fail", f"pair {','.join(j.unit.hosts)}: both hosts pass with other peers; "
                           f"suspect the path between them; {_evidence(j, op, th, unit_name)}",
                           test=test, value=j.unit.value, limit=j.limit))
    groups = [j for j in judged if j.unit.is_group]
    if groups:
        bad_groups = [j for j in groups if not j.ok]
        worst = min(groups, key=lambda j: j.margin(op))
        size = max(len(j.unit.hosts) for j in groups)
        text = (f"group of {size} hosts: fails in {len({j.unit.case for j in bad_groups})} of "
                f"{len({j.unit.case for j in groups})} cases; worst " if bad_groups
                else f"group of {size} hosts: within limits in all {len({j.unit.case for j in groups})} "
                     f"cases; closest ")
        out.append(Verdict(name, "fail" if bad_groups else "pass", text + _evidence(worst, op, th, unit_name),
                           test=test, value=worst.unit.value, limit=worst.limit))
    return out


def _test_spec(info: Mapping[str, Any], test: str) -> Mapping[str, Any]:
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {}
    for t in (suite or {}).get("tests") or []:
        if isinstance(t, Mapping) and t.get("name") == test:
            return t
    return {}


def check_verdicts(test: Mapping[str, Any], check: Check, records: Sequence[Record],
                   ctx: Context) -> list[Verdict]:
    """Every bound of one check of one test (plus its regression check when asked)."""
    name = str(test.get("name"))
    found = measures.units(records, check.metric, measures.swept_keys(test), stat=check.stat,
                           select=check.matches)
    if not found:
        where = f" in sizes {format_sizes(check.sizes)}" if check.sizes else ""
        where += f" where {dict(check.where)}" if check.where else ""
        return [Verdict(check.label(*check.bounds()[0]), "fail",
                        f"no {check.metric} samples{where}: nothing to accept (did the steps run, and does "
                        f"the tool report this metric?)", test=name)]
    out: list[Verdict] = []
    for op, th in check.bounds():
        out += bound_verdicts(name, check, op, th, found, ctx)
    if check.regression:
        out += regression_verdicts(name, check, records, measures.swept_keys(test), ctx)
    return out


# ---------------------------------------------------------------- preflight and roll-ups

def preflight_failures(run: RunDir, mode: str) -> dict[str, list[str]]:
    """Host -> its failed preflight checks (``telemetry/preflight.json``), unless preflight is off.

    The verdicts themselves are not repeated here: ``execute`` adds failed ones under
    ``preflight: enforce``, and the report shows them all; roll-ups count them.
    """
    if mode == "off":
        return {}
    out: dict[str, list[str]] = {}
    for v in runview.read_preflight(run):
        if str(v.get("status", "")).lower() == "fail" and v.get("host"):
            out.setdefault(str(v["host"]), []).append(str(v.get("check") or "preflight"))
    return out


def _nic_text(nic: Nic | None) -> str:
    if nic is None or not (nic.model or nic.serial or nic.firmware):
        return ""
    parts = [nic.model or "NIC", f"sn {nic.serial}" if nic.serial else "", f"fw {nic.firmware}" if nic.firmware else ""]
    return " · " + " ".join(p for p in parts if p)


def _rollup(host: str, rail: str | None, mine: Sequence[Verdict], steps: int, pre: Sequence[str],
            enforce: bool, nic: str) -> Verdict:
    """The ``acceptance`` verdict of one host (``rail`` None) or of one of its NICs."""
    who = endpoint(host, rail)
    failed = [v for v in mine if v.status == "fail"]
    pre_text = f"; preflight failed: {', '.join(pre)}" if pre else ""
    if failed or steps or (pre and enforce):
        names = "; ".join(dict.fromkeys(f"{v.test}: {v.check}" if v.test else v.check for v in failed))
        text = f"{len(failed)} of {len(mine)} checks failed" + (f" ({names})" if names else "")
        if steps:
            text += f"; {steps} step{'s' if steps != 1 else ''} could not run"
        return Verdict(ROLLUP, "fail", f"{who}: {text}{pre_text}{nic}", host=host, rail=rail)
    if pre or any(v.status == "warn" for v in mine):
        return Verdict(ROLLUP, "warn", f"{who}: passed {sum(v.status == 'pass' for v in mine)} checks "
                       f"with warnings{pre_text}{nic}", host=host, rail=rail)
    judged = [v for v in mine if v.status != "info"]  # info: not judged (too little history, skipped)
    if judged:
        rest = f" ({len(mine) - len(judged)} not judged)" if len(judged) < len(mine) else ""
        return Verdict(ROLLUP, "pass", f"{who}: all {len(judged)} checks passed{rest}{nic}", host=host, rail=rail)
    return Verdict(ROLLUP, "info", f"{who}: no check covered this host{nic}", host=host, rail=rail)


def rollups(hosts: Sequence[str], verdicts: Sequence[Verdict], run: RunDir, nics: Mapping[str, Nic],
            preflight: Mapping[str, list[str]] | None = None, enforce: bool = False) -> list[Verdict]:
    """One ``acceptance`` verdict per host, then one for the run.

    A host fails on a failed check, a step that could not run on it, or (``enforce``) a failed
    preflight check; a failed preflight check without ``enforce`` makes it a warning.
    """
    preflight = preflight or {}
    last = {s.get("step"): s for s in run.steps()}
    step_failures: dict[str, int] = {}
    for s in last.values():
        if s.get("status") == "failed":
            who = s.get("host") or ",".join(map(str, s.get("hosts") or []))
            for h in str(who).split(","):
                if h:
                    step_failures[h] = step_failures.get(h, 0) + 1
    out = []
    for host in hosts:
        mine = [v for v in verdicts if v.host == host]
        rails = sorted({v.rail for v in mine if v.rail}, key=lambda r: (len(r), r))
        for rail in rails:  # a multi-rail host: one roll-up per NIC
            out.append(_rollup(host, rail, [v for v in mine if v.rail == rail], 0, [], enforce,
                               _nic_text(nics.get(endpoint(host, rail)) or nics.get(host))))
        rest = [v for v in mine if not v.rail]
        steps, pre = step_failures.get(host, 0), preflight.get(host, [])
        if not rails or rest or steps or pre:
            out.append(_rollup(host, None, rest, steps, pre, enforce, _nic_text(nics.get(host))))
    bad_hosts = list(dict.fromkeys(endpoint(v.host, v.rail) for v in out if v.status == "fail" and v.host))
    run_level = [v for v in verdicts if v.host is None and v.status == "fail"]
    if bad_hosts or run_level:
        parts = [f"failed hosts: {', '.join(str(h) for h in bad_hosts)}"] if bad_hosts else []
        if run_level:
            parts.append(f"{len(run_level)} pair, group or run checks failed")
        failed_hosts = {split_endpoint(h)[0] for h in bad_hosts}
        parts.append(f"{len(hosts) - len(failed_hosts)} of {len(hosts)} hosts passed")
        out.append(Verdict(ROLLUP, "fail", "; ".join(parts)))
    else:
        out.append(Verdict(ROLLUP, "pass", f"all {len(hosts)} hosts passed"))
    return out


def per_rail(v: Verdict) -> Verdict:
    """A verdict about an endpoint (``host = "h3.rail1"``) as host ``h3``, rail ``rail1``."""
    if v.host is None or v.rail is not None:
        return v
    host, rail = split_endpoint(v.host)
    return dataclasses.replace(v, host=host, rail=rail) if rail else v


def evaluate(run_dir: RunDir, info: dict[str, Any]) -> list[Verdict]:
    """Every verdict of a run: roll-ups first (hosts, then the run), then each check's verdicts.

    Reads ``info["baseline"]`` (the ``baseline=`` of ``bench run``; default: the suite's
    ``verdicts: baseline``) and records the baseline run it used in ``info["baseline_run"]``.
    """
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {}
    tests = [t for t in (suite or {}).get("tests") or [] if isinstance(t, Mapping)]
    settings = (suite or {}).get("settings") or {}
    preflight = str(settings.get("preflight", "warn")) if isinstance(settings, Mapping) else "warn"
    if not any(t.get("checks") or t.get("health") or t.get("path_spread") or t.get("stragglers") for t in tests) and (suite or {}).get("verdicts") is None \
            and preflight != "enforce":
        return []
    policy = parse_policy((suite or {}).get("verdicts"))
    facts = runview.read_facts(run_dir)
    ctx = Context(run_dir, info, policy, str(info.get("baseline") or policy.baseline),
                  runview.line_rates(info, facts), host_nics(info, facts))
    records = run_dir.summary_samples()
    unmet = _unmet_requirements(run_dir)
    verdicts: list[Verdict] = []
    per_iteration = stragglers.run_records(run_dir) if any(t.get("stragglers") for t in tests) else []
    for test in tests:
        mine = measures.test_records(records, str(test.get("name")))
        for raw in test.get("checks") or []:
            check = parse_check(raw)
            skipped = unmet.get(str(test.get("name"))) if not mine and test.get("requires") else None
            if skipped:  # nothing to judge: the hosts lack what the test requires (info: JUnit <skipped>)
                verdicts.append(Verdict(check.label(*check.bounds()[0]), "info", str(skipped.get("message")),
                                        host=skipped.get("host"), test=str(test.get("name"))))
            else:
                verdicts += check_verdicts(test, check, mine, ctx)
        if test.get("path_spread"):  # traffic concentrated on few switch paths (suite path-spread)
            verdicts += path_spread.run_verdicts(run_dir, info, str(test.get("name")), str(test["path_spread"]),
                                                 ctx.rates)
        if test.get("stragglers"):  # ranks slower than their peers (per-iteration timing)
            verdicts += stragglers.run_verdicts(per_iteration, str(test.get("name")), str(test["stragglers"]))
    verdicts = [per_rail(v) for v in verdicts]
    verdicts += health.verdicts(health.rows(run_dir, info))  # fabric health, per step, host and rail
    verdicts += fabric.load_verdicts(fabric.load_rows(run_dir, info))  # degradation, heat, throttle
    if ctx._baseline is not None and ctx._baseline[0] is not None:
        info["baseline_run"] = ctx._baseline[0].path.name
    hosts = runview.run_host_names(info)
    return rollups(hosts, verdicts, run_dir, ctx.nics, preflight_failures(run_dir, preflight),
                   enforce=preflight == "enforce") + verdicts


def _unmet_requirements(run_dir: RunDir) -> dict[str, Mapping[str, Any]]:
    """Test -> a step of it skipped for its ``requires:`` (the last line of each step counts)."""
    last = {s.get("step"): s for s in run_dir.iter_steps()}
    return {str(s.get("test")): s for s in last.values()
            if s.get("status") == "skipped" and s.get("kind") == "requirement"}


def summary_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The console summary: the run's verdict, then failing and passing hosts."""
    roll = [v for v in verdicts if v.check == ROLLUP]
    if not roll:
        return []
    run_level = next((v for v in roll if v.host is None), None)
    failed = [endpoint(v.host, v.rail) for v in roll if v.host and v.status == "fail"]
    passed = [endpoint(v.host, v.rail) for v in roll if v.host and v.status in ("pass", "warn")]
    lines = [f"acceptance: {'FAIL' if run_level and run_level.status == 'fail' else 'PASS'}"
             f" ({sum(v.status == 'fail' for v in verdicts if v.check != ROLLUP)} failed checks of "
             f"{sum(1 for v in verdicts if v.check != ROLLUP)})"]
    if failed:
        lines.append(f"  hosts FAILED: {', '.join(str(h) for h in failed)}")
    if passed:
        lines.append(f"  hosts passed: {', '.join(str(h) for h in passed)}")
    return lines
