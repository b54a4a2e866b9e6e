"""The runner over simulated hosts (transport/fake.py): unreachable hosts and failing commands are
named, every other step keeps its samples; max_connections is a checked suite setting."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchharness.config.suites import Suite, load_suite
from benchharness.core.errors import ConfigError, UsageError
from benchharness.core.model import Host
from benchharness.execution.runner import Runner
from benchharness.planning.plan import build_plan
from benchharness.results.store import RunDir
from benchharness.telemetry.collect import TelemetryObserver
from benchharness.transport.fake import FakeFleet

IPERF3 = Path(__file__).parent / "fixtures" / "iperf3"
SUITE = """\
description: one round of iperf3 pairs
settings: {duration: 1, repeat: 1, base_port: 5201, timeout: 30, max_connections: 3}
tests:
  - name: tcp
    tool: iperf3
    pattern: pairs
    params: {protocol: tcp}
"""


def _suite(tmp_path: Path, text: str = SUITE, overrides: dict[str, str] | None = None) -> Suite:
    path = tmp_path / "one-round.yaml"
    path.write_text(text)
    return load_suite(path, overrides)


def test_failed_hosts_are_named_and_the_rest_keep_their_samples(tmp_path: Path) -> None:
    hosts = [Host(f"n{i}", f"198.18.0.{i + 1}", user="bench") for i in range(8)]
    suite = _suite(tmp_path)
    plan = build_plan(suite, hosts)
    assert len(plan.rounds) == 1 and len(plan.steps) == 4
    by_host = {h.name: s for s in plan.steps for h in s.hosts}
    tcp, refused = (IPERF3 / "tcp.json").read_text(), (IPERF3 / "refused.json").read_text()
    probed: list[str] = []
    lock = threading.Lock()
    # n2 refuses SSH; the iperf3 client on the host that sends in n5's step fails
    failing_client = next(c.host.name for c in Runner(plan, RunDir.create(tmp_path / "x")).step_commands(
        by_host["n5"]) if c.role == "client")

    def respond(host: Host, argv: Sequence[str]) -> tuple[int, str, str]:
        if argv[0] == "date":
            return 0, "1700000000.000000000\n", ""
        if len(argv) > 1 and argv[1].endswith("probe.py"):  # python3 probe.py, not mv
            with lock:
                probed.append(host.name)
            return 0, json.dumps({"host": {"hostname": host.name}}), ""
        if argv[0] == "iperf3" and "-s" in argv:
            return 0, "Server listening on 5201 (test #1)\n", ""
        if argv[0] == "iperf3":
            return (1, refused, "") if host.name == failing_client else (0, tcp, "")
        return 0, "", ""

    fleet = FakeFleet(respond, (0.0, 0.002), unreachable={"n2"})
    run_dir = RunDir.create(tmp_path / "run")
    observer = TelemetryObserver(per_step=True)
    runner = Runner(plan, run_dir, observers=[observer], launcher=fleet,
                    max_connections=suite.settings["max_connections"])
    outcome = runner.run()

    failed = {o.step.id: o for o in outcome.failed}
    assert set(failed) == {by_host["n2"].id, by_host["n5"].id}
    down = failed[by_host["n2"].id]
    assert (down.kind, down.host) == ("unreachable", "n2") and "refused the connection" in down.message
    assert "Connection refused" in failed[by_host["n5"].id].message
    assert runner.down == {"n2": down.message}
    assert sorted(probed) == sorted(h.name for h in hosts if h.name != "n2")  # the probe skipped n2
    assert set(observer.facts) == {h.name for h in hosts} - {"n2"}
    ok = [o for o in outcome.outcomes if o.status == "ok"]
    assert len(ok) == 2 and all(o.samples > 0 for o in ok)
    kept = {s["step"] for s in run_dir.steps() if s["status"] == "ok"}
    assert kept == {o.step.id for o in ok}


def test_max_connections_is_a_checked_setting(tmp_path: Path) -> None:
    assert _suite(tmp_path, overrides={"max_connections": "64"}).settings["max_connections"] == 64
    with pytest.raises(ConfigError, match=r"max_connections must be a whole number 1\.\.1024"):
        _suite(tmp_path, SUITE.replace("max_connections: 3", "max_connections: 0"))
    with pytest.raises((ConfigError, UsageError), match="max_connections"):
        _suite(tmp_path, overrides={"max_connections": "many"})
