"""The runner with real local processes and a small adapter written for this test."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from benchharness import tools
from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Record, Step
from benchharness.execution.runner import Runner
from benchharness.results import measures
from benchharness.results.store import RunDir

LOCAL = Host("localhost", "127.0.0.1", local=True)


class EchoTool:
    """Server prints a ready line and sleeps; client prints a number the parser reads."""

    name = "echo-test"
    description = "test double"
    params = {"value": 1, "server_ready": True, "client_sleep": 0.0, "fail": ""}
    patterns = ("self",)

    def check_params(self, params: Any) -> None:
        pass

    def commands(self, step: Step, launcher: str = "ssh") -> list[Command]:
        p = step.params
        server_script = "echo listening; sleep 59.7" if p.get("server_ready", True) else "echo broken >&2; exit 1"
        client_script = f"sleep {p.get('client_sleep', 0)}; echo value={p.get('value', 1)}"
        if p.get("fail") == "crash":
            client_script = "echo 'Segmentation fault' >&2; exit 139"
        return [
            Command(step.hosts[0], "server", ("sh", "-c", server_script), background=True,
                    ready_pattern="listening", label=f"server-{step.port}"),
            Command(step.hosts[1], "client", ("sh", "-c", client_script), timeout_s=30, label=f"client-{step.port}"),
        ]

    def parse_step(self, step: Step, results: Sequence[CommandResult]) -> list[Record]:
        client = next(r for r in results if r.command.role == "client")
        if client.rc != 0:
            raise ToolFailure("crashed", f"client exited {client.rc}: {client.stderr.strip()}")
        if step.params.get("fail") == "wrong":  # the tool printed a row, flagged: kept with the failure
            raise ToolFailure("wrong_results", "wrong data", records=[
                {**r, "kind": "invalid", "valid": False} for r in self.parse_text(client.stdout)])
        return self.parse_text(client.stdout)

    def parse_text(self, text: str) -> list[Record]:
        return [{"value_us": float(line.split("=")[1])} for line in text.splitlines() if line.startswith("value=")]


@dataclass
class FakePlan:
    rounds: list[list[Step]]
    hosts: list[Host] = field(default_factory=lambda: [LOCAL])
    launcher: str = "ssh"

    @property
    def steps(self) -> list[Step]:
        return [s for r in self.rounds for s in r]


@pytest.fixture(autouse=True)
def echo_tool(monkeypatch):
    real = tools.registry()
    monkeypatch.setattr(tools, "registry", lambda: {**real, "echo-test": EchoTool()})


def step(i: int, round_: int = 0, **params: Any) -> Step:
    return Step(id=f"{i:04d}-echo", test="echo", tool="echo-test", params=params, hosts=(LOCAL, LOCAL),
                pattern="self", round=round_, port=5000 + i)


def test_samples_and_raw_are_stored_after_every_step(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    plan = FakePlan([[step(1, value=3)], [step(2, 1, value=4), step(3, 1, value=5)]])
    result = Runner(plan, run).run()
    assert [o.status for o in result.outcomes] == ["ok", "ok", "ok"]
    assert sorted(s["value_us"] for s in run.samples()) == [3.0, 4.0, 5.0]
    assert {s["step"] for s in run.samples()} == {"0001-echo", "0002-echo", "0003-echo"}
    assert (run.path / "raw" / "0001-echo" / "client-5001.stdout").read_text() == "value=3\n"
    assert (run.path / "raw" / "0001-echo" / "server-5001.stdout").read_text() == "listening\n"


def test_steps_of_a_round_run_at_the_same_time(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    plan = FakePlan([[step(i, 0, client_sleep=1.0) for i in range(4)]])
    Runner(plan, run).run()
    # Each step ran while every other was running (in a row, the last would start after the
    # first ended): what the timestamps say, however loaded the machine.
    steps = run.steps()
    assert len(steps) == 4
    assert max(s["started"] for s in steps) < min(s["ended"] for s in steps), steps


def test_a_crash_is_a_classified_failure_and_the_run_goes_on(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    plan = FakePlan([[step(1, fail="crash")], [step(2, 1, value=7)]])
    result = Runner(plan, run).run()
    assert [(o.status, o.kind) for o in result.outcomes] == [("failed", "crashed"), ("ok", "")]
    assert "Segmentation fault" in result.outcomes[0].message
    assert [s["value_us"] for s in run.samples()] == [7.0]
    assert [s["status"] for s in run.steps()] == ["failed", "ok"]


def test_a_server_that_never_gets_ready_fails_the_step_only(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    result = Runner(FakePlan([[step(1, server_ready=False)], [step(2, 1)]]), run).run()
    assert result.outcomes[0].kind == "server_not_ready" and "broken" in result.outcomes[0].message
    assert result.outcomes[1].status == "ok"


def test_finished_steps_are_skipped_on_resume(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    result = Runner(FakePlan([[step(1)], [step(2, 1)]]), run, done_steps={"0001-echo"}).run()
    assert [o.step.id for o in result.outcomes] == ["0002-echo"]


def test_sigterm_stops_every_process_and_keeps_what_was_measured(tmp_path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals need the main thread")
    run = RunDir.create(tmp_path / "run")
    plan = FakePlan([[step(1, value=1)], [step(2, 1, client_sleep=29.7)]])
    runner = Runner(plan, run)
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    started = time.monotonic()
    result = runner.run()
    timer.cancel()
    assert result.interrupted
    assert time.monotonic() - started < 10
    assert [s["value_us"] for s in run.samples()] == [1.0]
    # Nothing this run started is alive: no "sleep 59.7" server and no "sleep 29.7" client
    # (durations no other test uses, so concurrent tests cannot trip this check).
    out = os.popen("ps -eo pid,ppid,stat,args | grep -E 'sleep (59.7|29.7)' | grep -v grep").read()
    assert all(" Z" in line or "<defunct>" in line for line in out.splitlines()), out
    assert sys.exc_info() == (None, None, None)


def test_rows_a_failure_keeps_are_stored_flagged_and_the_step_fails(tmp_path) -> None:
    run = RunDir.create(tmp_path / "run")
    result = Runner(FakePlan([[step(1, value=9, fail="wrong")]]), run).run()
    assert [(o.status, o.kind, o.samples) for o in result.outcomes] == [("failed", "wrong_results", 1)]
    (sample,) = run.samples()
    assert sample["value_us"] == 9.0 and sample["valid"] is False and sample["step"] == "0001-echo"
    assert not measures.is_summary(sample)
