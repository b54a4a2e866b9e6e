"""The run report's Power section in a real browser (Debian's chromium + chromedriver through
Selenium, offline), for a real run: `bench run` on two local hosts (iperf3 over loopback) with
host a's BMC an ipmi_sim on 127.0.0.1 (tests/bmc_emulators.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bmc_emulators import ipmi_sim
from conftest import need_programs

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PW = "ipmi-Pw-b20c55"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromedriver: apt-get install chromium chromium-driver"),
]

SUITE = """settings: {duration: 2, repeat: 1, base_port: 5585, timeout: 60, telemetry: "on", preflight: "off", power_interval: 1}
tests:
  - name: local-power
    tool: iperf3
    pattern: pairs
    params: {protocol: tcp, length: 128K, streams: 1, bitrate: 200M}
"""


@pytest.fixture
def driver() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="bench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--window-size=1280,1000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    drv.set_page_load_timeout(20)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_power_section_draws_watts_beside_throughput(driver: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmi_sim", "ipmitool", "sdrcomp", "iperf3")
    monkeypatch.setenv("BENCH_TEST_BMC_PW_A", PW)
    (tmp_path / "suite.yaml").write_text(SUITE)
    with ipmi_sim(tmp_path / "ipmi", "benchbmc", PW, 440) as bmc:
        (tmp_path / "hosts.ini").write_text(
            f"a ansible_connection=local data_ip=127.0.0.1 netdev=lo bmc_address=127.0.0.1 bmc_port={bmc.port} "
            f"bmc_user=benchbmc bmc_password_env=BENCH_TEST_BMC_PW_A bmc_cipher_suite=3\n"
            f"b ansible_connection=local data_ip=127.0.0.1 netdev=lo\n")
        res = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={tmp_path / 'suite.yaml'}",
                              f"hosts={tmp_path / 'hosts.ini'}", f"out={tmp_path / 'run'}"],
                             capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    driver.get((tmp_path / "run" / "report.html").as_uri())
    assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    charts = driver.execute_script("""
        return Array.from(document.querySelectorAll('#power svg.chart')).map(function (svg) {
          var r = svg.getBoundingClientRect();
          // a line of several readings, or the point of one (a 2 s step holds one sampler interval)
          var drawn = Array.from(svg.querySelectorAll('path.series-line, circle')).filter(function (p) {
            var b = p.getBBox(); return b.width > 0 || b.height > 0; });
          return {w: r.width, h: r.height, drawn: drawn.length, title: svg.textContent};
        });""")
    assert len(charts) == 2, charts
    assert all(c["w"] > 200 and c["h"] > 100 and c["drawn"] >= 1 for c in charts), charts
    assert "Node power per host (BMC)" in charts[0]["title"] and "NIC throughput" in charts[1]["title"]
    cells = driver.execute_script("""
        return Array.from(document.querySelectorAll('#power table.power-steps tbody tr')).map(
          function (tr) { return Array.from(tr.cells).map(function (td) { return td.textContent.trim(); }); });""")
    assert len(cells) == 1 and cells[0][2] == "a" and cells[0][3] == "440.0", cells
