"""`bench plan` of every shipped suite on the 8-rail GPU-node inventories (DGX B200 on
InfiniBand, MI300X with Broadcom Thor2 and with AMD Pollara on RoCE), INI and YAML, kept as golden text under tests/fixtures/golden/8rail/
(BENCH_UPDATE_GOLDEN=1 rewrites them), and rule checks over the planned command lines:

* every rail's NIC is used (all eight RDMA devices on perftest/UCX lines, all eight addresses on
  iperf3 lines); latency tests run one rail per round;
* InfiniBand rails get no GID index (perftest ``-x``, ``NCCL_IB_GID_INDEX``, ``UCX_IB_GID_INDEX``),
  RoCE rails get theirs and the traffic class (``--tclass``, ``NCCL_IB_TC``); ``-F`` on perftest;
* RCCL on Pollara loads AMD's network plugin (``NCCL_NET_PLUGIN=librccl-anp.so``), nothing else does;
* MPI ranks run on their GPU's NUMA node (``--map-by ppr:4:numa --bind-to numa``; Slurm
  ``--distribution=block:block``); no path of the controller (its home, /root) on a remote line;
* GPU collectives reach 8G.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.config.suites import list_suites, load_suite
from benchharness.core.model import Command, Step
from benchharness.core.units import parse_size
from benchharness.planning.describe import describe_plan
from benchharness.planning.plan import Plan, build_plan
from benchharness.tools import get_tool

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "8rail"
NODES = {"dgx-b200-8rail": "infiniband", "mi300x-8rail": "roce", "mi300x-pollara-8rail": "roce"}
SUITES = [name for name, _ in list_suites() if (ROOT / "suites" / f"{name}.yaml").is_file()]
LATENCY = re.compile(r"(^ib_\w+_lat$)|(_lat$)")


def plan_of(suite: str, inventory: str, launcher: str = "ssh") -> Plan:
    inv = load_inventory(str(ROOT / "inventories" / inventory))
    return build_plan(load_suite(suite), inv.hosts, inventory=inv, launcher=launcher)


def text_of(plan: Plan) -> str:
    return describe_plan(plan).replace(str(plan.suite.path), f"suites/{plan.suite.name}.yaml")


def commands(plan: Plan) -> Iterator[tuple[Step, Command]]:
    for step in plan.steps:
        for cmd in get_tool(step.tool).commands(step, plan.launcher):
            yield step, cmd


def test_every_shipped_suite_is_covered() -> None:
    assert len(SUITES) == len(list((ROOT / "suites").glob("*.yaml"))) >= 13


@pytest.mark.parametrize("node", sorted(NODES))
@pytest.mark.parametrize("suite", SUITES)
def test_plan_golden(suite: str, node: str) -> None:
    text = text_of(plan_of(suite, f"{node}.ini"))
    assert text_of(plan_of(suite, f"{node}.yaml")) == text  # the YAML inventory says the same
    golden = GOLDEN / f"{suite}-{node}.txt"
    if os.environ.get("BENCH_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text + "\n")
    assert text + "\n" == golden.read_text()


def _value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def _env(cmd: Command) -> dict[str, str]:
    """Variables a command gives its tool: its own env and mpirun's ``-x NAME=VALUE``."""
    out = dict(cmd.env)
    argv = list(cmd.argv)
    for i, item in enumerate(argv[:-1]):
        if item == "-x" and "=" in argv[i + 1]:
            name, _, value = argv[i + 1].partition("=")
            out[name] = value
    return out


@pytest.mark.parametrize("node", sorted(NODES))
@pytest.mark.parametrize("suite", SUITES)
def test_plan_rules(suite: str, node: str) -> None:
    plan = plan_of(suite, f"{node}.ini")
    hosts = plan.hosts
    devices = {r.rdma_dev for r in hosts[0].rails}
    addresses = {r.data_ip for h in hosts for r in h.rails}
    roce = NODES[node] == "roce"
    gid = str(hosts[0].rails[0].gid_index)
    plugin = hosts[0].var("nccl_net_plugin")
    forbidden = [str(Path.home()), "/root/", "~/"]
    per_test: dict[str, dict[str, set[str]]] = {}
    for step, cmd in commands(plan):
        argv, env = cmd.argv, _env(cmd)
        seen = per_test.setdefault(step.test, {"dev": set(), "ip": set()})
        joined = " ".join([*argv, *env.values()])
        assert not any(p in joined for p in forbidden), f"controller path on a remote line: {joined}"
        tool_name = next((a for a in argv if re.match(r"^ib_\w+_(bw|lat)$", a)), None)
        if tool_name:
            assert "-F" in argv
            seen["dev"].add(str(_value(argv, "-d")))
            assert ("-x" in argv) is roce and (_value(argv, "-x") == gid if roce else True)
            assert ("--tclass=104" in argv) is roce
        if "UCX_NET_DEVICES" in env and "ucx_perftest" in argv:
            seen["dev"].add(env["UCX_NET_DEVICES"].split(":")[0])
            assert ("UCX_IB_GID_INDEX" in env) is roce and ("UCX_IB_TRAFFIC_CLASS" in env) is roce
        if any(a.endswith("iperf3") for a in argv):
            seen["ip"].update(a for a in argv if a in addresses)
        if cmd.role == "launcher" and argv[0] == "mpirun":
            if step.pattern == "gpu-pairs":  # one rank per node, bound to its GPU's NUMA node by the wrapper
                assert _value(argv, "--map-by") == "ppr:1:node" and _value(argv, "--bind-to") == "none"
                gpus, numa = argv[argv.index("bench-gpu") + 1], argv[argv.index("bench-gpu") + 3]
                assert [int(n) for n in numa.split(",")] == [int(g) // 4 for g in gpus.split(",")]
            else:
                assert _value(argv, "--map-by") == "ppr:4:numa" and _value(argv, "--bind-to") == "numa"
            assert ("NCCL_IB_GID_INDEX" in env) is roce and (env.get("NCCL_IB_TC") == "104") is roce
            assert env.get("NCCL_IB_GID_INDEX", gid) == gid and env.get("NCCL_NET_PLUGIN") == plugin
            assert env["NCCL_IB_HCA"].lstrip("=").count(":1") == 8
            top = parse_size(str(step.params["maxbytes"]))
            low, factor = int(_value(argv, "-b") or 0), int(_value(argv, "-f") or 2)
            assert top == 8 << 30 and int(_value(argv, "-e") or 0) == top
            assert any(low * factor ** k == top for k in range(64)), "the sweep must reach 8G exactly"
    for test in plan.suite.tests:
        seen = per_test.get(test.name, {"dev": set(), "ip": set()})
        if test.tool in ("perftest", "ucx_perftest"):
            assert seen["dev"] == devices, f"{test.name}: rails {sorted(seen['dev'])}"
        if test.tool == "iperf3":
            assert seen["ip"] == addresses, f"{test.name}: addresses {sorted(seen['ip'])}"
        if LATENCY.search(str(test.params.get("test", ""))):
            rounds = [r for r in plan.rounds if r and r[0].test == test.name]
            assert rounds and all(len({s.labels.get("rail") for s in r}) == 1 for r in rounds), test.name


@pytest.mark.parametrize("node", sorted(NODES))
def test_slurm_places_tasks_in_blocks(node: str) -> None:
    plan = plan_of("allreduce", f"{node}.ini", launcher="slurm")
    cmds = [c for _, c in commands(plan)]
    assert len({tuple(c.argv) for c in cmds}) == 1  # one launch line, once per repetition
    cmd = cmds[0]
    assert "--distribution=block:block" in cmd.argv and "--cpu-bind=ldoms" in cmd.argv


def test_a_suite_without_rails_on_an_8_rail_host_is_an_error(tmp_path: Path) -> None:
    from benchharness.core.errors import ConfigError, UsageError

    suite = tmp_path / "one.yaml"
    suite.write_text("tests:\n  - name: bw\n    tool: perftest\n    pattern: pairs\n"
                     "    params: {test: ib_write_bw, size: 64K, iters: 100}\n")
    inv = load_inventory(str(ROOT / "inventories" / "dgx-b200-8rail.ini"))
    with pytest.raises(ConfigError) as err:
        build_plan(load_suite(str(suite)), inv.hosts, inventory=inv)
    assert f"{suite}:2" in str(err.value) and "rails: not set tests 1 of the 8 NICs of dgx01" in str(err.value)
    one = build_plan(load_suite(str(suite), {"rails": "first"}), inv.hosts, inventory=inv)
    assert len(one.steps) == 1  # said on purpose: the first NIC only
    each = build_plan(load_suite(str(suite), {"rails": "each"}), inv.hosts, inventory=inv)
    assert len(each.rounds) == 8 and {s.labels["rail"] for s in each.steps} == {f"rail{i}" for i in range(8)}
    with pytest.raises(UsageError, match="rails=sideways: expected one of aligned, each, cross, first"):
        load_suite(str(suite), {"rails": "sideways"})


def _rails_of(plan: Plan, test: str) -> dict[str, list[Command]]:
    """rail -> the commands of ``test``'s steps on that rail."""
    out: dict[str, list[Command]] = {}
    for step, cmd in commands(plan):
        if step.test == test:
            out.setdefault(str(step.labels.get("rail")), []).append(cmd)
    return out


@pytest.mark.parametrize("node", sorted(NODES))
def test_message_rate_latency_under_load_and_line_rate_bursts_on_every_rail(node: str) -> None:
    """Issue 33: message rate at a NIC's scale, RDMA latency under load (same and neighbouring rail)
    and bursts near line rate are planned on all eight rails; the soak has a bandwidth floor."""
    acceptance, bursty = plan_of("acceptance", f"{node}.ini"), plan_of("bursty", f"{node}.ini")
    devices = [r.rdma_dev for r in acceptance.hosts[0].rails]
    rails = {f"rail{i}" for i in range(8)}
    msg = _rails_of(acceptance, "rdma-msg-rate")
    assert set(msg) == rails
    for rail, cmds in msg.items():
        clients = [c for c in cmds if c.role == "client"]
        per_step: dict[str, set[str]] = {}
        for step, c in commands(acceptance):
            if step.test == "rdma-msg-rate" and c.role == "client" and step.labels.get("rail") == rail:
                per_step.setdefault(step.id, set()).add(str(_value(c.argv, "-p")))
        assert per_step and all(len(ports) == 2 for ports in per_step.values())  # 2 processes, own ports
        for c in clients:
            assert (_value(c.argv, "-s"), _value(c.argv, "-q"), _value(c.argv, "-l"), _value(c.argv, "-Q")) \
                == ("64", "8", "32", "8")
            assert _value(c.argv, "-d") == devices[int(rail[4:])] and c.argv[0] == "numactl"
    loaded = _rails_of(acceptance, "rdma-lat-under-load")
    assert set(loaded) == rails
    for rail, cmds in loaded.items():
        i = int(rail[4:])
        assert {_value(c.argv, "-d") for c in cmds if c.role == "load"} == {devices[i], devices[(i + 1) % 8]}
        probe = [c for c in cmds if c.role == "client"]
        assert probe and all("ib_send_lat" in c.argv and c.start_delay_s > 0 for c in probe)
        assert all(any(a.startswith(("--use_cuda=", "--use_rocm=")) for a in c.argv) for c in probe)
    bursts = _rails_of(bursty, "rdma-burst")
    assert set(bursts) == rails
    for cmds in bursts.values():
        clients = [c for c in cmds if c.role == "client"]
        assert {a for c in clients for a in c.argv if a.startswith("--rate_limit=")} == \
            {"--rate_limit=200", "--rate_limit=380"}  # 50% and 95% of 400 Gbit/s
        assert all(_value(c.argv, "-q") == "8" for c in clients)
    tcp = _rails_of(bursty, "tcp-burst")
    assert set(tcp) == rails
    assert all(len({_value(c.argv, "-p") for c in cmds if c.role == "client"}) == 4 for cmds in tcp.values())
    soak = load_suite("soak")
    floor = [c for t in soak.tests for c in (t.checks or []) if c.get("metric") == "bw_avg_gbps"]
    assert floor and all("line_rate" in str(c.get("min")) for c in floor)
