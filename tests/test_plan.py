"""Plans: interleaving, rounds, ports, step ids, host selection, dry-run text."""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from pathlib import Path

import pytest

import benchharness.tools
from benchharness.config.inventory import Inventory
from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError, UsageError
from benchharness.core.model import Host
from benchharness.planning.describe import describe_plan
from benchharness.planning.plan import Plan, build_plan
from benchharness.tools import get_tool

FIXTURES = Path(__file__).parent / "fixtures" / "suites"


def hosts(n: int, groups: dict[str, tuple[str, ...]] | None = None) -> list[Host]:
    return [Host(f"h{i}", f"198.18.0.{i}", groups=(groups or {}).get(f"h{i}", ()))
            for i in range(1, n + 1)]


def suite_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def reserved_ports(step) -> range:
    """Ports a step may use, as the iperf3 adapter uses them (port + i per flow)."""
    n = len(step.hosts)
    count = {"incast": n - 1, "one-to-many": n - 1, "all-to-all": n}.get(step.pattern, 1)
    return range(step.port, step.port + max(count, 1))


def assert_ports_distinct_per_host(plan: Plan) -> None:
    for steps in plan.rounds:
        used: dict[str, set[int]] = defaultdict(set)
        for step in steps:
            for host in set(step.hosts):
                ports = set(reserved_ports(step))
                assert not used[host.name] & ports, f"port clash on {host.name} in round {step.round}"
                used[host.name] |= ports


# ---------------------------------------------------------------- order and rounds

def test_repetitions_interleave_cases_and_tests_keep_file_order(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml")
    plan = build_plan(suite, hosts(2))
    first = [s for s in plan.steps if s.test == "tcp-length"]
    assert [(s.params["length"], s.params["streams"], s.repetition) for s in first] == [
        ("128K", 1, 0), ("128K", 4, 0), ("1M", 1, 0), ("1M", 4, 0),
        ("128K", 1, 1), ("128K", 4, 1), ("1M", 1, 1), ("1M", 4, 1),
    ]
    order = [s.test for s in plan.steps]
    assert order == sorted(order, key=["tcp-length", "fixed-duration", "coll"].index)


def test_rounds_are_indexed_globally(fake_tools: dict) -> None:
    plan = build_plan(load_suite(FIXTURES / "good" / "sweep.yaml"), hosts(4))
    for index, steps in enumerate(plan.rounds):
        assert steps and all(s.round == index for s in steps)
    assert plan.steps == [s for r in plan.rounds for s in r]


def test_all_pairs_on_four_hosts_runs_two_pairs_at_once(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: ap, tool: fakeperf, pattern: all-pairs}\n")
    plan = build_plan(load_suite(path), hosts(4))
    assert [len(r) for r in plan.rounds] == [2, 2, 2]
    pairs = {frozenset(h.name for h in s.hosts) for s in plan.steps}
    assert len(pairs) == 6
    assert all(len(s.hosts) == 2 for s in plan.steps)
    assert_ports_distinct_per_host(plan)


@pytest.mark.parametrize(("pattern", "rounds", "steps_per_round", "group_size"), [
    ("ring", 1, 4, 2),
    ("incast", 4, 1, 4),
    ("one-to-many", 4, 1, 4),
    ("all-to-all", 1, 1, 4),
    ("self", 1, 4, 2),
    ("pairs", 1, 2, 2),
])
def test_pattern_shapes_on_four_hosts(fake_tools: dict, tmp_path: Path, pattern: str, rounds: int,
                                      steps_per_round: int, group_size: int) -> None:
    path = suite_file(tmp_path, f"tests:\n  - {{name: t, tool: fakeperf, pattern: {pattern}}}\n")
    plan = build_plan(load_suite(path), hosts(4))
    assert len(plan.rounds) == rounds
    assert all(len(r) == steps_per_round for r in plan.rounds)
    assert all(len(s.hosts) == group_size for s in plan.steps)
    assert_ports_distinct_per_host(plan)


def test_ring_steps_share_hosts_but_not_ports(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "settings: {base_port: 7000}\n"
                                "tests:\n  - {name: r, tool: fakeperf, pattern: ring}\n")
    (steps,) = build_plan(load_suite(path), hosts(3)).rounds
    assert [s.port for s in steps] == [7000, 7001, 7002]
    assert [tuple(h.name for h in s.hosts) for s in steps] == [("h2", "h1"), ("h3", "h2"), ("h1", "h3")]


def test_incast_reserves_one_port_per_sender(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: i, tool: fakeperf, pattern: incast}\n"
                                "  - {name: a, tool: fakeperf, pattern: all-to-all}\n")
    plan = build_plan(load_suite(path), hosts(5))
    incast = [s for s in plan.steps if s.test == "i"]
    assert [s.hosts[0].name for s in incast] == ["h1", "h2", "h3", "h4", "h5"]
    assert all(s.port == 5201 for s in incast)  # one step per round: each starts the range
    (a2a,) = [s for s in plan.steps if s.test == "a"]
    assert [h.name for h in a2a.hosts] == ["h1", "h2", "h3", "h4", "h5"]


def test_ports_restart_each_round_and_stack_within_one(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "settings: {base_port: 6000}\n"
                                "tests:\n  - {name: i, tool: fakeperf, pattern: incast, hosts: 'h1:h2:h3'}\n"
                                "  - {name: s, tool: fakeperf, pattern: self}\n")
    plan = build_plan(load_suite(path), hosts(3))
    assert [s.port for s in plan.steps if s.test == "i"] == [6000, 6000, 6000]
    assert [s.port for s in plan.steps if s.test == "s"] == [6000, 6001, 6002]


def test_base_port_too_high_for_a_round_names_the_setting(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "settings:\n  base_port: 65534\n"
                                "tests:\n  - {name: s, tool: fakeperf, pattern: self}\n")
    with pytest.raises(ConfigError) as info:
        build_plan(load_suite(path), hosts(4))
    assert info.value.line == 2 and "base_port 65534 leaves too few ports" in str(info.value)


def test_group_and_scaling(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: g, tool: fakecoll, pattern: group}\n"
                                "  - {name: sc, tool: fakecoll, pattern: scaling}\n")
    plan = build_plan(load_suite(path), hosts(5))
    assert [[h.name for h in s.hosts] for s in plan.steps] == [
        ["h1", "h2", "h3", "h4", "h5"], ["h1", "h2"], ["h1", "h2", "h3", "h4"], ["h1", "h2", "h3", "h4", "h5"]]
    assert [len(r) for r in plan.rounds] == [1, 1, 1, 1]
    assert "pair" not in plan.steps[0].labels


def test_explicit_pairs_run_together_when_disjoint(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - name: p\n    tool: fakeperf\n"
                                "    pairs: [[h1, h2], [h3, h4], [h2, h3]]\n")
    plan = build_plan(load_suite(path), hosts(4))
    assert [[s.labels["pair"] for s in r] for r in plan.rounds] == [["h1-h2", "h3-h4"], ["h2-h3"]]


def test_explicit_pair_with_unknown_host_names_the_line(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - name: p\n    tool: fakeperf\n    pairs: [[h1, h9]]\n")
    with pytest.raises(ConfigError) as info:
        build_plan(load_suite(path), hosts(2))
    assert info.value.line == 4
    assert "pairs: host 'h9' is not among the hosts h1, h2" in str(info.value)


# ---------------------------------------------------------------- one host

@pytest.mark.parametrize("pattern", ["pairs", "all-pairs", "ring", "incast", "one-to-many", "self"])
def test_one_host_measures_itself(fake_tools: dict, tmp_path: Path, pattern: str) -> None:
    path = suite_file(tmp_path, f"tests:\n  - {{name: t, tool: fakeperf, pattern: {pattern}}}\n")
    local = Host("localhost", "127.0.0.1", local=True)
    plan = build_plan(load_suite(path), [local])
    (step,) = plan.steps
    assert step.hosts == (local, local)
    assert plan.hosts == [local]
    assert step.labels["hosts"] == "localhost,localhost"


# ---------------------------------------------------------------- ids, labels, params

def test_step_ids_are_unique_readable_and_safe_as_directory_names(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n"
                                "  - {name: 'tcp length/../x y', tool: fakeperf, pattern: all-pairs,\n"
                                "     params: {length: [1K, 2K]}}\n"
                                "  - {name: inc, tool: fakeperf, pattern: incast}\n")
    odd = [Host("a/b", "198.18.0.1"), Host("..", "198.18.0.2"), Host("c d", "198.18.0.3"),
           Host("e", "198.18.0.4")]
    plan = build_plan(load_suite(path), odd)
    ids = [s.id for s in plan.steps]
    assert len(ids) == len(set(ids))
    for step_id in ids:
        assert re.fullmatch(r"\d{4}-[A-Za-z0-9._+-]+-r\d+", step_id), step_id
        assert "/" not in step_id and step_id not in (".", "..")
    assert ids[0].startswith("0000-tcp_length_.._x_y-")
    assert ids[-1] == "0015-inc-e+3-r0"  # long groups: first host and how many more


def test_step_id_example(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "settings: {repeat: 2}\ntests:\n  - {name: tcp-length, tool: fakeperf}\n")
    plan = build_plan(load_suite(path), hosts(2))
    assert [s.id for s in plan.steps] == ["0000-tcp-length-h1-h2-r0", "0001-tcp-length-h1-h2-r1"]


def test_labels_and_params(fake_tools: dict) -> None:
    plan = build_plan(load_suite(FIXTURES / "good" / "sweep.yaml"), hosts(2))
    step = plan.steps[1]
    assert step.params == {"length": "128K", "streams": 4, "duration": 2}
    assert step.labels == {"length": "128K", "streams": 4, "duration": 2, "hosts": "h1,h2",
                           "pair": "h1-h2", "size_bytes": 131072}
    assert step.sample_labels()["rep"] == 0
    ring_step = next(s for s in plan.steps if s.test == "fixed-duration")
    assert ring_step.params == {"duration": 10, "size": "1K"}
    assert ring_step.labels["size_bytes"] == 1024


# ---------------------------------------------------------------- host selection

def test_test_hosts_pattern_selects_by_group_and_exclusion(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: t, tool: fakeperf, pattern: all-pairs, hosts: 'gpu:!h3'}\n")
    members = hosts(4, {"h1": ("gpu",), "h2": ("gpu",), "h3": ("gpu",), "h4": ("cpu",)})
    plan = build_plan(load_suite(path), members)
    assert {s.labels["pair"] for s in plan.steps} == {"h1-h2"}
    assert [h.name for h in plan.hosts] == ["h1", "h2"]


def test_inventory_resolves_host_patterns(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: t, tool: fakeperf, pattern: all-pairs, hosts: rack1}\n")
    members = hosts(4)
    inventory = Inventory(source=None, hosts=members, groups={"rack1": ["h2", "h4"], "all": ["h1", "h2", "h3", "h4"]})
    plan = build_plan(load_suite(path), members, inventory=inventory)
    assert [tuple(h.name for h in s.hosts) for s in plan.steps] == [("h2", "h4")]


def test_host_pattern_matching_nothing_names_the_line(fake_tools: dict, tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests:\n  - name: t\n    tool: fakeperf\n    hosts: gpu\n")
    with pytest.raises(ConfigError) as info:
        build_plan(load_suite(path), hosts(2))
    assert info.value.line == 4
    assert "host pattern 'gpu' selects none of the hosts h1, h2" in str(info.value)
    inventory = Inventory(source=None, hosts=hosts(2), groups={})
    with pytest.raises(ConfigError, match=r"s\.yaml:4: test 't': host pattern 'gpu'"):
        build_plan(load_suite(path), hosts(2), inventory=inventory)


# ---------------------------------------------------------------- dry run

def test_describe_plan_prints_every_command_line(fake_tools: dict) -> None:
    plan = build_plan(load_suite(FIXTURES / "good" / "sweep.yaml"), hosts(3))
    text = describe_plan(plan)
    assert text.splitlines()[0].startswith(f"suite sweep ({FIXTURES / 'good' / 'sweep.yaml'}): "
                                           f"{len(plan.steps)} steps in {len(plan.rounds)} rounds")
    assert text.count("\nround ") == len(plan.rounds)
    for step in plan.steps:
        assert f"step {step.id}  test={step.test}" in text
        for cmd in fake_tools[step.tool].commands(step):
            assert shlex.join([*(f"{k}={v}" for k, v in cmd.env.items()), *cmd.argv]) in text
    # env values with spaces are quoted, exactly as a shell would need them
    assert "'FAKE_MODE=two words' fakeperf -c" in text


# ---------------------------------------------------------------- shipped suites, real iperf3

@pytest.mark.parametrize(("name", "n_hosts", "n_steps", "seconds"), [
    ("quick", 1, 3, 6), ("quick", 3, 9, 18), ("tcp", 1, 5, 15), ("tcp", 3, 15, 45),
])
def test_shipped_suites_plan_with_the_real_iperf3_adapter(name: str, n_hosts: int, n_steps: int,
                                                         seconds: int) -> None:
    lab = ([Host("localhost", "127.0.0.1", local=True)] if n_hosts == 1 else
           [Host(f"h{i}", f"198.18.0.{i}") for i in range(1, n_hosts + 1)])
    plan = build_plan(load_suite(name), lab)
    assert len(plan.steps) == n_steps
    assert plan.hosts == lab
    # measured time: one step at a time per round, duration each (quick must stay under a minute)
    assert sum(max(s.params["duration"] for s in r) for r in plan.rounds) == seconds
    assert_ports_distinct_per_host(plan)
    adapter = get_tool("iperf3")
    for step in plan.steps:
        commands = adapter.commands(step)
        assert {c.role for c in commands} == {"server", "client"}
        assert any(str(step.port) in c.argv for c in commands)
    text = describe_plan(plan)
    assert all(step.id in text for step in plan.steps)


def test_unknown_tool_at_describe_time_is_reported_inline(fake_tools: dict, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = suite_file(tmp_path, "tests:\n  - {name: t, tool: fakeperf}\n")
    plan = build_plan(load_suite(path), hosts(2))
    monkeypatch.setattr(benchharness.tools, "registry", lambda: {})
    with pytest.raises(UsageError):
        get_tool("fakeperf")
    assert "!! cannot build its commands: unknown tool 'fakeperf'" in describe_plan(plan)
