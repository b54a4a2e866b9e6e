"""Suite files: find them, read them with line numbers, validate them, expand their sweeps.

A suite is YAML (see ``suites/quick.yaml``)::

    description: one line, shown by `bench suites`
    settings: {duration: 2, repeat: 1, base_port: 5201, timeout: 120}
    tests:
      - name: tcp-length
        tool: iperf3
        pattern: all-pairs      # see PATTERNS
        params: {length: [128K, 1M], streams: [1, 4]}   # list values are swept

Settings that name a parameter of a test's tool (``duration``) flow into that test's params
unless the test sets them. Every error names the file, the line and the key.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from benchharness import tools
from benchharness.core.errors import ConfigError, UsageError
from benchharness.core.units import format_size, parse_duration, size_range
from benchharness.core.values import SIZE_PARAMS
from benchharness.core.yamllines import LineMap, LineSeq, read_yaml
from benchharness.tools.base import ToolAdapter

PATTERNS = ("pairs", "all-pairs", "ring", "one-to-many", "incast", "all-to-all", "scaling", "group",
            "self", "gpu-pairs")
SWEEPS = ("matrix", "zip")
#: Parameters whose values are byte sizes: a range string ("8..8G x2") in one is swept.
SETTING_DEFAULTS: dict[str, Any] = {"repeat": 1, "base_port": 5201, "timeout": 120.0,
                                    "telemetry": "on", "telemetry_interval": 1.0, "preflight": "warn"}
#: telemetry: on (facts, preflight, per-step samplers and counters) | facts (no per-step) | off.
TELEMETRY_MODES = ("on", "facts", "off")
#: preflight: warn (stored and shown) | enforce (a failed check fails the run, exit 1) | off.
PREFLIGHT_MODES = ("warn", "enforce", "off")
#: Settings of the planner itself; any other setting must be a parameter of some test's tool.
CORE_SETTINGS = tuple(SETTING_DEFAULTS)
#: Optional settings of bad-link isolation (see ``benchharness.planning.isolation``); no defaults are
#: filled in: isolation reads ``settings.get(key, default)``.
ISOLATION_SETTINGS = ("isolate", "isolation_bw_share", "isolation_lat_factor")
#: Optional settings without a default: isolation's, ``counters_interval`` (seconds between the
#: sampler's counter snapshots within a step, ``telemetry/series.py``; unset or 0: start and end only)
#: and ``module_interval`` (seconds between its transceiver reads, ``telemetry/module_step.py``;
#: unset: ``telemetry.hooks.MODULE_INTERVAL``, 0: off); ``power_interval`` (seconds between BMC node
#: power reads, ``telemetry/power.py``; unset: ``telemetry.hooks.POWER_INTERVAL``, 0: off).
OPTIONAL_SETTINGS = (*ISOLATION_SETTINGS, "counters_interval", "module_interval", "power_interval")
#: Optional settings of the runner: ``max_connections`` bounds how many hosts the controller
#: connects to, probes or reads clocks of at once (default ``execution.runner.MAX_CONNECTIONS``).
RUNNER_SETTINGS = ("max_connections",)
#: The largest ``max_connections`` accepted (each is a thread and a socket on the controller).
MAX_CONNECTIONS_LIMIT = 1024
#: Settings that belong to the planner and never flow into tool parameters.
_PLANNER_SETTINGS = {"repeat", "base_port", "telemetry", "telemetry_interval", "preflight", "counters_interval",
                     "module_interval", "power_interval"}
TOP_KEYS = ("description", "settings", "tests", "verdicts")
TEST_KEYS = ("name", "tool", "hosts", "pattern", "pairs", "sweep", "repeat", "params", "checks", "rails",
             "health", "requires", "path_spread", "stragglers")
#: The status a test's findings get: ``path_spread:`` (traffic concentrated on few switch paths,
#: analysis/path_spread.py) and ``stragglers:`` (a slow rank, analysis/stragglers.py; it turns the
#: tool's ``per_iteration`` on, nccl-tests ``-I 1 -J``).
FINDING_STATUS = ("warn", "fail")
#: ``requires:`` of a test: what some hosts may lack. A step whose tool fails for want of it
#: (failure kind ``tool_missing``) is skipped, "skipped: torch not found on h3" (JUnit
#: ``<skipped>``, its checks ``info``), never failed; without ``requires:`` it fails as before.
REQUIREMENTS = ("torch",)
#: ``rails:`` of a pair-tool test: aligned (rail i <-> rail i, all rails at once), each (one rail
#: at a time), cross (rail i <-> rail j, i != j, one combination at a time), first (only each
#: host's first NIC, said on purpose: without it a multi-NIC host that would be tested on fewer
#: NICs than it has is a planning error).
RAIL_MODES = ("aligned", "each", "cross", "first")
#: The command-line override ``rails=MODE``: every test with a rail pattern takes it.
RAILS_OVERRIDE = "rails"
#: Patterns that run per rail when a test sets ``rails:``.
RAIL_PATTERNS = ("pairs", "all-pairs", "ring", "self", "incast", "one-to-many")
#: "Line" of a value that came from the command line rather than the file.
CMDLINE = -1


@dataclass(frozen=True)
class TestSpec:
    """One validated test of a suite; ``params`` may hold lists (swept) and range strings."""

    __test__ = False  # not a pytest test class

    name: str
    tool: str
    hosts: str = "all"
    pattern: str = "pairs"
    sweep: str = "matrix"
    repeat: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    pairs: tuple[tuple[str, str], ...] | None = None
    #: Line of each test key and of each ``params.KEY`` (CMDLINE for command-line overrides).
    lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    #: Pass/fail checks (``benchharness.config.thresholds``), validated, as plain data.
    checks: tuple[dict[str, Any], ...] = ()
    #: How the test uses each host's NICs (RAIL_MODES); None: the host's first NIC, as before.
    rails: str | None = None
    #: Fabric health limits (``telemetry.health.parse_health``), validated; None: not judged.
    health: dict[str, Any] | None = None
    #: What the test needs that a host may lack (REQUIREMENTS): without it a step is skipped, not failed.
    requires: tuple[str, ...] = ()
    #: Judge the test's samples for traffic concentrated on few switch paths, with this status.
    path_spread: str | None = None
    #: Name the ranks slower than their peers (per-iteration timing), with this status.
    stragglers: str | None = None


@dataclass(frozen=True)
class Suite:
    """A validated suite file with its overrides applied."""

    name: str
    path: Path
    description: str
    settings: dict[str, Any]
    tests: list[TestSpec]
    setting_lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    #: The suite's ``verdicts:`` policy (baseline, preflight, regression), validated; None if absent.
    verdicts: dict[str, Any] | None = None


# ---------------------------------------------------------------- finding suites

#: The suites an installed wheel carries (setup.py copies the top-level ``suites/`` there).
PACKAGED_SUITES = Path(__file__).resolve().parents[1] / "_suites"
#: The suites of a checkout (and of an editable install).
CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "suites"


def suite_dirs() -> list[Path]:
    """Where suites are looked up: the package's own (an installed wheel) or else the checkout's
    ``suites/``, then ``BENCH_SUITE_PATH`` dirs."""
    dirs = [PACKAGED_SUITES if PACKAGED_SUITES.is_dir() else CHECKOUT_SUITES]
    extra = os.environ.get("BENCH_SUITE_PATH", "")
    dirs += [Path(p).expanduser() for p in extra.split(os.pathsep) if p]
    return dirs


def _suite_files() -> Iterator[tuple[str, Path]]:
    seen: set[str] = set()
    for directory in suite_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.suffix in (".yaml", ".yml") and path.is_file() and path.stem not in seen:
                seen.add(path.stem)
                yield path.stem, path


def find_suite(name_or_path: str) -> Path:
    """The file of a suite given by name (``quick``) or path; UsageError listing known suites."""
    given = Path(name_or_path).expanduser()
    if given.is_file():
        return given
    if os.sep in name_or_path:
        raise UsageError(f"suite file {name_or_path} does not exist")
    stem = given.stem if given.suffix in (".yaml", ".yml") else name_or_path
    known = dict(_suite_files())
    if stem in known:
        return known[stem]
    raise UsageError(f"unknown suite {name_or_path!r}; known suites: {', '.join(sorted(known)) or 'none'}")


def list_suites() -> list[tuple[str, str]]:
    """(name, description) of every suite found, sorted by name."""
    out = []
    for name, path in _suite_files():
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
            desc = doc.get("description", "") if isinstance(doc, dict) else ""
            desc = str(desc).strip().splitlines()[0] if desc else ""
        except (OSError, yaml.YAMLError) as exc:
            desc = f"(unreadable: {str(exc).splitlines()[0]})"
        out.append((name, desc))
    return sorted(out)


# ---------------------------------------------------------------- validation helpers

def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "empty" if value is None else repr(value)


def _swept(name: str, value: Any) -> list[Any] | None:
    """The values a parameter takes across cases, or None when it is the same in every case."""
    if isinstance(value, list):
        return list(value)
    if name in SIZE_PARAMS and isinstance(value, str) and ".." in value:
        return [format_size(n) for n in size_range(value)]
    return None


def expand_cases(test: TestSpec) -> list[dict[str, Any]]:
    """One dict of scalar parameters per case: the cross product (matrix) or zip of swept ones.

    In a matrix the first swept parameter varies slowest. Scalars appear in every case.
    """
    axes = {k: v for k, v in ((k, _swept(k, v)) for k, v in test.params.items()) if v is not None}
    names = list(axes)
    if not names:
        combos: list[tuple[Any, ...]] = [()]
    elif test.sweep == "zip":
        combos = list(zip(*axes.values(), strict=True))
    else:
        combos = list(itertools.product(*axes.values()))
    return [{k: (dict(zip(names, combo, strict=True))[k] if k in axes else v)
             for k, v in test.params.items()} for combo in combos]


class _Checker:
    """Validation of one file; ``fail`` raises with the file and line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, msg: str, line: int | None) -> NoReturn:
        if line == CMDLINE:
            raise UsageError(f"{msg} (set on the command line)")
        raise ConfigError(msg, str(self.path), line)

    def mapping(self, value: Any, what: str, line: int | None) -> LineMap:
        if not isinstance(value, LineMap):
            self.fail(f"{what} must be a mapping, not {_type_name(value)}", line)
        return value

    def keys(self, data: LineMap, allowed: tuple[str, ...], what: str, extensions: bool = False) -> None:
        for key in data:
            if key not in allowed and not (extensions and str(key).startswith("x-")):
                self.fail(f"{what}: unknown key {key!r}; allowed: {', '.join(allowed)}",
                          data.key_lines.get(key, data.line))

    def string(self, data: LineMap, key: str, what: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if value is None:
            self.fail(f"{what}: missing key {key!r}", data.line)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{what}: {key} must be a non-empty string, not {value!r}", data.key_lines.get(key))
        return value.strip()

    def choice(self, value: str, choices: tuple[str, ...] | list[str], what: str, line: int | None) -> None:
        if value not in choices:
            self.fail(f"{what}: {value!r} is not one of {', '.join(choices)}", line)

    def count(self, value: Any, what: str, line: int | None, lo: int = 1, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi and value > hi):
            bounds = f"{lo}..{hi}" if hi else f">= {lo}"
            self.fail(f"{what} must be a whole number {bounds}, not {value!r}", line)
        return int(value)

    def param_mapping(self, name: str, value: Mapping[Any, Any], what: str, line: int | None) -> None:
        """A parameter that is a mapping by nature (``env: {NAME: value}``): plain values, not swept."""
        for key, item in value.items():
            if not isinstance(key, str) or not _is_scalar(item):
                self.fail(f"{what}: {name}: {key!r} must map to a plain value, not {_type_name(item)}", line)

    def param_value(self, name: str, value: Any, what: str, line: int | None) -> None:
        if isinstance(value, list):
            if not value:
                self.fail(f"{what}: {name} is an empty list; a swept parameter needs at least one value",
                          line)
            for item in value:
                if not _is_scalar(item):
                    self.fail(f"{what}: {name} values must be plain values, not {_type_name(item)}", line)
        elif not _is_scalar(value):
            self.fail(f"{what}: {name} must be a value or a list of values, not {_type_name(value)}", line)
        try:
            _swept(name, value)
        except ValueError as exc:
            self.fail(f"{what}: {name}: {exc}", line)


@dataclass
class _Draft:
    """A test being validated: mutable, with the lines of its keys and params."""

    name: str
    adapter: ToolAdapter
    data: LineMap
    params: dict[str, Any]
    lines: dict[str, int]
    repeat: int | None = None
    #: ``rails=`` from the command line (wins over the test's ``rails:``).
    rails: str | None = None


def _parse_override(key: str, text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        raise UsageError(f"cannot read {key}={text}: {str(exc).splitlines()[0]}") from exc
    if value is None:
        raise UsageError(f"{key}= needs a value")
    if isinstance(value, dict) or (isinstance(value, list) and not all(map(_is_scalar, value))):
        raise UsageError(f"{key}={text}: use a value or a list of values like [1K,4K]")
    return value


def _empty_map(line: int) -> LineMap:
    data = LineMap()
    data.line, data.key_lines = line, {}
    return data


def _blamed(message: str, case: Mapping[str, Any]) -> str | None:
    """The parameter an adapter's error message names (longest name first: ``sizes`` before ``size``)."""
    for key in sorted(case, key=len, reverse=True):
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", message):
            return key
    return None


def load_suite(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> Suite:
    """Read and validate a suite, applying command-line ``overrides`` (``{"duration": "5"}``).

    An override names a setting or a parameter of some test's tool; its value is read as a YAML
    scalar or flow list (``[1K,4K]``) and wins over the file. Raises ConfigError (file:line) for
    a bad file and UsageError for a bad override.
    """
    path = find_suite(str(name_or_path))
    check = _Checker(path)
    doc = read_yaml(path)
    if doc is None:
        check.fail("the suite is empty; it needs at least 'tests:'", None)
    doc = check.mapping(doc, "a suite", getattr(doc, "line", 1))
    check.keys(doc, TOP_KEYS, "suite", extensions=True)  # x-...: room for YAML anchors
    description = ""
    if "description" in doc:
        description = check.string(doc, "description", "suite")
        if "\n" in description:
            check.fail("suite: description must be one line", doc.key_lines["description"])
    raw_settings = check.mapping(doc.get("settings", _empty_map(doc.line)), "settings",
                                 doc.key_lines.get("settings"))
    settings, setting_lines = dict(SETTING_DEFAULTS), {}
    for key, value in raw_settings.items():
        if not isinstance(key, str):
            check.fail(f"settings: key {key!r} must be a name", raw_settings.key_lines[key])
        settings[key], setting_lines[key] = value, raw_settings.key_lines[key]
    tests = doc.get("tests")
    if not isinstance(tests, LineSeq) or not tests:
        check.fail("suite: 'tests' must be a non-empty list of tests", doc.key_lines.get("tests", doc.line))
    drafts: list[_Draft] = []
    for item, line in zip(tests, tests.item_lines, strict=True):
        drafts.append(_draft(check, item, line, drafts))

    known = set(settings) | set(CORE_SETTINGS) | set(OPTIONAL_SETTINGS) | set(RUNNER_SETTINGS) | \
        {p for d in drafts for p in d.adapter.params} | {RAILS_OVERRIDE}
    for key, text in (overrides or {}).items():
        if key == RAILS_OVERRIDE:
            if text not in RAIL_MODES:
                raise UsageError(f"rails={text}: expected one of {', '.join(RAIL_MODES)}")
            for d in drafts:
                d.rails = str(text)
            continue
        if key not in known:
            raise UsageError(f"unknown parameter {key!r} for suite {path.stem}; "
                             f"known: {', '.join(sorted(known))}")
        value = _parse_override(key, text)
        if key in settings or key in CORE_SETTINGS or key in OPTIONAL_SETTINGS or key in RUNNER_SETTINGS:
            settings[key], setting_lines[key] = value, CMDLINE
        for d in drafts:
            if key == "repeat":
                d.repeat = None  # the command line wins over each test's own repeat
            if key in d.adapter.params:
                d.params[key], d.lines[f"params.{key}"] = value, CMDLINE
    _check_settings(check, settings, setting_lines, drafts)
    specs = [_finish(check, d, settings, setting_lines) for d in drafts]
    verdicts = _verdict_policy(check, doc)
    return Suite(path.stem, path, description, settings, specs, setting_lines, verdicts)


def _verdict_policy(check: _Checker, doc: LineMap) -> dict[str, Any] | None:
    """The validated ``verdicts:`` mapping (see ``thresholds.parse_policy``)."""
    from benchharness.config.thresholds import CheckError, check_to_data, parse_policy

    if "verdicts" not in doc:
        return None
    raw = check.mapping(doc["verdicts"], "verdicts", doc.key_lines["verdicts"])
    try:
        parse_policy(raw)
    except CheckError as exc:
        check.fail(str(exc), raw.key_lines.get(exc.key, raw.line))
    return check_to_data(raw)


def _checks(check: _Checker, data: LineMap, what: str) -> tuple[dict[str, Any], ...]:
    """The validated ``checks:`` of a test (see ``thresholds.parse_check``)."""
    from benchharness.config.thresholds import CheckError, check_to_data, parse_check

    raw = data.get("checks")
    if raw is None:
        return ()
    if not isinstance(raw, LineSeq):
        check.fail(f"{what}: checks must be a list of checks like "
                   f"- {{metric: bw_avg_gbps, min: 90% line_rate}}", data.key_lines["checks"])
    out = []
    for item, line in zip(raw, raw.item_lines, strict=True):
        try:
            parse_check(item)
        except CheckError as exc:
            where = item.key_lines.get(exc.key, item.line) if isinstance(item, LineMap) else line
            check.fail(f"{what}: checks: {exc}", where)
        out.append(check_to_data(item))
    return tuple(out)


def _health(check: _Checker, data: LineMap, what: str) -> dict[str, Any] | None:
    """The validated ``health:`` limits of a test (see ``telemetry.health.parse_health``)."""
    from benchharness.telemetry.health import HealthError, parse_health

    if data.get("health") is None:
        return None
    raw = check.mapping(data["health"], f"{what}: health", data.key_lines["health"])
    try:
        return parse_health(raw)
    except HealthError as exc:
        check.fail(f"{what}: {exc}", raw.key_lines.get(exc.key, raw.line) if exc.key else raw.line)


def _requires(check: _Checker, data: LineMap, what: str) -> tuple[str, ...]:
    """``requires: torch`` or ``requires: [torch]``: names from REQUIREMENTS."""
    raw, line = data.get("requires"), data.key_lines.get("requires")
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        check.fail(f"{what}: requires must be a name or a list of names ({', '.join(REQUIREMENTS)}), "
                   f"not {raw!r}", line)
    for item in items:
        check.choice(item, REQUIREMENTS, f"{what}: requires", line)
    return tuple(dict.fromkeys(items))


def _finding_status(check: _Checker, data: LineMap, what: str, key: str) -> str | None:
    """``path_spread`` / ``stragglers``: ``warn`` (or ``true``) / ``fail``, the status of the
    test's findings; None: not judged."""
    raw, line = data.get(key), data.key_lines.get(key)
    if raw is None or raw is False:
        return None
    value = "warn" if raw is True else str(raw)
    check.choice(value, FINDING_STATUS, f"{what}: {key}", line)
    return value


def _draft(check: _Checker, item: Any, line: int, earlier: list[_Draft]) -> _Draft:
    data = check.mapping(item, "each test", line)
    name = check.string(data, "name", f"test at line {data.line}")
    what = f"test {name!r}"
    check.keys(data, TEST_KEYS, what)
    for other in earlier:
        if other.name == name:
            check.fail(f"{what}: duplicate test name (first at line {other.data.line})",
                       data.key_lines["name"])
    tool_name = check.string(data, "tool", what)
    try:
        adapter = tools.get_tool(tool_name)
    except UsageError as exc:
        check.fail(f"{what}: {exc}", data.key_lines["tool"])
    raw = check.mapping(data.get("params", _empty_map(data.line)), f"{what}: params",
                        data.key_lines.get("params"))
    lines = dict(data.key_lines)
    params = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            check.fail(f"{what}: parameter {key!r} must be a name", raw.key_lines[key])
        params[key], lines[f"params.{key}"] = value, raw.key_lines[key]
    repeat = check.count(data["repeat"], f"{what}: repeat", lines["repeat"]) if "repeat" in data else None
    return _Draft(name, adapter, data, params, lines, repeat)


def _check_settings(check: _Checker, settings: dict[str, Any], lines: Mapping[str, int],
                    drafts: list[_Draft]) -> None:
    tool_params = {p for d in drafts for p in d.adapter.params}
    for key, value in settings.items():
        line = lines.get(key)
        if key not in CORE_SETTINGS and key not in tool_params and key not in OPTIONAL_SETTINGS \
                and key not in RUNNER_SETTINGS:
            known = ", ".join(sorted({*CORE_SETTINGS, *OPTIONAL_SETTINGS, *RUNNER_SETTINGS, *tool_params}))
            check.fail(f"settings: unknown key {key!r}; known: {known}", line)
        check.param_value(key, value, "settings", line)
    check.count(settings["repeat"], "settings: repeat", lines.get("repeat"))
    check.count(settings["base_port"], "settings: base_port", lines.get("base_port"), 1, 65535)
    for key, modes in (("telemetry", TELEMETRY_MODES), ("preflight", PREFLIGHT_MODES)):
        if isinstance(settings[key], bool):  # YAML reads a bare on/off as a boolean
            settings[key] = "on" if settings[key] else "off"
            if key == "preflight" and settings[key] == "on":
                settings[key] = "warn"
        check.choice(settings[key], modes, f"settings: {key}", lines.get(key))
    interval = settings["telemetry_interval"]
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not 0.05 <= interval <= 60:
        check.fail(f"settings: telemetry_interval must be seconds between 0.05 and 60, not {interval!r}",
                   lines.get("telemetry_interval"))
    _check_isolation(check, settings, lines)
    for key in ("counters_interval", "module_interval", "power_interval"):
        every = settings.get(key)
        if key in settings and (isinstance(every, bool) or not isinstance(every, int | float)
                                or not (every == 0 or 1 <= every <= 3600)):
            check.fail(f"settings: {key} must be 0 (off) or seconds between 1 and 3600, not {every!r}",
                       lines.get(key))
    if "max_connections" in settings:
        check.count(settings["max_connections"], "settings: max_connections", lines.get("max_connections"),
                    1, MAX_CONNECTIONS_LIMIT)
    for key in ("timeout", "duration"):
        values = settings.get(key)
        for value in values if isinstance(values, list) else [values]:
            try:
                seconds = parse_duration(value) if value is not None else 1.0
            except ValueError as exc:
                check.fail(f"settings: {key}: {exc}", lines.get(key))
            if seconds <= 0:
                check.fail(f"settings: {key} must be positive, not {value!r}", lines.get(key))
    settings["timeout"] = parse_duration(settings["timeout"])


def _check_isolation(check: _Checker, settings: Mapping[str, Any], lines: Mapping[str, int]) -> None:
    """isolate: true|false; isolation_bw_share: 0 < share <= 1; isolation_lat_factor: >= 1."""
    if "isolate" in settings and not isinstance(settings["isolate"], bool):
        check.fail(f"settings: isolate must be true or false, not {settings['isolate']!r}",
                   lines.get("isolate"))
    for key, fits, what in (("isolation_bw_share", lambda v: 0 < v <= 1, "a share in (0, 1], e.g. 0.9"),
                            ("isolation_lat_factor", lambda v: v >= 1, "a factor >= 1, e.g. 2")):
        value = settings.get(key)
        if key in settings and (isinstance(value, bool) or not isinstance(value, int | float)
                                or not fits(value)):
            check.fail(f"settings: {key} must be {what}, not {value!r}", lines.get(key))


def _finish(check: _Checker, d: _Draft, settings: Mapping[str, Any], setting_lines: Mapping[str, int]
            ) -> TestSpec:
    what, adapter, data, lines = f"test {d.name!r}", d.adapter, d.data, d.lines
    for key, value in d.params.items():
        if key not in adapter.params:
            check.fail(f"{what}: unknown parameter {key!r} for tool {adapter.name}; "
                       f"known: {', '.join(adapter.params)}", lines[f"params.{key}"])
        if isinstance(adapter.params[key], Mapping) and isinstance(value, Mapping):
            check.param_mapping(key, value, what, lines[f"params.{key}"])  # env: {NAME: value}
        else:
            check.param_value(key, value, what, lines[f"params.{key}"])
    for key, value in settings.items():
        if key in setting_lines and key in adapter.params and key not in d.params \
                and key not in _PLANNER_SETTINGS:
            d.params[key], lines[f"params.{key}"] = value, setting_lines[key]

    default_pattern = "pairs" if "pairs" in adapter.patterns or "pairs" in data else adapter.patterns[0]
    pattern = check.string(data, "pattern", what, default_pattern)
    check.choice(pattern, PATTERNS, f"{what}: pattern", lines.get("pattern"))
    if pattern not in adapter.patterns:
        check.fail(f"{what}: tool {adapter.name} cannot run pattern {pattern!r}; "
                   f"it supports: {', '.join(adapter.patterns)}", lines.get("pattern"))
    pairs = None
    if "pairs" in data:
        raw = data["pairs"]
        if pattern != "pairs":
            check.fail(f"{what}: 'pairs' is only for pattern: pairs (pattern is {pattern})", lines["pairs"])
        if not isinstance(raw, list) or not raw or not all(
                isinstance(p, list) and len(p) == 2 and all(_is_scalar(h) and h is not True for h in p)
                for p in raw):
            check.fail(f"{what}: pairs must be a list of [server, client] host names, like [[h1, h2]]",
                       lines["pairs"])
        pairs = tuple((str(a), str(b)) for a, b in raw)
    sweep = check.string(data, "sweep", what, "matrix")
    check.choice(sweep, SWEEPS, f"{what}: sweep", lines.get("sweep"))
    hosts = data.get("hosts", "all")
    if isinstance(hosts, list) and hosts and all(isinstance(h, str) for h in hosts):
        hosts = ":".join(hosts)
    if not isinstance(hosts, str) or not hosts.strip():
        check.fail(f"{what}: hosts must be a host pattern like all, gpu or h1:h2, not {hosts!r}",
                   lines.get("hosts"))
    if sweep == "zip":
        axes = {k: v for k, v in ((k, _swept(k, v)) for k, v in d.params.items()) if v is not None}
        first = next(iter(axes), "")
        for key, values in axes.items():
            if len(values) != len(axes[first]):
                check.fail(f"{what}: sweep: zip needs lists of one length; {first} has "
                           f"{len(axes[first])} values, {key} has {len(values)}", lines[f"params.{key}"])
    repeat = d.repeat if d.repeat is not None else int(settings["repeat"])
    rails = None
    if d.rails is not None and pattern in RAIL_PATTERNS:
        rails, lines["rails"] = d.rails, CMDLINE
    elif data.get("rails") is not None:
        rails = check.string(data, "rails", what, "aligned")
        check.choice(rails, RAIL_MODES, f"{what}: rails", lines.get("rails"))
        if pattern not in RAIL_PATTERNS:
            check.fail(f"{what}: rails: {rails} needs a pair pattern ({', '.join(RAIL_PATTERNS)}), "
                       f"not {pattern}", lines.get("rails"))
    stragglers = _finding_status(check, data, what, "stragglers")
    params = dict(d.params)
    if stragglers:
        if "per_iteration" not in adapter.params:
            check.fail(f"{what}: stragglers needs per-iteration timing, which {adapter.name} has not "
                       "(nccl-tests, collective, torch)", data.key_lines.get("stragglers"))
        params.setdefault("per_iteration", True)
    spec = TestSpec(d.name, adapter.name, hosts, pattern, sweep, repeat, params, data.line,
                    pairs, lines, _checks(check, data, what), rails, _health(check, data, what),
                    _requires(check, data, what), _finding_status(check, data, what, "path_spread"),
                    stragglers)
    cases = expand_cases(spec)
    for case in cases:
        try:
            adapter.check_params(case)
        except ValueError as exc:
            blamed = _blamed(str(exc), case)
            line = lines.get(f"params.{blamed}") if blamed else lines.get("params", data.line)
            shown = f" (case {', '.join(f'{k}={v}' for k, v in case.items())})" if len(cases) > 1 else ""
            check.fail(f"{what}: {exc}{shown}", line)
    return spec
