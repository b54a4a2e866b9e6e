"""The limits ``bench health BEFORE AFTER`` judges with: a suite's ``health:`` block, as a run would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.core.errors import UsageError
from benchharness.telemetry.health import LIMIT_KEYS, parse_health


def suite_limits(suite: str = "acceptance", test: str | None = None) -> dict[str, Any]:
    """The ``health:`` limits of ``test`` (else the first test that has them) of ``suite``."""
    from benchharness.config.suites import load_suite

    for spec in load_suite(suite).tests:
        if spec.health and (test is None or spec.name == test):
            return dict(spec.health)
    raise UsageError(f"suite {suite!r} has no test{f' {test!r}' if test else ''} with a health: block")


def limits_from(args: Mapping[str, str]) -> dict[str, Any]:
    """Limits from ``bench health`` arguments: a suite's block, with any ``limit=value`` over it."""
    base = suite_limits(args.get("suite", "acceptance"), args.get("test"))
    given = {k: v for k, v in args.items() if k in (*LIMIT_KEYS, "status")}
    try:
        return parse_health({**base, **given}) if given else base
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
