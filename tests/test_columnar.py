"""The columnar copy of the samples (samples.parquet): same frames as the JSON lines, rebuilt
when missing or stale, projection and filters, partial runs."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from benchharness.analysis import frames
from benchharness.cli.main import main as bench_main
from benchharness.results import columnar
from benchharness.results.store import RunDir

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
_spec = importlib.util.spec_from_file_location("synth", FIXTURES / "synth.py")
assert _spec and _spec.loader
synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synth)


def _jsonl_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "ensure", lambda run: None)


def _norm(df: pd.DataFrame) -> pd.DataFrame:
    """A frame compared by value: all-null columns dropped, numbers as floats, the rest as text,
    columns and rows sorted."""
    df = df.dropna(axis=1, how="all")
    out = {}
    for col in sorted(df.columns):
        s = df[col]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            out[col] = s.astype(float).map(lambda v: "<NA>" if math.isnan(v) else repr(v))
        else:
            out[col] = s.map(lambda v: "<NA>" if v is None or (isinstance(v, float) and math.isnan(v))
                             else f"{type(v).__name__}:{v}")
    norm = pd.DataFrame(out)
    return norm.sort_values(list(norm.columns)).reset_index(drop=True)


def _both(run: RunDir, monkeypatch: pytest.MonkeyPatch, load: Any) -> tuple[Any, Any]:
    with monkeypatch.context() as m:
        _jsonl_only(m)
        old = load(run)
    return old, load(run)


def _copy(src: Path, tmp: Path) -> RunDir:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("samples.parquet", ".samples.parquet*"))
    return RunDir(dst)


def _synthetic(tmp: Path) -> RunDir:
    """A synthetic run plus rows of every awkward shape: lists, dicts, mixed types, counters."""
    run = synth.build_run(tmp / "synth", reps=3)
    run.append_samples([
        {"test": "nccl-x", "tool": "nccl-tests", "step": "nccl-x-r0", "rep": 0, "hosts": ["a", "b"],
         "nccl_warnings": ["NET/IB : no device", "fallback"], "busbw_GBps": 10.5, "size_bytes": 8,
         "env": {"NCCL_IB_HCA": "mlx5_0"}, "partial": True},
        {"test": "nccl-x", "tool": "nccl-tests", "step": "nccl-x-r1", "rep": 1, "hosts": ["a", "b"],
         "nccl_warnings": [], "busbw_GBps": 11, "size_bytes": 8, "partial": False},
        {"test": "odd", "tool": "x", "step": "odd-r0", "rep": 0, "label": 3, "lat_us": 1.5},
        {"test": "odd", "tool": "x", "step": "odd-r1", "rep": 1, "label": "three", "lat_us": 2},
        {"test": "odd", "tool": "x", "step": "odd-r2", "rep": 2, "label": 4, "lat_us": 2.5,
         "when": "2026-12-02T16:49:13", "day": "2026-12-02"},
        {"kind": "counters", "step": "odd-r1", "host": "a", "rx_drops": 5},
    ])
    return run


def _runs(tmp: Path) -> list[RunDir]:
    return [_copy(FIXTURES / name, tmp) for name in ("minimal", "nic-a", "nic-b")] + [_synthetic(tmp)]


@pytest.mark.parametrize("block", [columnar.BLOCK_BYTES, 700])
def test_columnar_frames_equal_the_json_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    # a small block splits the file into many parts, whose column types must be unified
    monkeypatch.setattr(columnar, "BLOCK_BYTES", block)
    for run in _runs(tmp_path):
        for load in (frames.load_samples, lambda r: frames.load_samples(r, intervals=True)):
            old, new = _both(run, monkeypatch, load)
            pd.testing.assert_frame_equal(_norm(old), _norm(new))
            assert new.attrs[frames.CASE_KEYS] == old.attrs[frames.CASE_KEYS]
        (old_s, old_i), (new_s, new_i) = _both(run, monkeypatch, lambda r: frames.load_run(r, steps_per_test=2))
        pd.testing.assert_frame_equal(_norm(old_s), _norm(new_s))
        pd.testing.assert_frame_equal(_norm(old_i), _norm(new_i))
        assert (run.path / columnar.NAME).is_file()


def test_awkward_values_round_trip(tmp_path: Path) -> None:
    run = _synthetic(tmp_path)
    df = frames.load_samples(run, tests=["nccl-x", "odd"])
    nccl = df[df["test"] == "nccl-x"].set_index("rep")
    assert nccl.loc[0, "hosts"] == "a,b"
    assert nccl.loc[0, "nccl_warnings"] == "NET/IB : no device,fallback"
    assert json.loads(nccl.loc[0, "env"]) == {"NCCL_IB_HCA": "mlx5_0"}
    assert list(nccl["busbw_GBps"]) == [10.5, 11.0]
    odd = df[df["test"] == "odd"].set_index("rep")
    assert odd.loc[0, "label"] == 3 and odd.loc[1, "label"] == "three"  # mixed types kept as they were
    assert "rx_drops" not in df  # telemetry counter rows are not samples of a test
    assert odd.loc[2, "when"] == "2026-12-02T16:49:13" and odd.loc[2, "day"] == "2026-12-02"  # text, not dates


def test_stale_copy_is_rebuilt(tmp_path: Path) -> None:
    run = _copy(FIXTURES / "minimal", tmp_path)
    assert not columnar.is_fresh(run)
    before = len(frames.load_samples(run))
    assert columnar.is_fresh(run)
    run.append_samples([{"test": "late", "tool": "x", "step": "late-r0", "rep": 0, "bw_avg_gbps": 1.0}])
    assert not columnar.is_fresh(run)
    after = frames.load_samples(run)
    assert len(after) == before + 1 and "late" in set(after["test"])
    assert columnar.is_fresh(run)


def test_projection_and_filters(tmp_path: Path) -> None:
    run = _copy(FIXTURES / "nic-a", tmp_path)
    full = frames.load_samples(run, intervals=True)
    table = columnar.read(run, ["step", "bw_avg_gbps", "missing"],
                          [("kind", "=", "interval"), ("test", "=", "tcp-all-pairs")])
    assert table.column_names == ["step", "bw_avg_gbps"]
    want = full[(full["kind"] == "interval") & (full["test"] == "tcp-all-pairs")]
    assert table.num_rows == len(want) > 0
    assert sorted(table.column("bw_avg_gbps").to_pylist()) == sorted(want["bw_avg_gbps"])
    one = frames.load_samples(run, tests=["rdma-lat"], columns=["test", "size_bytes", "lat_p50_us"])
    assert set(one["test"]) == {"rdma-lat"}
    assert set(one.columns) == {"kind", "test", "size_bytes", "lat_p50_us", "run_id", "run"}
    assert columnar.read(run, ["step"], [("test", "=", "no-such-test")]).num_rows == 0
    assert columnar.read(run, ["step"], [("no_such_column", "=", 1)]).num_rows == 0


def test_row_groups_hold_one_kind_and_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What lets a filter on kind or test skip row groups unread: each has one of each."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 4096)
    run = _synthetic(tmp_path)
    meta = pq.ParquetFile(columnar.build(run)).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    assert meta.num_row_groups > 4
    for g in range(meta.num_row_groups):
        for name in ("kind", "test"):
            stats = meta.row_group(g).column(names.index(name)).statistics
            assert stats is None or stats.null_count == meta.row_group(g).num_rows or stats.min == stats.max


def test_partial_run_without_copy_renders_and_rebuilds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run killed mid-way: no columnar copy, no report, its last line cut short."""
    run = _copy(FIXTURES / "nic-a", tmp_path)
    info = json.loads((run.path / "run.json").read_text())
    info.update(state="interrupted", ended=None)
    (run.path / "run.json").write_text(json.dumps(info))
    lines = (run.path / "samples.jsonl").read_text().splitlines()
    (run.path / "samples.jsonl").write_text("\n".join(lines[:200]) + "\n" + lines[200][:37])
    assert bench_main(["report", str(run.path)]) == 0
    assert (run.path / "report.html").is_file() and columnar.is_fresh(run)
    assert len(frames.load_samples(run, intervals=True)) == 200
    assert "report:" in capsys.readouterr().out


def test_summary_samples_skip_intervals_and_counters_only(tmp_path: Path) -> None:
    """What the catalog and the verdicts read: the summary rows, as decoding every line gives them."""
    from benchharness.results.measures import is_summary

    for run in _runs(tmp_path):
        assert run.summary_samples() == [r for r in run.samples() if is_summary(r)]


def test_fast_reader_keeps_text_and_joins_lists() -> None:
    block = (b'{"test":"t","when":"2026-12-02T16:49:13","hosts":["a","b"],"ranks":[0,1],"v_us":1}\n'
             b'{"test":"t","when":"x","hosts":["c"],"ranks":[2],"v_us":2.5}\n')
    table = columnar._fast_table(block)
    assert table is not None
    assert table.column("when").to_pylist() == ["2026-12-02T16:49:13", "x"]
    assert table.column("hosts").to_pylist() == ["a,b", "c"]
    assert table.column("ranks").to_pylist() == ["0,1", "2"]
    assert table.column("v_us").to_pylist() == [1.0, 2.5]
    assert columnar._fast_table(b'{"test":"t","env":{"A":"1"}}\n') is None  # dicts: read line by line
    assert columnar._fast_table(b'{"test":"t","v_us":1}\n{"test":"t","v') is None  # a cut line
