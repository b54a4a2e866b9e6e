"""A three-run comparison in a real browser (Debian's chromium + chromedriver through Selenium,
offline), from three real lab runs: 3 hosts each (real sshd in namespaces), links shaped 2, 1 and
0.5 Gbit/s, iperf3 between every pair and the MPI CPU all-reduce on 2 then 3 hosts, h1's BMC an
OpenIPMI ``ipmi_sim`` reading 360, 380 and 400 W, the third run with MTU 1400 on every host.

The page shows the scorecard (the fastest link best for bandwidth), the parity table (naming the
MTU), the scaling chart (a line per run over 2 and 3 hosts) and the power chart (each run's BMC
watts). Each is screenshotted; with ``BENCH_SCREENSHOT_DIR`` set the PNGs are written there too
(docs/compare-*.png came from ``BENCH_SCREENSHOT_DIR=docs``)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bmc_emulators import ipmi_sim
from conftest import need_programs, run_with_host_vars
from test_power_browser import CHROMEDRIVER, CHROMIUM, driver  # noqa: F401  (the fixture)

pytestmark = [
    pytest.mark.lab,
    pytest.mark.browser,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromedriver: apt-get install chromium chromium-driver"),
]

PW = "ipmi-Pw-4e90d2"
SUITE = """description: three-run comparison in the browser (tests/test_compare_browser.py)
settings: {duration: 2, repeat: 2, base_port: 5631, timeout: 120, telemetry: "on", preflight: "off", power_interval: 1}
tests:
  - name: tcp-bw
    tool: iperf3
    pattern: all-pairs
    params: {protocol: tcp, length: 1M, streams: 1}
  - name: allreduce-scaling
    tool: collective
    pattern: scaling
    params: {op: all_reduce, minbytes: 64K, maxbytes: 4M, cpu_maxbytes: 4M, stepfactor: 4, iters: 5, warmup: 1}
"""
RUNS = (("2gbit", 360, None, 1500), ("1gbit", 380, None, 1200), ("500mbit", 400, "1400", 900))
MAX_PNG = 300_000


def _runs(lab_maker: Any, tmp_path: Path) -> list[Path]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    out = []
    for rate, watts, mtu, price in RUNS:
        with ipmi_sim(tmp_path / f"ipmi-{rate}", "benchbmc", PW, watts) as bmc, \
                lab_maker(f"cb{rate[:2]}", 3, shape={h: rate for h in ("h1", "h2", "h3")}) as info:
            if mtu:
                for host in info.hosts:
                    subprocess.run(["ip", "netns", "exec", host.netns, "ip", "link", "set", "dev", "eth0", "mtu", mtu],
                                   check=True, timeout=30)
            nic = f"nic_price_usd={price} nic_power_w=25 optic_price_usd=700 optic_power_w=12"
            host_vars = {"h1": f"bmc_address=127.0.0.1 bmc_port={bmc.port} bmc_user=benchbmc "
                               f"bmc_password_env=BENCH_TEST_BMC_PW_CB bmc_cipher_suite=3 {nic}",
                         "h2": nic, "h3": nic}
            (tmp_path / rate).mkdir()
            run, res = run_with_host_vars(info, tmp_path / rate, suite, host_vars, timeout=420, args=(f"label={rate}",))
        assert res.returncode == 0, res.stdout + res.stderr
        out.append(run)
    return out


def _shot(drv: Any, selector: str, name: str, tmp_path: Path) -> Path:
    """The element's PNG at 3/4 scale (Chromium's Page.captureScreenshot over its box) under
    tmp_path, and BENCH_SCREENSHOT_DIR when set; not blank, and small enough for docs/."""
    box = drv.execute_script("""
        var r = document.querySelector(arguments[0]).getBoundingClientRect();
        return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};""", selector)
    shot = drv.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                            "clip": {**box, "scale": 0.75}})
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG") and 2_000 < len(png) < MAX_PNG, (name, len(png))
    path = tmp_path / f"compare-{name}.png"
    path.write_bytes(png)
    if os.environ.get("BENCH_SCREENSHOT_DIR"):
        (Path(os.environ["BENCH_SCREENSHOT_DIR"]) / path.name).write_bytes(png)
    return path


def test_three_runs_show_scorecard_parity_scaling_and_power(lab_maker: Any, driver: Any, tmp_path: Path,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmi_sim", "ipmitool", "sdrcomp", "iperf3", "mpirun", "ip")
    monkeypatch.setenv("BENCH_TEST_BMC_PW_CB", PW)
    runs = _runs(lab_maker, tmp_path)
    page = tmp_path / "compare.html"
    res = subprocess.run([sys.executable, "-m", "benchharness", "compare", *map(str, runs), f"out={page}"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert PW not in page.read_text(encoding="utf-8")

    driver.set_window_size(1400, 2600)
    driver.get(page.as_uri())
    assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]

    # the scorecard: one row per criterion, a cell per run; the 2 Gbit/s links best for bandwidth
    card = driver.execute_script("""
        var out = {};
        document.querySelectorAll('#scorecard tbody tr').forEach(function (tr) {
          var tds = Array.from(tr.querySelectorAll('td'));
          out[tr.dataset.key] = {cells: tds.slice(1, -1).map(function (td) { return td.innerText; }),
                                 best: tds.slice(1, -1).map(function (td) { return td.classList.contains('verdict-win'); }),
                                 decision: tds[tds.length - 1].innerText};
        });
        return out;""")
    assert card["bw_uni"]["best"] == [True, False, False], card["bw_uni"]
    assert card["bw_uni"]["decision"].startswith("2gbit best"), card["bw_uni"]
    assert all(cell.startswith(("36", "37", "38", "39", "40")) for cell in card["power"]["cells"]), card["power"]
    assert card["power"]["best"] == [True, False, False], card["power"]  # 360 W against 380 and 400
    assert any(k.startswith("busbw:") and "3 hosts" in k for k in card), list(card)

    # the parity table names the MTU the third run changed
    parity = driver.execute_script("""
        return {sentences: Array.from(document.querySelectorAll('#parity .parity-differences li')).map(function (li) {
                  return li.innerText; }),
                rows: document.querySelectorAll('#parity table.parity tbody tr').length};""")
    assert parity["rows"] > 3 and any("MTU" in s and "1400" in s for s in parity["sentences"]), parity

    # the scaling chart: a line per run over 2 and 3 hosts; the power chart: each run's BMC watts
    charts = driver.execute_script("""
        function drawn(fig) {
          var svg = fig.querySelector('svg'), r = svg.getBoundingClientRect();
          return {w: r.width, h: r.height, lines: svg.querySelectorAll('path.series-line').length,
                  caption: (fig.querySelector('figcaption') || {}).innerText || ''};
        }
        var scaling = Array.from(document.querySelectorAll('section.test figure')).filter(function (f) {
          return (f.querySelector('figcaption') || {}).innerText.indexOf('per host count') >= 0; });
        return {scaling: scaling.map(drawn), power: Array.from(document.querySelectorAll('#power figure')).map(drawn)};""")
    assert len(charts["scaling"]) == 1 and charts["scaling"][0]["lines"] >= 3, charts
    assert len(charts["power"]) == 1 and charts["power"][0]["lines"] == 3, charts
    for fig in (*charts["scaling"], *charts["power"]):
        assert fig["w"] > 300 and fig["h"] > 150, fig

    driver.execute_script("""Array.from(document.querySelectorAll('section.test figure')).forEach(function (f) {
        if ((f.querySelector('figcaption') || {}).innerText.indexOf('per host count') >= 0) f.id = 'scaling-figure'; });""")
    for selector, name in (("#scorecard", "scorecard"), ("#parity", "parity"), ("#scaling-figure", "scaling"),
                           ("#power", "power")):
        _shot(driver, selector, name, tmp_path)
