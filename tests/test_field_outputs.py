"""Outputs as the field prints them, read by ``bench parse`` and judged by ``bench health``.

Real published outputs: tests/fixtures/real (SOURCES there; the figures read by hand are checked by
tests/test_real_outputs.py) and tests/fixtures/health/real (SOURCES there). Here: what is read across
forms (one counter name whatever printed it), the exit codes, the parser list and the pasted-snapshot
judge."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchharness.cli.parsers import describe, get_parser, is_empty, registry, undeclared
from benchharness.core.errors import ToolFailure
from benchharness.telemetry.counters import parse_snapshot
from benchharness.telemetry.health import judge
from benchharness.telemetry.pasted_health import judge_pasted, read_snapshot

REAL = Path(__file__).parent / "fixtures" / "real"
HEALTH = Path(__file__).parent / "fixtures" / "health" / "real"
MLNX = HEALTH / "rdma_statistic_mlnx_ofed_4_links.txt"


def bench(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          input=stdin, timeout=120, env=dict(os.environ))


def test_every_parser_is_listed_with_what_it_reads() -> None:
    res = bench("parse", "--list")
    assert res.returncode == 0, res.stderr
    names = {line.split()[0] for line in res.stdout.splitlines()}
    assert names == set(registry())
    for name in ("rdma-statistic", "perfquery", "netstat", "nstat", "counters-snapshot", "mlxlink"):
        assert name in names
    assert "iproute2" in describe()["rdma-statistic"] and "net-tools" in describe()["netstat"]
    assert "perftest 4.5+" in describe()["perftest"]
    # each says what it reads (a READS line or an adapter's reads), never its docstring's first line
    assert undeclared() == []
    assert all(describe()[name] for name in registry())


def test_a_terminal_wrapped_rdma_statistic_reads_as_the_unwrapped_one() -> None:
    """The MLNX_OFED listing (one long line per port) hard-wrapped at 80 columns, mid-word and
    mid-number, as a terminal copy gives it: the same counters."""
    text = MLNX.read_text()
    wrapped = "\n".join(piece for line in text.splitlines()
                        for piece in textwrap.wrap(line, 80, break_long_words=True, break_on_hyphens=False,
                                                   drop_whitespace=False) or [""])
    wrapped = "\n".join(line.rstrip() for line in wrapped.splitlines())
    assert any(not line.endswith(" ") and len(line) == 80 for line in wrapped.splitlines())
    rdma = get_parser("rdma-statistic")
    assert rdma(wrapped) == rdma(text)
    assert rdma(text)["ib_hw:mlx5_0/1:resp_cqe_error"] == 1009 and len(rdma(text)) == 4 * 29


def test_one_counter_name_whatever_printed_it() -> None:
    """rdma statistic, a hw_counters listing and the sampler's snapshot name a counter alike; perfquery
    uses the sysfs names; netstat and nstat the sampler's ``tcp:-:``."""
    snap = parse_snapshot(MLNX.read_text())
    assert snap == get_parser("rdma-statistic")(MLNX.read_text())
    pq = parse_snapshot((HEALTH / "perfquery_C_mlx5_0_hdr_port0.txt").read_text())
    assert pq["ib:lid1/0:port_rcv_switch_relay_errors"] == 6 and pq["ib:lid1/0:port_xmit_data"] == 50334712
    ns = parse_snapshot((REAL / "netstat" / "net_tools_2_10_st_tcp_tcpext.txt").read_text())
    assert ns["tcp:-:RetransSegs"] == 1402 and ns["tcp:-:OutSegs"] == 14178140
    old = parse_snapshot((REAL / "netstat" / "net_tools_old_spellings_blank_lines.txt").read_text())
    assert old["tcp:-:RetransSegs"] == 191055808 and old["tcp:-:OutSegs"] == 2816244857
    # show_counters (mlnx-tools): "Port 1 hw counters:" then name: value lines
    show = parse_snapshot((HEALTH / "show_counters_mlx5_bond_0_hw.txt").read_text())
    assert show["ib_hw:-/1:out_of_sequence"] == 1811101 and show["ib_hw:-/1:np_cnp_sent"] == 1052612505
    # the ethtool -S readers are unchanged: an unindented mlx5 listing stays ethtool's
    eth = parse_snapshot((REAL / "ethtool-S" / "mlx5_core_cx4lx_unindented_no_header.txt").read_text())
    assert eth and all(k.startswith("ethtool:") for k in eth)


def test_health_reads_the_counters_as_named() -> None:
    """A judge over the parsed names: perfquery's switch-relay errors are not symbol errors, its data
    counters are IB traffic; netstat's retransmissions are TCP's."""
    pq = parse_snapshot((HEALTH / "perfquery_C_mlx5_0_hdr_port0.txt").read_text())
    verdicts = {j.limit: j for j in judge(pq, {"symbol_errors": 0, "link_flaps": 0, "discards_per_mpkt": 10},
                                          seconds=60)}
    assert verdicts["symbol_errors"].status == "pass" and verdicts["symbol_errors"].counter == "symbol_error"
    assert verdicts["link_flaps"].counter == "link_downed"
    assert verdicts["discards_per_mpkt"].counter == "port_xmit_discards"


@pytest.mark.parametrize("text, quote", [
    ("link mlx5_0/1 rx_write_requests 0 out_of_sequence\n", "line 1: counter 'out_of_sequence'"),
    ("# Port counters: Lid 3 port 1 (CapMask: 0x5300)\nPortSelect:......................1\n",
     "line 1: a perfquery header"),
])
def test_an_output_recognised_but_unreadable_names_the_line(text: str, quote: str) -> None:
    parser = "rdma-statistic" if text.startswith("link") else "perfquery"
    with pytest.raises(ToolFailure) as info:
        get_parser(parser)(text)
    assert info.value.kind == "unreadable" and quote in info.value.message
    res = bench("parse", parser, "-", stdin=text)
    assert res.returncode == 3 and quote in res.stderr and "\n" not in res.stderr.strip()


def test_an_empty_result_is_never_exit_0_unless_the_input_was_empty() -> None:
    assert is_empty({"ports": []}) and is_empty([]) and not is_empty({"a": 0}) and not is_empty([{}])
    prose = "This is supplementary part of accepted to rdma-next kernel series\n"
    for parser in ("rdma-statistic", "perfquery", "netstat", "counters-snapshot", "ibstat"):
        res = bench("parse", parser, "-", stdin=prose)
        assert res.returncode == 3 and "nothing read" in res.stderr, (parser, res.stderr)
        assert bench("parse", parser, "-", stdin="").returncode == 0
    # a counters listing of a known shape without counters says so
    res = bench("parse", "counters-snapshot", "-", stdin="NIC statistics:\n")
    assert res.returncode == 3 and "line 1: a counters listing without any counter" in res.stderr


def test_pasted_snapshots_are_judged_per_object(tmp_path: Path) -> None:
    """The hw_counters of mlx5_0 and the ethtool counters of a port in one paste: judged apart, host
    TCP with the one object there is; a counter absent is never zero."""
    before = parse_snapshot((HEALTH / "rdma_statistic_mlnx_ofed_4_links.txt").read_text())
    after = dict(before, **{"ib_hw:mlx5_0/1:out_of_sequence": 5000})
    verdicts = judge_pasted(before, after, seconds=60, limits={"retrans_per_mpkt": 100, "pause_share": 0.05})
    by = {(v.obj, v.judged.limit): v.judged for v in verdicts}
    assert by[("mlx5_0/1", "retrans_per_mpkt")].status == "fail"
    assert "out_of_sequence +5000" in by[("mlx5_0/1", "retrans_per_mpkt")].message
    assert by[("mlx5_1/1", "retrans_per_mpkt")].status == "pass"
    assert by[("mlx5_0/1", "pause_share")].status == "info"
    with pytest.raises(ToolFailure, match="no counters read"):
        read_snapshot("hello\n", "a.txt")


def test_bench_health_exit_codes(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_text(MLNX.read_text())
    res = bench("health", str(a), str(a), "seconds=60")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "PASS  mlx5_0/1" in res.stdout and "INFO  mlx5_0/1     pause share: no pause counters" in res.stdout
    res = bench("health", str(a), str(REAL / "perfquery" / "extended_x_rhel75_prompt.txt"), "seconds=60")
    assert res.returncode == 3 and "share no counter" in res.stderr
    assert bench("health", str(a), str(a)).returncode == 2
    assert bench("health", str(a), str(a), "seconds=60", "pause_share=500%").returncode == 2


NCCL_JSON = REAL / "nccl-tests-json" / "all_reduce_1gpu_4090_per_iter_v4.json"


def test_a_killed_nccl_tests_json_keeps_its_complete_rows() -> None:
    """The real -J document cut where a killed run stops writing: inside the results list after some
    rows (the repository's 3-row 2.17 document), after the list, and inside the first row."""
    parse = get_parser("nccl-tests-json")
    text = (Path(__file__).parent / "fixtures" / "nccl" / "nccl-tests-2.17-reduce.json").read_text()
    whole = [r for r in parse(text) if r["kind"] == "summary"]
    first = text.index('{"size":', text.index('"results"'))
    third = text.index('{"size":', text.index('{"size":', first + 1) + 1)
    for cut in (third + 40, third + 1, third - 1):
        rows = parse(text[:cut])
        kept = [r for r in rows if r["kind"] == "summary"]
        assert len(kept) == 4 and all(r["truncated"] for r in kept)
        assert [r["busbw_GBps"] for r in kept] == [r["busbw_GBps"] for r in whole[:4]]
        footer = rows[-1]
        assert footer["kind"] == "footer" and footer["truncated"] and footer["cut_at"].startswith("line 1, column ")
        assert footer["nranks"] == 4  # the head (config, devices) was whole
    real = NCCL_JSON.read_text()
    after = real.index('"out_of_bounds"') + 5
    rows = parse(real[:after])
    assert len([r for r in rows if r["kind"] == "summary"]) == 2 and rows[-1]["truncated"]
    line = real[:after].count("\n") + 1
    assert rows[-1]["cut_at"].startswith(f"line {line}, ")
    with pytest.raises(ToolFailure, match=r"cut at line \d+, column \d+, before any complete result row"):
        parse(real[:real.index('"results"') + 40])
    assert not any("truncated" in r for r in parse(real))


def test_mlxlink_refusals_per_lane_pages_and_device_loops() -> None:
    """mlxlink's "not supported" answer is kept as such; a grep excerpt of 8 ports' BER pages keeps
    each port's per-lane errors (tests/fixtures/health/real, SOURCES there)."""
    mlxlink = get_parser("mlxlink")
    refused = mlxlink((HEALTH / "mlxlink_show_ber_monitor_not_supported_loop.txt").read_text())["devices"]
    assert [d["device"] for d in refused] == ["mt4123_pciconf0", "mt4123_pciconf1"]
    for dev in refused:
        assert dev["not_supported"] == ["--show_ber_monitor"] and "counters" not in dev
        assert dev["state"] == "Active" and dev["speed_gbps"] == 100 and dev["firmware"] == "20.36.1010"
    pages = mlxlink((HEALTH / "mlxlink_show_counters_grep_8_hdr_ports.txt").read_text())["devices"]
    assert len(pages) == 8 and pages[3]["lanes"]["raw_physical_errors_per_lane"] == [32379149, 224947]
    assert pages[3]["counters"]["raw_physical_ber"] == "1E-7" and pages[3]["counters"]["effective_physical_errors"] == 0
    assert pages[5]["lanes"]["raw_physical_errors_per_lane"] == [4014318, 15682171]
    assert all(p["fec"] == "RS-FEC - (544,514) + PLR" for p in pages)


def test_dcgmi_dmon_row_that_does_not_fit_its_header_names_the_line() -> None:
    text = (REAL / "dcgmi" / "dmon_prof_fields_8gpu_na_cut.txt").read_text()
    cut = text.rstrip("\n").rsplit("  ", 3)[0] + "\n"  # the last row loses its last values (a killed dmon)
    with pytest.raises(ToolFailure, match=r"line 13: 7 values under the 8 fields of line 2"):
        get_parser("dcgmi")(cut)
    with pytest.raises(ToolFailure, match="line 1: a dcgmi dmon header without any entity row"):
        get_parser("dcgmi")("#Entity   POWER  TMPTR\nID\n")


def test_rocm_smi_by_its_own_name_reads_each_section() -> None:
    rocm = get_parser("rocm-smi")
    mi210 = rocm((HEALTH / "rocm_smi_mi210_product_memory_temp_power.txt").read_text())
    assert mi210["temperatures"] == [{"gpu": 0, "sensor": "junction", "temperature_c": 35.0}]
    assert mi210["power"] == [{"gpu": 0, "reading": "average_graphics_package_power", "power_w": 42.0}]
    assert "topology" not in mi210
    topo = rocm((REAL / "rocm-smi-topo" / "showtoponuma_8gpu_two_nodes_tabs_prompt.txt").read_text())
    assert topo["topology"]["numa"] and "power" not in topo and "temperatures" not in topo
    temps = rocm((REAL / "rocm-smi-temp" / "mi300a_junction_memory_no_gpu_prefix.txt").read_text())
    assert [t["sensor"] for t in temps["temperatures"]] == ["junction", "memory"]


def test_ibv_devinfo_grep_excerpt_keeps_each_ports_width_speed_and_rate() -> None:
    """``ibv_devinfo -v | grep`` kept the port lines but not ``port: 1``: the port is still a port,
    with its width x speed (4 x 25 = 100 Gb/s, the Rate ibstat printed on that host)."""
    devices = get_parser("ibv_devinfo")((HEALTH / "ibv_devinfo_v_grep_bf3_port_down_link_up.txt").read_text())
    assert [d["device"] for d in devices] == ["mlx5_0", "mlx5_1"]
    for dev in devices:
        (port,) = dev["ports"]
        assert port["state"] == "PORT_DOWN" and port["phys_state"] == "LINK_UP"
        assert port["active_width"] == 4 and port["active_speed_gbps"] == 25.0 and port["rate_gbps"] == 100.0
        assert dev["fw_ver"] == "32.47.1088" and "state" not in dev


def test_a_counters_directory_listed_the_ways_people_list_it() -> None:
    """``head``/``tail`` of the files (``==> name <==``), ``paste`` / ``printf`` name-blank-value
    rows, ``grep . *`` after a ``cd`` that names the directory, and the device's own sysfs path:
    the same counter names as a run's snapshot, with the device and port the text names."""
    heads = "==> /sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence <==\n9\n\n" \
            "==> local_ack_timeout_err <==\n7\n"
    # the one directory the text names is the home of the rows listed without it
    assert parse_snapshot(heads) == {"ib_hw:mlx5_0/1:out_of_sequence": 9, "ib_hw:mlx5_0/1:local_ack_timeout_err": 7}
    blank = "out_of_buffer\t0\nout_of_sequence   4\nrnr_nak_retry_err 1\n"
    assert parse_snapshot(blank) == {"ib_hw:-/-:out_of_buffer": 0, "ib_hw:-/-:out_of_sequence": 4,
                                     "ib_hw:-/-:rnr_nak_retry_err": 1}
    assert parse_snapshot("alpha 1\nbeta 2\n") == {}  # unknown names and no directory: not counters
    port_dir = "$ cd /sys/class/infiniband/mlx5_2/ports/1/counters\n$ grep . *\nlink_downed:1\nsymbol_error:0\n"
    assert parse_snapshot(port_dir) == {"ib:mlx5_2/1:link_downed": 1, "ib:mlx5_2/1:symbol_error": 0}
    by_device = "/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_3/ports/1/hw_counters/" \
                "np_cnp_sent:42\n"
    assert parse_snapshot(by_device) == {"ib_hw:mlx5_3/1:np_cnp_sent": 42}
    with pytest.raises(ToolFailure, match="N/A"):  # every counter unreadable: said so, never zeros
        parse_snapshot("/sys/devices/pci0000:05/0000:05:02.0/infiniband/i40iw0/ports/1/counters/"
                       "link_downed:N/A (no PMA)\n")


def test_several_ports_pasted_one_after_another_stay_apart() -> None:
    """``ethtool -S`` of two ports in one paste, each under its command line: each port keeps its
    own counters (the second no longer overwrites the first), and a pair judged by ``bench health``
    names the port whose pause counter grew; a paste without the command line meets the named one."""
    def ports(rx0: int, rx1: int) -> str:
        return (f"# ethtool -S ens1f0np0 | grep -E 'pause|discard'\n     rx_discards_phy: 12\n"
                f"     rx_pause_ctrl_phy: {rx0}\n# ethtool -S ens1f1np1 | grep -E 'pause|discard'\n"
                f"     rx_discards_phy: 0\n     rx_pause_ctrl_phy: {rx1}\n")
    snap = parse_snapshot(ports(1000, 7))
    assert snap["ethtool:ens1f0np0:rx_pause_ctrl_phy"] == 1000 and snap["ethtool:ens1f1np1:rx_pause_ctrl_phy"] == 7
    stats = get_parser("ethtool-S")(ports(1000, 7))["netdevs"]
    assert stats["ens1f0np0"]["counters"]["rx_pause_ctrl_phy"] == 1000
    assert stats["ens1f1np1"]["highlights"]["global_pause"]["rx"] == 7
    # 3 M pause frames in 10 s at 400 Gbit/s: up to 25 s of pause asked for, over the 5 % share
    verdicts = judge_pasted(snap, parse_snapshot(ports(1000, 7 + 3_000_000)), seconds=10,
                            limits={"pause_share": 0.05}, speed_gbps=400)
    failed = [v for v in verdicts if v.judged.status == "fail"]
    assert [(v.obj, v.judged.counter) for v in failed] == [("ens1f1np1", "ethtool:ens1f1np1:rx_pause_ctrl_phy")], \
        verdicts
    unnamed = "     rx_pause_ctrl_phy: 100\n"
    named = "$ sudo ethtool -S eth4\n     rx_pause_ctrl_phy: 5000100\n"
    assert [v.obj for v in judge_pasted(parse_snapshot(unnamed), parse_snapshot(named), seconds=10,
                                        limits={"pause_share": 0.05}, speed_gbps=400)] == ["eth4"]


def test_one_paste_holding_both_snapshots_splits_where_they_repeat() -> None:
    from benchharness.telemetry.pasted_health import pasted_seconds, read_pair

    paste = ("$ ethtool -S eth4 | grep -E 'pause_ctrl|discards_phy'\n     rx_pause_ctrl_phy: 100\n"
             "     rx_discards_phy: 1\n$ sleep 10; ethtool -S eth4 | grep -E 'pause_ctrl|discards_phy'\n"
             "     rx_pause_ctrl_phy: 5000100\n     rx_discards_phy: 1\n")
    before, after = read_pair(paste, "paste.txt")
    assert before == {"ethtool:eth4:rx_pause_ctrl_phy": 100, "ethtool:eth4:rx_discards_phy": 1}
    assert after["ethtool:eth4:rx_pause_ctrl_phy"] == 5000100 and pasted_seconds(paste) == 10
    verdicts = judge_pasted(before, after, seconds=10, limits={"pause_share": 0.05}, speed_gbps=400)
    assert [(v.obj, v.judged.status) for v in verdicts] == [("eth4", "fail")]
