"""The preflight GID check on real ``show_gids`` tables (tests/fixtures/real/show_gids, SOURCES
there), written back into the sysfs tree they were read from and probed as a host would be."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchharness.core.model import Host, Rail
from benchharness.telemetry.parsers.show_gids import parse_show_gids
from benchharness.telemetry.preflight import run_checks

REAL = Path(__file__).parent / "fixtures" / "real" / "show_gids"
PROBE = Path(__file__).parent.parent / "benchharness" / "onhost" / "probe.py"
TYPES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}


def _probe() -> object:
    spec = importlib.util.spec_from_file_location("bench_probe_gids", PROBE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sysfs_from_show_gids(root: Path, text: str) -> list[dict]:
    """The /sys/class/infiniband files show_gids reads, from its own output."""
    rows = parse_show_gids(text)
    for r in rows:
        port = root / "sys/class/infiniband" / r["device"] / "ports" / str(r["port"])
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True, exist_ok=True)
        (port / "gids" / str(r["index"])).write_text(r["gid"] + "\n")
        (port / "gid_attrs/types" / str(r["index"])).write_text(TYPES[r["version"]] + "\n")
        (port / "gid_attrs/ndevs" / str(r["index"])).write_text(r["netdev"] + "\n")
        (port / "state").write_text("4: ACTIVE\n")
        (port / "phys_state").write_text("5: LinkUp\n")
        (port / "link_layer").write_text("Ethernet\n")
        (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    return rows


@pytest.mark.parametrize(("gid_index", "status", "words"), [
    (5, "pass", "RoCE v2, 0000:0000:0000:0000:0000:ffff:0a0c:0015"),
    (4, "fail", "IB/RoCE v1 0000:0000:0000:0000:0000:ffff:0a0c:0015; use gid_index=5"),
    (7, "fail", "RoCE v2 fe80:0000:0000:0000:9cbb:b7ff:feb3:937a; use gid_index=5"),
    (0, "fail", "no such entry; use gid_index=5"),
])
def test_gid_check_on_a_real_table(tmp_path: Path, gid_index: int, status: str, words: str) -> None:
    text = (REAL / "roce_v1_v2_ipv4_and_link_local_spaces.txt").read_text()
    rows = sysfs_from_show_gids(tmp_path, text)
    assert {r["ipv4"] for r in rows} == {"10.12.0.21", None}
    facts = _probe().Probe(root=str(tmp_path), commands=False).collect()  # type: ignore[attr-defined]
    host = Host("gpu-a", "10.0.0.1", rails=(Rail(0, netdev="net1", rdma_dev="mlx5_0", data_ip="10.12.0.21",
                                                 gid_index=gid_index),))
    (verdict,) = [v for v in run_checks({"gpu-a": facts}, [host], required_tools=[])
                  if v.check == "preflight.gid_index"]
    assert verdict.status == status and words in verdict.message, verdict.message


def test_a_rail_address_no_gid_carries_is_named(tmp_path: Path) -> None:
    sysfs_from_show_gids(tmp_path, (REAL / "roce_v1_v2_ipv4_and_link_local_spaces.txt").read_text())
    facts = _probe().Probe(root=str(tmp_path), commands=False).collect()  # type: ignore[attr-defined]
    host = Host("gpu-a", "10.0.0.1", rails=(Rail(0, netdev="net1", rdma_dev="mlx5_0", data_ip="10.12.0.99",
                                                 gid_index=5),))
    (verdict,) = [v for v in run_checks({"gpu-a": facts}, [host], required_tools=[])
                  if v.check == "preflight.gid_index"]
    assert verdict.status == "fail" and "no RoCE v2 GID carries 10.12.0.99" in verdict.message
