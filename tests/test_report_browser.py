"""The reports in a real browser: Debian's chromium + chromedriver through Selenium, offline.

Checks that the page loads from file:// with no SEVERE console errors, that the SVG charts are
laid out with non-zero size and contain drawn series, and that the sortable tables sort.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torch_runs import captured, captured_run

from benchharness.report.compare import render_comparison
from benchharness.report.html import render_run_report
from benchharness.results.store import RunDir

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FIXTURES = Path(__file__).parent / "fixtures" / "runs"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromedriver (/usr/bin/chromium, "
                              "/usr/bin/chromedriver): apt-get install chromium chromium-driver"),
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
    # An explicit driver path: Selenium Manager (which would go online) is never consulted.
    drv = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    drv.set_page_load_timeout(20)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("browser")
    runs = [RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")]
    return {"run": render_run_report(runs[0], tmp / "run.html"),
            "compare": render_comparison(runs, tmp / "compare.html")}


def _severe(drv: Any) -> list[dict[str, Any]]:
    return [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]


def _charts(drv: Any) -> list[dict[str, float]]:
    return drv.execute_script("""
        return Array.from(document.querySelectorAll('svg.chart')).map(function (svg) {
          var r = svg.getBoundingClientRect();
          var lines = Array.from(svg.querySelectorAll('path.series-line, rect.bar, g.hm-cell rect'));
          var drawn = lines.filter(function (p) { var b = p.getBBox(); return b.width > 0 || b.height > 0; });
          return {w: r.width, h: r.height, series: lines.length, drawn: drawn.length};
        });""")


@pytest.mark.parametrize("name", ["run", "compare"])
def test_report_loads_and_draws_charts(driver: Any, reports: dict[str, Path], name: str) -> None:
    driver.get(reports[name].as_uri())
    assert driver.title and "benchharness" in driver.title
    assert _severe(driver) == []
    charts = _charts(driver)
    assert len(charts) >= 5
    for chart in charts:
        assert chart["w"] > 100 and chart["h"] > 100, chart
        assert chart["series"] > 0 and chart["drawn"] == chart["series"], chart


def test_sortable_table_sorts(driver: Any, reports: dict[str, Path]) -> None:
    driver.get(reports["run"].as_uri())
    column = driver.execute_script("""
        var table = document.querySelector('table.stats');
        var heads = Array.from(table.querySelectorAll('th'));
        var col = heads.findIndex(function (th) { return th.textContent === 'median'; });
        heads[col].click(); heads[col].click();  // second click: descending
        return Array.from(table.tBodies[0].rows).map(function (r) {
          return parseFloat(r.cells[col].getAttribute('data-v')); });""")
    assert len(column) > 2 and column == sorted(column, reverse=True)
    assert _severe(driver) == []


def test_comparison_opens_with_the_verdict_sentences(driver: Any, reports: dict[str, Path]) -> None:
    """The first thing a reviewer sees: plain sentences, above the tables, visible on screen."""
    driver.get(reports["compare"].as_uri())
    shown = driver.execute_script("""
        var items = Array.from(document.querySelectorAll('#review ul.verdicts li'));
        var table = document.querySelector('#review table');
        return items.map(function (li) {
          var r = li.getBoundingClientRect();
          return {text: li.innerText, visible: r.width > 0 && r.height > 0,
                  above: !table || r.top < table.getBoundingClientRect().top};
        });""")
    assert shown, "no verdict sentences"
    assert all(s["visible"] and s["above"] for s in shown), shown
    faster = [s["text"] for s in shown if "is " in s["text"] and "% faster than CX6 · fw 22.36" in s["text"]]
    assert faster and all("95% CI" in t and "n = " in t for t in faster), [s["text"] for s in shown]
    assert any("rdma-bw" in t for t in faster)
    assert _severe(driver) == []


@pytest.fixture(scope="module")
def torch_compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bench compare`` of two stored lab runs of the torch all-reduce sweep (captured outputs:
    unshaped, and h2 shaped to 200 Mbit/s), as the CLI renders it."""
    tmp = tmp_path_factory.mktemp("torch-compare")
    captured_run(tmp / "fast", "fast", [captured("all_reduce_3hosts_gloo.txt")])
    captured_run(tmp / "slow", "slow", [captured("all_reduce_200mbit_gloo.txt")])
    out = tmp / "compare.html"
    res = subprocess.run([sys.executable, "-m", "benchharness", "compare", str(tmp / "fast"), str(tmp / "slow"),
                          f"out={out}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def test_torch_comparison_shows_the_projection_sentence_and_step_time_chart(driver: Any, torch_compare: Path) -> None:
    """A comparison of two lab runs with all-reduce curves: the projection sentence is the first
    thing on screen, and the step-time chart is laid out with one drawn line per run."""
    driver.get(torch_compare.as_uri())
    assert _severe(driver) == []
    first = driver.execute_script("""
        var li = document.querySelector('#review ul.verdicts li');
        var r = li.getBoundingClientRect();
        return {text: li.innerText, cls: li.className, top: r.top, visible: r.width > 0 && r.height > 0,
                viewport: window.innerHeight};""")
    assert first["cls"] == "verdict-projection" and first["visible"], first
    assert 0 <= first["top"] < first["viewport"], first  # on the first screen, without scrolling
    text = first["text"]
    assert text.startswith("With slow, a 70B-parameter run on 1,024 GPUs takes ") and " days longer" in text, text
    assert "no interval: one repetition per run" in text, text
    notes = driver.execute_script("""return Array.from(document.querySelectorAll('#projection p.projection-note'))
        .map(function (p) { return p.innerText; });""")
    assert notes == ["pipeline send/recv: projected from the all-reduce curve (no sendrecv curve in fast, slow; "
                     "run suite torch to measure it)",
                     *(f"gradient all-reduce in {run}: the 3 ranks, 1 per node curve as measured (a DP group of "
                       "1 rank(s) per node with TP 8)" for run in ("fast", "slow")),
                     # no NIC price or power in these runs' inventories: said, not left for the reader to guess
                     "NIC and optics price not in the projection: no run has it (inventory nic_price_usd / "
                     "optic_price_usd)",
                     "NIC and optics power not in the projection: no run has it (inventory nic_power_w / "
                     "optic_power_w, or measured NIC power)"], notes
    chart = driver.execute_script("""
        var fig = document.querySelector('#projection figure.projection-chart');
        var svg = fig.querySelector('svg.chart');
        svg.scrollIntoView({block: 'center'});
        var r = svg.getBoundingClientRect();
        var hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        var series = Array.from(svg.querySelectorAll('g.series')).map(function (g) {
          var p = g.querySelector('path.series-line'), b = p.getBBox();
          return {name: g.getAttribute('data-name'), w: b.width, h: b.height,
                  points: g.querySelectorAll('circle').length,
                  shown: getComputedStyle(p).visibility === 'visible' && getComputedStyle(p).display !== 'none'};
        });
        var ticks = Array.from(svg.querySelectorAll('text.tick')).map(function (t) { return t.textContent; });
        return {w: r.width, h: r.height, title: svg.querySelector('title').textContent, series: series,
                ticks: ticks, top: r.top, onTop: !!hit && svg.contains(hit)};""")
    # laid out, and nothing covers it: the element at its centre is part of the chart
    assert chart["w"] > 300 and chart["h"] > 200 and chart["onTop"], chart
    assert chart["title"] == "Step time vs model size (llama-70b-1024)"
    assert [s["name"] for s in chart["series"]] == ["fast", "slow"], chart
    assert all(s["shown"] and s["w"] > 100 and s["points"] == 7 for s in chart["series"]), chart
    # model sizes read as model sizes on the x axis: 1B, 10B, 100B (not powers of two)
    assert {"1B", "10B", "100B"} <= set(chart["ticks"]), chart["ticks"]
    # the slower run's line lies above the faster's at every model size (SVG y grows downwards)
    ys = driver.execute_script("""
        return Array.from(document.querySelectorAll('#projection g.series')).map(function (g) {
          return Array.from(g.querySelectorAll('circle')).map(function (c) { return +c.getAttribute('cy'); });
        });""")
    assert all(slow < fast for fast, slow in zip(ys[0], ys[1], strict=True)), ys
