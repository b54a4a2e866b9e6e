"""Fabric health judged from counters: limits in suites, the judge on real published outputs
(mlx5, bnx2x, rxe), missing counters reported as such, verdicts per rail, Prometheus export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError
from benchharness.results import health as run_health
from benchharness.results.store import RunDir
from benchharness.telemetry.counters import delta, parse_snapshot
from benchharness.telemetry.health import HealthError, judge, parse_health, split_rails

REAL = Path(__file__).parent / "fixtures" / "health" / "real"  # published ethtool -S excerpts (see its SOURCES)
RXE = Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm" / "rdma-statistic-show-link-rxe0.json"
LIMITS = {"pause_share": 0.05, "ecn_per_gb": 1000, "retrans_per_mpkt": 100, "discards_per_mpkt": 10,
          "out_of_buffer_per_mpkt": 10, "link_flaps": 0, "symbol_errors": 0, "fec_uncorrected": 0,
          "pre_fec_ber": 1e-6}


def _zeroed(snapshot: dict[str, int]) -> dict[str, int]:
    """The same counters just after the driver loaded (every counter starts at zero)."""
    return dict.fromkeys(snapshot, 0)


def _by_limit(judged: list) -> dict[str, object]:
    return {j.limit: j for j in judged}


def test_parse_health_limits_and_errors() -> None:
    got = parse_health({"pause_share": "5%", "link_flaps": 0, "pre_fec_ber": "1e-8", "status": "warn"})
    assert got == {"pause_share": 0.05, "link_flaps": 0.0, "pre_fec_ber": 1e-8, "status": "warn"}
    with pytest.raises(HealthError, match="unknown key 'pause'"):
        parse_health({"pause": 1})
    with pytest.raises(HealthError, match=r"0\.\.100%"):
        parse_health({"pause_share": 2})
    with pytest.raises(HealthError, match="at least one limit"):
        parse_health({"status": "fail"})


def test_suite_health_error_names_file_and_line(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("tests:\n  - name: t\n    tool: iperf3\n    health:\n      link_flaps: 0\n"
                     "      retrans_per_mpk: 10\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_suite(str(suite))
    assert "s.yaml:6" in str(exc.value) and "retrans_per_mpk" in str(exc.value)
    suite.write_text("tests:\n  - name: t\n    tool: iperf3\n    health: {link_flaps: 0, retrans_per_mpkt: 10}\n",
                     encoding="utf-8")
    assert load_suite(str(suite)).tests[0].health == {"link_flaps": 0.0, "retrans_per_mpkt": 10.0}


def test_shipped_acceptance_suite_has_health_defaults() -> None:
    suite = load_suite("acceptance")
    limits = {t.name: t.health for t in suite.tests}
    assert limits["rdma-write-bw"] and limits["rdma-write-bw"]["link_flaps"] == 0
    assert limits["tcp-all-pairs"] and "retrans_per_mpkt" in limits["tcp-all-pairs"]


def test_mlx5_symbol_errors_and_fec_fire_on_the_bad_one_only() -> None:
    """Real mlx5 ethtool -S: written back as the before/after command output of a step."""
    after = parse_snapshot((REAL / "mlx5_phy_symbol_crc_fec_corrected.txt").read_text(), netdev="eth2")
    bad = _by_limit(judge(delta(_zeroed(after), after)["counters"], LIMITS, seconds=60.0, speed_gbps=100.0,
                          driver="mlx5_core"))
    good = _by_limit(judge(delta(after, after)["counters"], LIMITS, seconds=60.0, speed_gbps=100.0,
                           driver="mlx5_core"))
    assert bad["symbol_errors"].status == "fail"
    assert bad["symbol_errors"].delta == 386 + 386  # rx_symbol_err_phy and rx_pcs_symbol_err_phy
    assert "rx_symbol_err_phy" in bad["symbol_errors"].message
    assert bad["pre_fec_ber"].status == "fail"
    assert bad["pre_fec_ber"].value == pytest.approx(17750739 / (2027206797 * 8))
    assert "rx_corrected_bits_phy +17750739" in bad["pre_fec_ber"].message
    # tx_pause_ctrl_phy 2 frames: frames x quanta at 100G over a minute is far below 5%
    assert bad["pause_share"].status == "pass" and "upper bound" in bad["pause_share"].message
    assert bad["link_flaps"].status == "pass"  # link_down_events_phy exposed, +0
    for limit in ("symbol_errors", "pre_fec_ber", "pause_share", "link_flaps", "discards_per_mpkt"):
        assert good[limit].status == "pass", good[limit]
    # mlx5 (this listing) has no uncorrectable-FEC counter: said, never read as zero
    assert good["fec_uncorrected"].status == "info"
    assert "not exposed by mlx5_core" in good["fec_uncorrected"].message


def test_mlx5_pcie_signal_integrity_and_stalls_fire_on_the_bad_one_only() -> None:
    """Real mlx5 ethtool -S with PCIe counters (a host with 1471 tx signal-integrity recoveries)."""
    limits = {"pcie_errors": 0, "pcie_stall_s": 0}
    after = parse_snapshot((REAL / "mlx5_pci_signal_integrity_grep.txt").read_text(), netdev="eth0")
    assert after["ethtool:eth0:tx_pci_signal_integrity"] == 1471 and "ethtool:eth0:driver" not in after
    bad = _by_limit(judge(delta(_zeroed(after), after)["counters"], limits, seconds=30.0, driver="mlx5_core"))
    assert bad["pcie_errors"].status == "fail" and bad["pcie_errors"].delta == 1472
    assert "tx_pci_signal_integrity+rx_pci_signal_integrity +1472" in bad["pcie_errors"].message
    assert bad["pcie_stall_s"].status == "pass"  # exposed, +0
    stalled = dict(after, **{"ethtool:eth0:outbound_pci_stalled_wr_events": 12})
    got = _by_limit(judge(delta(after, stalled)["counters"], limits, seconds=30.0, driver="mlx5_core"))
    assert got["pcie_stall_s"].status == "fail" and got["pcie_stall_s"].value == 12.0
    assert got["pcie_errors"].status == "pass"
    # the other published listing: 2 tx recoveries since boot, none during the step
    other = parse_snapshot((REAL / "mlx5_phy_symbol_crc_fec_corrected.txt").read_text(), netdev="eth2")
    assert _by_limit(judge(delta(other, other)["counters"], limits, seconds=30.0))["pcie_errors"].status == "pass"
    # a driver without them (bnx2x here): said, not read as zero
    bnx = parse_snapshot((REAL / "bnx2x_pause_frames_grep.txt").read_text(), netdev="eth1")
    none = _by_limit(judge(delta(bnx, bnx)["counters"], limits, seconds=30.0, driver="bnx2x"))
    assert none["pcie_errors"].status == "info" and "not exposed by bnx2x" in none["pcie_errors"].message


def test_mlx5_pause_duration_share_per_priority() -> None:
    after = parse_snapshot((REAL / "mlx5_prio3_pause_duration_grep.txt").read_text(), netdev="eth2")
    limits = {"pause_share": 0.001}
    bad = judge(delta(_zeroed(after), after)["counters"], limits, seconds=10.0, driver="mlx5_core")[0]
    # tx_prio3_pause_duration 91104 us over 10 s = 0.91% (from the driver's duration, not frames)
    assert bad.status == "fail" and bad.counter == "ethtool:eth2:tx_prio3_pause_duration"
    assert bad.value == pytest.approx(0.0091104)
    assert "pause duration (us) from the driver" in bad.message
    assert judge(delta(after, after)["counters"], limits, seconds=10.0)[0].status == "pass"


def test_link_level_pause_frames_without_duration_use_quanta() -> None:
    after = parse_snapshot((REAL / "bnx2x_pause_frames_grep.txt").read_text(), netdev="eth1")
    bad = judge(delta(_zeroed(after), after)["counters"], {"pause_share": 0.05}, seconds=3600.0,
                speed_gbps=10.0, driver="bnx2x")[0]
    assert bad.status == "fail" and bad.delta == 95331
    assert bad.value == pytest.approx(95331 * 65535 * 512 / 10e9 / 3600)
    assert "65535 quanta x 512 bit times at 10 Gbit/s" in bad.message
    unknown = judge(delta(_zeroed(after), after)["counters"], {"pause_share": 0.05}, seconds=3600.0)[0]
    assert unknown.status == "info" and "no link speed" in unknown.message


def test_rxe_counters_are_judged_and_missing_ones_said() -> None:
    """rxe's hw_counters (captured in the soft-RoCE VM) as the sampler keys them."""
    entry = json.loads(RXE.read_text())[0]
    before = {f"ib_hw:rxe0/1:{k}": v for k, v in entry.items() if k not in ("ifname", "port")}
    after = {**before, "ib_hw:rxe0/1:sent_pkts": 20000, "ib_hw:rxe0/1:rcvd_pkts": 20000,
             "ib_hw:rxe0/1:rcvd_seq_err": 30, "ib_hw:rxe0/1:completer_retry_err": 20,
             "ib_hw:rxe0/1:link_downed": 1}
    bad = _by_limit(judge(delta(before, after)["counters"], LIMITS, seconds=10.0, driver="rdma_rxe"))
    assert bad["retrans_per_mpkt"].status == "fail" and bad["retrans_per_mpkt"].delta == 50
    assert bad["retrans_per_mpkt"].value == pytest.approx(50 / 40000 * 1e6)
    assert bad["link_flaps"].status == "fail" and "link_downed" in bad["link_flaps"].message
    good = _by_limit(judge(delta(before, before)["counters"], LIMITS, seconds=10.0, driver="rdma_rxe"))
    assert good["retrans_per_mpkt"].status == "pass" and good["link_flaps"].status == "pass"
    for limit in ("pause_share", "ecn_per_gb", "symbol_errors", "fec_uncorrected", "pre_fec_ber"):
        assert good[limit].status == "info" and good[limit].value is None
        assert "not exposed by rdma_rxe" in good[limit].message


def test_host_wide_tcp_counters_go_to_the_step_rail() -> None:
    counters = {"net:eth1:rx_packets": 5, "net:eth2:rx_packets": 7, "tcp:-:RetransSegs": 3}
    objects = {"rail0": ["eth1"], "rail1": ["eth2"]}
    assert split_rails(counters, objects, ["rail1"])["rail1"] == {"net:eth2:rx_packets": 7, "tcp:-:RetransSegs": 3}
    assert split_rails(counters, objects, [])[None] == {"tcp:-:RetransSegs": 3}


def _stored_run(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.path.mkdir(parents=True)
    ctx = {"test": "bw", "seconds": 10.0, "step_rails": ["rail0", "rail1"],
           "rails": {"rail0": {"objects": ["eth1"], "netdev": "eth1", "serial": "MT0001"},
                     "rail1": {"objects": ["eth2"], "netdev": "eth2", "serial": "MT0002"}}}
    per_host = {
        "h1": {"counters": {"net:eth1:rx_packets": 10**6, "link:eth1:carrier_changes": 0,
                            "net:eth2:rx_packets": 10**6, "link:eth2:carrier_changes": 4}, "context": ctx},
        "h2": {"counters": {"net:eth1:rx_packets": 10**6, "link:eth1:carrier_changes": 0,
                            "net:eth2:rx_packets": 10**6, "link:eth2:carrier_changes": 0}, "context": ctx},
    }
    run.write_json("telemetry/counters/bw-0.json", per_host)
    run.write_run_info({"run_id": "r1", "exit_code": 1, "hosts": ["h1", "h2"],
                        "suite": {"name": "s", "tests": [{"name": "bw", "health": {"link_flaps": 0}}]}})
    return run


def test_verdicts_name_host_rail_counter_and_delta(tmp_path: Path) -> None:
    run = _stored_run(tmp_path)
    verdicts = run_health.verdicts(run_health.rows(run))
    got = {(v.host, v.rail): v for v in verdicts}
    assert {k: v.status for k, v in got.items()} == {("h1", "rail0"): "pass", ("h1", "rail1"): "fail",
                                                     ("h2", "rail0"): "pass", ("h2", "rail1"): "pass"}
    bad = got[("h1", "rail1")]
    assert bad.check == "health: link flaps" and bad.test == "bw"
    assert "h1.rail1 [rail1 eth2] (NIC sn MT0002)" in bad.message and "carrier_changes +4" in bad.message
    assert run_health.bad_endpoints(run_health.rows(run)) == {
        "h1.rail1": ["health: link flaps (carrier_changes +4 in bw-0)"]}


def test_prometheus_textfile_holds_the_verdicts(tmp_path: Path) -> None:
    from benchharness.report import prometheus

    run = _stored_run(tmp_path)
    info = run.run_info()
    info["verdicts"] = [v.__dict__ for v in run_health.verdicts(run_health.rows(run))]
    run.write_run_info(info)
    out = prometheus.write_textfile(run, tmp_path / "node" / "bench.prom")
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    status = {(s.labels["host"], s.labels["rail"], s.labels["check"]): s.value
              for s in families["bench_verdict_status"].samples}
    assert status[("h1", "rail1", "health: link flaps")] == 2  # fail
    assert status[("h2", "rail1", "health: link flaps")] == 0  # pass
    sample = next(s for s in families["bench_verdict_status"].samples if s.labels["host"] == "h1")
    assert sample.labels["suite"] == "s" and sample.labels["test"] == "bw"
    assert next(iter(families["bench_run_exit_code"].samples)).value == 1


class _Gateway:
    """A Pushgateway stand-in on loopback: records each request, answers with ``status``."""

    def __init__(self, status: int = 200) -> None:
        import http.server
        import threading

        self.requests: list[tuple[str, str, str]] = []
        gateway = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                gateway.requests.append((self.command, self.path, body))
                self.send_response(status)
                self.end_headers()

            do_POST = do_PUT

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _export_to(run: RunDir, gateway: _Gateway) -> tuple[_Gateway, subprocess.CompletedProcess[str]]:
    """``bench export RUN push=URL`` against a stand-in gateway, closed afterwards."""
    try:
        res = subprocess.run([sys.executable, "-m", "benchharness", "export", str(run.path), f"push={gateway.url}"],
                             capture_output=True, text=True, timeout=120)
    finally:
        gateway.close()
    return gateway, res


def test_bench_export_pushes_the_verdicts_to_a_pushgateway(tmp_path: Path) -> None:
    run = _stored_run(tmp_path)
    info = run.run_info()
    info["verdicts"] = [v.__dict__ for v in run_health.verdicts(run_health.rows(run))]
    run.write_run_info(info)
    gateway, res = _export_to(run, _Gateway())
    assert res.returncode == 0, res.stdout + res.stderr
    ((method, path, body),) = gateway.requests
    assert method == "PUT" and path == "/metrics/job/bench/suite/s", path
    families = {f.name: f for f in text_string_to_metric_families(body)}
    status = {(s.labels["host"], s.labels["rail"], s.labels["check"]): s.value
              for s in families["bench_verdict_status"].samples}
    assert status[("h1", "rail1", "health: link flaps")] == 2 and status[("h2", "rail1", "health: link flaps")] == 0


def test_a_gateway_that_refuses_is_one_line_and_exit_4(tmp_path: Path) -> None:
    run = _stored_run(tmp_path)
    gateway, res = _export_to(run, _Gateway(status=500))
    assert res.returncode == 4, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert f"push={gateway.url}: the Pushgateway did not take the metrics" in res.stderr


def test_tcp_retransmissions_without_tcps_segment_count_are_bounded_by_ip_packets() -> None:
    """IP packets sent bound TCP's segments from above: the rate they give is a least value, which
    fails over the limit and judges nothing under it (a grep of ``netstat -s`` without OutSegs)."""
    moved = {"tcp:-:RetransSegs": 92, "ip:-:OutRequests": 10604}
    over = _by_limit(judge(moved, {"retrans_per_mpkt": 100}, seconds=1.0, ip_packets=10604))["retrans_per_mpkt"]
    assert over.status == "fail" and over.value == pytest.approx(92 / 10604 * 1e6)
    under = _by_limit(judge({**moved, "tcp:-:RetransSegs": 1}, {"retrans_per_mpkt": 100}, seconds=1.0,
                            ip_packets=10_604_000))["retrans_per_mpkt"]
    assert under.status == "info" and under.value is None and "not judged" in under.message
    exact = _by_limit(judge(moved, {"retrans_per_mpkt": 100}, seconds=1.0, tcp_segments=10_000_000,
                            ip_packets=10604))["retrans_per_mpkt"]
    assert exact.status == "pass" and "per million TCP segments sent (10000000)" in exact.message
