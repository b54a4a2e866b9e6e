"""Issue 35: every 400G NIC family as a peer.

* Network plugins accepted by name: AMD's ANP (Pollara), AWS's OFI plugin and others count as RDMA
  when their channels show GPUDirect RDMA; a fallback to sockets still fails. Real NCCL/RCCL logs
  (tests/fixtures/nic-families/SOURCES).
* Counter maps for ionic, bnxt_re / bnxt_en, irdma / ice and mlx5, tested on the counter names as
  their drivers and AMD's node-scraper publish them; a family a driver has no counter for is
  "not exposed by <driver>", never zero.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry import counter_map
from benchharness.telemetry.health import families, judge, traffic
from benchharness.tools.nccl_debug import RDMA_PLUGINS, hcas_used, parse_nccl_debug, rdma_plugin
from benchharness.tools.nccl_tests import NcclTests

FIX = Path(__file__).parent / "fixtures" / "nic-families"
REAL = Path(__file__).parent / "fixtures" / "real"
IB_GDR = {"require_network": "IB", "require_gdr": True}  # the defaults on RDMA rails


def test_every_fixture_has_a_source_line() -> None:
    listed = {line.split(" | ")[0] for line in (FIX / "SOURCES").read_text().splitlines()
              if line and not line.startswith("#")}
    assert listed == {p.name for p in FIX.iterdir() if p.name != "SOURCES"}


# ---------------------------------------------------------------- network plugins

def test_aws_ofi_plugin_with_gdrdma_channels_passes_ib_and_is_named() -> None:
    debug = parse_nccl_debug((FIX / "aws_ofi_nccl_715_gdrdma_shared.log").read_text())
    assert debug["network"] == "AWS Libfabric" and debug["gdr"] is True and debug["net_channels"] == 4
    note = NcclTests.check_transport(IB_GDR, debug)
    assert note is not None and "AWS Libfabric" in note and "aws-ofi-nccl" in note
    assert "github.com/aws/aws-ofi-nccl" in note  # cited from its documentation


def test_the_same_plugin_without_gdrdma_fails_naming_the_plugin() -> None:
    text = (FIX / "aws_ofi_nccl_715_gdrdma_shared.log").read_text().replace("/GDRDMA", "")
    debug = parse_nccl_debug(text)
    assert debug["network"] == "AWS Libfabric" and debug["gdr"] is False
    with pytest.raises(ToolFailure) as err:
        NcclTests.check_transport(IB_GDR, debug)
    assert err.value.kind == "transport_mismatch"
    assert "AWS Libfabric" in str(err.value) and "no GPUDirect RDMA" in str(err.value)


def _as_anp(text: str) -> str:
    """The real aws-ofi-nccl channel log with the network named as AMD's ANP names itself.

    NCCL prints a plugin's ``ncclNet.name`` in ``via NET/<name>/<dev>`` (transport/net.cc); ANP's
    is ``RCCL-ANP`` (github.com/ROCm/amd-anp src/net_ib.cc). No full ANP log with channel lines
    is published in the index, so the channel format is taken from a real plugin log and only the
    name changed; the name itself is checked against ANP's own source in RDMA_PLUGINS.
    """
    return text.replace("NET/AWS Libfabric/", "NET/RCCL-ANP/")


def test_rccl_through_amds_anp_plugin_with_gdrdma_passes() -> None:
    debug = parse_nccl_debug(_as_anp((FIX / "aws_ofi_nccl_715_gdrdma_shared.log").read_text()))
    assert debug["network"] == "RCCL-ANP" and debug["gdr"] is True
    note = NcclTests.check_transport(IB_GDR, debug)
    assert note is not None and "Pensando Pollara" in note and "github.com/ROCm/amd-anp" in note
    assert NcclTests.check_transport({"require_network": "anp", "require_gdr": True}, debug) is not None


def test_anp_falling_back_to_sockets_fails() -> None:
    """A real RCCL/NCCL log that fell back to sockets fails require_network: IB, plugin or not."""
    debug = parse_nccl_debug((REAL / "nccl-debug" / "socket_no_libibverbs_2.25_prompt_squashed_header.log").read_text())
    assert debug["network"] == "Socket" and rdma_plugin(debug["network"]) is None
    with pytest.raises(ToolFailure, match=r"NCCL used Socket.*suite requires IB"):
        NcclTests.check_transport(IB_GDR, debug)


def test_rccl_on_ionic_through_its_builtin_ib_transport_passes_and_opens_all_eight() -> None:
    text = (FIX / "rccl_pr2078_ionic_builtin_ib.log").read_text()
    debug = parse_nccl_debug(text)
    assert debug["network"] == "IB"
    assert [d["name"] for d in debug["devices"]] == [f"ionic_{i}" for i in range(8)]
    assert {d["link"] for d in debug["devices"]} == {"RoCE"}
    assert NcclTests.check_transport({"require_network": "IB"}, debug) is None
    opened, _ = hcas_used(text)
    assert opened == [f"ionic_{i}:1" for i in range(8)]
    NcclTests.check_hcas("=" + ",".join(f"ionic_{i}:1" for i in range(8)), text)
    with pytest.raises(ToolFailure, match="did not open ionic_8:1"):
        NcclTests.check_hcas("=ionic_0:1,ionic_8:1", text)


def test_googles_gib_plugin_with_gdrdma_passes() -> None:
    debug = parse_nccl_debug((REAL / "nccl-debug" / "gib_gdr_enabled_ray_prefix_cite_marks.log").read_text())
    assert debug["network"] == "gIB" and debug["gdr"] is True
    note = NcclTests.check_transport(IB_GDR, debug)
    assert note is not None and "gIB" in note and "github.com/google/dranet" in note


def test_plugin_names_match_how_nccl_logs_them() -> None:
    assert rdma_plugin("RCCL-ANP") is not None and rdma_plugin("rccl-anp") is not None
    assert rdma_plugin("AWS Libfabric") and rdma_plugin("Libfabric") and rdma_plugin("gIB")
    assert rdma_plugin("Socket") is None and rdma_plugin("IB") is None and rdma_plugin(None) is None
    assert all(doc for _, doc in RDMA_PLUGINS.values())


# ---------------------------------------------------------------- counter maps

def _model_fields(text: str, cls: str) -> list[str]:
    """The ``name: Optional[int]`` fields of one pydantic model class of node-scraper's source."""
    block = text.split(f"class {cls}(BaseModel):", 1)[1].split("\nclass ", 1)[0]
    return re.findall(r"^    (\w+): Optional\[int\]", block, re.M)


def _counters(names: list[str], obj: str, value: int = 0) -> dict[str, int]:
    return {f"x:{obj}:{n}": value for n in names}


def test_ionic_rdma_statistic_families_from_amds_published_counters() -> None:
    stats = json.loads((FIX / "rdma_statistic_j_ionic8_mlx5_4.json").read_text())
    ionic = [s for s in stats if s["ifname"].startswith("ionic_")]
    assert len(ionic) == 8
    names = [k for k in ionic[0] if k not in ("ifname", "port")]
    fam = families(_counters(names, "ionic_0/1"))
    assert fam["ecn"] == 0 and fam["retrans"] == 0 and fam["discards"] == 0 and fam["out_of_buffer"] == 0
    for absent in ("pcie_errors", "pcie_stall_s", "symbol_errors", "fec_uncorrected"):
        assert fam[absent] is None  # not exposed by ionic: absent, never zero
    assert traffic(_counters(names, "ionic_0/1", 7))[2] == "ionic RDMA counters"
    # the same names from AMD's model of them
    model = _model_fields((FIX / "node_scraper_rdmadata.py.txt").read_text(), "PollaraRdmaStatistics")
    assert set(names) == set(model)


def test_ionic_ethtool_pause_time_per_priority_is_judged_in_microseconds() -> None:
    names = _model_fields((FIX / "node_scraper_ethtool_vendor.py.txt").read_text(), "PollaraEthtoolStatistics")
    assert "rx_pripause_3_1us_count" in names and "frames_rx_pripause" in names
    assert counter_map.pause_slot("rx_pripause_3_1us_count") == ("pause_us", "rx", "3")
    assert counter_map.pause_slot("rx_pause_1us_count") == ("pause_us", "rx", "link")
    assert counter_map.pause_slot("frames_tx_pripause") == ("pause_frames", "tx", "all")
    counters = _counters(names, "benic1p1")
    counters["x:benic1p1:rx_pripause_3_1us_count"] = 250_000  # 0.25 s paused on priority 3
    counters["x:benic1p1:frames_rx_pripause"] = 10**9  # would be an absurd upper bound: ignored
    fam = families(counters)
    assert fam["pause_us"] == 250_000 and fam["pause_frames"] == 10**9
    [j] = judge(counters, {"pause_share": 0.05}, seconds=10.0, speed_gbps=400, driver="ionic")
    assert j.status == "pass" and j.value == pytest.approx(0.025) and str(j.counter).endswith(":rx_pripause_3_1us_count")
    [j] = judge(counters, {"pause_share": 0.01}, seconds=10.0, speed_gbps=400, driver="ionic")
    assert j.status == "fail"
    [j] = judge(counters, {"pcie_stall_s": 0}, seconds=10.0, driver="ionic")
    assert j.status == "info" and "not exposed by ionic" in j.message


def test_bnxt_re_thor2_congestion_and_pause_counters() -> None:
    upstream = re.findall(r'= "(\w+)"', (FIX / "bnxt_re_hw_counters_c_descs_cnp.txt").read_text())
    assert {"tx_cnp_pkts", "rx_cnp_pkts", "rx_ecn_marked_pkts", "rx_out_of_buffer"} <= set(upstream)
    thor2 = _model_fields((FIX / "node_scraper_rdmadata.py.txt").read_text(), "Thor2RdmaStatistics")
    eth = _model_fields((FIX / "node_scraper_ethtool_vendor.py.txt").read_text(), "Thor2EthtoolStatistics")
    counters = {**_counters(upstream, "bnxt_re0/1"), **_counters(thor2, "bnxt_re0/1"), **_counters(eth, "ens21np0")}
    counters["x:bnxt_re0/1:rx_cnp_pkts"] = 3000
    counters["x:bnxt_re0/1:rx_bytes"] = 10**9  # 1 GB through the rail
    fam = families(counters)
    assert fam["ecn"] == 3000 and fam["out_of_buffer"] == 0 and fam["discards"] == 0 and fam["retrans"] == 0
    assert fam["pause_frames"] == 0 and fam["pause_us"] is None  # frames only on bnxt_en
    [j] = judge(counters, {"ecn_per_gb": 2000}, seconds=1.0, driver="bnxt_re")
    assert j.status == "fail" and j.value == pytest.approx(3000)
    [j] = judge(counters, {"pcie_errors": 0}, seconds=1.0, driver="bnxt_re")
    assert j.status == "info" and j.message.startswith("no PCIe signal-integrity counters: not exposed by bnxt_re")


def test_irdma_and_ice_counters() -> None:
    names = re.findall(r'"(\w+)"', (FIX / "irdma_verbs_c_hw_stat_descs_32bit.txt").read_text())
    assert {"cnpHandled", "cnpSent", "tcpRetransSegs", "ip4InDiscards"} <= set(names)
    from benchharness.telemetry.parsers.ethtool import parse_stats

    ice = parse_stats((REAL / "ethtool-S" / "ice_e810_header_indented.txt").read_text())
    stats = ice["counters"]
    counters = {**_counters(names, "irdma0/1"),
                **{f"ethtool:eth0:{k}": int(v) for k, v in stats.items() if isinstance(v, int)}}
    fam = families(counters)
    assert fam["ecn"] == 0 and fam["retrans"] == 0 and fam["discards"] is not None
    assert fam["pause_frames"] is not None and fam["pause_us"] is None
    [j] = judge(counters, {"pcie_stall_s": 0}, seconds=1.0, driver="irdma")
    assert "not exposed by irdma" in j.message


def test_mlx5_names_from_the_same_published_source_still_map() -> None:
    model = _model_fields((FIX / "node_scraper_rdmadata.py.txt").read_text(), "Cx7RdmaStatistics")
    fam = families(_counters(model, "mlx5_0/1"))
    assert fam["ecn"] == 0 and fam["retrans"] == 0 and fam["out_of_buffer"] == 0


def test_every_mapped_name_has_a_source() -> None:
    assert all(n.source in counter_map.SOURCES for n in counter_map.NAMES)
    assert counter_map.source_of("rx_rdma_cnp_pkts") and "node-scraper" in str(counter_map.source_of("rx_rdma_cnp_pkts"))
    assert counter_map.source_of("no_such_counter") is None
