"""`bench bisect`: run the halving search's rounds with an existing collective test.

The planner (``planning/halving.py``) proposes disjoint groups; each round here becomes a plan of
one ``group`` step per group of the suite's collective test (the CPU all-reduce in the lab,
nccl-tests / rccl-tests on GPU nodes: the ``collective`` tool picks per host kind), run together
by the ordinary runner into one run directory. A group's figure is its out-of-place bus bandwidth
at the largest message size (``busbw_GBps``). Bounded by ``bisect_rounds`` and
``bisect_seconds``; ``bisect.json`` keeps every group's figure as evidence.

Settings (suite ``settings:`` or ``KEY=VALUE``): ``bisect_share`` (0.7: a group passes at 70% of
the reference), ``bisect_limit`` (busbw GB/s a group should reach; default: the median of the
healthy groups), ``bisect_rounds`` (default ceil(log2 N) + 2), ``bisect_seconds`` (1800), ``bisect_seed``,
``bisect_concurrent`` (true: a round's groups run at once; false: one after the other, for hosts
whose CPUs, not links, would set the pace when groups share them, as the lab's namespaces on
two cores do).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchharness.core.errors import EXIT_OK, EXIT_STEPS_FAILED, EXIT_VERDICT_FAILED, UsageError
from benchharness.core.model import Host, Record, Step
from benchharness.onhost.mpi_allreduce import bus_factor
from benchharness.planning.halving import DEFAULT_SHARE, HalvingSearch
from benchharness.planning.plan import Plan, build_plan
from benchharness.results.store import RunDir, new_run_id, results_root

METRIC = "busbw_GBps"
BISECT_KEYS = ("suite", "hosts", "out", "test", "limit", "launcher", "junit")


def group_figure(samples: Sequence[Record], step_id: str) -> float | None:
    """A step's out-of-place bus bandwidth (GB/s) at its largest size, None when it measured
    nothing. Computed from the time (printed with 5 digits) and nccl-tests' bus factor for the
    footer's rank count, as the printed busbw has 2 decimals (0.05 vs 0.07 in the lab)."""
    rows = [r for r in samples if r.get("step") == step_id and r.get("kind", "summary") == "summary"
            and r.get("placement", "out-of-place") == "out-of-place"
            and isinstance(r.get(METRIC), int | float) and isinstance(r.get("size_bytes"), int | float)]
    if not rows:
        return None
    largest = max(float(r["size_bytes"]) for r in rows)
    at = [r for r in rows if float(r["size_bytes"]) == largest]
    nranks = next((r.get("nranks") for r in samples if r.get("step") == step_id and r.get("kind") == "footer"
                   and isinstance(r.get("nranks"), int) and r["nranks"] > 0), None)
    timed = [r for r in at if isinstance(r.get("time_us"), int | float) and r["time_us"] > 0]
    if nranks and timed and at[0].get("collective"):
        factor = bus_factor(str(at[0]["collective"]), int(nranks))
        return max(largest / float(r["time_us"]) / 1e3 * factor for r in timed)
    return max(float(r[METRIC]) for r in at)


def round_plan(base: Plan, test_name: str, hosts: Mapping[str, Host], groups: Sequence[Sequence[str]],
               number: int, concurrent: bool = True) -> Plan:
    """One round: the collective test's step on each group, ids ``b<round>-g<i>-...``, own ports;
    all at once, or (``concurrent=False``) one group after the other."""
    suite = dataclasses.replace(base.suite, tests=[t for t in base.suite.tests if t.name == test_name])
    steps: list[Step] = []
    base_port = int(suite.settings["base_port"])
    for i, group in enumerate(groups):
        sub = build_plan(suite, [hosts[n] for n in group], launcher=base.launcher)
        first = sub.steps[0]
        steps.append(dataclasses.replace(
            first, id=f"b{number}-g{i}-{first.id}", round=number, port=base_port + 16 * i,
            labels={**first.labels, "bisect_round": number, "bisect_group": i}))
    used = {h.name for s in steps for h in s.hosts}
    rounds = [steps] if concurrent else [[s] for s in steps]
    return Plan(suite, rounds, [h for h in base.hosts if h.name in used], base.launcher)


def _group_test(plan: Plan, name: str | None) -> str:
    tests = [t for t in plan.suite.tests if t.pattern == "group" and (name is None or t.name == name)]
    if not tests:
        raise UsageError(f"suite {plan.suite.name} has no group-pattern collective test"
                         + (f" named {name!r}" if name else "") + " to bisect with")
    return tests[0].name


def search_of(hosts: Sequence[str], settings: Mapping[str, Any], limit: str | None = None) -> HalvingSearch:
    """The planner with the suite's bisect settings."""
    def num(key: str, default: Any) -> Any:
        value = settings.get(key, default)
        try:
            return None if value is None else float(value)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{key}={value!r} is not a number") from exc

    rounds = num("bisect_rounds", None)
    lim = num("bisect_limit", None) if limit is None else float(limit)
    return HalvingSearch(list(hosts), share=float(num("bisect_share", DEFAULT_SHARE)), limit=lim,
                         max_rounds=int(rounds) if rounds else None, seed=int(num("bisect_seed", 0)))


def run_bisect(suite_ref: str, hosts_ref: str, overrides: Mapping[str, str], *, out: str | None = None,
               test: str | None = None, limit: str | None = None, launcher: str | None = None,
               junit: str | None = None, echo: Callable[[str], None] = print,
               make_runner: Callable[[Plan, RunDir], Any] | None = None) -> int:
    """Halving search over the inventory's hosts; exit 1 when it names a node, 0 when none, 3 when
    a round could not run at all. Each node's verdict goes to run.json (``bench export`` reads it)
    and, with ``junit``, to a JUnit file: a named node is a failed testcase with its evidence."""
    from benchharness.config.inventory import load_inventory
    from benchharness.config.suites import load_suite
    from benchharness.execution.launchers import launcher_name, make_launcher
    from benchharness.execution.runner import Runner

    bisect_settings = {k: v for k, v in overrides.items() if k.startswith("bisect_")}
    suite = load_suite(suite_ref, {k: v for k, v in overrides.items() if not k.startswith("bisect_")})
    inventory = load_inventory(hosts_ref)
    chosen = launcher_name(launcher, inventory.hosts)
    base = build_plan(suite, inventory.hosts, inventory=inventory, launcher=chosen)
    name = _group_test(base, test)
    by_name = {h.name: h for h in inventory.hosts}
    settings = {**suite.settings, **bisect_settings}
    search = search_of([h.name for h in inventory.hosts], settings, limit)
    budget = float(settings.get("bisect_seconds", 1800))
    concurrent = str(settings.get("bisect_concurrent", "true")).lower() not in ("0", "false", "no")
    run_dir = RunDir.create(Path(out) if out else results_root() / new_run_id(f"bisect-{suite.name}"))
    run_dir.write_run_info({"run_id": run_dir.path.name, "kind": "bisect", "suite": {"name": suite.name},
                            "hosts": list(by_name), "test": name, "state": "running"})
    runner_for = make_runner or (lambda p, d: Runner(p, d, launcher=make_launcher(chosen, p.hosts)))
    started = time.monotonic()
    ran_any = False
    echo(f"bisect {run_dir.path.name}: {name} over {len(by_name)} hosts, at most {search.max_rounds} rounds "
         f"and {budget:g} s; results in {run_dir.path}")
    while groups := search.next_round():
        if time.monotonic() - started > budget:
            search.stopped = f"stopped after {search.rounds} rounds: bisect_seconds={budget:g} used up"
            break
        plan = round_plan(base, name, by_name, groups, search.rounds, concurrent)
        runner_for(plan, run_dir).run()
        samples = run_dir.samples()
        values = [group_figure(samples, s.id) for s in plan.steps]
        ran_any = ran_any or any(v is not None for v in values)
        search.record(values)
        echo(f"round {search.rounds - 1}: " + "; ".join(
            f"[{','.join(g)}] {'-' if v is None else f'{v:.3g}'}" for g, v in zip(groups, values, strict=True)))
    result = search.as_dict()
    run_dir.write_json("bisect.json", result)
    run_dir.write_run_info({"run_id": run_dir.path.name, "kind": "bisect", "suite": {"name": suite.name},
                            "hosts": list(by_name), "test": name, "state": "complete",
                            "bisect": {k: result[k] for k in ("suspects", "rounds", "notes")},
                            "verdicts": [v.__dict__ for v in search.verdicts(test=name)]})
    for line in search.lines():
        echo(line)
    from benchharness.execution.execute import render_report

    report = render_report(run_dir, echo)
    if report:
        echo(f"report: {report}")
    if junit:
        from benchharness.report.junit import write_junit

        echo(f"junit: {write_junit(run_dir, Path(junit))}")
    if not ran_any:
        return EXIT_STEPS_FAILED
    return EXIT_VERDICT_FAILED if search.suspects else EXIT_OK
