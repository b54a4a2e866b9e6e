"""JUnit XML of a run's verdicts, for Jenkins (junit step) and GitLab (artifacts:reports:junit).

One ``<testsuite>`` per host (its checks, and steps that could not run on it as errors), one for
checks that belong to no single host; a check of one NIC of a multi-rail host is a testcase of
its own, named and classed by the rail (``rail1: tcp: bw_avg_gbps >= ...``, ``suite.h3.rail1``) (pairs, groups, regressions, the run's roll-up). One
``<testcase>`` per check: ``fail`` → ``<failure>``, ``warn`` → passes with the warning in
``<system-out>``, ``info`` → ``<skipped>``; a step skipped for a test's ``requires:`` (torch not
found on the host) is a ``<skipped>`` testcase of that host. Read from the run directory only, so an old run can
be exported again (``write_junit``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchharness.results.store import RunDir

RUN_SUITE = "run"
_BAD_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(value: Any) -> str:
    return _BAD_XML.sub("?", "" if value is None else str(value))


def _class(*parts: str) -> str:
    # Jenkins reads dots in classname as packages: keep a host's own dots out of the hierarchy.
    return ".".join(p.replace(".", "_") for p in parts if p)


def _evidence(v: Mapping[str, Any]) -> str:
    text = _clean(v.get("message"))
    if v.get("value") is not None:
        text += f"\nvalue: {v['value']:.6g}"
    if v.get("limit") is not None:
        text += f"\nlimit: {v['limit']:.6g}"
    return text


def junit_xml(info: Mapping[str, Any], steps: Sequence[Mapping[str, Any]] = (),
              report: str | None = None, nics: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The JUnit XML text of a run (``info``: its run.json; ``steps``: its steps.jsonl lines)."""
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {"name": info.get("suite")}
    suite_name = _clean((suite or {}).get("name") or "bench")
    verdicts = [v for v in info.get("verdicts") or [] if isinstance(v, Mapping)]
    hosts = [str(h) for h in info.get("hosts") or []]
    hosts += [str(v["host"]) for v in verdicts if v.get("host") and str(v["host"]) not in hosts]
    last = {s.get("step"): s for s in steps}
    failed_steps = [s for s in last.values() if s.get("status") == "failed"]
    # a test's requires: a host lacks (torch): the step is <skipped>, never an error
    unmet = [s for s in last.values() if s.get("status") == "skipped" and s.get("kind") == "requirement"]

    root = ET.Element("testsuites", name=f"bench {suite_name} {info.get('run_id', '')}".strip())
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for host in [*hosts, None]:
        mine = [v for v in verdicts if (v.get("host") or None) == host]
        errors = [s for s in failed_steps if (s.get("host") or None) == host
                  or (host is None and not s.get("host"))]
        skips = [s for s in unmet if (s.get("host") or None) == host or (host is None and s.get("host") not in hosts)]
        if host is None and not mine and not errors and not skips:
            continue
        name = _class(suite_name, host or RUN_SUITE)
        ts = ET.SubElement(root, "testsuite", name=name, timestamp=_clean(info.get("started") or ""))
        if host:
            ts.set("hostname", _clean(host))
        props = ET.SubElement(ts, "properties")
        for key, value in (("run_id", info.get("run_id")), ("suite", suite_name), ("host", host),
                           ("report", report), *sorted((nics or {}).get(host or "", {}).items())):
            if value:
                ET.SubElement(props, "property", name=key, value=_clean(value))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for v in mine:
            test, rail = _clean(v.get("test")), _clean(v.get("rail"))
            label = f"{test}: {_clean(v.get('check'))}" if test else _clean(v.get("check"))
            case = ET.SubElement(ts, "testcase", classname=f"{name}.{rail}" if rail else name, time="0",
                                 name=f"{rail}: {label}" if rail else label)
            status = str(v.get("status"))
            counts["tests"] += 1
            if status == "fail":
                counts["failures"] += 1
                el = ET.SubElement(case, "failure", message=_clean(v.get("message")), type=_clean(v.get("check")))
                el.text = _evidence(v) + (f"\nreport: {report}" if report else "")
            elif status == "info":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_clean(v.get("message")))
            else:
                out = ET.SubElement(case, "system-out")
                out.text = ("WARNING: " if status == "warn" else "") + _evidence(v)
        for s in errors:
            started, ended = s.get("started"), s.get("ended")
            took = f"{max(0.0, float(ended) - float(started)):.3f}" if isinstance(started, int | float) \
                and isinstance(ended, int | float) else "0"
            case = ET.SubElement(ts, "testcase", classname=name, time=took, name=f"step {_clean(s.get('step'))}")
            counts["tests"] += 1
            counts["errors"] += 1
            el = ET.SubElement(case, "error", message=_clean(s.get("message")), type=_clean(s.get("kind")))
            el.text = f"{_clean(s.get('kind'))}: {_clean(s.get('message'))}"
        for s in skips:
            case = ET.SubElement(ts, "testcase", classname=name, time="0",
                                 name=f"{_clean(s.get('test'))}: step {_clean(s.get('step'))}")
            counts["tests"] += 1
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=_clean(s.get("message")))
        for key, n in counts.items():
            ts.set(key, str(n))
            totals[key] += n
    for key, n in totals.items():
        root.set(key, str(n))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(run: RunDir, out: Path, report: str | None = None) -> Path:
    """Write the JUnit XML of a stored run to ``out`` (atomically); the path."""
    from benchharness.results import runview
    from benchharness.results.nics import host_nics

    info = run.run_info()
    if report is None and (run.path / "report.html").exists():
        report = str((run.path / "report.html").resolve())
    nics = {h: {k: v for k, v in (("nic_model", n.model), ("nic_serial", n.serial),
                                  ("nic_firmware", n.firmware)) if v}
            for h, n in host_nics(info, runview.read_facts(run)).items()}
    text = junit_xml(info, run.steps(), report, nics)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out
