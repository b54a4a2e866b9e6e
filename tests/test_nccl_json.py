"""nccl-tests' JSON output (-J) with per-iteration times: the real published document parses, and
a straggler and spikes injected into it (several processes on two hosts) are named."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.analysis import stragglers
from benchharness.cli.main import main
from benchharness.core.errors import ToolFailure
from benchharness.tools import nccl_iter, nccl_json

REAL = Path(__file__).parent / "fixtures" / "real" / "nccl-tests-json" / "all_reduce_1gpu_4090_per_iter_v4.json"


def four_processes(slow: int = 3, slow_factor: float = 1.6) -> dict:
    """The real document as if run by 4 processes (1 GPU each) on 2 hosts, each process's times
    being the real ones; process ``slow`` is slower, process 1 spikes at iteration 7 alone and
    everyone at iteration 12 (``per_process_max_times_us`` as nccl-tests' util.cu writes it)."""
    doc = copy.deepcopy(json.loads(REAL.read_text()))
    doc["config"]["devices"] = [{"rank": r, "group": 0, "pid": 1000 + r, "hostname": f"node-{'ab'[r // 2]}",
                                 "device": r % 2, "device_hex": f"0000:0{r % 2 + 1}:00",
                                 "device_info": "NVIDIA GeForce RTX 4090"} for r in range(4)]
    for row in doc["results"]:
        for key in ("out_of_place_per_iter", "in_place_per_iter"):
            base = row[key]["times_us"]
            procs = []
            for p in range(4):
                series = [t * (slow_factor if p == slow else 1.0) for t in base]
                if p == 1:
                    series[7] *= 4
                series[12] *= 3
                procs.append(series)
            row[key]["per_process_max_times_us"] = procs
            row[key]["times_us"] = [max(col) for col in zip(*procs, strict=True)]
    return doc


def test_real_document_parses() -> None:
    records = nccl_json.parse_json(REAL.read_text())
    oop, ip, footer = records
    assert oop["placement"] == "out-of-place" and oop["time_us"] == 2.904933 and oop["iterations"] == 30
    assert oop["iter_p50_us"] == 3.072 and oop["collective"] == "all_reduce"
    assert ip["iter_cv_pct"] == 33.333333
    assert footer["nranks"] == 1 and footer["ranks"][0]["host"] == "<HOST>" and footer["json_version"] == 4
    rows = nccl_json.iterations(json.loads(REAL.read_text()))
    assert [len(r.overall) for r in rows] == [30, 30] and all(r.processes == [] for r in rows)
    found, spikes = nccl_iter.analyze(json.loads(REAL.read_text()))
    assert found == []  # one process: nobody to straggle behind
    # read by hand: in-place iterations 2, 7, 12, 18, 23 and 28 took 2.048 us, twice the median
    # 1.024 (out-of-place peaks at 3.776, 1.23x its median 3.072: below the 1.5x threshold)
    assert [(k.placement, k.iteration) for k in spikes] == [("in-place", i) for i in (2, 7, 12, 18, 23, 28)]


def test_synthetic_straggler_and_spikes_are_named() -> None:
    found, spikes = nccl_iter.analyze(four_processes())
    assert {(s.placement, s.process) for s in found} == {("out-of-place", 3), ("in-place", 3)}
    s = found[0]
    assert s.ranks[0]["hostname"] == "node-b" and s.ranks[0]["device"] == 1 and s.ranks[0]["rank"] == 3
    assert s.factor == pytest.approx(1.6, rel=0.01)
    text = "\n".join(stragglers.lines(found, spikes))
    assert "rank 3 on node-b GPU 1 (0000:02:00)" in text
    by_iter = {(k.placement, k.iteration): k for k in spikes}
    assert by_iter[("out-of-place", 7)].processes == [1] and not by_iter[("out-of-place", 7)].system_wide
    assert by_iter[("out-of-place", 12)].system_wide
    assert {i for p, i in by_iter if p == "out-of-place"} == {7, 12}


def test_healthy_processes_name_nobody() -> None:
    found, _ = nccl_iter.analyze(four_processes(slow_factor=1.05))
    assert found == []


def test_cut_or_foreign_json_is_refused(tmp_path: Path) -> None:
    text = REAL.read_text()
    with pytest.raises(ToolFailure, match="complete"):
        nccl_json.parse_json(text[: len(text) // 2])
    with pytest.raises(ToolFailure, match="results"):
        nccl_json.parse_json('{"identifier": "something else"}')
    # bench parse knows it
    cut = tmp_path / "cut.json"
    cut.write_text(text[:100])
    assert main(["parse", "nccl-tests-json", str(REAL)]) == 0
    assert main(["parse", "nccl-tests-json", str(cut)]) != 0


def test_bench_parse_names_the_straggler(tmp_path: Path) -> None:
    """``bench parse nccl-stragglers FILE``: the analysis on a -J document from the command line."""
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(four_processes()))
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "nccl-stragglers", str(doc)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert {s["where"] for s in got["stragglers"]} == {"rank 3 on node-b GPU 1 (0000:02:00)"}
    assert any("straggler at" in line and "1.60x" in line for line in got["lines"])
    doc.write_text(REAL.read_text()[:200])
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "nccl-stragglers", str(doc)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "not a complete nccl-tests JSON document" in res.stderr


def test_one_device_record_per_process_counts_its_gpus() -> None:
    """nccl-tests writes the first rank of each process: a published -g 2 run (two T4, one
    process) lists one device, and is two ranks (busbw equals algbw, as for n = 2)."""
    doc = json.loads((REAL.parent / "all_reduce_2gpu_t4_one_process_v3_per_iter.json").read_text())
    assert [[d["rank"] for d in p] for p in nccl_json.process_ranks(doc)] == [[0]]
    footer = nccl_json.parse_json(json.dumps(doc))[-1]
    assert footer["nranks"] == 2 and len(footer["ranks"]) == 1
    two = copy.deepcopy(doc)  # a second process on another host: ranks 2 and 3, record of rank 2
    two["config"]["devices"].append({**doc["config"]["devices"][0], "rank": 2, "pid": 1719, "hostname": "other"})
    assert [[d["rank"] for d in p] for p in nccl_json.process_ranks(two)] == [[0], [2]]
    assert nccl_json.parse_json(json.dumps(two))[-1]["nranks"] == 4
