"""``bench plan``: a plan as text, with every round, host, port and exact command line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from benchharness import tools
from benchharness.core.errors import UsageError
from benchharness.planning.isolation import settings_of
from benchharness.planning.plan import Plan, ports_reserved
from benchharness.results.store import redact_argv, redact_env


def describe_plan(plan: Plan) -> str:
    """Dry-run text: every round, step and command line exactly as a run would execute them."""
    suite = plan.suite
    settings = " ".join(f"{k}={v}" for k, v in sorted(suite.settings.items()))
    lines = [f"suite {suite.name} ({suite.path}): {len(plan.steps)} steps in {len(plan.rounds)} rounds "
             f"on {len(plan.hosts)} host(s): {', '.join(h.name for h in plan.hosts)}",
             f"settings: {settings}"]
    for number, steps in enumerate(plan.rounds):
        lines.append(f"\nround {number}" + (f" ({len(steps)} steps at once)" if len(steps) > 1 else ""))
        for step in steps:
            reserved = ports_reserved(step.tool, step.pattern, step.params, step.hosts)
            ports = str(step.port) if reserved == 1 else f"{step.port}-{step.port + reserved - 1}"
            params = " ".join(f"{k}={v}" for k, v in step.params.items())
            lines.append(f"  step {step.id}  test={step.test} tool={step.tool} pattern={step.pattern} "
                         f"rep={step.repetition} port{'s' if reserved > 1 else ''}={ports}  {params}")
            try:
                commands = tools.get_tool(step.tool).commands(step, launcher=plan.launcher)
            except (ValueError, UsageError) as exc:
                lines.append(f"    !! cannot build its commands: {exc}")
                continue
            for cmd in commands:
                env = [f"{k}={v}" for k, v in redact_env(cmd.env).items()]
                mode = "bg" if cmd.background else "fg"
                delay = f"  after={cmd.start_delay_s:g}s" if cmd.start_delay_s else ""
                lines.append(f"    {cmd.host.name}  {cmd.role} {mode}  port={_command_port(cmd.argv, step.port, reserved) or ports}"
                             f"{delay}  {shlex.join([*env, *redact_argv(cmd.argv)])}")
    if suite.settings.get("isolate") and any(s.pattern == "all-pairs" for s in plan.steps):
        share, factor = settings_of(suite.settings)
        lines.append(f"\nafter the run (isolate: true): all-pairs pairs below {share:.0%} of the best pair's "
                     f"bandwidth or above {factor:g}x its latency run again once per case (steps <id>-retest, "
                     f"disjoint pairs at once, ports from {suite.settings['base_port']}); the host in most "
                     f"confirmed bad pairs is named")
    return "\n".join(lines)


def _command_port(argv: Sequence[str], first: int, count: int) -> str | None:
    """The one port of the step's range that a command line names, if exactly one."""
    found = {a for a in argv if a.isdigit() and first <= int(a) < first + count}
    return found.pop() if len(found) == 1 else None


# ---------------------------------------------------------------- helpers
