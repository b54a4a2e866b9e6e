"""Provision benchmark hosts: run the real ``ansible-playbook`` on ``ansible/site.yml``.

The playbook runs with the inventory the harness benchmarks with, host keys verified, and the
``bench_recap`` callback (``ansible/callback_plugins``) writing the play recap, each failed or
unreachable task and each debug message to a JSON file, which becomes a ProvisionResult. A failed
or unreachable host raises ProvisionFailed (exit code 3) naming the host and the task; a playbook,
inventory or option error raises ConfigError with Ansible's own error line.

The packages the ``bench_tools`` role installs are not written in the role: they are each tool
adapter's ``ToolFacts.apt`` (and the telemetry's, ``telemetry/requirements.py``), passed to the
playbook as ``bench_tools_packages``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchharness.core.errors import ConfigError, StepsFailed, UsageError
from benchharness.telemetry import requirements

ANSIBLE_DIR = Path(__file__).resolve().parent.parent / "ansible"
SITE_PLAYBOOK = ANSIBLE_DIR / "site.yml"
ROLE_TAGS = ("bench_tools", "nccl_tests", "rccl_tests", "soft_roce")
RECAP_FILE = "recap.json"
_ERROR_RE = re.compile(r"^(?:\[ERROR\]: |ERROR! )(.*)$")
_ORIGIN_RE = re.compile(r"^Origin: (.+?)(?::(\d+)(?::\d+)?)?$")
_INVENTORY_WARNING_RE = re.compile(r"^\[WARNING\]: Failed to parse inventory with '\w+' plugin: "
                                   r"(?:Failed to parse inventory: )?(.*)$")


@dataclass(frozen=True)
class HostRecap:
    """One host's line of the PLAY RECAP."""

    ok: int
    changed: int
    unreachable: int
    failed: int
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0


@dataclass(frozen=True)
class TaskFailure:
    """A task that failed on a host, or the task at which the host became unreachable."""

    host: str
    task: str
    msg: str
    unreachable: bool = False


@dataclass
class ProvisionResult:
    """What one ansible-playbook run did, per host."""

    argv: list[str]
    returncode: int
    hosts: dict[str, HostRecap]
    failures: list[TaskFailure] = field(default_factory=list)
    messages: dict[str, list[str]] = field(default_factory=dict)
    """What the roles said per host (debug tasks), e.g. why nccl-tests was skipped."""
    output: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no host failed or was unreachable."""
        return not self.failures and all(h.failed == 0 and h.unreachable == 0 for h in self.hosts.values())

    @property
    def changed(self) -> int:
        """Tasks that changed something, over all hosts."""
        return sum(h.changed for h in self.hosts.values())


class ProvisionFailed(StepsFailed):
    """ansible-playbook ran but a host failed or was unreachable (exit code 3); keeps the result."""

    def __init__(self, message: str, result: ProvisionResult) -> None:
        super().__init__(message)
        self.result = result


def ansible_playbook() -> Path:
    """The ``ansible-playbook`` of the Python environment the harness runs in."""
    path = Path(sys.executable).parent / "ansible-playbook"
    if not path.exists():
        raise UsageError(f"{path} not found: install ansible-core in this environment "
                         f"({sys.executable} -m pip install ansible-core)")
    return path


def build_argv(executable: Path | str, playbook: Path, inventory: Path, limit: str | None = None,
               tags: Sequence[str] | None = None, check: bool = False,
               extra_vars_file: Path | None = None) -> list[str]:
    """The ansible-playbook command line (pure)."""
    argv = [str(executable), "-i", str(inventory)]
    if limit:
        argv += ["--limit", limit]
    if tags:
        argv += ["--tags", ",".join(tags)]
    if check:
        argv.append("--check")
    if extra_vars_file is not None:
        argv += ["--extra-vars", f"@{extra_vars_file}"]
    argv.append(str(playbook))
    return argv


def ansible_env(tmp: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an ansible-playbook run: our config, host keys checked, files in ``tmp``."""
    env = dict(os.environ if base is None else base)
    # Loading an inventory in this process narrows Ansible's settings for parsing (inventory.py);
    # a playbook run needs Ansible's own defaults back (host lists, fact variables).
    for key in ("ANSIBLE_INVENTORY_ENABLED", "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED",
                "ANSIBLE_INJECT_FACT_VARS"):
        env.pop(key, None)
    env.update({
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_LOCAL_TEMP": str(tmp / "local"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(tmp / "cp"),
        "ANSIBLE_CALLBACK_PLUGINS": str(ANSIBLE_DIR / "callback_plugins"),
        "ANSIBLE_CALLBACKS_ENABLED": "bench_recap",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ANSIBLE_ROLES_PATH": str(ANSIBLE_DIR / "roles"),
        # an inventory Ansible cannot parse is an error, not a warning and an empty host list
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        "ANSIBLE_NOCOLOR": "True",
        "ANSIBLE_FORCE_COLOR": "False",
        "BENCH_PROVISION_RECAP": str(tmp / RECAP_FILE),
    })
    return env


def parse_recap(doc: Mapping[str, Any]) -> tuple[dict[str, HostRecap], list[TaskFailure], dict[str, list[str]]]:
    """Hosts, failures and messages from the bench_recap callback's JSON document (pure)."""
    hosts = {
        str(name): HostRecap(ok=int(s.get("ok", 0)), changed=int(s.get("changed", 0)),
                             unreachable=int(s.get("unreachable", 0)), failed=int(s.get("failures", 0)),
                             skipped=int(s.get("skipped", 0)), rescued=int(s.get("rescued", 0)),
                             ignored=int(s.get("ignored", 0)))
        for name, s in (doc.get("stats") or {}).items()
    }
    failures = [TaskFailure(str(f["host"]), str(f["task"]), " ".join(str(f.get("msg", "")).split()),
                            bool(f.get("unreachable")))
                for f in doc.get("failures") or []]
    messages: dict[str, list[str]] = {}
    for m in doc.get("messages") or []:
        messages.setdefault(str(m["host"]), []).append(" ".join(str(m.get("msg", "")).split()))
    return hosts, failures, messages


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts h2 before h10."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part)


def failure_line(failures: Sequence[TaskFailure]) -> str:
    """One line naming the first failing host and task, and how many other hosts failed (pure).

    Hosts run a task in parallel and fail in whatever order they finish: of those that failed
    the first failing task, the first by name is named, so the same fault reads the same."""
    same_task = [f for f in failures if f.task == failures[0].task]
    first = min(same_task, key=lambda f: _natural(f.host))
    if first.unreachable:
        line = f"provision: {first.host} unreachable at task '{first.task}': {first.msg}"
    else:
        line = f"provision failed on {first.host} at task '{first.task}': {first.msg}"
    others = sorted({f.host for f in failures} - {first.host})
    if others:
        line += f" (also failed: {', '.join(others)})"
    return line


def ansible_error(output: str) -> tuple[str, str | None, int | None]:
    """Ansible's own error in its output: (message, file, line) where it names them (pure).

    An inventory Ansible cannot parse is reported as a warning with the reason, then as a bare
    "No inventory was parsed" error; the reason is the message then.
    """
    lines = [ln.strip() for ln in output.splitlines()]
    found: tuple[int, str] | None = None
    for i, text in enumerate(lines):
        if match := _ERROR_RE.match(text):
            found = (i, match.group(1).strip())
            break
    if found is None:
        tail = [ln for ln in lines if ln]
        return (tail[-1] if tail else "no output"), None, None
    start, message = found
    if "inventory" in message.lower():
        for i, text in enumerate(lines):
            if match := _INVENTORY_WARNING_RE.match(text):
                start, message = i, f"cannot parse inventory: {match.group(1).strip()}"
                break
    for follow in lines[start + 1:start + 12]:
        if origin := _ORIGIN_RE.match(follow):
            return message, origin.group(1), int(origin.group(2)) if origin.group(2) else None
    return message, None, None


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the process group (ansible-playbook, its workers, ssh), SIGKILL if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _run(argv: list[str], env: dict[str, str], echo: Callable[[str], None] | None,
         timeout_s: float | None) -> tuple[int, str]:
    """Run argv in a session of its own, stdout and stderr merged; the whole group dies on timeout."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace", env=env, start_new_session=True)
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        _kill_group(proc)

    timer = threading.Timer(timeout_s, on_timeout) if timeout_s is not None else None
    lines: list[str] = []
    try:
        if timer:
            timer.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if echo:
                echo(line.rstrip("\n"))
        rc = proc.wait()
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        if timer:
            timer.cancel()
    if timed_out.is_set():
        raise subprocess.TimeoutExpired(argv, timeout_s or 0, output="".join(lines))
    return rc, "".join(lines)


def playbook_vars(extra_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The playbook's extra variables: ``bench_tools_packages`` from the tools' facts, then the caller's."""
    return {"bench_tools_packages": requirements.apt_packages(), **(extra_vars or {})}


def provision(inventory_path: Path, limit: str | None = None, tags: list[str] | None = None,
              check: bool = False, extra_vars: dict[str, Any] | None = None, *,
              playbook: Path | None = None, echo: Callable[[str], None] | None = None,
              timeout_s: float | None = None) -> ProvisionResult:
    """Run ``ansible-playbook`` (default ``ansible/site.yml``) against an inventory.

    ``tags`` picks roles (bench_tools, nccl_tests, rccl_tests, soft_roce); ``check`` is Ansible's
    dry run; ``echo`` receives each output line as it comes. Raises ProvisionFailed (exit code 3)
    when a host fails or is unreachable, ConfigError for a playbook, inventory or limit problem.
    """
    inventory = Path(inventory_path)
    if not inventory.exists():
        raise ConfigError("no such inventory", path=str(inventory))
    book = SITE_PLAYBOOK if playbook is None else Path(playbook)
    if not book.exists():
        raise ConfigError("no such playbook", path=str(book))
    if tags and playbook is None:
        unknown = [t for t in tags if t not in (*ROLE_TAGS, "all")]
        if unknown:
            raise UsageError(f"unknown provision tag {', '.join(unknown)}: choose from {', '.join(ROLE_TAGS)}")
    with tempfile.TemporaryDirectory(prefix="bench-provision-") as tmp_name:
        tmp = Path(tmp_name)
        extra_file = tmp / "extra-vars.json"
        extra_file.write_text(json.dumps(playbook_vars(extra_vars)))
        argv = build_argv(ansible_playbook(), book, inventory, limit, tags, check, extra_file)
        started = time.monotonic()
        try:
            rc, output = _run(argv, ansible_env(tmp), echo, timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise StepsFailed(f"provision: ansible-playbook ran past {timeout_s:g} s and was stopped") from exc
        duration = time.monotonic() - started
        recap_path = tmp / RECAP_FILE
        doc = json.loads(recap_path.read_text()) if recap_path.exists() else None
    if doc is None:
        # Ansible stopped before any play ran: playbook syntax, inventory, limit or options
        message, path, line = ansible_error(output)
        if limit and "no hosts to target" in message:
            raise ConfigError(f"--limit {limit!r} matches no host", path=str(inventory))
        raise ConfigError(message, path, line)
    hosts, failures, messages = parse_recap(doc)
    result = ProvisionResult(argv, rc, hosts, failures, messages, output, duration)
    if failures or not result.ok:
        if not failures:  # the recap counts a failure the callback did not see (should not happen)
            failures = [TaskFailure(h, "?", "see ansible output", r.unreachable > 0)
                        for h, r in hosts.items() if r.failed or r.unreachable]
        raise ProvisionFailed(failure_line(failures), result)
    if rc != 0:
        raise ConfigError(*ansible_error(output))
    if not hosts:
        where = f" match --limit {limit!r}" if limit else ""
        raise ConfigError(f"no hosts to provision{where}", path=str(inventory))
    return result
