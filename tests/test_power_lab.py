"""Node power from real BMC emulators during a real lab run (docs/power.md).

Three lab hosts (real sshd in namespaces, real iperf3, the real ``bench run``), each with a BMC
on 127.0.0.1: h1 OpenIPMI's ``ipmi_sim`` over IPMI 2.0 (a Watts sensor at 360 W; no DCMI, so the
sensor fallback), h2 ``sushy-static`` serving the DMTF's published rack-server mockup
(EnvironmentMetrics PowerWatts 374 W), h3 the same mockup without EnvironmentMetrics (the
deprecated Power resource, PowerConsumedWatts 344 W). Known truth: each host's readings are its
BMC's watts, and each step's energy is those watts over the step's window.

A second run gets a wrong password on h1 (ipmi_sim) and h2 (sushy-emulator with a login): one
line each naming host and BMC, a stored run without power figures that says so, and the
passwords nowhere in the run directory, the report or the output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bmc_emulators import ipmi_sim, redfish_mockup, redfish_with_login
from conftest import need_programs, run_with_host_vars

from benchharness.results.power import run_power
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "power" / "lab-power.yaml"
IPMI_PW = "ipmi-Pw-7d31c0"
REDFISH_PW = "redfish-Pw-93be42"
WRONG_PW = "wrong-Pw-5a0f11"


def _grep(password: str, *places: Path) -> list[str]:
    """Files under ``places`` that contain ``password`` (grep -r, as a person would check)."""
    res = subprocess.run(["grep", "-rl", "--", password, *map(str, places)], capture_output=True, text=True, check=False)
    return res.stdout.split()


def test_each_hosts_bmc_gives_watts_per_reading_and_energy_per_step(lab_maker, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmi_sim", "ipmitool", "sdrcomp")
    monkeypatch.setenv("BENCH_TEST_BMC_PW_H1", IPMI_PW)
    pw_file = tmp_path / "redfish.pw"
    pw_file.write_text(REDFISH_PW + "\n")
    pw_file.chmod(0o600)
    with ipmi_sim(tmp_path / "ipmi", "benchbmc", IPMI_PW, 360) as h1, \
            redfish_mockup(tmp_path / "rf2") as h2, redfish_mockup(tmp_path / "rf3", drop=("EnvironmentMetrics",)) as h3, \
            lab_maker("pw1", 3) as info:
        host_vars = {
            "h1": f"bmc_address=127.0.0.1 bmc_port={h1.port} bmc_protocol=ipmi bmc_user=benchbmc "
                  f"bmc_password_env=BENCH_TEST_BMC_PW_H1 bmc_cipher_suite=3",
            "h2": f"bmc_address=127.0.0.1 bmc_port={h2.port} bmc_protocol=redfish bmc_scheme=http "
                  f"bmc_user=admin bmc_password_file={pw_file}",
            "h3": f"bmc_address=127.0.0.1 bmc_port={h3.port} bmc_protocol=redfish bmc_scheme=http "
                  f"bmc_user=admin bmc_password_file={pw_file}"}
        out, res = run_with_host_vars(info, tmp_path, SUITE, host_vars)
    log = res.stdout + res.stderr
    assert res.returncode == 0, log
    run = RunDir(out)
    truth = {"h1": 360.0, "h2": 374.0, "h3": 344.0}
    sources = {"h1": "sdr:Pwr Consumption", "h2": "redfish:EnvironmentMetrics.PowerWatts",
               "h3": "redfish:Power.PowerControl[0].PowerConsumedWatts"}
    rows = run.samples_of_kind("power")
    steps = {s["step"]: s for s in run.steps()}
    assert {r["host"] for r in rows} == {"h1", "h2", "h3"}, log
    assert len(rows) == 6  # 3 rounds of one pair: each host in two steps
    for r in rows:
        assert r["node_power_w"] == pytest.approx(truth[r["host"]]), r
        assert r["power_source"] == sources[r["host"]]
        assert r["power_readings"] >= 2, r  # a 3 s step read every second
        assert r["node_energy_j"] == pytest.approx(truth[r["host"]] * r["power_window_s"])
        assert r["node_energy_wh"] == pytest.approx(r["node_energy_j"] / 3600)
        step = steps[r["step"]]
        assert abs(r["power_window_s"] - (step["ended"] - step["started"])) < 2.0, (r, step)
    # every reading is stored with its time, per step and host
    stored = sorted((out / "telemetry" / "power").glob("*/*.jsonl"))
    assert len(stored) == 6
    readings = [json.loads(line) for p in stored for line in p.read_text().splitlines()]
    assert all(rec["node_power_w"] == truth[rec["host"]] and rec["ts"] > 0 for rec in readings)
    bmcs = json.loads((out / "telemetry" / "power" / "bmcs.json").read_text())
    assert {h: b["status"] for h, b in bmcs.items()} == {"h1": "ok", "h2": "ok", "h3": "ok"}
    # per run: 3 steps of 3 s paced at 300 Mbit/s moved about 3 x 3 x 300e6 / 8 bytes
    figures = run_power(run)
    joules = sum(r["node_energy_j"] for r in rows)
    assert figures["tb_moved"] == pytest.approx(3 * 3 * 300e6 / 8 / 1e12, rel=0.1), figures
    assert figures["energy_per_tb_wh"] == pytest.approx(joules / 3600 / figures["tb_moved"])
    assert figures["w_per_gbps"] == pytest.approx(joules / (figures["tb_moved"] * 8e3))
    # the comparison's scorecard shows the same figures (a run compared with itself)
    comp = subprocess.run([sys.executable, "-m", "benchharness", "compare", str(out), str(out), "format=json"],
                          capture_output=True, text=True, timeout=120)
    assert comp.returncode == 0, comp.stdout + comp.stderr
    card = {r["key"]: r for r in json.loads(comp.stdout)["scorecard"]}
    assert [c["value"] for c in card["power"]["cells"]] == pytest.approx([figures["node_power_w"]] * 2)
    assert [c["value"] for c in card["energy"]["cells"]] == pytest.approx([figures["energy_per_tb_wh"]] * 2)
    report = (out / "report.html").read_text()
    assert "Node power per host (BMC)" in report and "energy per TB moved" in report
    assert not _grep(IPMI_PW, out) and not _grep(REDFISH_PW, out), "a BMC password was stored"
    assert IPMI_PW not in log and REDFISH_PW not in log


def test_a_refusing_bmc_gives_one_line_and_the_run_goes_on_without_power(lab_maker, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmi_sim", "ipmitool", "sdrcomp")
    monkeypatch.setenv("BENCH_TEST_BMC_PW_WRONG", WRONG_PW)
    with ipmi_sim(tmp_path / "ipmi", "benchbmc", IPMI_PW, 360) as h1, \
            redfish_with_login(tmp_path / "rf", "admin", REDFISH_PW) as h2, lab_maker("pw2", 3) as info:
        host_vars = {
            "h1": f"bmc_address=127.0.0.1 bmc_port={h1.port} bmc_user=benchbmc "
                  f"bmc_password_env=BENCH_TEST_BMC_PW_WRONG bmc_cipher_suite=3",
            "h2": f"bmc_address=127.0.0.1 bmc_port={h2.port} bmc_protocol=redfish bmc_scheme=http "
                  f"bmc_user=admin bmc_password_env=BENCH_TEST_BMC_PW_WRONG"}
        out, res = run_with_host_vars(info, tmp_path, SUITE, host_vars)
    log = res.stdout + res.stderr
    assert res.returncode == 0, log
    lines = [ln for ln in log.splitlines() if "power:" in ln]
    assert len([ln for ln in lines if "h1:" in ln]) == 1, lines
    assert len([ln for ln in lines if "h2:" in ln]) == 1, lines
    assert any(f"h1: ipmi BMC 127.0.0.1:{h1.port} refused the login as benchbmc" in ln for ln in lines), lines
    assert any(f"h2: redfish BMC 127.0.0.1:{h2.port} refused the login as admin (HTTP 401" in ln for ln in lines), lines
    run = RunDir(out)
    assert run.samples(), "the run stored no samples"
    assert not run.samples_of_kind("power")
    assert "refused the login" in run_power(run)["not_measured"]
    bmcs = json.loads((out / "telemetry" / "power" / "bmcs.json").read_text())
    assert {h: b["status"] for h, b in bmcs.items()} == {"h1": "unavailable", "h2": "unavailable"}
    report = (out / "report.html").read_text()
    assert "not measured" in report and "refused the login" in report
    for secret in (WRONG_PW, IPMI_PW, REDFISH_PW):
        assert not _grep(secret, out), secret
        assert secret not in log
