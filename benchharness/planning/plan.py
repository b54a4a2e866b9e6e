"""Plan: a suite on some hosts → rounds of steps, each step with its hosts, parameters and port.

Tests run in file order. Within a test, repetitions are interleaved (A B C A B C ...) so that
drift over time spreads over every case instead of biasing one. Each case × repetition runs
the test's pattern, which yields rounds of host groups; the steps of one round run at the same
time, so every step of a round gets ports of its own.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from benchharness.config.suites import CMDLINE, RAIL_PATTERNS, Suite, TestSpec, expand_cases
from benchharness.core.errors import ConfigError, UsageError
from benchharness.core.model import Host, Step
from benchharness.core.units import parse_size
from benchharness.core.values import SIZE_PARAMS
from benchharness.planning import schedule
from benchharness.planning.gpus import gpu_endpoint, gpu_labels, gpu_pair_rounds
from benchharness.planning.rails import rail_labels, rail_rounds
from benchharness.tools import registry

#: Patterns whose steps are (server, client) pairs.
PAIR_PATTERNS = ("pairs", "all-pairs", "ring", "self")
_MAX_PORT = 65535
_MAX_ID = 120


class HostSelector(Protocol):
    """What the planner needs of an inventory: hosts matching an Ansible host pattern."""

    def select(self, pattern: str = "all") -> list[Host]: ...


@dataclass(frozen=True)
class Plan:
    """Everything a run would do, in order: ``rounds[i]`` are steps that run together."""

    suite: Suite
    rounds: list[list[Step]]
    hosts: list[Host]
    #: How commands reach the hosts (``ssh`` or ``slurm``); adapters build their lines for it.
    launcher: str = "ssh"

    @property
    def steps(self) -> list[Step]:
        """All steps in execution order."""
        return [step for round_steps in self.rounds for step in round_steps]


def build_plan(suite: Suite, hosts: Sequence[Host], inventory: HostSelector | None = None,
               launcher: str = "ssh") -> Plan:
    """Rounds of steps for ``suite`` on ``hosts``; each test runs on the hosts its pattern selects.

    ``inventory`` resolves each test's ``hosts:`` pattern (Ansible syntax); without one, names,
    groups and wildcards are matched against ``hosts`` directly. With one host, pair patterns
    measure that host against itself.
    """
    hosts = list(dict.fromkeys(hosts))
    base_port = int(suite.settings["base_port"])
    drafts: list[tuple[TestSpec, int, dict[str, Any], list[list[tuple[Host, ...]]]]] = []
    for test in suite.tests:
        members = _members(suite, test, hosts, inventory)
        rounds = _rounds(suite, test, members)
        _check_rails(suite, test, members)
        if test.rails and test.rails != "first":
            rounds = rail_rounds(rounds, test.rails)
        cases = expand_cases(test)
        for rep in range(test.repeat):
            for case in cases:
                drafts.append((test, rep, case, rounds))
    total = sum(len(groups) for *_, rounds in drafts for groups in rounds)
    width = max(4, len(str(max(total - 1, 0))))

    plan_rounds: list[list[Step]] = []
    used: set[str] = set()
    index = 0
    for test, rep, case, rounds in drafts:
        for groups in rounds:
            port = base_port
            steps = []
            for group in groups:
                reserved = ports_reserved(test.tool, test.pattern, case, group)
                if port + reserved - 1 > _MAX_PORT:
                    _fail(suite, f"base_port {base_port} leaves too few ports for round "
                          f"{len(plan_rounds)} ({port + reserved - 1 - base_port + 1} needed)",
                          suite.setting_lines.get("base_port"))
                steps.append(_step(test, rep, case, group, len(plan_rounds), port, index, width))
                used.update(h.name for h in group)
                port += reserved
                index += 1
            plan_rounds.append(steps)
    return Plan(suite, plan_rounds, [h for h in hosts if h.name in used], launcher)


def _check_rails(suite: Suite, test: TestSpec, members: Sequence[Host]) -> None:
    """A pair test that would measure fewer NICs of a host than it has is an error, unless the test
    says ``rails: first``: on a multi-rail host, leaving ``rails:`` out tests the first NIC only,
    and a rail mode over hosts with different NIC counts tests only the rails all of them have."""
    if test.pattern not in RAIL_PATTERNS or test.rails == "first":
        return
    counts = {h.name: len(h.nics()) for h in members}
    most = max(counts, key=lambda n: counts[n], default=None)
    if most is None or counts[most] < 2:
        return
    tested = 1 if not test.rails else min(counts.values()) if test.rails != "cross" else counts[most]
    if tested >= counts[most]:
        return
    setting = f"rails: {test.rails}" if test.rails else "rails: not set"
    _fail(suite, f"test {test.name!r}: {setting} tests {tested} of the {counts[most]} NICs of {most}; set "
          "rails: aligned (bandwidth), each (latency) or cross, or rails=MODE on the command line, or "
          "rails: first to test only the first NIC", test.lines.get("rails", test.line))


def _fail(suite: Suite, message: str, line: int | None) -> NoReturn:
    if line == CMDLINE:
        raise UsageError(f"suite {suite.name}: {message}")
    raise ConfigError(message, str(suite.path), line)


def _members(suite: Suite, test: TestSpec, hosts: list[Host],
             inventory: HostSelector | None) -> list[Host]:
    """The hosts a test runs on: its pattern's selection, in the order of ``hosts``."""
    if test.hosts in ("all", "*"):
        return hosts
    try:
        chosen = inventory.select(test.hosts) if inventory is not None else _select(test.hosts, hosts)
    except UsageError as exc:
        _fail(suite, f"test {test.name!r}: {exc}", test.lines.get("hosts", test.line))
    names = {h.name for h in chosen}
    members = [h for h in hosts if h.name in names]
    if not members:
        _fail(suite, f"test {test.name!r}: host pattern {test.hosts!r} selects none of the hosts "
              f"{', '.join(h.name for h in hosts)}", test.lines.get("hosts", test.line))
    return members


def _select(pattern: str, hosts: Sequence[Host]) -> list[Host]:
    """Ansible-like host pattern over plain hosts: names, groups, wildcards, ``~regex``, ``!``, ``&``."""
    def match(term: str) -> set[str]:
        if term in ("all", "*"):
            return {h.name for h in hosts}
        if term.startswith("~"):
            rx = re.compile(term[1:])
            return {h.name for h in hosts if rx.match(h.name) or any(rx.match(g) for g in h.groups)}
        return {h.name for h in hosts
                if fnmatch.fnmatchcase(h.name, term) or any(fnmatch.fnmatchcase(g, term) for g in h.groups)}

    terms = [t.strip() for t in re.split(r"[:,]", pattern) if t.strip()]
    plain = [t for t in terms if t[0] not in "!&"] or ["all"]
    names: set[str] = set().union(*(match(t) for t in plain))
    for term in terms:
        if term[0] == "&":
            names &= match(term[1:])
        elif term[0] == "!":
            names -= match(term[1:])
    return [h for h in hosts if h.name in names]


def _rounds(suite: Suite, test: TestSpec, members: list[Host]) -> list[list[tuple[Host, ...]]]:
    """Rounds of host groups for one case × repetition of a test."""
    pattern = test.pattern
    if pattern == "group":
        return [[tuple(members)]]
    if pattern == "scaling":
        return [[group] for group in schedule.scaling(members)]
    if pattern == "self":
        return [[(h, h) for h in members]]
    if pattern == "pairs" and test.pairs:
        by_name = {h.name: h for h in members}
        for pair in test.pairs:
            for name in pair:
                if name not in by_name:
                    _fail(suite, f"test {test.name!r}: pairs: host {name!r} is not among the hosts "
                          f"{', '.join(by_name)}", test.lines.get("pairs", test.line))
        return schedule.pack_rounds([(by_name[a], by_name[b]) for a, b in test.pairs])
    if len(members) == 1 and pattern != "gpu-pairs":
        return [[(members[0], members[0])]]  # one machine: measure it against itself
    if pattern == "pairs":
        return schedule.pack_rounds(schedule.pairs(members))
    if pattern == "all-pairs":
        return [list(r) for r in schedule.all_pairs_rounds(members)]
    if pattern == "ring":
        return [list(schedule.ring(members))]
    if pattern == "incast":
        return [[group] for group in schedule.incast(members)]
    if pattern == "one-to-many":
        return [[group] for group in schedule.one_to_many(members)]
    if pattern == "all-to-all":
        return [[tuple(members)]]  # one step: every member sends to every other at once
    if pattern == "gpu-pairs":
        try:
            return [list(r) for r in gpu_pair_rounds(members)]
        except ValueError as exc:
            _fail(suite, f"test {test.name!r}: {exc}", test.lines.get("pattern", test.line))
    raise ValueError(f"unknown pattern {pattern!r}")


def ports_needed(pattern: str, group: Sequence[Host]) -> int:
    """Ports a step reserves from its round's range: one per flow that needs its own server port."""
    if pattern in ("incast", "one-to-many"):
        return max(1, len(group) - 1)
    if pattern == "all-to-all":
        return max(1, len(group))
    return 1


def ports_reserved(tool: str, pattern: str, params: Mapping[str, Any], group: Sequence[Host]) -> int:
    """Ports a step reserves: its flows (``ports_needed``) times the server ports each flow of the
    tool takes (the adapter's ``ports_per_flow``, e.g. iperf3's processes; 1 without one)."""
    per_flow = getattr(registry().get(tool), "ports_per_flow", None)  # an unknown tool: describe says so
    return ports_needed(pattern, group) * (max(1, int(per_flow(params, group))) if per_flow else 1)


def _step(test: TestSpec, rep: int, case: dict[str, Any], group: tuple[Host, ...], round_index: int,
          port: int, index: int, width: int) -> Step:
    names = [h.name for h in group]
    labels: dict[str, Any] = {**case, "hosts": ",".join(names)}
    if test.pattern in PAIR_PATTERNS and len(group) == 2:
        labels["pair"] = "-".join(names)
    if test.pattern == "gpu-pairs":
        labels.update(gpu_labels(group))
        labels["pair"] = "-".join(h.name for h in group)
        names = [gpu_endpoint(h) for h in group]
    elif test.rails and all(h.rail for h in group):
        labels.update(rail_labels(group))
        names = labels["endpoints"].split(",")
    for key in SIZE_PARAMS:
        if case.get(key) is not None:
            try:
                labels["size_bytes"] = parse_size(case[key])
            except ValueError:
                continue
            break
    return Step(id=_step_id(index, width, test.name, names, rep), test=test.name, tool=test.tool,
                params=dict(case), hosts=group, pattern=test.pattern, repetition=rep,
                round=round_index, port=port, labels=labels)


def _step_id(index: int, width: int, test: str, names: list[str], rep: int) -> str:
    """``0007-tcp-length-h1-h2-r0``: unique by its index, safe as a directory name."""
    names = list(dict.fromkeys(names))  # a self pair is one host
    who = "-".join(names) if len(names) <= 3 else f"{names[0]}+{len(names) - 1}"
    text = re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{test}-{who}")[:_MAX_ID]
    return f"{index:0{width}d}-{text}-r{rep}"
