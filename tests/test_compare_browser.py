"""A three-run comparison in a real browser (Debian's chromium + chromedriver through Selenium,
offline), from the session's three real lab runs (tests/nic_runs.py: 3 hosts each, links shaped
2, 1 and 0.5 Gbit/s, iperf3 between every pair and the MPI CPU all-reduce on 2 then 3 hosts, h1's
BMC an OpenIPMI ``ipmi_sim`` reading 360, 380 and 400 W, the third run with MTU 1400).

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
from nic_runs import BMC_PASSWORD
from test_power_browser import CHROMEDRIVER, CHROMIUM, driver  # noqa: F401  (the fixture)

pytestmark = [
    pytest.mark.lab,
    pytest.mark.long(160),
    pytest.mark.xdist_group("nic_runs"),  # one worker makes the session's three runs (tests/turns.py)
    pytest.mark.browser,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromedriver: apt-get install chromium chromium-driver"),
]

MAX_PNG = 300_000


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


def test_three_runs_show_scorecard_parity_scaling_and_power(nic_runs: dict[str, Path], driver: Any,  # noqa: F811
                                                            tmp_path: Path) -> None:
    runs = list(nic_runs.values())
    page = tmp_path / "compare.html"
    res = subprocess.run([sys.executable, "-m", "benchharness", "compare", *map(str, runs), f"out={page}"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert BMC_PASSWORD not in page.read_text(encoding="utf-8")

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
