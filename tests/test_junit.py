"""JUnit XML of a run's verdicts: structure Jenkins and GitLab read, one testcase per check."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchharness.report.junit import junit_xml, write_junit

_spec = importlib.util.spec_from_file_location("acc_runs", Path(__file__).parent / "fixtures" / "acceptance" / "runs.py")
assert _spec and _spec.loader
runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runs)

H4 = ["gpu01", "gpu02", "gpu03", "gpu04"]
PEER = {"metric": "bw_avg_gbps", "sizes": "64K..8M", "min": "90% best_peer"}
LAT = {"metric": "lat_p99_us", "max": "130% best_peer"}


def test_junit_names_the_failing_host_with_evidence(tmp_path: Path) -> None:
    run = runs.make_run(tmp_path / "night1", H4, checks=[PEER, LAT], host_factor={"gpu03": 0.5},
                        failed_step_host="gpu01")
    verdicts = runs.finish(run)
    out = write_junit(run, tmp_path / "ci" / "out.xml")
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == [f"acceptance.{h}" for h in H4] + ["acceptance.run"]
    cases = root.findall("testsuite/testcase")
    errors = [c for c in cases if c.find("error") is not None]
    assert len(cases) == len(verdicts) + len(errors)  # one testcase per check, plus steps that failed
    for s in suites.values():  # counts agree with the children
        kids = s.findall("testcase")
        assert int(s.get("tests", -1)) == len(kids)
        assert int(s.get("failures", -1)) == sum(c.find("failure") is not None for c in kids)
        assert int(s.get("errors", -1)) == sum(c.find("error") is not None for c in kids)
        assert all(c.get("classname") == s.get("name") for c in kids)
    assert int(root.get("tests", -1)) == len(cases)
    assert int(root.get("failures", -1)) == sum(int(s.get("failures", 0)) for s in suites.values())
    failing = {s.get("hostname") for s in suites.values() if int(s.get("failures", 0)) and s.get("hostname")}
    assert failing == {"gpu01", "gpu03"}
    # gpu01 passes every check; only its roll-up fails, for the step that could not run
    g1 = [c for c in suites["acceptance.gpu01"].findall("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in g1] == ["acceptance"]
    assert "1 step could not run" in (g1[0].find("failure").get("message") or "")  # type: ignore[union-attr]
    g3 = suites["acceptance.gpu03"]
    names = [c.get("name") for c in g3.findall("testcase")]
    assert names == ["acceptance", "write-bw: bw_avg_gbps >= 90% best_peer [64K..8M]",
                     "write-bw: lat_p99_us <= 130% best_peer"]
    failure = g3.find("testcase[@name='write-bw: lat_p99_us <= 130% best_peer']/failure")
    assert failure is not None and failure.get("message", "").startswith("gpu03: fails in")
    lines = dict(line.split(": ", 1) for line in (failure.text or "").splitlines()[1:])
    assert float(lines["value"]) == pytest.approx(4.0, rel=0.03)  # p99 doubled on the slow NIC
    assert float(lines["limit"]) == pytest.approx(2.6, rel=0.03)  # 130% of the best peer's 2 µs
    props = {p.get("name"): p.get("value") for p in g3.findall("properties/property")}
    assert props["nic_serial"] == "MT2234X00002" and props["nic_model"] == "CX7"
    # the step that could not run is an <error> under the host it failed on
    err = suites["acceptance.gpu01"].find("testcase/error")
    assert err is not None and err.get("type") == "connect_failed"


def test_warnings_pass_and_info_is_skipped() -> None:
    info = {"run_id": "r", "suite": {"name": "s"}, "hosts": ["a.example.com"], "verdicts": [
        {"check": "c1", "status": "warn", "message": "no baseline \x01run", "host": "a.example.com"},
        {"check": "c2", "status": "info", "message": "too little history", "host": None},
        {"check": "c3", "status": "pass", "message": "ok <&>", "host": "a.example.com", "value": 1.5}]}
    root = ET.fromstring(junit_xml(info))
    host = root.find("testsuite[@hostname='a.example.com']")
    assert host is not None and host.get("name") == "s.a_example_com"  # dots are not packages
    out = host.find("testcase[@name='c1']/system-out")
    assert out is not None and out.text == "WARNING: no baseline ?run"  # control characters replaced
    assert host.find("testcase[@name='c3']/system-out").text == "ok <&>\nvalue: 1.5"  # type: ignore[union-attr]
    assert root.find("testsuite[@name='s.run']/testcase[@name='c2']/skipped") is not None
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "0", "1")
