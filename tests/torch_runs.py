"""Run directories built from captured rank-0 outputs of the torch tool (tests/fixtures/captured/torch).

Each captured text becomes one repetition of one step, parsed by the adapter's own ``parse_step``
and stored as the runner stores it (run.json, steps.jsonl, samples.jsonl), so that ``bench
compare`` reads it like a run the lab made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchharness.core.model import CommandResult, Host, Step
from benchharness.results.store import RunDir
from benchharness.tools import get_tool

CAPTURED = Path(__file__).parent / "fixtures" / "captured" / "torch"
HOSTS = tuple(Host(f"h{i}", f"198.18.0.{i}", user="root") for i in (1, 2, 3))


def captured_run(path: Path, name: str, outputs: Sequence[str], test: str = "torch-all_reduce",
                 op: str = "all_reduce", started: float = 1.7e9) -> RunDir:
    """A complete run named ``name`` at ``path``: one repetition of ``test`` per captured output."""
    run = RunDir.create(path)
    tool = get_tool("torch")
    for rep, text in enumerate(outputs):
        step = Step(f"{rep:04d}-{test}-r{rep}", test, "torch", {"op": op}, HOSTS, pattern="group",
                    repetition=rep, labels={"op": op, "hosts": ",".join(h.name for h in HOSTS)})
        cmd = tool.commands(step)[0]
        res = CommandResult(cmd, 0, text, "", started + 10 * rep, started + 10 * rep + 5)
        records = tool.parse_step(step, [res])
        run.append_samples(records)
        run.append_step({"step": step.id, "test": test, "tool": "torch", "round": 0, "rep": rep,
                         "hosts": [h.name for h in HOSTS], "status": "ok", "kind": "", "message": "",
                         "samples": len(records), "started": res.started, "ended": res.ended,
                         "params": dict(step.params)})
    run.write_run_info({"run_id": name, "suite": {"name": "training", "tests": [test]},
                        "hosts": [h.name for h in HOSTS], "state": "complete", "exit_code": 0,
                        "started": started, "ended": started + 10 * len(outputs)})
    return run


def captured(name: str) -> str:
    """One captured output by file name."""
    return (CAPTURED / name).read_text()

