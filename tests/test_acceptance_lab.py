"""Acceptance on the loopback lab: one host shaped to 1 Gbit/s fails, and only that host.

Real sshd in namespaces, real iperf3 and MPI, the real `bench` command. The lab's line rates are
nominal (veth), so the lab suite (tests/fixtures/acceptance/lab-acceptance.yaml) judges bandwidth
against the best peer; the shipped suites/acceptance.yaml uses line-rate shares.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "acceptance" / "lab-acceptance.yaml"


def bench(*args: str, env: dict[str, str] | None = None, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def checks_table(report: str) -> list[tuple[str, str, str]]:
    """(status, check, host) of each row of the report's Checks table."""
    section = report.split("<h3>Checks</h3>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr><td data-v="(\w+)">.*?</td><td>(.*?)</td>\s*<td>(.*?)</td>', section, re.S)
    return [(s, html.unescape(c), html.unescape(h)) for s, c, h in rows]


def test_shaped_host_fails_acceptance_alone(lab_maker, tmp_path: Path) -> None:
    out, xml = tmp_path / "night1", tmp_path / "out.xml"
    with lab_maker("acc7", 3, shape={"h3": "1gbit"}) as info:
        res = bench("run", f"suite={SUITE}", f"hosts={info.inventory}", f"junit={xml}", f"out={out}")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "  hosts FAILED: h3\n  hosts passed: h1, h2\n" in res.stdout
    assert res.stdout.strip().splitlines()[-2:] == [f"junit: {xml}", f"report: {out / 'report.html'}"]

    info_json = RunDir(out).run_info()
    assert info_json["state"] == "complete" and info_json["exit_code"] == 1
    verdicts = info_json["verdicts"]
    assert {v["host"] for v in verdicts if v["status"] == "fail" and v["host"]} == {"h3"}
    roll = {v["host"]: v["status"] for v in verdicts if v["check"] == "acceptance"}
    assert roll == {"h1": "pass", "h2": "pass", "h3": "fail", None: "fail"}
    group = [v for v in verdicts if v["test"] == "allreduce"]
    assert [(v["status"], v["host"]) for v in group] == [("pass", None)]  # the all-reduce finished in time

    # JUnit: failures only under h3 (and the run's roll-up, which names h3 alone)
    root = ET.parse(xml).getroot()
    failing = [s for s in root.findall("testsuite") if int(s.get("failures", "0"))]
    assert [s.get("name") for s in failing] == ["lab-acceptance.h3", "lab-acceptance.run"]
    messages = [f.get("message", "") for f in root.iter("failure")]
    assert all("h1" not in m and "h2" not in m for m in messages), messages
    assert any(m.startswith("h3: fails in 1 of 1 cases") for m in messages)
    assert int(root.get("tests", "0")) == len(verdicts)

    # the report's checks table: every failing row with a host is h3's
    rows = checks_table((out / "report.html").read_text(encoding="utf-8"))
    assert {h for s, _, h in rows if s == "fail" and h} == {"h3"}
    assert ("pass", "acceptance", "h1") in rows and ("fail", "acceptance", "h3") in rows

    # the history catalog beside the run: listed as failed, with the metric's history
    env = {"BENCH_RESULTS": str(tmp_path)}
    listed = bench("list", "verdict=fail", env=env)
    assert listed.returncode == 0 and listed.stdout.startswith("night1  lab-acceptance fail "), listed.stdout
    hist = bench("history", "metric=bw_avg_gbps", "test=tcp-all-pairs", env=env)
    assert hist.returncode == 0 and "night1" in hist.stdout, hist.stderr
    tag = bench("tag", "night1", "golden", env=env)
    assert tag.stdout.strip() == "night1: tags golden"
    assert json.loads((out / "run.json").read_text())["tags"] == ["golden"]
