"""Suite files: lookup, validation errors with exact lines, overrides, sweep expansion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from benchharness.config.suites import (
    Suite,
    expand_cases,
    find_suite,
    list_suites,
    load_suite,
    suite_dirs,
)
from benchharness.core.errors import ConfigError, UsageError

FIXTURES = Path(__file__).parent / "fixtures" / "suites"
REPO_SUITES = Path(__file__).resolve().parent.parent / "suites"

TELEMETRY_DEFAULTS = {"telemetry": "on", "telemetry_interval": 1.0, "preflight": "warn"}


# ---------------------------------------------------------------- validation errors

def _expectations(path: Path) -> tuple[int | None, list[str]]:
    line: int | None = None
    fragments = []
    for text in path.read_text().splitlines():
        if m := re.match(r"# expect-line: (\S+)", text):
            line = None if m.group(1) == "none" else int(m.group(1))
        elif m := re.match(r"# expect: (.+)", text):
            fragments.append(m.group(1))
    assert fragments, f"{path.name} has no '# expect:' header"
    return line, fragments


BAD = sorted((FIXTURES / "bad").glob("*.yaml"))


def test_every_error_kind_has_a_fixture() -> None:
    names = {p.stem for p in BAD}
    for kind in ("syntax", "unknown_top_key", "unknown_test_key", "wrong_type_repeat", "empty_sweep",
                 "unknown_tool", "unknown_param", "check_params", "unknown_pattern",
                 "unsupported_pattern", "zip_lengths", "duplicate_names", "repeat_zero"):
        assert kind in names


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_suite_names_file_line_and_key(path: Path, fake_tools: dict) -> None:
    line, fragments = _expectations(path)
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    err = info.value
    assert err.path == str(path)
    assert err.line == line
    message = str(err)
    prefix = f"{path}:{line}: " if line else f"{path}: "
    assert message.startswith(prefix), message
    for fragment in fragments:
        assert fragment in message
    assert "\n" not in message


def test_check_params_error_points_at_the_param_the_adapter_names(fake_tools: dict, tmp_path: Path) -> None:
    path = tmp_path / "proto.yaml"
    path.write_text("tests:\n  - name: t\n    tool: fakeperf\n    params:\n      streams: 2\n"
                    "      protocol: sctp\n      length: 1K\n")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.line == 6
    assert str(info.value) == f"{path}:6: test 't': fakeperf parameter protocol='sctp': use tcp or udp"


def test_a_mapping_parameter_takes_plain_values_only(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_text("tests:\n  - name: t\n    tool: ucx_perftest\n    pattern: pairs\n"
                    "    params: {test: tag_bw, env: {UCX_UD_TIMEOUT: 3s}}\n")
    assert load_suite(path).tests[0].params["env"] == {"UCX_UD_TIMEOUT": "3s"}
    path.write_text("tests:\n  - name: t\n    tool: ucx_perftest\n    pattern: pairs\n"
                    "    params: {test: tag_bw, env: {UCX_UD_TIMEOUT: [1s, 3s]}}\n")
    with pytest.raises(ConfigError, match=r"env.yaml:5: test 't': env: 'UCX_UD_TIMEOUT' must map to a plain value"):
        load_suite(path)


# ---------------------------------------------------------------- good files

def test_good_suite_structure(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml")
    assert isinstance(suite, Suite)
    assert suite.name == "sweep"
    assert suite.description == "Fake-tool suite for override and planning tests"
    assert suite.settings == {"duration": 2, "repeat": 1, "base_port": 6000, "timeout": 30.0, **TELEMETRY_DEFAULTS}
    first, second, coll = suite.tests
    assert (first.name, first.tool, first.pattern, first.sweep, first.repeat, first.hosts) == (
        "tcp-length", "fakeperf", "all-pairs", "matrix", 2, "all")
    assert first.line == 8
    # duration flows from settings into the params of tools that know it ...
    assert first.params == {"length": ["128K", "1M"], "streams": [1, 4], "duration": 2}
    assert first.lines["params.duration"] == 3
    # ... unless the test sets it itself
    assert second.params["duration"] == 10
    assert second.repeat == 1
    assert coll.params == {"op": "all_reduce", "duration": 2}


def test_anchors_and_extension_keys(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "anchors.yaml")
    assert [(t.name, t.tool, t.pattern) for t in suite.tests] == [("a", "fakeperf", "pairs"),
                                                                   ("b", "fakeperf", "pairs")]
    assert suite.tests[1].params == {"streams": 2}


def test_pattern_defaults_to_pairs_or_the_tools_first(fake_tools: dict, tmp_path: Path) -> None:
    path = tmp_path / "defaults.yaml"
    path.write_text("tests:\n  - {name: p, tool: fakeperf}\n  - {name: c, tool: fakecoll}\n")
    suite = load_suite(path)
    assert [t.pattern for t in suite.tests] == ["pairs", "group"]
    assert suite.description == ""
    assert suite.settings == {"repeat": 1, "base_port": 5201, "timeout": 120.0, **TELEMETRY_DEFAULTS}


# ---------------------------------------------------------------- expand_cases

def test_matrix_first_param_varies_slowest(fake_tools: dict) -> None:
    test = load_suite(FIXTURES / "good" / "sweep.yaml").tests[0]
    assert expand_cases(test) == [
        {"length": "128K", "streams": 1, "duration": 2},
        {"length": "128K", "streams": 4, "duration": 2},
        {"length": "1M", "streams": 1, "duration": 2},
        {"length": "1M", "streams": 4, "duration": 2},
    ]


def test_size_range_is_swept_and_kept_in_written_form(fake_tools: dict) -> None:
    test = load_suite(FIXTURES / "good" / "sweep.yaml").tests[1]
    assert [c["size"] for c in expand_cases(test)] == ["1K", "2K", "4K"]
    assert all(c["duration"] == 10 for c in expand_cases(test))


def test_zip_pairs_lists_and_broadcasts_scalars(fake_tools: dict) -> None:
    test = load_suite(FIXTURES / "good" / "zip.yaml").tests[0]
    assert expand_cases(test) == [
        {"length": "1K", "streams": 1, "protocol": "tcp"},
        {"length": "64K", "streams": 2, "protocol": "tcp"},
        {"length": "1M", "streams": 8, "protocol": "tcp"},
    ]


def test_no_sweep_is_one_case(fake_tools: dict) -> None:
    test = load_suite(FIXTURES / "good" / "sweep.yaml").tests[2]
    assert expand_cases(test) == [{"op": "all_reduce", "duration": 2}]


# ---------------------------------------------------------------- overrides

def test_override_setting_flows_everywhere_and_wins_over_tests(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml", {"duration": "5"})
    assert suite.settings["duration"] == 5
    assert [t.params["duration"] for t in suite.tests] == [5, 5, 5]


def test_override_list_becomes_a_sweep(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml", {"length": "[1K,4K]", "streams": "2"})
    cases = expand_cases(suite.tests[0])
    assert [(c["length"], c["streams"]) for c in cases] == [("1K", 2), ("4K", 2)]
    # only tests whose tool has the parameter get it
    assert "length" in suite.tests[1].params and "length" not in suite.tests[2].params


def test_override_size_range(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml", {"size": "8..32 x2"})
    assert [c["size"] for c in expand_cases(suite.tests[1])] == ["8", "16", "32"]


def test_override_repeat_wins_over_test_repeat(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml", {"repeat": "3"})
    assert [t.repeat for t in suite.tests] == [3, 3, 3]
    assert suite.settings["repeat"] == 3


def test_override_timeout_and_base_port(fake_tools: dict) -> None:
    suite = load_suite(FIXTURES / "good" / "sweep.yaml", {"timeout": "2m", "base_port": "7000"})
    assert suite.settings["timeout"] == 120.0
    assert suite.settings["base_port"] == 7000


def test_unknown_override_lists_known_keys(fake_tools: dict) -> None:
    with pytest.raises(UsageError) as info:
        load_suite(FIXTURES / "good" / "sweep.yaml", {"x": "1"})
    assert str(info.value) == (
        "unknown parameter 'x' for suite sweep; known: base_port, bidir, counters_interval, duration, isolate, "
        "isolation_bw_share, isolation_lat_factor, label, length, max_connections, module_interval, "
        "op, power_interval, preflight, protocol, rails, repeat, size, sizes, streams, telemetry, telemetry_interval, timeout")


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("streams", "64", "fakeperf parameter streams=64: at most 16"),
    ("repeat", "0", "repeat must be a whole number >= 1, not 0"),
    ("base_port", "abc", "base_port must be a whole number 1..65535, not 'abc'"),
    ("length", "[]", "length is an empty list"),
    ("length", "4K..1K", "size range runs backwards"),
    ("duration", "{a: 1}", "use a value or a list of values"),
    ("duration", "", "duration= needs a value"),
    ("length", "[1K", "cannot read length=[1K"),
])
def test_bad_override_is_a_usage_error_naming_the_command_line(
        fake_tools: dict, key: str, value: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        load_suite(FIXTURES / "good" / "sweep.yaml", {key: value})
    assert not isinstance(info.value, ConfigError)
    assert fragment in str(info.value)


# ---------------------------------------------------------------- finding and listing

def test_suite_dirs_are_the_repo_then_bench_suite_path(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_SUITE_PATH", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert suite_dirs() == [REPO_SUITES, tmp_path / "a", tmp_path / "b"]


def test_an_installed_wheel_carries_the_suites(tmp_path: Path) -> None:
    """A non-editable install finds the suites: the wheel carries suites/ as benchharness/_suites
    (setup.py), and ``bench suites`` / ``bench plan`` work from a directory outside the checkout."""
    repo = REPO_SUITES.parent
    wheels, venv, elsewhere = tmp_path / "whl", tmp_path / "venv", tmp_path / "elsewhere"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(repo), "-w", str(wheels)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("benchharness-*.whl")
    with zipfile.ZipFile(wheel) as z:
        packed = {Path(n).name for n in z.namelist() if n.startswith("benchharness/_suites/")}
    assert packed == {p.name for p in REPO_SUITES.glob("*.yaml")}
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # its dependencies from this environment (a path only: the editable install's finder there is
    # a .pth file of its own and is not run, so benchharness comes from the wheel)
    deps = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "zz-deps.pth").write_text(f"{deps}\n")
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCH_SUITE_PATH")}

    def bench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(python), "-m", "benchharness", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)

    where = subprocess.run([str(python), "-c", "import benchharness; print(benchharness.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    listed = bench("suites")
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines() if line.strip()} == {
        p.stem for p in REPO_SUITES.glob("*.yaml")}
    plan = bench("plan", "suite=rdma-bw")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.startswith(f"suite rdma-bw ({site / 'benchharness' / '_suites' / 'rdma-bw.yaml'})")


def test_find_suite_by_name_path_and_extra_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_SUITE_PATH", str(tmp_path))
    (tmp_path / "mine.yml").write_text("description: my own\ntests: []\n")
    assert find_suite("quick") == REPO_SUITES / "quick.yaml"
    assert find_suite("quick.yaml") == REPO_SUITES / "quick.yaml"
    assert find_suite("mine") == tmp_path / "mine.yml"
    assert find_suite(str(tmp_path / "mine.yml")) == tmp_path / "mine.yml"


def test_find_suite_error_lists_known_suites(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_SUITE_PATH", str(tmp_path))
    (tmp_path / "mine.yaml").write_text("tests: []\n")
    with pytest.raises(UsageError) as info:
        find_suite("nosuch")
    message = str(info.value)
    assert message.startswith("unknown suite 'nosuch'; known suites: ")
    known = message.split("known suites: ")[1].split(", ")
    assert {"quick", "tcp", "mine"} <= set(known)
    assert known == sorted(known)
    with pytest.raises(UsageError, match=r"suite file /no/such\.yaml does not exist"):
        find_suite("/no/such.yaml")


def test_list_suites_gives_one_line_descriptions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_SUITE_PATH", str(tmp_path))
    (tmp_path / "broken.yaml").write_text("tests: [\n")
    (tmp_path / "quick.yaml").write_text("description: shadowed by the repository's quick\n")
    suites = dict(list_suites())
    assert suites["quick"].startswith("Quick iperf3 TCP")
    assert suites["tcp"].startswith("iperf3 TCP")
    assert suites["broken"].startswith("(unreadable: ")
    assert all("\n" not in d for d in suites.values())


# ---------------------------------------------------------------- shipped suites, real iperf3

@pytest.mark.parametrize("name", ["quick", "tcp"])
def test_shipped_suites_load_with_the_real_iperf3_adapter(name: str) -> None:
    suite = load_suite(name)
    assert suite.path == REPO_SUITES / f"{name}.yaml"
    assert all(t.tool == "iperf3" and t.pattern == "all-pairs" for t in suite.tests)
    assert suite.description and "\n" not in suite.description


def test_quick_is_three_tcp_lengths_of_two_seconds() -> None:
    (test,) = load_suite("quick").tests
    cases = expand_cases(test)
    assert [c["length"] for c in cases] == ["16K", "128K", "1M"]
    assert all(c["protocol"] == "tcp" and c["streams"] == 1 and c["duration"] == 2 for c in cases)


def test_tcp_suite_covers_lengths_streams_bidir_and_udp_small_packets() -> None:
    suite = load_suite("tcp")
    assert suite.settings["duration"] == 3
    tcp, udp = suite.tests
    tcp_cases = expand_cases(tcp)
    assert {(c["length"], c["streams"]) for c in tcp_cases} == {
        ("16K", 1), ("16K", 4), ("1M", 1), ("1M", 4)}
    assert all(c["bidir"] is True and c["protocol"] == "tcp" for c in tcp_cases)
    (udp_case,) = expand_cases(udp)
    assert udp_case["protocol"] == "udp" and udp_case["length"] == 64


def test_shipped_suite_override_is_checked_by_the_real_adapter() -> None:
    with pytest.raises(UsageError, match="protocol"):
        load_suite("quick", {"protocol": "sctp"})
    suite = load_suite("quick", {"duration": "5", "length": "[1K,4K]"})
    assert [(c["length"], c["duration"]) for c in expand_cases(suite.tests[0])] == [("1K", 5), ("4K", 5)]


def test_a_setting_or_override_no_tool_uses_is_an_error(fake_tools: dict, tmp_path: Path) -> None:
    path = tmp_path / "coll.yaml"
    path.write_text("tests:\n  - {name: c, tool: fakecoll}\n")
    with pytest.raises(UsageError, match="unknown parameter 'streams' for suite coll; known: base_port, "
                                         "counters_interval, duration, isolate, isolation_bw_share, isolation_lat_factor, "
                                         "max_connections, module_interval, op, power_interval, preflight, rails, repeat, sizes, telemetry, telemetry_interval, timeout"):
        load_suite(path, {"streams": "2"})
    path.write_text("settings:\n  streams: 2\ntests:\n  - {name: c, tool: fakecoll}\n")
    with pytest.raises(ConfigError, match=r"coll\.yaml:2: settings: unknown key 'streams'"):
        load_suite(path)


def test_a_list_setting_is_swept_in_every_test_that_takes_it(fake_tools: dict, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("settings: {duration: [1, 3]}\ntests:\n  - {name: c, tool: fakecoll}\n")
    assert [c["duration"] for c in expand_cases(load_suite(path).tests[0])] == [1, 3]


def test_requires_is_a_name_or_a_list_and_acceptance_needs_torch_only_for_its_torch_test(
        fake_tools: dict, tmp_path: Path) -> None:
    path = tmp_path / "req.yaml"
    path.write_text("tests:\n  - name: a\n    tool: fakeperf\n    requires: torch\n"
                    "  - name: b\n    tool: fakeperf\n    requires: [torch, torch]\n  - name: c\n    tool: fakeperf\n")
    assert [t.requires for t in load_suite(path).tests] == [("torch",), ("torch",), ()]


def test_shipped_acceptance_runs_torch_where_the_hosts_have_it() -> None:
    tests = {t.name: t for t in load_suite("acceptance").tests}
    assert tests["torch-allreduce"].tool == "torch" and tests["torch-allreduce"].requires == ("torch",)
    assert [n for n, t in tests.items() if t.requires] == ["torch-allreduce"]
