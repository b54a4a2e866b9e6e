"""What a case is: the one definition that reports, comparisons, verdicts and history share.

A *case* of a test is what the suite asked for: the test, its swept parameters and the message
size, plus the per-row labels a tool reports that tell cases of one step apart (direction,
collective, rail ...). Per-repetition outputs (iteration counts under ``-D``, warnings, partial
flags, byte counts) and repetition bookkeeping (step, rep, round) never are. Host labels say
where a case ran; comparisons across clusters leave them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchharness.core.values import SIZE_PARAMS

#: Per-row labels that tell cases of one test apart (besides the suite's swept parameters).
ROW_LABELS = ("size_bytes", "direction", "placement", "collective", "protocol", "bidir", "streams",
              "perftest_test", "ucx_test", "rail", "nhosts", "nranks", "nccl_algo")
#: Labels every sample carries that name the test itself (constant within a test).
TEST_LABELS = ("test", "tool", "pattern")
#: Labels that tell repetitions apart; never part of a case.
REP_LABELS = frozenset({"step", "rep", "round", "kind", "seq", "interval", "run_id", "run"})
#: Labels naming hosts; they differ between clusters, so comparisons ignore them.
HOST_LABELS = frozenset({"hosts", "pair", "server", "client", "host", "sender", "receiver",
                         "members", "peer", "launcher", "senders", "receivers", "gpu_pair"})


def swept_params(test: Mapping[str, Any]) -> tuple[str, ...]:
    """Parameters a suite test sweeps (list values, size ranges), size parameters left out:
    the parsed ``size_bytes`` stands for them."""
    params = test.get("params") or {}
    swept = [str(k) for k, v in params.items()
             if isinstance(v, list) or (k in SIZE_PARAMS and isinstance(v, str) and ".." in v)]
    return tuple(k for k in swept if k not in SIZE_PARAMS)


def test_case_keys(test: Mapping[str, Any]) -> tuple[str, ...]:
    """Case-defining labels of one suite test: row labels and swept parameters."""
    return tuple(dict.fromkeys([*ROW_LABELS, *swept_params(test)]))


def run_case_keys(run_info: Mapping[str, Any]) -> tuple[str, ...]:
    """Case-defining labels of every test of a run, from its suite snapshot in ``run.json``."""
    suite = run_info.get("suite")
    tests = suite.get("tests") if isinstance(suite, Mapping) else None
    keys: list[str] = [*TEST_LABELS, *ROW_LABELS]
    for test in tests or []:
        if isinstance(test, Mapping):
            keys.extend(swept_params(test))
    return tuple(dict.fromkeys(keys))


def case_columns(columns: Iterable[Any], keys: Iterable[str] | None = None,
                 hosts: bool = True) -> list[str]:
    """The columns (in their order) that define a case: the case keys present, and host labels
    when ``hosts``. Without ``keys`` (a frame not loaded from a run) the test and row labels."""
    wanted = set(keys if keys is not None else (*TEST_LABELS, *ROW_LABELS)) - set(REP_LABELS)
    if hosts:
        wanted |= HOST_LABELS
    return [str(c) for c in columns if str(c) in wanted]
