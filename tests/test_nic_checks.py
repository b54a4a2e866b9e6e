"""The NIC-configuration checks (telemetry/nic_checks.py) on real outputs.

* Real published ``ethtool -k/-l/-x``, AER and ``lspci -vvv`` outputs (tests/fixtures/real, SOURCES
  there) through the parsers into each check: what is off, spread or too small is named.
* A real multi-queue NIC: ``probe-vm-virtio-mq.json`` is what the real probe wrote inside the
  soft-RoCE VM (tests/rdma_vm_guest.py ``nic_probe``; qemu 7.2 ``virtio-net-pci,mq=on,rss=on``
  with 4 queue pairs, Debian kernel 6.1.0-57, 2 vCPUs): 4 channels (2 in use), a 128-entry RSS
  table over 2 rings, 8 queue IRQs with their affinities. tests/test_rdma_vm.py checks the same
  on each VM boot.
* The usable bandwidth of each PCIe generation against the published per-lane figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.core.model import Rail
from benchharness.core.pcie import gen_of, gts_of, usable_gbps
from benchharness.telemetry import nic_checks
from benchharness.telemetry.host_checks import judge
from benchharness.telemetry.nic_config import NicConfig, read_nic
from benchharness.telemetry.parsers.aer import parse_aer
from benchharness.telemetry.parsers.ethtool import parse_channels, parse_features, parse_rss
from benchharness.telemetry.parsers.lspci import device_of
from benchharness.telemetry.rail_facts import RailFacts

REAL = Path(__file__).parent / "fixtures" / "real"
VM_PROBE = Path(__file__).parent / "fixtures" / "telemetry" / "probe-vm-virtio-mq.json"


def _collect() -> tuple[list[dict[str, Any]], nic_checks.Add]:
    found: list[dict[str, Any]] = []

    def add(rf: Any, check: str, status: str, message: str, observed: Any = None, expected: Any = None,
            value: float | None = None, limit: float | None = None) -> None:
        found.append({"check": check, "status": status, "message": message, "observed": observed,
                      "expected": expected, "value": value, "limit": limit})
    return found, add


def _rail(netdev: str = "eth1", driver: str = "r8169") -> RailFacts:
    return RailFacts(Rail(0, netdev=netdev), {"netdev": netdev, "driver": driver}, None, None)


def test_offloads_off_are_named_and_fixed_ones_marked() -> None:
    found, add = _collect()
    off = parse_features((REAL / "ethtool-k" / "sqm_eth1_all_off_fixed_requested_on_tabs_prompt.txt").read_text())
    nic_checks.offloads(add, _rail(), NicConfig(features=off), virtual=False)
    on = parse_features((REAL / "ethtool-k" / "firewalla_grep_v_fixed_sudo_prompt.txt").read_text())
    nic_checks.offloads(add, _rail(), NicConfig(features=on), virtual=False)
    nic_checks.offloads(add, _rail(), NicConfig(reasons={"features": "Operation not supported"}), virtual=False)
    warn, ok, missing = found
    assert warn["status"] == "warn"
    assert warn["observed"] == "TSO, GSO, rx-checksumming [fixed], tx-checksumming off"  # GRO is on there
    assert ok["status"] == "pass" and "TSO, GSO, GRO, rx-checksumming, tx-checksumming on" in ok["message"]
    assert missing["status"] == "info" and "not available on r8169" in missing["message"]


def test_gro_is_not_asked_of_a_virtual_interface() -> None:
    found, add = _collect()
    feats = parse_features((REAL / "ethtool-k" / "sqm_eth1_all_off_fixed_requested_on_tabs_prompt.txt").read_text())
    feats["features"]["generic-receive-offload"] = False
    nic_checks.offloads(add, _rail(), NicConfig(features=feats), virtual=True)
    assert "GRO" not in found[0]["observed"]


def test_rss_spread_over_one_ring_of_several_channels() -> None:
    found, add = _collect()
    channels = parse_channels((REAL / "ethtool-l" / "sfc_onload_combined_4_of_31_hash_prompt.txt").read_text())
    rss = parse_rss((REAL / "ethtool-x" / "sfc_onload_4_rings_elided_zero_key.txt").read_text())
    nic_checks.rss(add, _rail("enp2s0f0", "sfc"), NicConfig(channels=channels, rss=rss))
    # rows elided as "...": the table seen is all ring 0, but the rest is unknown: not a fault
    assert found[0]["status"] == "pass" and "1 ring(s)+" in found[0]["message"]
    whole = dict(rss, elided=False)
    nic_checks.rss(add, _rail("enp2s0f0", "sfc"), NicConfig(channels=channels, rss=whole))
    assert found[1]["status"] == "warn" and found[1]["observed"] == "1 of 4 rings"
    assert "every flow to ring 0 of 4 channels" in found[1]["message"]


def test_aer_and_payload_sizes_on_real_outputs() -> None:
    found, add = _collect()
    aer = {kind: parse_aer((REAL / "aer" / f"kernel_doc_{name}.txt").read_text()) for kind, name in (
        ("correctable", "correctable_receiver_error_2"), ("fatal", "fatal_all_zero"), ("nonfatal", "nonfatal_all_zero"))}
    nic_checks.aer(add, _rail(), NicConfig(aer=aer))
    clean = {k: v for k, v in aer.items() if k != "correctable"}
    nic_checks.aer(add, _rail(), NicConfig(aer=clean))
    nic_checks.aer(add, _rail(), NicConfig(reasons={"aer": "no aer_dev_* counters in sysfs"}))
    assert [f["status"] for f in found] == ["warn", "pass", "info"]
    assert "Receiver Error 2" in found[0]["message"] and "not available on r8169" in found[2]["message"]
    found.clear()
    for name in ("vvv_root_port_fragment_mps128_gen1_x1", "vvv_devctl_fragment_gen5_x8_downgraded_mps256"):
        dev = device_of((REAL / "lspci" / f"{name}.txt").read_text())
        nic_checks.payload(add, _rail(), NicConfig(lspci=dev))
    assert [f["status"] for f in found] == ["warn", "pass"]
    assert "MaxPayload 128 B < 256 B" in found[0]["message"] and found[1]["observed"] == "MaxPayload 256 B, MaxReadReq 512 B"


@pytest.mark.parametrize(("gen", "width", "gbps"), [(1, 1, 2.0), (2, 16, 64.0), (3, 16, 126.03), (4, 16, 252.06),
                                                    (5, 16, 504.12), (6, 16, 968.0)])
def test_usable_bandwidth_per_generation(gen: int, width: int, gbps: float) -> None:
    """GT/s x lanes x encoding: 8b/10b (Gen1-2), 128b/130b (Gen3-5), 242/256 FLIT (Gen6)."""
    assert gen_of(gts_of(gen)) == gen
    assert round(usable_gbps(gts_of(gen), width) or 0, 2) == gbps
    assert usable_gbps(12.0, 16) is None  # no generation runs at 12 GT/s


def test_a_real_multi_queue_virtio_nic_read_by_the_real_probe(tmp_path: Path) -> None:
    facts = json.loads(VM_PROBE.read_text())
    nic = next(n for n in facts["nics"]["devices"] if n["driver"] == "virtio_net")
    cfg = read_nic(nic)
    assert cfg.channels is not None and cfg.channels["max"]["combined"] == 4
    assert cfg.channels["current"]["combined"] == 2  # virtio_net uses one queue pair per vCPU
    assert cfg.rss is not None and cfg.rss["table_size"] == 128 and cfg.rss["rings_used"] == [0, 1]
    assert cfg.rss["hash_function"] == "toeplitz" and len(cfg.rss["key"].split(":")) == 40
    queue = [i for i in cfg.irqs or [] if i.queue]
    assert sorted(i.name for i in queue) == sorted(f"virtio2-{d}.{q}" for d in ("input", "output") for q in range(4))
    assert [i.name for i in cfg.irqs or [] if not i.queue] == ["virtio2-config"]
    assert {c for i in queue for c in i.cpus} == {0, 1}
    inv = tmp_path / "vm.ini"
    inv.write_text(f"[vm]\nguest ansible_host=127.0.0.1 netdev={nic['netdev']}\n")
    host = load_inventory(inv).host("guest")
    by = {f.check: f for f in judge(host, facts, required_tools=[]) if f.rail is None or f.nic}
    assert by["irq_spread"].status == "pass" and by["irq_spread"].observed == "2 CPUs"
    assert by["rss"].status == "pass" and "RSS over 2 ring(s) (128 entries, toeplitz), 2 channel(s)" in by["rss"].message
    assert by["offloads"].status == "pass"
    # a guest has no NUMA node, no AER and no PCIe link speed: said, never passed
    assert by["irq_numa"].status == "info" and by["aer"].status == "info"
    assert "not available on virtio_net" in by["aer"].message
