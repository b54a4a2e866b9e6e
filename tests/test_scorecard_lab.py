"""Ground truth for the scorecard: the session's three lab runs (tests/nic_runs.py), 3 hosts each,
links shaped 2, 1 and 0.5 Gbit/s (rates a loaded 2-core machine still reaches: 4 Gbit/s gave 3.2
here while other tests ran), h1's BMC an ipmi_sim reading 360, 380 and 400 W, latency measured
by the first run only."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.long(160), pytest.mark.xdist_group("nic_runs")]  # one worker makes the session's three runs (tests/turns.py)


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_scorecard_names_the_fastest_link_and_what_a_run_did_not_measure(nic_runs: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    runs = list(nic_runs.values())
    res = bench("compare", *map(str, runs), "format=json")
    assert res.returncode == 0, res.stderr
    rows = {r["key"]: r for r in json.loads(res.stdout)["scorecard"]}

    bw = rows["bw_uni"]
    cells = {c["run"]: c for c in bw["cells"]}
    assert bw["best"] == "2gbit", bw
    assert "2gbit best" in bw["decision"]
    fast = cells["2gbit"]["value"]
    for rate, share in (("1gbit", 0.5), ("500mbit", 0.25)):  # ratios match the shapes within 10 %
        assert abs(cells[rate]["value"] / fast - share) <= 0.1 * share, (rate, cells)
    for c in cells.values():  # 3 host pairs x 2 repetitions behind every figure, with its interval
        assert c["n"] == "n = 3 × 2" and c["interval"].startswith("95% CI"), c
        assert c["low"] <= c["value"] <= c["high"]

    lat = {c["run"]: c for c in rows["lat_typical"]["cells"]}
    assert lat["2gbit"]["value"] > 0 and lat["1gbit"]["text"] == lat["500mbit"]["text"] == "not measured"
    assert rows["lat_typical"]["best"] == "2gbit"
    # h1's BMC read 360, 380 and 400 W (one host of three has a BMC: the figure is that node's)
    power = {c["run"]: c for c in rows["power"]["cells"]}
    for rate, watts in (("2gbit", 360), ("1gbit", 380), ("500mbit", 400)):
        assert power[rate]["value"] == pytest.approx(watts, rel=0.05), power
    assert rows["power"]["best"] == "2gbit", rows["power"]

    page = tmp_path / "cmp.html"
    assert bench("compare", *map(str, runs), f"out={page}").returncode == 0
    text = html.unescape(page.read_text())
    # in the reviewers' summary, right after the sentences and before every other section
    assert text.index('class="verdicts"') < text.index('id="scorecard"') < text.index('id="runs"')
    for row in rows.values():  # the same rows in the page as in format=json
        assert row["title"] in text and row["decision"] in text
        assert all(c["text"] in text for c in row["cells"])
