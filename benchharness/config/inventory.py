"""Ansible inventory (INI or YAML) → Host objects, parsed by ansible-core's own machinery.

Benchmark variables (``data_ip``, ``rdma_dev``, ``gpus`` ...) are validated per host; see
``inventories/README.md`` for the full list, host patterns and how inventories are found.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import io
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchharness.config.inventory_vars import connection_fields, validate_bench_vars
from benchharness.config.rails import host_rails
from benchharness.core.errors import ConfigError, UsageError
from benchharness.core.model import Host, Rail

INVENTORY_DIR = Path(__file__).resolve().parents[2] / "inventories"
SUFFIXES = (".ini", ".yaml", ".yml")
REDACTED = "<redacted>"
VAULT = "<vault-encrypted>"
_SECRET_VARS = {"ansible_password", "ansible_become_password", "ansible_ssh_pass", "ansible_become_pass"}
_SECRET_WORDS = ("password", "secret", "token", "passphrase")
_YAML_EXT = (".yaml", ".yml", ".json")
#: Set before ansible is imported: only the ini and yaml plugins, every parse failure raises,
#: no chatter about implicit localhost or unmatched patterns.
_ANSIBLE_ENV = {
    "ANSIBLE_INVENTORY_ENABLED": "ini,yaml",
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
    "ANSIBLE_LOCALHOST_WARNING": "False",
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
    "ANSIBLE_INJECT_FACT_VARS": "False",  # no facts here; spares a costly clean_facts() per host
}
_ANSIBLE_CONSTANTS = {
    "INVENTORY_ENABLED": ["ini", "yaml"], "INVENTORY_UNPARSED_IS_FAILED": True,
    "INVENTORY_ANY_UNPARSED_IS_FAILED": True, "INVENTORY_UNPARSED_WARNING": False,
    "LOCALHOST_WARNING": False, "INJECT_FACTS_AS_VARS": False,
}
_LOCK = threading.RLock()


@dataclass
class Inventory:
    """Hosts and groups of one inventory, in inventory order."""

    source: Path | None
    hosts: list[Host]
    groups: dict[str, list[str]]
    #: Ansible's warnings while parsing (e.g. invalid characters in group names), never printed.
    warnings: list[str] = field(default_factory=list)

    def host(self, name: str) -> Host:
        """The host called ``name``; UsageError naming the known hosts if there is none."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise UsageError(f"no host {name!r} in {self._label()}; hosts: {_listing(h.name for h in self.hosts)}")

    def select(self, pattern: str = "all") -> list[Host]:
        """Hosts matching an Ansible host pattern (``gpu``, ``gpu0*``, ``a:b``, ``gpu:!gpu03``, ``gpu:&rack1``).

        Every term must match at least one host or group: a typo is an error, not a smaller run.
        """
        terms = _split_pattern(pattern)
        if not terms:
            raise UsageError(f"empty host pattern {pattern!r}")
        plain = [t for t in terms if t[0] not in "&!"] or ["all"]
        ordered = plain + [t for t in terms if t[0] == "&"] + [t for t in terms if t[0] == "!"]
        names: list[str] = []
        for term in ordered:
            matched = self._match_term(term.lstrip("&!"))
            if not matched:
                raise UsageError(f"host pattern {pattern!r}: {term!r} matches no host or group in "
                                 f"{self._label()}; groups: {_listing(self.groups)}; "
                                 f"hosts: {_listing(h.name for h in self.hosts)}")
            if term[0] == "!":
                names = [n for n in names if n not in set(matched)]
            elif term[0] == "&":
                names = [n for n in names if n in set(matched)]
            else:
                names += [n for n in matched if n not in names]
        if not names:
            raise UsageError(f"host pattern {pattern!r} selects no host in {self._label()}")
        by_name = {h.name: h for h in self.hosts}
        return [by_name[n] for n in names]

    def ssh_warning(self) -> str | None:
        """One line naming the SSH options of these hosts that bench cannot honour (None: none)."""
        from benchharness.transport.sshconfig import warning_line

        return warning_line({h.name: h.ssh.get("ignored") or () for h in self.hosts})

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready description for run.json: hosts with vars and groups, secrets redacted."""
        hosts = [{
            "name": h.name, "address": h.address, "port": h.port, "user": h.user,
            "key_file": h.key_file, "known_hosts": h.known_hosts, "proxy_jump": h.proxy_jump,
            "proxy_command": h.proxy_command, "ssh_config": h.ssh.get("config_file"),
            "strict_host_keys": h.strict_host_keys, "local": h.local, "data_ip": h.data_ip,
            "groups": list(h.groups), "vars": redact(h.vars),
            **({"rails": [rail_dict(r) for r in h.rails]} if h.rails else {}),
        } for h in self.hosts]
        return {"source": str(self.source) if self.source else None, "hosts": hosts,
                "groups": {g: list(m) for g, m in self.groups.items()}}

    def _match_term(self, expr: str) -> list[str]:
        # Mirrors ansible's InventoryManager._match_one_pattern over the resolved data.
        names = [h.name for h in self.hosts]
        if not expr or expr in names:
            return [expr] if expr else []
        subscript = None
        m = re.match(r"^(.+)\[(?:(-?\d+)|(\d+):(\d*))\]$", expr) if expr[0] != "~" else None
        if m:
            expr, one, start, end = m.groups()
            subscript = (int(one), int(one)) if one else (int(start), int(end) if end else -1)
        if expr in ("all", "*"):
            found = list(names)
        else:
            try:
                rx = re.compile(expr[1:] if expr[0] == "~" else fnmatch.translate(expr))
            except re.error as exc:
                raise UsageError(f"invalid host pattern {expr!r}: {exc}") from exc
            found = [n for g, members in self.groups.items() if rx.match(g) for n in members]
            if not found or expr[0] == "~" or any(c in expr for c in ".?*["):
                found += [n for n in names if rx.match(n)]
            found = list(dict.fromkeys(found))
        if subscript and found:
            start_i, end_i = subscript
            end_i = len(found) - 1 if end_i == -1 else end_i
            found = found[start_i:end_i + 1] if start_i >= 0 else found[start_i:][:1]
        return found

    def _label(self) -> str:
        return f"inventory {self.source}" if self.source else "the local inventory"


def rail_dict(rail: Rail) -> dict[str, Any]:
    """One rail as run.json stores it (``name`` added, empty fields left out)."""
    out = {"name": rail.name, **{k: v for k, v in dataclasses.asdict(rail).items() if v not in (None, ())}}
    if rail.nearest_gpus:
        out["nearest_gpus"] = list(rail.nearest_gpus)
    return out


def redact(value: Any) -> Any:
    """Copy of ``value`` with every secret-looking variable replaced by ``"<redacted>"``."""
    if isinstance(value, Mapping):
        return {k: REDACTED if _is_secret(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def _is_secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_VARS or any(w in low for w in _SECRET_WORDS)


def _listing(names: Any, limit: int = 20) -> str:
    items = list(names)
    text = ", ".join(items[:limit]) or "(none)"
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _split_pattern(pattern: str) -> list[str]:
    # ',' separates terms; else ':' does, except inside [..] (ranges and subscripts)
    parts = pattern.split(",") if "," in pattern else re.findall(r"(?:[^\s:\[\]]|\[[^\]]*\])+", pattern)
    return [p.strip() for p in parts if p.strip()]


# ---------------------------------------------------------------- finding inventories

def inventory_search_dirs() -> list[Path]:
    """Directories where inventory names are looked up: ``$BENCH_INVENTORY_PATH`` then the repo's."""
    extra = [Path(p) for p in os.environ.get("BENCH_INVENTORY_PATH", "").split(os.pathsep) if p]
    return [*extra, INVENTORY_DIR]


def find_inventory(name_or_path: str, search_dirs: Sequence[Path] | None = None) -> Path:
    """Resolve ``hosts=`` to a file: an existing path, or a name looked up in the inventory dirs."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return path.resolve()
    dirs = list(search_dirs) if search_dirs is not None else inventory_search_dirs()
    if os.sep not in name_or_path:
        for d in dirs:
            for suffix in ("", *SUFFIXES):
                candidate = d / f"{name_or_path}{suffix}"
                if candidate.is_file():
                    return candidate.resolve()
    known = sorted({p.stem for d in dirs if d.is_dir() for p in d.iterdir()
                    if p.is_file() and p.suffix in SUFFIXES})
    raise UsageError(f"inventory {name_or_path!r} not found (not a file, nor a name in "
                     f"{', '.join(str(d) for d in dirs)}); known inventories: {', '.join(known) or '(none)'}")


def local_inventory() -> Inventory:
    """The built-in inventory: this machine only, over loopback, no SSH."""
    host = Host(name="localhost", address="127.0.0.1", local=True, data_ip="127.0.0.1",
                vars={"ansible_connection": "local", "ansible_host": "127.0.0.1",
                      "data_ip": "127.0.0.1", "netdev": "lo", "nic_line_rate_gbps": None})
    return Inventory(source=None, hosts=[host], groups={})


def load_inventory(name_or_path: str | Path) -> Inventory:
    """Parse an Ansible inventory (file or directory) into validated Hosts.

    Every failure is a ConfigError naming the file and, when known, the line.
    """
    path = Path(name_or_path).expanduser()
    if isinstance(name_or_path, str) and not path.exists() and os.sep not in name_or_path:
        path = find_inventory(name_or_path)  # a bare name: UsageError listing the known ones
    if not path.exists():
        raise ConfigError("inventory file not found", str(path))
    path = path.resolve()
    with _LOCK, _quiet(_ansible().display) as said:
        ans = _ansible()
        failures: list[SimpleNamespace] = []
        loader = ans.DataLoader()
        try:
            manager = ans.Manager(loader, sources=[str(path)], failures=failures)
        except Exception as exc:
            raise _parse_error(path, failures, exc) from None
        _strict_yaml_warnings(path, said)
        variables = ans.VariableManager(loader=loader, inventory=manager)
        variables.safe_basedir = False  # no playbook: never read group_vars/ of the current directory
        magic = set(variables.get_vars(include_hostvars=False)) | _HOST_MAGIC
        hosts = [_build_host(h.name, variables.get_vars(host=h, include_hostvars=False), magic, path)
                 for h in manager.get_hosts("all")]
        groups = {name: [h.name for h in g.get_hosts()] for name, g in manager.groups.items()
                  if name not in ("all", "ungrouped")}
    if not hosts:
        raise ConfigError("the inventory defines no hosts", str(path))
    return Inventory(source=path, hosts=hosts, groups=groups, warnings=list(dict.fromkeys(said)))


# ---------------------------------------------------------------- ansible plumbing

_HOST_MAGIC = {"inventory_file", "inventory_dir", "inventory_hostname", "inventory_hostname_short",
               "group_names", "groups", "ansible_facts", "ansible_local", "omit", "playbook_dir"}


@functools.cache
def _ansible() -> SimpleNamespace:
    """Import ansible once, configured strict and silent; imports print nothing."""
    os.environ.update(_ANSIBLE_ENV)
    sink = io.StringIO()  # config warnings are reported while ansible.utils.display imports
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        import ansible.constants as constants  # ansible/ at the repo root is a playbook dir
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.utils.display import Display
        from ansible.vars.manager import VariableManager
    # Someone may have imported ansible before the environment above was set: force the same.
    for name, value in _ANSIBLE_CONSTANTS.items():
        setattr(constants, name, value)
    try:
        from ansible._internal._datatag._tags import Origin
        origin_of: Callable[[Any], Any] = lambda v: v if isinstance(v, Origin) else Origin.get_tag(v)  # noqa: E731
    except ImportError:  # ansible-core < 2.19 keeps no origin tags
        origin_of = lambda v: None  # noqa: E731

    class _Recorder:
        """Wraps an inventory plugin: routes files by extension, records failures with their line."""

        def __init__(self, plugin: Any, failures: list[SimpleNamespace]) -> None:
            self._plugin, self._failures = plugin, failures

        def __getattr__(self, name: str) -> Any:
            return getattr(self._plugin, name)

        def verify_file(self, path: str) -> bool:
            is_yaml = path.endswith(_YAML_EXT)
            return (is_yaml == (self._plugin._load_name.endswith("yaml"))) and self._plugin.verify_file(path)

        def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
            plugin, seen = self._plugin, SimpleNamespace(line=None)
            inner = getattr(plugin, "_parse", None)
            if inner is not None and not path.endswith(_YAML_EXT):
                def tracked(lines: Any) -> Any:  # the ini plugin forgets the line once it raises
                    try:
                        return inner(lines)
                    except Exception:
                        origin = getattr(plugin, "_origin", None)
                        seen.line = getattr(origin, "line_num", None) or getattr(plugin, "lineno", None)
                        raise
                plugin._parse = tracked
            try:
                plugin.parse(inventory, loader, path, cache=cache)
            except Exception as exc:
                self._failures.append(SimpleNamespace(path=path, exc=exc, line=seen.line))
                raise

    class Manager(InventoryManager):
        def __init__(self, loader: Any, sources: list[str], failures: list[SimpleNamespace]) -> None:
            self._bench_failures = failures
            super().__init__(loader, sources=sources)

        def _fetch_inventory_plugins(self) -> list[Any]:
            return [_Recorder(p, self._bench_failures) for p in super()._fetch_inventory_plugins()]

    return SimpleNamespace(Manager=Manager, DataLoader=DataLoader, VariableManager=VariableManager,
                           display=Display(), origin_of=origin_of)


@contextlib.contextmanager
def _quiet(display: Any) -> Iterator[list[str]]:
    """Collect what ansible's Display would print (warnings, errors) instead of printing it."""
    said: list[str] = []

    def warning(msg: str, *args: Any, **kwargs: Any) -> None:
        said.append(str(msg))

    def ignore(*args: Any, **kwargs: Any) -> None:
        pass

    names = ("warning", "error_as_warning", "deprecated", "display", "error", "banner")
    saved = {n: display.__dict__[n] for n in names if n in display.__dict__}
    for n in names:
        setattr(display, n, warning if n == "warning" else ignore)
    try:
        yield said
    finally:
        for n in names:
            if n in saved:
                setattr(display, n, saved[n])
            else:
                delattr(display, n)


# ---------------------------------------------------------------- parse errors with lines

def _parse_error(path: Path, failures: list[SimpleNamespace], exc: Exception) -> ConfigError:
    """The most precise ConfigError for a failed parse: the failing file and line."""
    if not failures:
        return ConfigError(_one_line(exc), str(path))
    fail = failures[-1]
    mark = next((e for e in _chain(fail.exc) if getattr(e, "problem_mark", None)), None)
    if mark is not None:  # PyYAML syntax error: its own words and mark
        where = mark.problem_mark  # type: ignore[attr-defined]
        what = " ".join(str(x) for x in (getattr(mark, "context", None), getattr(mark, "problem", None)) if x)
        return ConfigError(f"YAML syntax error: {what} (column {where.column + 1})", fail.path, where.line + 1)
    text = re.sub(r"<class '(?:[\w.]+\.)?(?:_AnsibleTagged)?(\w+)'>", lambda m: m.group(1).lower(),
                  _chain_text(fail.exc))
    line = fail.line or _line_from_chain(fail.exc, fail.path)
    if line is not None and not fail.path.endswith(_YAML_EXT):
        source = _source_line(fail.path, line)
        if source.startswith("[") and not source.endswith("]"):  # Ansible's own words are cryptic here
            text = f"section header {source!r} has no closing ']'"
    if line is None and fail.path.endswith(_YAML_EXT):
        quoted = re.findall(r'"([^"]+)"', text) or re.findall(r"(\S+) is not a known host nor group", text)
        found = _yaml_key_line(Path(fail.path), quoted[0], quoted[1] if len(quoted) > 1 else None) if quoted else None
        line = found or 1  # a structure error without a name is about the whole document
    return ConfigError(text, fail.path, line or _line_from_text(fail.path, text))


def _source_line(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if number == line:
                    return text.strip()
    except OSError:
        pass
    return ""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        nxt = getattr(cur, "orig_exc", None)
        cur = nxt if isinstance(nxt, BaseException) else (cur.__cause__ or cur.__context__)


def _one_line(exc: BaseException) -> str:
    msg = getattr(exc, "message", None) or str(exc)
    return " ".join(str(msg).split("\n\n")[0].split()) or type(exc).__name__


def _chain_text(exc: BaseException) -> str:
    """'Failed to parse inventory: <innermost reason>' as one line, without ansible's decorations."""
    parts = [_one_line(e) for e in _chain(exc)]
    reasons = [p for p in parts if not p.startswith("Failed to parse inventory")] or parts
    return "failed to parse inventory: " + reasons[-1].rstrip(".")


def _line_from_chain(exc: BaseException, path: str) -> int | None:
    ans = _ansible()
    for e in _chain(exc):
        origin = ans.origin_of(getattr(e, "obj", None))
        if origin is not None and origin.line_num and origin.path == path:
            return int(origin.line_num)
        m = re.search(re.escape(path) + r":(\d+)", str(e)) or re.search(r"\bline (\d+)", str(e))
        if m:
            return int(m.group(1))
    return None


def _line_from_text(path: str, message: str) -> int | None:
    """Find the offending line by the text ansible quotes (``got: [bad``, ``'[a b]'``, ``[g:vars]``)."""
    needles = re.findall(r"got: (.+)$|'([^']+)'|(\[[^\]\s]+\])", message)
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return None
    for groups in needles:
        needle = next(g for g in groups if g).strip()
        for number, text in enumerate(lines, 1):
            if text.strip() == needle or (needle in text and not text.lstrip().startswith(("#", ";"))):
                return number
    return None


def _strict_yaml_warnings(path: Path, said: list[str]) -> None:
    """The yaml plugin only warns about keys it skips (``host:`` for ``hosts:``): make them errors."""
    for msg in said:
        m = re.match(r"Skipping (unexpected key|key) \((.+?)\) in group \((.+?)\)", msg)
        if m:
            kind, key, group = m.groups()
            what = "is not a mapping" if kind == "key" else "is not one of hosts, vars, children"
            source = _yaml_source(path)
            raise ConfigError(f"key {key!r} in group {group!r} {what}", str(source),
                              _yaml_key_line(source, key, group))
        m = re.match(r"Skipping '(.+?)' as this is not a valid group definition", msg)
        if m:
            source = _yaml_source(path)
            raise ConfigError(f"group {m.group(1)!r} is not a mapping (expected hosts, vars, children)",
                              str(source), _yaml_key_line(source, m.group(1), None))


def _yaml_source(path: Path) -> Path:
    if path.is_file():
        return path
    return next((p for p in sorted(path.iterdir()) if p.suffix in _YAML_EXT), path)


def _yaml_key_line(path: Path, key: str, parent: str | None) -> int | None:
    import yaml

    try:
        root = yaml.compose(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    stack: list[tuple[Any, str | None]] = [(root, None)]
    while stack:
        node, above = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == key and (parent is None or above == parent):
                    return int(k.start_mark.line) + 1
                stack.append((v, str(k.value) if k.value not in ("children", "hosts", "vars") else above))
    return None


# ---------------------------------------------------------------- hosts and their variables

def _build_host(name: str, raw: Mapping[str, Any], magic: set[str], inventory: Path) -> Host:
    ans = _ansible()
    origins = {k: ans.origin_of(v) for k, v in raw.items()}
    if isinstance(raw.get("rails"), list):  # each NIC of a YAML rails: list has its own line
        origins.update({f"rails[{i}]": ans.origin_of(item) or origins.get("rails")
                        for i, item in enumerate(raw["rails"])})

    def where(var: str) -> tuple[str, int | None]:
        origin = origins.get(var)
        if origin is not None and origin.path:
            return str(origin.path), origin.line_num
        return str(inventory), None

    groups = tuple(str(g) for g in raw.get("group_names", ()))
    values = {str(k): _plain(v) for k, v in raw.items() if k not in magic}
    base = inventory if inventory.is_dir() else inventory.parent
    values, rails, _auto = host_rails(name, values, where)
    values = validate_bench_vars(name, values, where)
    return Host(name=name, groups=groups, vars=values, data_ip=values.get("data_ip"), rails=rails,
                **connection_fields(name, values, base, where))


def _plain(value: Any) -> Any:
    """Ansible's tagged values (2.19+) as plain Python; vault-encrypted values are not decrypted."""
    if type(value).__name__ in ("EncryptedString", "AnsibleVaultEncryptedUnicode"):
        return VAULT
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    return str(value)
