"""`bench run`: suite + inventory → plan → runner → run directory → report, and the exit code."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import getpass
import os
import platform
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchharness import __version__
from benchharness.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STEPS_FAILED,
    EXIT_STORAGE,
    EXIT_VERDICT_FAILED,
    ConfigError,
    StorageError,
    UsageError,
)
from benchharness.core.model import Verdict
from benchharness.execution.events import StepEvent
from benchharness.results.store import RunDir, find_run, new_run_id, redact_argv, results_root


def _auto_rails(inventory: Any) -> Any:
    """The inventory with the rails of ``rails=auto`` hosts discovered on them (probe over SSH)."""
    from benchharness.telemetry.discover import discover

    try:
        hosts = discover(inventory.hosts)
    except ValueError as exc:
        raise ConfigError(str(exc), str(inventory.source) if inventory.source else None) from None
    if hosts != inventory.hosts or any(a.rails != b.rails for a, b in zip(hosts, inventory.hosts, strict=True)):
        inventory = dataclasses.replace(inventory, hosts=hosts)
    return inventory


def _now() -> str:
    return dt.datetime.now(dt.UTC).astimezone().isoformat(timespec="seconds")


def _suite_snapshot(suite: Any) -> dict[str, Any]:
    return {"name": suite.name, "path": str(suite.path), "description": suite.description,
            "settings": dict(suite.settings),
            "tests": [{"name": t.name, "tool": t.tool, "pattern": t.pattern, "hosts": t.hosts,
                       "repeat": t.repeat, "params": dict(t.params),
                       "checks": list(getattr(t, "checks", ())),
                       **({"rails": t.rails} if getattr(t, "rails", None) else {}),
                       **({"requires": list(t.requires)} if getattr(t, "requires", ()) else {}),
                       **({"health": t.health} if getattr(t, "health", None) else {}),
                       **({"path_spread": t.path_spread} if getattr(t, "path_spread", None) else {}),
                       **({"stragglers": t.stragglers} if getattr(t, "stragglers", None) else {})}
                      for t in suite.tests],
            "verdicts": getattr(suite, "verdicts", None)}


def exit_code_for(state: str, failed_steps: int, verdicts: list[Verdict]) -> int:
    """Documented exit codes: 130 interrupted, 3 steps could not run, 1 a verdict failed, else 0."""
    if state == "interrupted":
        return EXIT_INTERRUPTED
    if failed_steps:
        return EXIT_STEPS_FAILED
    if any(v.status == "fail" for v in verdicts):
        return EXIT_VERDICT_FAILED
    return EXIT_OK


@dataclass
class Session:
    """Everything one `bench run` works with, from the suite to the run directory."""

    suite: Any
    inventory: Any
    plan: Any
    launcher: str
    run_dir: RunDir
    info: dict[str, Any]
    done: set[str] = field(default_factory=set)
    resumed: bool = False


def run_suite(suite_ref: str, hosts_ref: str | None, overrides: Mapping[str, str], *,
              out: str | None = None, resume: str | None = None,
              echo: Callable[[str], None] = print,
              progress: Callable[[StepEvent], None] | None = None, launcher: str | None = None,
              junit: str | None = None, baseline: str | None = None, label: str | None = None,
              prom: str | None = None, push: str | None = None) -> int:
    """Run a suite on an inventory's hosts (or the local machine) and return the exit code.

    ``launcher`` (ssh, slurm; default the hosts' ``bench_launcher`` var, else ssh) says how
    commands reach the hosts. ``junit`` writes JUnit XML of the verdicts there; ``baseline``
    (a tag, latest-pass, latest or a run) is what "N% baseline" checks compare with; ``prom``
    writes the verdicts as Prometheus text there and ``push`` sends them to a Pushgateway.
    """
    session = open_session(suite_ref, hosts_ref, overrides, out=out, resume=resume,
                           launcher=launcher, baseline=baseline)
    if label:
        session.info["labels"] = {**(session.info.get("labels") or {}), "label": label}
        session.run_dir.write_run_info(session.info)
    if warning := session.inventory.ssh_warning():
        echo(warning)
    echo(f"run {session.run_dir.path.name}: suite {session.suite.name}, {len(session.plan.steps)} steps in "
         f"{len(session.plan.rounds)} rounds on {len(session.plan.hosts)} host(s); "
         f"results in {session.run_dir.path}")
    from benchharness.execution.progress import Progress

    observers, result, runner, iso = _execute(session, overrides, suite_ref, hosts_ref, echo,
                                              progress or Progress())
    code = _finish(session, observers, result, runner, iso, junit, echo)
    if prom or push:
        from benchharness.report import prometheus

        if prom:
            echo(f"prom: {prometheus.write_textfile(session.run_dir, Path(prom))}")
        if push:
            try:
                prometheus.push(session.run_dir, push)
                echo(f"pushed: {push}")
            except StorageError as exc:  # the run is stored; its verdict exit code outranks the push's
                echo(f"error: {exc.message}")
                code = code or exc.exit_code
    return code


def open_session(suite_ref: str, hosts_ref: str | None, overrides: Mapping[str, str], *,
                 out: str | None, resume: str | None, launcher: str | None,
                 baseline: str | None) -> Session:
    """Load and check everything a run needs, then open its run directory (new, or resumed)."""
    from benchharness.config.inventory import load_inventory, local_inventory
    from benchharness.config.suites import load_suite
    from benchharness.execution.launchers import launcher_name
    from benchharness.planning.plan import build_plan

    suite = load_suite(suite_ref, overrides)
    inventory = load_inventory(hosts_ref) if hosts_ref else local_inventory()
    inventory = _auto_rails(inventory)
    chosen = launcher_name(launcher, inventory.hosts)
    plan = build_plan(suite, inventory.hosts, inventory=inventory, launcher=chosen)
    if not plan.steps:
        raise UsageError(f"suite {suite.name} has no steps for the hosts of "
                         f"{hosts_ref or 'the local machine'}")
    if baseline:  # a baseline that names nothing is a usage error, before anything runs
        from benchharness.analysis.verdicts import check_baseline_ref

        check_baseline_ref(baseline, suite.name, find_run(resume).path.parent if resume
                           else (Path(out).parent if out else results_root()))
    if resume:
        session = _resumed(find_run(resume), suite, inventory, plan, chosen)
    else:
        run_dir = RunDir.create(Path(out) if out else results_root() / new_run_id(suite.name))
        session = Session(suite, inventory, plan, chosen, run_dir, _new_info(run_dir, suite, inventory,
                                                                             plan, overrides, chosen))
    if baseline:
        session.info["baseline"] = baseline
    session.run_dir.write_run_info(session.info)
    return session


def _new_info(run_dir: RunDir, suite: Any, inventory: Any, plan: Any, overrides: Mapping[str, str],
              launcher: str) -> dict[str, Any]:
    from benchharness.config.inventory import redact

    return {
        "run_id": run_dir.path.name, "suite": redact(_suite_snapshot(suite)),
        "overrides": redact(dict(overrides)), "inventory": inventory.snapshot(),
        "inventory_source": str(inventory.source or "local"), "hosts": [h.name for h in plan.hosts],
        "started": _now(), "ended": None, "state": "running", "exit_code": None,
        "bench_version": __version__, "command": redact_argv(sys.argv),
        "controller": {"host": socket.gethostname(), "user": getpass.getuser(),
                       "python": platform.python_version(), "pid": os.getpid()},
        "steps_total": len(plan.steps), "launcher": launcher,
    }


def _resumed(run_dir: RunDir, suite: Any, inventory: Any, plan: Any, launcher: str) -> Session:
    info = run_dir.run_info()
    if info.get("suite", {}).get("name") != suite.name:
        raise UsageError(f"cannot resume {run_dir.path.name}: it ran suite "
                         f"{info.get('suite', {}).get('name')!r}, not {suite.name!r}")
    done = {s["step"] for s in run_dir.steps() if s.get("status") == "ok"}
    # Steps that run again keep only their new samples; the old ones move aside, not away.
    run_dir.supersede_samples({s.id for s in plan.steps} - done)
    info.setdefault("resumed", []).append(_now())
    return Session(suite, inventory, plan, launcher, run_dir, info, done, resumed=True)


def _execute(session: Session, overrides: Mapping[str, str], suite_ref: str, hosts_ref: str | None,
             echo: Callable[[str], None], progress: Callable[[StepEvent], None]) -> tuple[Any, Any, Any, Any]:
    """Run the plan, then bad-link isolation when the suite asks for it."""
    from benchharness.execution.launchers import make_launcher
    from benchharness.execution.runner import MAX_CONNECTIONS, Runner
    from benchharness.telemetry.hooks import observers_for

    observers = observers_for(session.suite, overrides)
    fan_out = int(session.suite.settings.get("max_connections", MAX_CONNECTIONS))
    runner = Runner(session.plan, session.run_dir, observers=observers, done_steps=session.done,
                    progress=progress, launcher=make_launcher(session.launcher, session.plan.hosts),
                    max_connections=fan_out)
    try:
        result = runner.run()
    except StorageError as exc:  # every process is stopped; say so in run.json if there is room
        session.info.update({"ended": _now(), "state": "storage_error", "exit_code": EXIT_STORAGE})
        with contextlib.suppress(StorageError):
            session.run_dir.write_run_info(session.info)
        raise StorageError(f"{exc.message}; make room, then continue with `bench run suite={suite_ref} "
                           f"{'hosts=' + hosts_ref + ' ' if hosts_ref else ''}"
                           f"resume={session.run_dir.path}`") from exc
    iso = None
    if session.suite.settings.get("isolate") and not result.interrupted:
        from benchharness.planning.isolation import isolate  # retest weak all-pairs pairs, name a suspect

        iso = isolate(session.plan, session.run_dir,
                      lambda p: Runner(p, session.run_dir, progress=runner.progress, max_connections=fan_out,
                                       launcher=make_launcher(session.launcher, p.hosts)), echo)
        result.outcomes += iso.outcomes
        result.interrupted = iso.interrupted
    return observers, result, runner, iso


def _finish(session: Session, observers: list[Any], result: Any, runner: Any, iso: Any,
            junit: str | None, echo: Callable[[str], None]) -> int:
    """Verdicts, run.json's final state, the report, the console summary; the exit code."""
    from benchharness.execution.runner import summarize_failures

    suite, run_dir, info = session.suite, session.run_dir, session.info
    total = len(session.plan.steps) + (iso.retest_steps if iso else 0)
    last: dict[str, dict[str, Any]] = {s["step"]: s for s in run_dir.steps()}
    failed = [s for s in last.values() if s["status"] == "failed"]
    _columnar(run_dir, echo)
    verdicts = _verdicts(run_dir, info)
    preflight = [v for obs in observers for v in getattr(obs, "preflight", [])]
    if suite.settings.get("preflight") == "enforce":
        verdicts += [v for v in preflight if v.status == "fail"]
    state = "interrupted" if result.interrupted else ("partial" if failed else "complete")
    code = exit_code_for(state, len(failed), verdicts)
    info.update({
        "ended": _now(), "state": state, "exit_code": code,
        "steps": {"total": total, "ok": sum(s["status"] == "ok" for s in last.values()),
                  "failed": len(failed), "skipped": sum(s["status"] == "skipped" for s in last.values())},
        "failures": summarize_failures(result.failed) if not session.resumed else
        [{k: s.get(k) for k in ("step", "host", "kind", "message")} for s in failed],
        "verdicts": [v.__dict__ for v in verdicts],
        "preflight": {s: sum(v.status == s for v in preflight) for s in ("fail", "warn", "info", "pass")},
        "down_hosts": runner.down,
        "clock_offsets": {h: c.to_dict() for h, c in sorted(runner.clocks.items())},
        "ssh_retries": _ssh_retries(runner),
        "tool_versions": _tool_versions(observers),
        **_frameworks(run_dir),
        **({"isolation": iso.summary()} if iso else {}),
    })
    run_dir.write_run_info(info)
    report = render_report(run_dir, echo)
    samples = sum(s.get("samples", 0) for s in last.values())
    echo(f"{info['steps']['ok']}/{total} steps ok, {len(failed)} failed, {samples} samples; "
         f"state {state}, exit code {code}")
    for f in info["failures"][:10]:
        echo(f"  FAILED {f['step']}{' on ' + f['host'] if f.get('host') else ''}: {f['kind']}: {f['message']}")
    if suite.settings.get("preflight") != "off":
        for v in preflight:
            if v.status in ("fail", "warn"):
                echo(f"  preflight {v.status.upper()} {v.check}{' on ' + v.host if v.host else ''}: {v.message}")
    for v in verdicts:
        if v.status == "fail":
            who = f"{v.host}.{v.rail}" if v.host and v.rail else v.host
            echo(f"  VERDICT FAIL {v.check}{' on ' + who if who else ''}: {v.message}")
    if iso and iso.confirmed:
        echo(f"  ISOLATION {'suspect ' + ', '.join(iso.suspects) if iso.suspects else 'no suspect'}: {iso.note}")
    if info["ssh_retries"]:
        echo("  ssh: connection set-up retried (busy sshd, e.g. MaxStartups): "
             + ", ".join(f"{h} {n}x" for h, n in info["ssh_retries"].items()))
    _acceptance_outputs(run_dir, info, verdicts, junit, report, echo)
    echo(f"report: {report.resolve()}" if report else f"results: {run_dir.path.resolve()}")
    return code


def _frameworks(run_dir: RunDir) -> dict[str, Any]:
    """``{"frameworks": matrix}`` when the run has framework steps (results/frameworks.py), else nothing."""
    from benchharness.results.frameworks import matrix

    found = matrix(run_dir)
    return {"frameworks": found} if found else {}


def _ssh_retries(runner: Any) -> dict[str, int]:
    """Host -> how many times its SSH connection set-up was tried again (only hosts with retries)."""
    return {name: n for name, t in runner.transports.items() if (n := getattr(t, "retries", 0))}


def _tool_versions(observers: list[Any]) -> dict[str, str]:
    """Versions of the tools on the hosts, from the facts the telemetry probed."""
    from benchharness.telemetry.summary import tool_versions

    facts: dict[str, Any] = {}
    for obs in observers:
        facts.update(getattr(obs, "facts", {}) or {})
    return tool_versions(facts)


def _verdicts(run_dir: RunDir, info: dict[str, Any]) -> list[Verdict]:
    """Pass/fail checks of the suite over the stored samples."""
    from benchharness.analysis.verdicts import evaluate

    return evaluate(run_dir, info)


def _acceptance_outputs(run_dir: RunDir, info: dict[str, Any], verdicts: list[Verdict], junit: str | None,
                        report: Path | None, echo: Callable[[str], None]) -> None:
    """Console summary of the verdicts, the history catalog entry, and JUnit XML when asked."""
    from benchharness.analysis.verdicts import summary_lines

    for line in summary_lines(verdicts):
        echo(line)
    try:
        from benchharness.results.catalog import register_run

        register_run(run_dir, info)
    except Exception as exc:  # the run itself is safe on disk; the catalog is rebuilt from it
        echo(f"warning: history catalog not updated ({exc}); `bench list` registers the run later")
    if junit:
        from benchharness.report.junit import write_junit

        echo(f"junit: {write_junit(run_dir, Path(junit), str(report) if report else None)}")


def _columnar(run_dir: RunDir, echo: Callable[[str], None]) -> None:
    """The columnar copy of the samples, which reports read (derived: rebuilt when missing)."""
    try:
        from benchharness.results import columnar

        columnar.ensure(run_dir)
    except Exception as exc:  # samples.jsonl is the record; a report rebuilds the copy
        echo(f"warning: columnar copy of the samples not written ({exc}); `bench report` rebuilds it")


def render_report(run_dir: RunDir, echo: Callable[[str], None]) -> Path | None:
    """``report.html`` of the run, or None and a warning line (the measurements stay on disk)."""
    try:
        from benchharness.report.html import render_run_report

        return render_run_report(run_dir)
    except Exception as exc:  # the measurements are already safe on disk
        echo(f"warning: report could not be rendered ({exc}); re-render with `bench report {run_dir.path}`")
        return None
