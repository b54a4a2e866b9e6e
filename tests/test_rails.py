"""Hosts with several NICs (rails): inventory forms and their errors, per-rail plans, GPU<->NIC
affinity on real `nvidia-smi topo -m` outputs of 8-GPU nodes, the exact perftest command lines
per rail, per-rail verdicts, JUnit and isolation."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from benchharness.analysis.verdicts import per_rail, rollups
from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError
from benchharness.core.model import Host, Rail, Verdict, endpoint, split_endpoint
from benchharness.core.values import gpu_indices
from benchharness.lab.control import parse_shape
from benchharness.lab.files import render_inventory
from benchharness.planning import isolation
from benchharness.planning.plan import build_plan
from benchharness.report.junit import junit_xml
from benchharness.results.measures import record_hosts
from benchharness.telemetry.preflight import run_checks
from benchharness.telemetry.rails import gpu_numa, nearest_gpus, rails_from_facts, relation
from benchharness.tools import registry

ROOT = Path(__file__).parents[1]
TOPO = Path(__file__).parent / "fixtures" / "telemetry" / "nvidia-smi-topo-real"
PIX = (TOPO / "h100-8gpu-9nic-pix.txt").read_text()
PXB = (TOPO / "dgx-a100-8gpu-12nic-pxb.txt").read_text()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def suite(tmp_path: Path, body: str) -> Any:
    return load_suite(str(write(tmp_path, "s.yaml", body)))


# ---------------------------------------------------------------- inventory

def test_single_nic_inventory_is_unchanged() -> None:
    inv = load_inventory(ROOT / "inventories" / "lab.ini")
    gpu01 = inv.host("gpu01")
    assert gpu01.rails == () and gpu01.var("netdev") == "ens1f0np0" and gpu01.data_ip == "198.18.1.1"
    (nic,) = gpu01.nics()
    assert (nic.name, nic.rdma_dev, nic.gid_index, nic.serial) == ("rail0", "mlx5_0", 3, "MT2401X00001")
    assert "rails" not in inv.snapshot()["hosts"][0]


def test_eight_nic_inventory_as_parallel_lists() -> None:
    inv = load_inventory(ROOT / "inventories" / "dgx-b200-8rail.ini")
    dgx = inv.host("dgx02")
    assert len(dgx.rails) == 8
    assert dgx.rails[5] == Rail(index=5, netdev="ibp192s0", rdma_dev="mlx5_9", rdma_port=1, data_ip="198.18.6.2",
                                numa_node=1, line_rate_gbps=400, nearest_gpus=(5,),
                                serial="MT2412X20006", link_layer="InfiniBand")
    # code that knows one NIC sees the first rail
    assert (dgx.data_ip, dgx.var("netdev"), dgx.var("rdma_dev"), dgx.var("nic_serial")) == \
        ("198.18.1.2", "ibp24s0", "mlx5_0", "MT2412X20001")
    snap = inv.snapshot()["hosts"][1]["rails"]
    assert snap[7] == {"name": "rail7", "index": 7, "netdev": "ibp220s0", "rdma_dev": "mlx5_11", "rdma_port": 1,
                       "data_ip": "198.18.8.2", "numa_node": 1, "line_rate_gbps": 400,
                       "nearest_gpus": [7], "serial": "MT2412X20008", "link_layer": "InfiniBand"}


def test_yaml_rails_list_and_rails_auto(tmp_path: Path) -> None:
    path = write(tmp_path, "inv.yaml", """\
all:
  hosts:
    a:
      ansible_host: 192.0.2.1
      rails:
        - {netdev: ens1np0, rdma_dev: mlx5_0, data_ip: 198.18.1.1, numa_node: 0, nearest_gpus: [0, 1]}
        - {netdev: ens2np0, rdma_dev: mlx5_1, data_ip: 198.18.2.1, numa_node: 1, nearest_gpu: 4, serial: SN1}
    b:
      ansible_host: 192.0.2.2
      rails: auto
""")
    inv = load_inventory(path)
    a, b = inv.hosts
    assert [(r.netdev, r.data_ip, r.nearest_gpus, r.serial) for r in a.rails] == [
        ("ens1np0", "198.18.1.1", (0, 1), None), ("ens2np0", "198.18.2.1", (4,), "SN1")]
    assert b.rails == () and b.var("rails") == "auto"


@pytest.mark.parametrize(("text", "line", "words"), [
    ("[g]\nh1 netdev=eth1,eth2 rdma_dev=mlx5_0 data_ip=198.18.1.1,198.18.2.1\n", 2,
     "host h1: rdma_dev='mlx5_0' is one value for 2 rails (netdev lists 2); give one per rail"),
    ("[g]\nh1 netdev=eth1,eth2,eth3 data_ip=198.18.1.1,198.18.2.1\n", 2,
     "host h1: data_ip lists 2 rails but netdev lists 3: rail2 has no data_ip"),
    ("[g]\nh1 netdev=eth1,eth2 data_ip=198.18.1.1\n", 2,
     "host h1: data_ip='198.18.1.1' is one address for 2 rails (netdev lists 2): rail1 has no data_ip of its own"),
    ("[g]\nh1 netdev=eth1,eth2 data_ip=198.18.1.1,198.18.2.1 gid_index=3,x\n", 2,
     "host h1: rail1: gid_index='x' is not valid, it must be an integer >= 0"),
    ("[g]\nh1\n[g:vars]\nnetdev=eth1,eth2\ndata_ip=198.18.1.1,\n", 5,
     "host h1: rail1 has no data_ip: every rail needs its own address"),
])
def test_rail_mistakes_name_file_line_host_and_rail(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, "bad.ini", text)
    with pytest.raises(ConfigError) as err:
        load_inventory(path)
    assert str(err.value) == f"{path}:{line}: {words}"


def test_yaml_rail_without_address_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "all:\n  hosts:\n    a:\n      rails:\n        - {netdev: e1, data_ip: 198.18.1.1}\n"
                                      "        - {netdev: e2}\n")
    with pytest.raises(ConfigError) as err:
        load_inventory(path)
    assert str(err.value).startswith(f"{path}:6: host a: rail1 has no data_ip")


# ---------------------------------------------------------------- plans per rail

def railed(name: str, n: int, rails: int = 2, **extra: Any) -> Host:
    return Host(name, f"192.0.2.{n}", data_ip=f"198.18.1.{n}", vars={"netdev": "eth1"},
                rails=tuple(Rail(i, netdev=f"eth{i + 1}", rdma_dev=f"mlx5_{i}", data_ip=f"198.18.{i + 1}.{n}",
                                 **extra) for i in range(rails)))


HOSTS4 = [railed(f"h{n}", n) for n in range(1, 5)]


@pytest.mark.parametrize(("mode", "shape", "rails"), [
    ("aligned", [4, 4, 4], [["rail0", "rail1", "rail0", "rail1"]] * 3),
    ("each", [2] * 6, [["rail0"] * 2, ["rail1"] * 2] * 3),
    ("cross", [2] * 6, [["rail0-rail1"] * 2, ["rail1-rail0"] * 2] * 3),
])
def test_all_pairs_per_rail(tmp_path: Path, mode: str, shape: list[int], rails: list[list[str]]) -> None:
    s = suite(tmp_path, f"tests:\n  - {{name: bw, tool: iperf3, pattern: all-pairs, rails: {mode}}}\n")
    plan = build_plan(s, HOSTS4)
    assert [len(r) for r in plan.rounds] == shape
    assert [[st.labels["rail"] for st in r] for r in plan.rounds] == rails
    assert all(len({st.port for st in r}) == len(r) for r in plan.rounds)  # a port per step of a round
    assert [h.name for h in plan.hosts] == ["h1", "h2", "h3", "h4"]
    first = plan.rounds[0][0]
    ends = "h1.rail0,h4.rail0" if mode != "cross" else "h1.rail0,h4.rail1"
    assert first.labels["endpoints"] == ends and first.id.startswith("0000-bw-h1.rail0-h4.rail")
    pairs = {frozenset(st.labels["endpoints"].split(",")) for st in plan.steps}
    assert len(pairs) == len(plan.steps)  # every rail pair once


def test_rail_views_carry_the_nics_address_and_vars(tmp_path: Path) -> None:
    s = suite(tmp_path, "tests:\n  - {name: bw, tool: iperf3, pattern: pairs, rails: aligned, params: {duration: 1}}\n")
    plan = build_plan(s, HOSTS4[:2])
    (r0, r1) = plan.rounds[0]
    server, _client = r1.hosts
    assert (server.traffic_ip, server.var("netdev"), server.rail) == ("198.18.2.1", "eth2", "rail1")
    argv = [c.argv for c in registry()["iperf3"].commands(r1)]
    # each end runs on its rail's NUMA node: sysfs of the rail's netdev says which
    assert argv[0][:5] == ("sh", "-c", argv[0][2], "bench-numa", "/sys/class/net/eth2/device/numa_node")
    argv = [a[a.index("iperf3"):] for a in argv]
    assert argv[0][:7] == ("iperf3", "-s", "-p", str(r1.port), "-1", "-B", "198.18.2.1")
    assert argv[1][:3] == ("iperf3", "-c", "198.18.2.1") and "198.18.2.2" in argv[1]
    assert r0.labels["server_rail"] == "rail0" and r0.port != r1.port


def test_single_nic_hosts_plan_as_before_with_rails_set(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "inventories" / "lab.ini")
    plain = suite(tmp_path, "tests:\n  - {name: bw, tool: perftest, pattern: all-pairs, params: {test: ib_write_bw}}\n")
    with_rails = suite(tmp_path, "tests:\n  - {name: bw, tool: perftest, pattern: all-pairs, rails: aligned, "
                                 "params: {test: ib_write_bw}}\n")
    a, b = build_plan(plain, inv.hosts), build_plan(with_rails, inv.hosts)
    assert [s.id for s in a.steps] == [s.id for s in b.steps]
    assert [dict(s.labels) for s in a.steps] == [dict(s.labels) for s in b.steps]
    adapter = registry()["perftest"]
    assert [c.argv for s in a.steps for c in adapter.commands(s)] == \
        [c.argv for s in b.steps for c in adapter.commands(s)]


def test_incast_aligned_puts_every_rail_of_the_receiver_to_work(tmp_path: Path) -> None:
    s = suite(tmp_path, "tests:\n  - {name: in, tool: iperf3, pattern: incast, rails: aligned}\n")
    plan = build_plan(s, HOSTS4[:3])
    first = plan.rounds[0]
    assert [st.labels["endpoints"] for st in first] == ["h1.rail0,h2.rail0,h3.rail0", "h1.rail1,h2.rail1,h3.rail1"]
    assert first[1].port - first[0].port == 2  # two senders: two ports each


@pytest.mark.parametrize(("line", "words"), [
    ("rails: sideways", "rails: 'sideways' is not one of aligned, each, cross"),
    ("rails: aligned, pattern: all-to-all", "rails: aligned needs a pair pattern"),
])
def test_bad_rails_key_names_the_suite_line(tmp_path: Path, line: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        suite(tmp_path, f"tests:\n  - {{name: bw, tool: iperf3, {line}}}\n")
    assert words in str(err.value) and ":2:" in str(err.value)


# ---------------------------------------------------------------- GPU <-> NIC on real outputs

def test_nearest_gpu_per_nic_pix_layout_h100() -> None:
    # nine NICs: NIC0 is SYS to every GPU, NIC1..NIC8 are PIX to GPU7..GPU0 (reverse order)
    near = nearest_gpus(PIX, [f"mlx5_{i}" for i in range(9)])
    assert {nic: g[0] for nic, g in near.items() if nic != "mlx5_0"} == {
        "mlx5_1": 7, "mlx5_2": 6, "mlx5_3": 5, "mlx5_4": 4, "mlx5_5": 3, "mlx5_6": 2, "mlx5_7": 1, "mlx5_8": 0}
    assert all(len(near[f"mlx5_{i}"]) == 1 for i in range(1, 9))
    assert relation(PIX, "mlx5_0", 0, position=0) == "SYS" and relation(PIX, "mlx5_3", 5, position=3) == "PIX"
    assert gpu_numa(PIX) == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}


def test_nearest_gpu_per_nic_pxb_layout_dgx_a100() -> None:
    # two GPUs and two NICs behind each PCIe switch: each NIC gets a GPU of its own
    compute = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    near = nearest_gpus(PXB, [*compute, "mlx5_4"])
    assert [near[n] for n in compute] == [(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (6, 7), (7, 6)]
    assert near["mlx5_4"] == tuple(range(8))  # a storage NIC: SYS to every GPU
    assert relation(PXB, "mlx5_7", 5) == "PXB" and relation(PXB, "mlx5_7", 0) == "SYS"


def h100_node(name: str, n: int) -> Host:
    """A node as the H100 output describes it: rail i = mlx5_{i+1}, its nearest GPU and that GPU's NUMA node."""
    devs = [f"mlx5_{i}" for i in range(9)]
    near, numa = nearest_gpus(PIX, devs), gpu_numa(PIX)
    rails = tuple(Rail(i, netdev=f"ens{i + 1}np0", rdma_dev=dev, data_ip=f"198.18.{i + 1}.{n}", gid_index=3,
                       numa_node=numa[near[dev][0]], nearest_gpus=near[dev])
                  for i, dev in enumerate(devs[1:]))
    return Host(name, f"192.0.2.{n}", data_ip=rails[0].data_ip, vars={"gpus": 8}, rails=rails)


def test_perftest_command_lines_per_rail_pinned_beside_their_gpu(tmp_path: Path) -> None:
    s = suite(tmp_path, "settings: {base_port: 18515}\ntests:\n  - {name: gdr, tool: perftest, pattern: pairs, "
                        "rails: aligned, params: {test: ib_write_bw, size: 1M, iters: 1000, use_cuda: nearest}}\n")
    plan = build_plan(s, [h100_node("a", 1), h100_node("b", 2)])
    (steps,) = plan.rounds
    adapter = registry()["perftest"]
    lines = {st.labels["rail"]: [list(c.argv) for c in adapter.commands(st)] for st in steps}
    assert len(lines) == 8
    assert lines["rail0"] == [
        ["stdbuf", "-oL", "numactl", "--cpunodebind=1", "--membind=1", "ib_write_bw", "-p", "18515", "-d", "mlx5_1",
         "-i", "1", "-x", "3", "-F", "-s", "1048576", "-n", "1000", "--report_gbits", "--use_cuda=7"],
        ["numactl", "--cpunodebind=1", "--membind=1", "ib_write_bw", "-p", "18515", "-d", "mlx5_1", "-i", "1",
         "-x", "3", "-F", "-s", "1048576", "-n", "1000", "--report_gbits", "--use_cuda=7", "198.18.1.1"]]
    for i in range(8):
        server, client = lines[f"rail{i}"]
        node, gpu = (1 if i < 4 else 0), 7 - i
        assert server[2:5] == ["numactl", f"--cpunodebind={node}", f"--membind={node}"]
        assert server[server.index("-d") + 1] == f"mlx5_{i + 1}" and server[-1] == f"--use_cuda={gpu}"
        assert client[-2:] == [f"--use_cuda={gpu}", f"198.18.{i + 1}.1"] and client[client.index("-x") + 1] == "3"
        assert server[server.index("-p") + 1] == str(18515 + i)


def test_use_rocm_nearest_without_a_known_gpu_names_host_and_rail(tmp_path: Path) -> None:
    s = suite(tmp_path, "tests:\n  - {name: g, tool: perftest, pattern: pairs, rails: each, "
                        "params: {test: ib_write_bw, use_rocm: nearest}}\n")
    plan = build_plan(s, HOSTS4[:2])
    with pytest.raises(ValueError, match="use_rocm: nearest: host h1 rail1 \\(mlx5_1\\) has no nearest GPU known"):
        registry()["perftest"].commands(plan.rounds[1][0])


def test_rails_from_probe_facts_keep_the_compute_nics() -> None:
    nics = [{"netdev": f"ibp{i}s0", "virtual": False, "rdma_devices": [f"mlx5_{i}"], "ipv4": [f"198.18.{i + 1}.5"],
             "numa_node": None, "speed_mbps": 400000, "pci_address": f"0000:{i:02x}:00.0"} for i in range(10)]
    nics.append({"netdev": "eno1", "virtual": False, "rdma_devices": [], "ipv4": ["192.0.2.5"]})
    rdma = {"devices": [{"name": "mlx5_3", "ports": [{"port": 1, "gids": [
        {"index": 3, "type": "RoCE v2", "gid": "0000:0000:0000:0000:0000:ffff:c612:0405"}]}]}]}
    facts = {"nics": {"devices": nics}, "rdma": rdma, "gpus": {"topology": {"text": PXB}}}
    rails = rails_from_facts(facts, management="192.0.2.5")
    assert [(r.rdma_dev, r.nearest_gpu) for r in rails] == [
        ("mlx5_0", 0), ("mlx5_1", 1), ("mlx5_2", 2), ("mlx5_3", 3), ("mlx5_6", 4), ("mlx5_7", 5),
        ("mlx5_8", 6), ("mlx5_9", 7)]  # mlx5_4/5 are SYS to every GPU: storage, left out
    assert rails[3].gid_index == 3 and rails[3].data_ip == "198.18.4.5" and rails[0].line_rate_gbps == 400


def test_preflight_names_a_rail_given_a_far_gpu(tmp_path: Path) -> None:
    host = h100_node("a", 1)
    wrong = dataclasses.replace(host.rails[2], nearest_gpus=(0,))  # mlx5_3 is PIX to GPU5, SYS to GPU0
    host = dataclasses.replace(host, rails=(*host.rails[:2], wrong, *host.rails[3:]))
    facts = {"a": {"gpus": {"topology": {"available": True, "text": PIX}}}}
    topo = [v for v in run_checks(facts, [host]) if v.check == "preflight.gpu_nic_topology"]
    assert len(topo) == 8  # one per rail, not one per GPU: gpus=8 is a count
    (bad,) = [v for v in topo if v.status != "pass"]
    assert bad.status == "fail" and bad.message.startswith(
        "rail2 mlx5_3 (ens3np0): GPU0 <-> mlx5_3: SYS (across the inter-socket link), but GPU5 is PIX (same PCIe switch)")
    assert "rail5 mlx5_6 (ens6np0): GPU2 <-> mlx5_6: PIX (same PCIe switch)" in {v.message for v in topo}


def test_gpus_as_a_count_means_every_gpu() -> None:
    assert gpu_indices(8) == gpu_indices("8") == list(range(8))
    assert gpu_indices([0, 2]) == gpu_indices("0,2") == [0, 2] and gpu_indices(None) == []


# ---------------------------------------------------------------- lab

def test_lab_shape_names_one_rail_of_one_host() -> None:
    assert parse_shape("h3.rail1:1gbit,h2:2gbit", hosts=4, rails=2) == {"h3.rail1": "1gbit", "h2": "2gbit"}
    with pytest.raises(ValueError, match=r"unknown rail h3\.rail2: the lab has rail0\.\.rail1"):
        parse_shape("h3.rail2:1gbit", hosts=4, rails=2)
    with pytest.raises(ValueError, match=r"expected hN:RATE or hN\.railK:RATE"):
        parse_shape("h3/rail1:1gbit")


def test_lab_inventory_lists_one_nic_per_rail(tmp_path: Path) -> None:
    rails = [{"name": f"rail{k}", "subnet": f"198.18.{k + 1}.0/24", "bridge": f"bh0r{k}"} for k in range(2)]
    hosts = [{"name": f"h{n}", "netns": f"bh-x-h{n}", "address": f"198.18.0.{n}", "shape": None,
              "rails": [{"name": f"rail{k}", "netdev": f"eth{k + 1}", "address": f"198.18.{k + 1}.{n}",
                         "shape": "1gbit" if (n, k) == (2, 1) else None} for k in range(2)]} for n in (1, 2)]
    text = render_inventory({"name": "x", "dir": str(tmp_path), "bridge": "bh-x", "subnet": "198.18.0.0/24",
                             "rails": rails, "hosts": hosts}, python="/usr/bin/python3")
    path = write(tmp_path, "inventory.ini", text)
    h2 = load_inventory(path).host("h2")
    assert [(r.netdev, r.data_ip, r.line_rate_gbps, r.serial) for r in h2.rails] == [
        ("eth1", "198.18.1.2", 10, "LAB-h2-rail0"), ("eth2", "198.18.2.2", 1, "LAB-h2-rail1")]
    assert h2.address == "198.18.0.2"


# ---------------------------------------------------------------- findings per rail

def test_samples_of_rail_steps_are_measured_per_endpoint() -> None:
    rec = {"hosts": "h1,h3", "endpoints": "h3.rail1,h1.rail1", "server": "h3", "client": "h1"}
    assert record_hosts(rec) == ("h1.rail1", "h3.rail1")
    assert isolation.pair_of(rec) == ("h1.rail1", "h3.rail1")
    assert split_endpoint("gpu-01.lab.rail7") == ("gpu-01.lab", "rail7") and endpoint("h1", None) == "h1"


def test_isolation_names_the_host_rail_and_serial() -> None:
    def rec(a: str, b: str, bw: float) -> dict[str, Any]:
        return {"test": "t", "pattern": "all-pairs", "kind": "summary", "endpoints": f"{a},{b}", "bw_avg_gbps": bw}

    ends = [f"h{n}.rail{k}" for n in (1, 2, 3) for k in (0, 1)]
    samples = [rec(a, b, 0.5 if "h3.rail1" in (a, b) else 2.0) for a in ends for b in ends
               if a < b and a[-1] == b[-1] and a[:2] != b[:2]]
    bad = [s.pair for s in isolation.pair_scores(samples, {"t": []}) if s.bad(0.9, 2.0)]
    assert bad == [("h1.rail1", "h3.rail1"), ("h2.rail1", "h3.rail1")]
    suspects, note = isolation.name_suspects(bad)
    assert suspects == ["h3.rail1"] and note.startswith("h3.rail1 is in 2 of 2 bad pairs")
    found = isolation.Isolation(0.9, 2.0, [], [], suspects=suspects, serials={"h3.rail1": "MT2412X30002"})
    assert found.summary()["suspect_nics"] == [{"host": "h3", "rail": "rail1", "serial": "MT2412X30002"}]


class _NoSteps:
    def steps(self) -> list[dict[str, Any]]:
        return []


def test_verdicts_and_junit_per_host_and_rail() -> None:
    raw = [Verdict("bw", "pass", "h3.rail0: ok", host="h3.rail0", test="t", value=2.0, limit=1.6),
           Verdict("bw", "fail", "h3.rail1: fails", host="h3.rail1", test="t", value=0.5, limit=1.6),
           Verdict("bw", "pass", "h1.rail1: ok", host="h1.rail1", test="t")]
    verdicts = [per_rail(v) for v in raw]
    assert [(v.host, v.rail) for v in verdicts] == [("h3", "rail0"), ("h3", "rail1"), ("h1", "rail1")]
    roll = rollups(["h1", "h3"], verdicts, _NoSteps(), {})  # type: ignore[arg-type]
    assert [(v.host, v.rail, v.status) for v in roll] == [
        ("h1", "rail1", "pass"), ("h3", "rail0", "pass"), ("h3", "rail1", "fail"), (None, None, "fail")]
    assert roll[-1].message == "failed hosts: h3.rail1; 1 of 2 hosts passed"
    info = {"suite": {"name": "rails"}, "hosts": ["h1", "h3"], "verdicts": [v.__dict__ for v in roll + verdicts]}
    root = ET.fromstring(junit_xml(info).split("\n", 1)[1])
    cases = [(c.get("classname"), c.get("name"), c.find("failure") is not None) for c in root.iter("testcase")]
    assert ("rails.h3.rail1", "rail1: acceptance", True) in cases
    assert ("rails.h3.rail0", "rail0: acceptance", False) in cases
    assert ("rails.h3.rail1", "rail1: t: bw", True) in cases
    assert {c for c, _, failed in cases if failed} == {"rails.h3.rail1", "rails.run"}


def test_ucx_perftest_per_rail_names_the_rails_device(tmp_path: Path) -> None:
    s = suite(tmp_path, "tests:\n  - {name: u, tool: ucx_perftest, pattern: pairs, rails: aligned, "
                        "params: {test: tag_bw, tls: auto}}\n")
    plan = build_plan(s, HOSTS4[:2])
    envs = [dict(c.env) for st in plan.rounds[0] for c in registry()["ucx_perftest"].commands(st)]
    devices = sorted({e.get("UCX_NET_DEVICES", "") for e in envs})
    assert devices == ["mlx5_0:1", "mlx5_1:1"], envs


def test_line_rate_share_uses_each_rails_own_rate() -> None:
    import pandas as pd

    from benchharness.analysis.frames import case_columns, line_rate_share

    info = {"hosts": ["h1", "h2"], "inventory": {"hosts": [
        {"name": n, "vars": {"nic_line_rate_gbps": 400},
         "rails": [{"name": "rail0", "line_rate_gbps": 400}, {"name": "rail1", "line_rate_gbps": 200}]}
        for n in ("h1", "h2")]}}
    df = pd.DataFrame([
        {"test": "t", "rail": "rail0", "hosts": "h1,h2", "endpoints": "h1.rail0,h2.rail0", "bw_avg_gbps": 200.0},
        {"test": "t", "rail": "rail1", "hosts": "h1,h2", "endpoints": "h1.rail1,h2.rail1", "bw_avg_gbps": 180.0}])
    out = line_rate_share(df, info, facts={})
    assert out["bw_avg_gbps_line_rate_pct"].tolist() == [50.0, 90.0]
    assert "rail" in case_columns(df, hosts=False) and "endpoints" not in case_columns(df, hosts=False)
