"""A run killed outright (SIGKILL, no clean-up) keeps every finished step's samples, and its
report renders: the columnar copy, never written by the dead run, is built from samples.jsonl."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchharness.lab.control import LabInfo
from benchharness.results import columnar
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab


def test_killed_run_keeps_finished_steps_and_its_report_renders(lab3: LabInfo, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "benchharness", "run", "suite=quick",
                             f"hosts={lab3.inventory}", "duration=2", f"out={out}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    steps = out / "steps.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:  # until two steps have finished
        if steps.exists() and len(steps.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the run ended or never finished two steps")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    run = RunDir(out)
    done = [json.loads(line) for line in steps.read_text().splitlines() if line.strip()]
    ok = {s["step"] for s in done if s["status"] == "ok"}
    assert not (out / columnar.NAME).exists()
    rendered = subprocess.run([sys.executable, "-m", "benchharness", "report", str(out)],
                              capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    assert (out / "report.html").is_file() and columnar.is_fresh(run)
    kept = {r["step"] for r in columnar.read(run, ["step"]).to_pylist()}
    assert ok and ok <= kept  # every finished step's samples are there
