"""The run directory: the product of every run, and the only thing reports read.

Layout (``schema_version`` 1)::

    <run>/run.json          what, where, when, versions, hosts, exit state (rewritten as it changes)
    <run>/steps.jsonl       one line per finished step: status, failure kind and message
    <run>/samples.jsonl     tidy sample records, appended after every step
    <run>/samples.parquet   columnar copy of samples.jsonl (results.columnar; derived, rebuilt when stale)
    <run>/samples.superseded.jsonl   samples of steps that `resume=` ran again (kept, not read)
    <run>/raw/<step>/<cmd>.json|.stdout|.stderr   each command line, its output and exit code
    <run>/telemetry/        host facts, preflight verdicts, per-step counters and samplers
    <run>/report.html       rendered from the files above

Every write is appended or replaced atomically, so a run that dies half-way leaves readable files.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from benchharness.core.errors import StorageError, UsageError
from benchharness.core.model import CommandResult, Record
from benchharness.core.naming import safe_name

SCHEMA_VERSION = 1
RESULTS_ENV = "BENCH_RESULTS"
REDACTED = "<redacted>"  # as benchharness.config.inventory.REDACTED


def results_root() -> Path:
    """Where run directories go by default: ``$BENCH_RESULTS`` or ``./reports``."""
    return Path(os.environ.get(RESULTS_ENV) or "reports")


def new_run_id(suite: str, now: float | None = None) -> str:
    """Readable, sortable and unique: ``20261130-120501-quick-3fa2``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    return f"{stamp}-{safe_name(suite)}-{secrets.token_hex(2)}"


FILE_MODE = 0o644
DIR_MODE = 0o755


def _storage_error(path: Path, exc: OSError) -> StorageError:
    full = " (disk full)" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    return StorageError(f"cannot write {path}: {exc.strerror or exc}{full}; "
                        f"everything written before it is intact")


def _mkdirs(path: Path) -> None:
    """``mkdir -p`` with mode 0755 at every level (Path.mkdir gives parents the umask's mode)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _storage_error(folder, exc) from exc


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` as a whole, or leave it as it was (a full disk never leaves half a file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _storage_error(path, exc) from exc


def _secret_name(name: str) -> bool:
    from benchharness.config.inventory import redact  # one rule for what looks secret

    return bool(redact({name: None})[name] == REDACTED)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment as stored: values of secret-looking names (``*TOKEN*``, ``*PASSWORD*``) hidden."""
    return {k: REDACTED if _secret_name(k) else v for k, v in env.items()}


def redact_argv(argv: Iterable[str]) -> list[str]:
    """A command line as stored: ``NAME=value`` arguments with a secret-looking NAME hidden."""
    out = []
    for arg in argv:
        name, sep, _ = arg.partition("=")
        out.append(f"{name}={REDACTED}" if sep and _secret_name(name.lstrip("-")) else arg)
    return out


def json_loader() -> Callable[[str], Any]:
    """The fastest JSON decoder at hand: orjson reads a million sample lines several times
    faster than the standard library, which stays the fallback."""
    try:
        import orjson
    except ImportError:
        return json.loads
    return orjson.loads


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    loads = json_loader()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                yield loads(line)
            except ValueError:
                # A line cut by a crash or a full disk: everything before it is still good.
                continue


class RunDir:
    """One run directory, for writing during a run and reading afterwards."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    # -- writing -----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path) -> RunDir:
        """Make a new, empty run directory (mode 0755, files 0644: readable, not world-writable)."""
        if path.exists() and any(path.iterdir()):
            raise UsageError(f"run directory {path} already exists and is not empty")
        try:
            for sub in ("raw", "telemetry"):
                _mkdirs(path / sub)
        except StorageError as exc:
            cause = exc.__cause__
            why = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(exc)
            raise StorageError(f"cannot create run directory {path}: {why}") from cause
        return cls(path)

    def write_run_info(self, info: dict[str, Any]) -> None:
        info = {"schema_version": SCHEMA_VERSION, **info}
        with self._lock:
            _atomic_write(self.path / "run.json", json.dumps(info, indent=2, default=str) + "\n")

    def append_samples(self, records: Iterable[Record]) -> int:
        lines = [json.dumps(r, default=str, separators=(",", ":")) + "\n" for r in records]
        self._append("samples.jsonl", lines)
        return len(lines)

    def append_step(self, entry: dict[str, Any]) -> None:
        self._append("steps.jsonl", [json.dumps(entry, default=str, separators=(",", ":")) + "\n"])

    def _append(self, name: str, lines: list[str]) -> None:
        if not lines:
            return
        path = self.path / name
        data = "".join(lines).encode("utf-8")
        with self._lock:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
            except OSError as exc:
                raise _storage_error(path, exc) from exc
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError as exc:
                # Cut back to the last whole line, so that the next append starts a clean line.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise _storage_error(path, exc) from exc
            finally:
                os.close(fd)

    def supersede_samples(self, steps: set[str]) -> int:
        """Move the samples of ``steps`` (about to run again on resume) to ``samples.superseded.jsonl``.

        Afterwards ``samples.jsonl`` holds each step's samples once; nothing is deleted.
        """
        path = self.path / "samples.jsonl"
        if not steps or not path.exists():
            return 0
        keep: list[str] = []
        moved: list[str] = []
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                line = line if line.endswith("\n") else line + "\n"
                try:
                    step = json.loads(line).get("step")
                except (json.JSONDecodeError, AttributeError):
                    step = None
                (keep if step is not None and step not in steps else moved).append(line)
        if not moved:
            return 0
        self._append("samples.superseded.jsonl", moved)
        with self._lock:
            _atomic_write(path, "".join(keep))
        return len(moved)

    def write_raw(self, step_id: str, result: CommandResult) -> None:
        """Keep one command's line, environment, output and exit code."""
        folder = self.path / "raw" / safe_name(step_id)
        _mkdirs(folder)
        name = safe_name(result.command.name)
        meta = {
            "host": result.command.host.name, "role": result.command.role,
            "argv": redact_argv(result.command.argv), "env": redact_env(result.command.env),
            "rc": result.rc, "started": result.started, "ended": result.ended,
            "timed_out": result.timed_out, "stopped": result.stopped, "error": result.error,
        }
        _atomic_write(folder / f"{name}.stdout", result.stdout)
        _atomic_write(folder / f"{name}.stderr", result.stderr)
        _atomic_write(folder / f"{name}.json", json.dumps(meta, indent=2) + "\n")

    def write_text(self, relpath: str, text: str) -> Path:
        """Write a text file under the run directory (sampler lines ...)."""
        target = self.path / relpath
        _mkdirs(target.parent)
        _atomic_write(target, text)
        return target

    def write_json(self, relpath: str, data: Any) -> Path:
        """Write a JSON file under the run directory (telemetry, verdicts ...)."""
        target = self.path / relpath
        _mkdirs(target.parent)
        _atomic_write(target, json.dumps(data, indent=2, default=str) + "\n")
        return target

    # -- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.path / "run.json").is_file()

    def run_info(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.path / "run.json").read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise UsageError(f"{self.path} is not a run directory (no run.json)") from exc
        except json.JSONDecodeError as exc:
            raise UsageError(f"{self.path / 'run.json'}:{exc.lineno}: not valid JSON") from exc
        version = data.get("schema_version", 0)
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: schema_version {version} is newer than this bench "
                             f"understands ({SCHEMA_VERSION}); upgrade benchharness")
        return data

    def samples(self) -> list[Record]:
        return list(_read_jsonl(self.path / "samples.jsonl"))

    def _scan(self, skip_line: Callable[[str], bool], keep: Callable[[Record], bool]) -> list[Record]:
        """Rows of samples.jsonl that ``keep`` accepts; lines ``skip_line`` rejects by their text
        are never decoded, and a line cut by a crash is passed over."""
        path = self.path / "samples.jsonl"
        if not path.exists():
            return []
        loads = json_loader()
        out = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if skip_line(line):
                    continue
                try:
                    rec = loads(line) if line.strip() else None
                except ValueError:
                    continue
                if isinstance(rec, dict) and keep(rec):
                    out.append(rec)
        return out

    def summary_samples(self) -> list[Record]:
        """Summary rows only: interval and telemetry counter lines are skipped by their text,
        before decoding (most lines of a large run are intervals)."""
        marks = [f'"kind":{sp}"{k}"' for k in ("interval", "counters") for sp in ("", " ")]
        return self._scan(lambda line: ('"kind":"' in line or '"kind": "' in line) and any(m in line for m in marks),
                          lambda rec: rec.get("kind", "summary") in ("summary", None))

    def samples_of_kind(self, *kinds: str) -> list[Record]:
        """The rows of these kinds only (``straggler``, ``spike`` ...): other lines are skipped by
        their text, undecoded."""
        marks = [f'"kind":{sp}"{k}"' for k in kinds for sp in ("", " ")]
        return self._scan(lambda line: not any(m in line for m in marks), lambda rec: rec.get("kind") in kinds)

    def steps(self) -> list[dict[str, Any]]:
        return list(_read_jsonl(self.path / "steps.jsonl"))

    def iter_steps(self) -> Iterator[dict[str, Any]]:
        """The step lines one at a time (a run of a million steps never sits in memory)."""
        return _read_jsonl(self.path / "steps.jsonl")

    def read_json(self, relpath: str, default: Any = None) -> Any:
        target = self.path / relpath
        if not target.exists():
            return default
        return json.loads(target.read_text(encoding="utf-8"))

    def raw_files(self) -> list[Path]:
        return sorted((self.path / "raw").rglob("*.json"))


def find_run(ref: str, root: Path | None = None) -> RunDir:
    """A run by path, by id under the results root, or ``latest``."""
    root = root or results_root()
    candidates = [Path(ref), root / ref]
    if ref == "latest":
        runs = list_runs(root)
        if not runs:
            raise UsageError(f"no runs under {root}")
        return runs[-1]
    for cand in candidates:
        if (cand / "run.json").is_file():
            return RunDir(cand)
    matches = [r for r in list_runs(root) if r.path.name.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(m.path.name for m in matches[:5])
        raise UsageError(f"run {ref!r} is ambiguous under {root}: {names}")
    raise UsageError(f"no run {ref!r} (looked for a path and under {root}); `bench list` shows runs")


def list_runs(root: Path | None = None) -> list[RunDir]:
    """Run directories under the results root, oldest first."""
    root = root or results_root()
    if not root.is_dir():
        return []
    return sorted((RunDir(p.parent) for p in root.glob("*/run.json")), key=lambda r: r.path.name)
