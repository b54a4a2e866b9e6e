"""Run directory: atomic files, append-only samples, readable after a crash."""

from __future__ import annotations

import json
import stat

import pytest

from benchharness.core.errors import UsageError
from benchharness.core.model import Command, CommandResult, Host
from benchharness.core.naming import safe_name
from benchharness.results.store import SCHEMA_VERSION, RunDir, find_run, list_runs, new_run_id


def test_create_write_and_read_back(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r1")
    run.write_run_info({"run_id": "r1", "state": "running"})
    run.append_samples([{"test": "t", "bw_avg_gbps": 9.5}, {"test": "t", "bw_avg_gbps": 9.7}])
    run.append_samples([{"test": "u", "bw_avg_gbps": 1.0}])
    run.append_step({"step": "s1", "status": "ok"})
    info = run.run_info()
    assert info["schema_version"] == SCHEMA_VERSION and info["state"] == "running"
    assert [s["bw_avg_gbps"] for s in run.samples()] == [9.5, 9.7, 1.0]
    assert run.steps() == [{"step": "s1", "status": "ok"}]


def test_files_are_not_world_writable(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r")
    run.write_run_info({"run_id": "r"})
    run.append_samples([{"a": 1}])
    for path in [run.path, run.path / "run.json", run.path / "samples.jsonl", run.path / "raw"]:
        assert not path.stat().st_mode & stat.S_IWOTH, path


def test_a_line_cut_by_a_crash_loses_only_itself(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r")
    run.append_samples([{"n": 1}, {"n": 2}])
    with open(run.path / "samples.jsonl", "a") as fh:
        fh.write('{"n": 3, "bw_avg_g')  # the process died mid-write
    assert [s["n"] for s in run.samples()] == [1, 2]


def test_raw_output_keeps_command_line_and_exit_code(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r")
    cmd = Command(Host("h1", "198.18.0.11"), "client", ("iperf3", "-c", "198.18.0.12", "-J"), label="client-h1")
    run.write_raw("0001-tcp-h1-h2", CommandResult(cmd, 1, '{"error": "x"}', "boom\n", 1.0, 2.0))
    meta = json.loads((run.path / "raw" / "0001-tcp-h1-h2" / "client-h1.json").read_text())
    assert meta["argv"] == ["iperf3", "-c", "198.18.0.12", "-J"] and meta["rc"] == 1 and meta["host"] == "h1"
    assert (run.path / "raw" / "0001-tcp-h1-h2" / "client-h1.stderr").read_text() == "boom\n"


def test_refuses_to_reuse_a_non_empty_directory(tmp_path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x").write_text("keep me")
    with pytest.raises(UsageError, match="already exists"):
        RunDir.create(tmp_path / "r")
    assert (tmp_path / "r" / "x").read_text() == "keep me"


def test_find_run_by_path_id_prefix_and_latest(tmp_path) -> None:
    for name in ("20261130-100000-quick-aaaa", "20261130-110000-tcp-bbbb"):
        RunDir.create(tmp_path / name).write_run_info({"run_id": name})
    assert [r.path.name for r in list_runs(tmp_path)] == ["20261130-100000-quick-aaaa", "20261130-110000-tcp-bbbb"]
    assert find_run("latest", tmp_path).path.name == "20261130-110000-tcp-bbbb"
    assert find_run("20261130-10", tmp_path).path.name == "20261130-100000-quick-aaaa"
    assert find_run(str(tmp_path / "20261130-110000-tcp-bbbb")).path.name.endswith("bbbb")
    with pytest.raises(UsageError, match="ambiguous"):
        find_run("20261130", tmp_path)
    with pytest.raises(UsageError, match="no run 'nope'"):
        find_run("nope", tmp_path)


def test_newer_schema_is_refused_with_a_clear_message(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r")
    (run.path / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(UsageError, match="newer"):
        run.run_info()


def test_names_are_filesystem_safe() -> None:
    assert safe_name("../../etc/passwd") == "etc_passwd"
    assert "/" not in new_run_id("a/b c")
