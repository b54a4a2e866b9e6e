"""Traffic patterns: bursty iperf3 commands, plan properties over every pattern, the pattern suites."""

from __future__ import annotations

import shutil
from collections import Counter
from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchharness.config.suites import expand_cases, load_suite
from benchharness.core.model import Host, Step
from benchharness.execution.runner import Runner
from benchharness.planning.describe import describe_plan
from benchharness.planning.plan import build_plan
from benchharness.results.store import RunDir
from benchharness.tools import get_tool
from benchharness.tools.iperf3 import ON_OFF_INTERVAL, on_off_argv, on_off_seconds

IPERF3 = get_tool("iperf3")
H = [Host(f"h{i}", f"198.18.0.{i}") for i in range(1, 9)]
LOCAL = Host("localhost", "127.0.0.1", local=True)


def step(hosts: tuple[Host, ...], pattern: str = "pairs", port: int = 5201, **params: Any) -> Step:
    return Step(id="s1", test="t", tool="iperf3", params=params, hosts=hosts, pattern=pattern, port=port)


def clients(s: Step) -> list[Any]:
    return [c for c in IPERF3.commands(s) if c.role == "client"]


# ---------------------------------------------------------------- bursty commands

def test_on_off_wraps_the_client_in_a_fixed_script_with_values_as_arguments() -> None:
    (client,) = clients(step((H[0], H[1]), on_off="100ms/300ms", duration=3))
    sh, dash_c, script, name, on, off, cycles, *argv = client.argv
    assert (sh, dash_c, name) == ("sh", "-c", "bench-on-off")
    assert (on, off, cycles) == ("0.1", "0.3", "10")  # ceil((3 s + 1 s setup) / 0.4 s)
    assert argv == ["iperf3", "-c", "198.18.0.1", "-p", "5201", "-J", "-t", "3", "-i", "0.1"]
    assert "100ms" not in script and "198.18" not in script  # no value is shell text
    assert float(argv[argv.index("-i") + 1]) == ON_OFF_INTERVAL


def test_on_off_keeps_an_interval_the_suite_sets() -> None:
    (client,) = clients(step((H[0], H[1]), on_off="1s/1s", interval=0.5))
    assert client.argv[client.argv.index("-i") + 1] == "0.5"
    (plain,) = clients(step((H[0], H[1])))
    assert plain.argv[0] == "iperf3" and plain.argv[plain.argv.index("-i") + 1] == "1"


def test_rate_and_burst_go_to_iperf3s_b_option() -> None:
    (client,) = clients(step((H[0], H[1]), bitrate="2G/64"))
    assert client.argv[client.argv.index("-b") + 1] == "2000000000/64"


def test_stagger_delays_each_flow_of_a_step() -> None:
    flows = clients(step((H[0], H[1], H[2], H[3]), pattern="incast", stagger="250ms"))
    assert [c.start_delay_s for c in flows] == [0.0, 0.25, 0.5]
    assert all(c.argv[0] == "iperf3" for c in flows)  # no shell needed for a delay
    (single,) = clients(step((H[0], H[1]), stagger=2))
    assert single.start_delay_s == 0.0


@pytest.mark.parametrize(("params", "message"), [
    ({"on_off": "100ms"}, "ON/OFF"),
    ({"on_off": "5ms/100ms"}, "between 10ms and 60s"),
    ({"on_off": "1s/2m"}, "between 10ms and 60s"),
    ({"on_off": "1s/x"}, "not a duration"),
    ({"on_off": "100ms/100ms", "bitrate": "1G"}, "--fq-rate"),
    ({"on_off": "100ms/100ms", "protocol": "udp"}, "protocol tcp"),
    ({"stagger": -1}, "between 0 and 60"),
    ({"stagger": "soon"}, "not a duration"),
])
def test_bursty_parameters_are_checked(params: dict[str, Any], message: str) -> None:
    name = next(iter(params))
    with pytest.raises(ValueError, match=name) as info:
        IPERF3.check_params(params)
    assert message in str(info.value)


def test_on_off_helpers() -> None:
    assert on_off_seconds("100ms/1.5s") == (0.1, 1.5)
    assert on_off_argv("1s/1s", 5, ["iperf3"])[4:] == ["1", "1", "3", "iperf3"]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
def test_on_off_and_stagger_for_real_on_this_machine(tmp_path) -> None:
    """Real iperf3 over 127.0.0.1 through the Runner: the off periods show in the intervals and
    the staggered flow starts later on the step's time axis."""
    on_off = Step(id="0000-onoff", test="on-off", tool="iperf3", pattern="self", port=15241,
                  hosts=(LOCAL, LOCAL), params={"on_off": "300ms/300ms", "duration": 2})
    stagger = Step(id="0001-stagger", test="stagger", tool="iperf3", pattern="all-to-all", port=15241,
                   hosts=(LOCAL, LOCAL), params={"stagger": "700ms", "duration": 1, "interval": 0.5}, round=1)

    class TwoRounds:
        rounds = [[on_off], [stagger]]
        hosts = [LOCAL]
        launcher = "ssh"
        steps = [on_off, stagger]

    run = RunDir.create(tmp_path / "run")
    outcome = Runner(TwoRounds(), run).run()  # type: ignore[arg-type]
    assert [o.status for o in outcome.outcomes] == ["ok", "ok"], outcome.outcomes
    samples = run.samples()
    intervals = [s for s in samples if s["step"] == "0000-onoff" and s["kind"] == "interval"]
    rates = [s["bw_avg_gbps"] for s in intervals]
    peak = max(rates)
    # 0.1 s reports; an off period stretches a report over it, with little or nothing sent. A
    # loaded machine may stretch an "on" report too (it then carries a full rate), so only the
    # existence of a stretched, nearly idle report is asserted, not a count of them.
    stretched = [s for s in intervals if s["duration_s"] > 0.2]
    assert any(s["bw_avg_gbps"] < 0.5 * peak for s in stretched), intervals
    assert sum(s["duration_s"] for s in intervals) == pytest.approx(2.0, abs=0.5)
    offsets = sorted({s["t_offset_s"] for s in samples if s["step"] == "0001-stagger"})
    # The runner sleeps out the stagger before starting the second flow: never earlier than
    # 700 ms; how much later depends on the machine's load, so only a loose upper bound.
    assert len(offsets) == 2 and offsets[0] == 0.0 and 0.69 <= offsets[1] < 5.0


# ---------------------------------------------------------------- plan properties

PATTERN_TESTS = {
    "all-pairs": "iperf3", "pairs": "iperf3", "ring": "iperf3", "incast": "iperf3",
    "one-to-many": "iperf3", "all-to-all": "iperf3", "scaling": "collective",
}


def suite_for(tmp_path, pattern: str, repeat: int = 1) -> Any:
    path = tmp_path / f"{pattern}.yaml"
    params = "{op: all_reduce}" if PATTERN_TESTS[pattern] == "collective" else "{length: [16K, 1M]}"
    path.write_text(f"settings: {{repeat: {repeat}}}\n"
                    f"tests:\n  - {{name: t, tool: {PATTERN_TESTS[pattern]}, pattern: {pattern}, "
                    f"params: {params}}}\n")
    return load_suite(path)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 8), pattern=st.sampled_from(sorted(PATTERN_TESTS)), repeat=st.integers(1, 2))
def test_no_host_port_is_used_twice_in_a_round(tmp_path_factory, n: int, pattern: str, repeat: int) -> None:
    suite = suite_for(tmp_path_factory.mktemp("p"), pattern, repeat)
    plan = build_plan(suite, H[:n])
    for steps in plan.rounds:
        ports: Counter[tuple[str, str]] = Counter()
        for s in steps:
            for c in get_tool(s.tool).commands(s):
                if c.role == "server":
                    ports[(c.host.name, c.argv[c.argv.index("-p") + 1])] += 1
        assert all(v == 1 for v in ports.values()), ports
        if pattern not in ("ring",):  # ring: every host sends and receives at once, by design
            members = [h for s in steps for h in s.hosts]
            assert len(members) == len(set(members))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 8))
def test_all_pairs_plan_has_every_pair_once_in_n_minus_1_rounds(tmp_path_factory, n: int) -> None:
    plan = build_plan(suite_for(tmp_path_factory.mktemp("p"), "all-pairs"), H[:n])
    cases = 2  # two lengths
    per_case = len(plan.rounds) // cases
    assert per_case == (n - 1 if n % 2 == 0 else n)
    pairs = Counter(frozenset(h.name for h in s.hosts) for s in plan.steps)
    assert pairs == Counter({frozenset((a.name, b.name)): cases for a, b in combinations(H[:n], 2)})


def test_repetitions_are_interleaved_across_cases(tmp_path) -> None:
    plan = build_plan(suite_for(tmp_path, "pairs", repeat=2), H[:2])
    assert [(s.params["length"], s.repetition) for s in plan.steps] == [
        ("16K", 0), ("1M", 0), ("16K", 1), ("1M", 1)]


def test_incast_round_has_n_minus_1_concurrent_senders_on_their_own_ports(tmp_path) -> None:
    plan = build_plan(suite_for(tmp_path, "incast"), H[:4])
    first = plan.rounds[0][0]
    cmds = IPERF3.commands(first)
    assert [c.argv[3] for c in cmds if c.role == "server"] == ["5201", "5202", "5203"]
    assert {c.host.name for c in cmds if c.role == "client"} == {"h2", "h3", "h4"}
    assert len(plan.rounds) == 2 * 4  # two lengths x every host receiving once


# ---------------------------------------------------------------- pattern suites

def test_pattern_suites_load_and_plan_on_four_hosts() -> None:
    shapes = {"all-pairs": (6, 3), "incast": (4, 4), "bursty": (20, 14), "scaling": (2 * 5, 2 * 5)}  # scaling: repeat 5
    # bursty's RDMA bursts are a share of each NIC's line rate, which the inventory gives
    rated = [Host(h.name, h.address, vars={"nic_line_rate_gbps": 400}) for h in H[:4]]
    for name, (steps, rounds) in shapes.items():
        plan = build_plan(load_suite(name), rated)
        assert (len(plan.steps), len(plan.rounds)) == (steps, rounds), name
        assert "!!" not in describe_plan(plan), name
    scaling = build_plan(load_suite("scaling"), H[:4])
    assert [len(s.hosts) for s in scaling.steps] == [2, 4] * 5


def test_all_pairs_suite_isolates_and_bursty_suite_keeps_fine_intervals() -> None:
    suite = load_suite("all-pairs")
    assert suite.settings["isolate"] is True and suite.settings["isolation_bw_share"] == 0.9
    bursty = load_suite("bursty")
    for test in (t for t in bursty.tests if t.tool == "iperf3"):  # perftest prints no intervals
        for case in expand_cases(test):
            assert float(case.get("interval", 1)) <= 0.1, test.name
    assert {c["on_off"] for c in expand_cases(bursty.tests[0])} == {"100ms/100ms", "500ms/500ms"}


@pytest.mark.parametrize(("text", "message"), [
    ("isolate: maybe", "isolate must be true or false"),
    ("isolation_bw_share: 1.5", "isolation_bw_share must be a share"),
    ("isolation_lat_factor: 0.5", "isolation_lat_factor must be a factor"),
])
def test_isolation_settings_are_checked_with_their_line(tmp_path, text: str, message: str) -> None:
    from benchharness.core.errors import ConfigError

    path = tmp_path / "s.yaml"
    path.write_text(f"settings:\n  duration: 1\n  {text}\ntests:\n  - {{name: t, tool: iperf3}}\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_suite(path)
    assert ":3" in str(info.value.message) or "line 3" in str(info.value.message)


def test_isolate_can_be_set_on_the_command_line() -> None:
    suite = load_suite("quick", {"isolate": "true", "isolation_bw_share": "0.8"})
    assert suite.settings["isolate"] is True and suite.settings["isolation_bw_share"] == 0.8


# ---------------------------------------------------------------- bench plan

def test_bench_plan_shows_each_commands_host_port_and_delay(tmp_path, capsys) -> None:
    from benchharness.cli.main import main

    inv = tmp_path / "hosts.ini"
    inv.write_text("[lab]\n" + "".join(f"h{i} ansible_host=198.18.0.{i}\n" for i in range(1, 5)))
    assert main(["plan", "suite=bursty", f"hosts={inv}"]) == 0
    out = capsys.readouterr().out
    assert "h3  client fg  port=5202  after=0.5s  iperf3 -c 198.18.0.1 -p 5202" in out
    assert "h1  server bg  port=5203  iperf3 -s -p 5203" in out
    assert main(["plan", "suite=all-pairs", f"hosts={inv}"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nround ") == 3 and "(2 steps at once)" in out
    assert "after the run (isolate: true): all-pairs pairs below 90% of the best pair" in out
