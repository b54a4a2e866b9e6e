"""Ansible callback ``bench_recap``: the play recap, failures and messages as one JSON file.

benchharness.provision enables it (``ANSIBLE_CALLBACKS_ENABLED=bench_recap``) next to the normal
stdout callback and names the file in ``BENCH_PROVISION_RECAP``. The file holds::

    {"stats": {HOST: {"ok": N, "changed": N, "unreachable": N, "failures": N, "skipped": N,
                      "rescued": N, "ignored": N}},
     "failures": [{"host": H, "task": "role : task name", "unreachable": bool, "msg": "..."}],
     "messages": [{"host": H, "task": "...", "msg": "..."}]}   # what debug tasks said

Without ``BENCH_PROVISION_RECAP`` it does nothing, so running the playbooks by hand is unaffected.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_recap
type: aggregate
short_description: write the play recap, failures and debug messages to a JSON file
description:
  - Writes the per-host recap, each failed or unreachable task and each debug message to the
    file named by the environment variable BENCH_PROVISION_RECAP, for benchharness.provision.
requirements:
  - enable it in callbacks_enabled
"""

_DEBUG_ACTIONS = {"debug", "ansible.builtin.debug", "ansible.legacy.debug"}
_MAX_TEXT = 2000


def _result(result: Any) -> dict[str, Any]:
    """The result dictionary (``.result`` since ansible-core 2.19, ``._result`` before)."""
    data = result.result if hasattr(type(result), "result") else result._result
    return dict(data)


def _task_name(result: Any) -> str:
    task = result._task if not hasattr(type(result), "task") else result.task
    try:
        return str(task.get_name(include_role_fqcn=False))
    except TypeError:  # older ansible-core without the keyword
        return str(task.get_name())


def _host(result: Any) -> str:
    host = result._host if not hasattr(type(result), "host") else result.host
    return str(host.get_name())


def _text(value: Any) -> str:
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    return str(value)[:_MAX_TEXT]


def _failure_message(data: dict[str, Any]) -> str:
    """The most telling line of a failed result: its msg, with stderr for failed commands."""
    for item in data.get("results") or []:  # a loop: the first item that failed
        if isinstance(item, dict) and item.get("failed"):
            return _failure_message(item)
    msg = _text(data.get("msg") or "").strip()
    stderr = _text(data.get("stderr") or "").strip()
    if stderr and (not msg or msg == "non-zero return code"):
        last = stderr.splitlines()[-1]
        msg = f"{msg}: {last}" if msg else last
    if not msg and "rc" in data:
        msg = f"exit status {data['rc']}"
    return msg or "failed"


class CallbackModule(CallbackBase):
    """Collects stats, failures and debug messages; writes them when the playbook ends."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_recap"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._path = os.environ.get("BENCH_PROVISION_RECAP", "")
        self._failures: list[dict[str, Any]] = []
        self._messages: list[dict[str, Any]] = []

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        if ignore_errors:
            return
        self._failures.append({"host": _host(result), "task": _task_name(result), "unreachable": False,
                               "msg": _failure_message(_result(result))})

    def v2_runner_on_unreachable(self, result: Any) -> None:
        data = _result(result)
        self._failures.append({"host": _host(result), "task": _task_name(result), "unreachable": True,
                               "msg": _text(data.get("msg") or "unreachable").strip()})

    def v2_runner_on_ok(self, result: Any) -> None:
        task = result._task if not hasattr(type(result), "task") else result.task
        if task.action not in _DEBUG_ACTIONS:
            return
        data = _result(result)
        if "msg" in data:
            self._messages.append({"host": _host(result), "task": _task_name(result), "msg": _text(data["msg"])})

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if not self._path:
            return
        doc = {"stats": {host: stats.summarize(host) for host in sorted(stats.processed)},
               "failures": self._failures, "messages": self._messages}
        tmp = f"{self._path}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=1)
        os.replace(tmp, self._path)
