"""The report's "Fabric health" section in a real browser (Debian's chromium + chromedriver through
Selenium, offline, as tests/test_report_browser.py drives it): the section is on screen, its
charts are laid out and drawn, the per-rail table shows "not exposed", markup stays text."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchharness.report.html import render_run_report
from tests import fabric_runs

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromedriver: apt-get install chromium chromium-driver"),
]


@pytest.fixture(scope="module")
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


def test_fabric_health_section_is_visible_and_drawn(driver: Any, tmp_path: Path) -> None:
    page = render_run_report(fabric_runs.build(tmp_path, evil=True), tmp_path / "run.html")
    driver.get(page.as_uri() + "#fabric-health")
    got = driver.execute_script("""
        var sec = document.getElementById('fabric-health');
        sec.scrollIntoView();
        var r = sec.getBoundingClientRect();
        var charts = Array.from(sec.querySelectorAll('svg.chart')).map(function (svg) {
          var b = svg.getBoundingClientRect();
          var lines = Array.from(svg.querySelectorAll('path.series-line'));
          var drawn = lines.filter(function (p) { var x = p.getBBox(); return x.width > 0 || x.height > 0; });
          return {w: b.width, h: b.height, title: svg.getAttribute('aria-label'),
                  series: lines.length, drawn: drawn.length};
        });
        var table = sec.querySelector('table.fabric-rails');
        var cells = table ? Array.from(table.querySelectorAll('td')).map(function (c) { return c.innerText; }) : [];
        return {w: r.width, h: r.height, visible: r.top < window.innerHeight && r.bottom > 0,
                heading: sec.querySelector('h2').innerText, charts: charts, cells: cells,
                nav: Array.from(document.querySelectorAll('nav.toc a')).map(function (a) { return a.innerText; }),
                bold: sec.querySelectorAll('b').length};""")
    assert got["heading"] == "Fabric health" and got["visible"] and got["w"] > 600 and got["h"] > 600
    assert "Fabric health" in got["nav"]
    titles = [c["title"] for c in got["charts"]]
    assert {"Pause share per rail", "Temperatures under load"} <= set(titles), titles
    for chart in got["charts"]:
        assert chart["w"] > 300 and chart["h"] > 150 and chart["series"] > 0, chart
        assert chart["drawn"] == chart["series"], chart
    assert "not exposed" in got["cells"] and "<b>h2</b>" in got["cells"]  # shown as text, not markup
    assert got["bold"] == 0
    assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
