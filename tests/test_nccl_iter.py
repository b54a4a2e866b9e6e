"""Per-iteration timing in a run (``per_iteration`` / ``stragglers:``): nccl-tests' ``-I 1 -J`` document
carried home on stdout by the wrapper, read into straggler and spike records, judged as verdicts.

The wrapper and the CPU benchmark run for real under mpirun on this machine; a rank made slow by
a patched benchmark (it sleeps 20 ms after each collective, like a GPU whose kernel ends late) is named.
nccl-tests itself needs GPUs: its text is the real published per-iteration output (2.20) and its
document the real published one spread over four processes (tests/test_nccl_json.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_nccl_json import four_processes

from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError, ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.tools import get_tool, nccl_iter, nccl_tests
from benchharness.tools.mpi_launch import build_mpirun

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
REPO = Path(__file__).resolve().parent.parent
REAL_TEXT = REPO / "tests" / "fixtures" / "real" / "nccl-tests" / "all_reduce_1gpu_4090_per_iter_columns_v2_20.txt"
LOCAL = Host("localhost", "127.0.0.1", local=True, vars={"bench_python": sys.executable})


def gpu_hosts() -> tuple[Host, ...]:
    return tuple(Host(f"node-{c}", f"10.3.0.{i}", user="bench", vars={"gpus": 2, "nccl_tests_dir": "/opt/nt"})
                 for i, c in enumerate("ab", 1))


def test_wrapper_prints_rank_zeros_document_and_leaves_nothing(tmp_path: Path) -> None:
    """The wrapper for real: rank 0 gets a fresh -J path and prints the document; other ranks do not."""
    fake = tmp_path / "fake_perf.py"
    fake.write_text("import sys, os\nargs = sys.argv[1:]\npath = args[args.index('-J') + 1] if '-J' in args else None\n"
                    "print('# table', ' '.join(a for a in args if not a.startswith('/')))\n"
                    "if path:\n    open(path, 'x').write('{\"results\": [], \"pid\": %d}' % os.getpid())\n")
    argv = nccl_iter.wrap([sys.executable, str(fake), "-b", "8"])
    assert argv[:4] == ["sh", "-c", nccl_iter.WRAPPER, "bench-iter"] and argv[-2:] == ["-I", "1"]
    before = set(Path("/tmp").glob("tmp.*"))
    zero = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                                                 "OMPI_COMM_WORLD_RANK": "0"})
    assert zero.returncode == 0, zero.stderr
    text, doc = nccl_iter.split(zero.stdout)
    assert "# table -b 8 -I 1 -J" in text and nccl_iter.BEGIN not in text
    assert doc is not None and json.loads(doc)["results"] == []
    other = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                                                  "SLURM_PROCID": "3"})
    assert other.returncode == 0 and nccl_iter.split(other.stdout)[1] is None
    assert "-J" not in other.stdout  # not rank 0: the program runs as it is
    assert set(Path("/tmp").glob("tmp.*")) <= before  # the document's directory is gone


def test_wrapper_keeps_the_tools_exit_status(tmp_path: Path) -> None:
    argv = nccl_iter.wrap(["sh", "-c", 'echo partial; exit 3', "x"])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 3 and nccl_iter.split(res.stdout) == (res.stdout, None)


def test_split_round_trip_and_a_cut_document() -> None:
    out = f"table\n{nccl_iter.BEGIN}\n{{\"a\": 1}}\n{nccl_iter.END}\ntail\n"
    assert nccl_iter.split(out) == ("table\n\ntail\n", '{"a": 1}')
    cut = f"table\n{nccl_iter.BEGIN}\n{{\"a\": "
    assert nccl_iter.split(cut) == ("table\n", '{"a":')


def test_split_under_tag_output_with_other_ranks_between() -> None:
    """mpirun --tag-output: rank 0's tags come off; another rank's NCCL teardown line printed while
    rank 0 printed the document (real NCCL log format) is left out."""
    doc = json.dumps(four_processes(), indent=2).split("\n")
    lines = [f"[1,0]<stdout>:{nccl_iter.BEGIN}", *(f"[1,0]<stdout>:{x}" for x in doc[:5]),
             "[1,3]<stdout>:node-b:2211:2301 [1] NCCL INFO comm 0x55d0 rank 3 nranks 4 cudaDev 1 - Destroy COMPLETE",
             *(f"[1,0]<stdout>:{x}" for x in doc[5:]), f"[1,0]<stdout>:{nccl_iter.END}"]
    _, text = nccl_iter.split("[1,0]<stdout>:# table\n" + "\n".join(lines) + "\n")
    assert text is not None and json.loads(text) == four_processes()


def test_nccl_tests_command_line_with_per_iteration() -> None:
    step = Step("s1", "ar", "nccl-tests", {"per_iteration": True, "maxbytes": "1M"}, gpu_hosts(), pattern="group")
    (cmd,) = nccl_tests.NCCL.commands(step)
    argv = list(cmd.argv)
    i = argv.index(nccl_iter.WRAPPER)
    program = argv[i + 2:]
    assert argv[i - 2:i] == ["sh", "-c"] and program[0] == "/opt/nt/all_reduce_perf"
    assert program[-2:] == ["-I", "1"] and program[program.index("-z") + 1] == "1"  # synchronized starts
    with pytest.raises(ValueError, match="CUDA graphs"):
        nccl_tests.check_collective_params({"per_iteration": True, "cudagraph": 1})
    with pytest.raises(ValueError, match="true or false"):
        nccl_tests.check_collective_params({"per_iteration": "yes"})
    amd = tuple(Host(h.name, h.address, vars={**h.vars, "gpu_vendor": "amd", "rccl_tests_dir": "/opt/rt"})
                for h in gpu_hosts())
    step = Step("s2", "ar", "collective", {"per_iteration": True, "require_network": "any", "require_gdr": "any"},
                amd, pattern="group")
    (cmd,) = get_tool("collective").commands(step)
    assert nccl_iter.WRAPPER not in cmd.argv and "-I" not in cmd.argv  # rccl-tests has no -I
    res = CommandResult(command=cmd, rc=0, stdout=REAL_TEXT.read_text(), stderr="", started=0.0, ended=1.0)
    (seen,) = [r for r in get_tool("collective").parse_step(step, [res]) if r["kind"] == "iterations"]
    assert "rccl-tests has no per-iteration timing" in seen["missing"]


def result_for(step: Step, stdout: str, stderr: str = "", rc: int = 0) -> CommandResult:
    (cmd,) = nccl_tests.NCCL.commands(step)
    return CommandResult(command=cmd, rc=rc, stdout=stdout, stderr=stderr, started=0.0, ended=1.0)


def test_real_output_with_a_document_gives_straggler_records() -> None:
    """The real 2.20 per-iteration table, and the real document spread over four processes on two
    nodes with process 3 (node-b, GPU 1) 1.6x slower: the table parses as before, the straggler is
    named with the inventory host."""
    params = {"per_iteration": True, "require_network": "any", "require_gdr": "any"}
    step = Step("s1", "ar", "nccl-tests", params, gpu_hosts(), pattern="group")
    out = REAL_TEXT.read_text() + f"\n{nccl_iter.BEGIN}\n{json.dumps(four_processes())}\n{nccl_iter.END}\n"
    records = nccl_tests.NCCL.parse_step(step, [result_for(step, out)])
    summary = [r for r in records if r["kind"] == "summary"]
    assert [r["iter_p99_us"] for r in summary] == [4.1, 2.05]  # the table's own columns
    (seen,) = [r for r in records if r["kind"] == "iterations"]
    assert seen["processes"] == 4 and seen["per_process"] and seen["stragglers"] == 2
    slow = [r for r in records if r["kind"] == "straggler"]
    assert {(r["host"], r["gpu_index"], r["process"], tuple(r["straggler_ranks"])) for r in slow} == {("node-b", 1, 3, (3,))}
    assert all(r["factor"] == pytest.approx(1.6, rel=0.01) and r["step"] == "s1" for r in slow)
    spikes = [r for r in records if r["kind"] == "spike" and not r["system_wide"]]
    assert {tuple(r["spike_hosts"]) for r in spikes} == {("node-a",)}  # process 1's lone spike
    assert seen["rank_hosts"] == ["node-a", "node-b"] and all(r.get("hosts") == summary[0].get("hosts") for r in records)


def test_missing_or_refused_document() -> None:
    params = {"per_iteration": True, "require_network": "any", "require_gdr": "any"}
    step = Step("s1", "ar", "nccl-tests", params, gpu_hosts(), pattern="group")
    records = nccl_tests.NCCL.parse_step(step, [result_for(step, REAL_TEXT.read_text())])
    (seen,) = [r for r in records if r["kind"] == "iterations"]
    assert "printed no per-iteration document" in seen["missing"]
    old = "all_reduce_perf: invalid option -- 'I'\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>]\n"
    with pytest.raises(ToolFailure, match=r"per_iteration needs nccl-tests 2\.19") as info:
        nccl_tests.NCCL.parse_step(step, [result_for(step, "", old, rc=0)])
    assert info.value.kind == "tool_too_old" and "node-a" in str(info.value)


SLOW_RANK = """
import sys, time
from benchharness.onhost import mpi_allreduce as m
real = m.Bench.run
def run(self, send, recv, in_place):
    real(self, send, recv, in_place)
    if self.rank == 2:
        time.sleep(0.02)  # rank 2 ends every collective 20 ms late
m.Bench.run = run
sys.exit(m.main(sys.argv[1:]))
"""


def test_real_slow_rank_is_named_through_the_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3 ranks under real mpirun, the command line the adapter builds (wrapper included), rank 2
    slower: the step's records name process 2 at every size, the slowest each time."""
    program = tmp_path / "mpi_allreduce.py"
    program.write_text(SLOW_RANK)
    monkeypatch.setattr(nccl_tests, "CPU_PROGRAM", str(program))
    tool = get_tool("collective")
    params = {"op": "all_reduce", "minbytes": "1K", "maxbytes": "16K", "stepfactor": 4, "iters": 15,
              "warmup": 2, "procs_per_host": 3, "per_iteration": True}
    tool.check_params(params)
    step = Step("s-slow", "stragglers", "collective", params, (LOCAL,), pattern="group")
    (cmd,) = tool.commands(step)
    argv = [cmd.argv[0], "--oversubscribe", *cmd.argv[1:]]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = tool.parse_step(step, [CommandResult(command=cmd, rc=0, stdout=proc.stdout, stderr=proc.stderr,
                                                   started=started, ended=time.time())])
    summary = [r for r in records if r["kind"] == "summary"]
    assert len(summary) == 6 and all(r["iter_p99_us"] >= r["iter_min_us"] > 0 for r in summary)
    slow = [r for r in records if r["kind"] == "straggler"]
    # rank 2 is named at every size and placement, the slowest there; on a loaded machine the
    # others' iterations stretch too (busy-polling ranks preempted), and another rank preempted
    # often enough may be named as well (it was slow as well)
    cases = {(r["size_bytes"], r["placement"]) for r in summary}
    named = {(r["size_bytes"], r["placement"]): r for r in slow if r["process"] == 2}
    assert set(named) == cases, slow
    for case, r in named.items():
        assert r["median_us"] > r["peers_median_us"] * 1.2, r
        assert r["factor"] == max(o["factor"] for o in slow if (o["size_bytes"], o["placement"]) == case)


def test_program_writes_no_file_twice(tmp_path: Path) -> None:
    """The CPU benchmark, like nccl-tests, never overwrites a document: FILE.0 next to FILE."""
    target = tmp_path / "d.json"
    target.write_text("keep")
    argv = build_mpirun([Host("localhost", "127.0.0.1", local=True)], 2,
                        [sys.executable, "-m", "benchharness.onhost.mpi_allreduce", "-b", "1K", "-e", "1K",
                         "-n", "3", "-w", "1", "-I", "1", "-J", str(target)],
                        {"PYTHONPATH": str(REPO)}, if_include="127.0.0.0/8", allow_run_as_root=True,
                        oversubscribe=True)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "keep"
    doc = json.loads((tmp_path / "d.json.0").read_text())
    (row,) = doc["results"]
    per = row["out_of_place_per_iter"]
    assert len(per["times_us"]) == 3 and len(per["per_process_max_times_us"]) == 2
    assert per["times_us"] == [max(c) for c in zip(*per["per_process_max_times_us"], strict=True)]
    assert [d["rank"] for d in doc["config"]["devices"]] == [0, 1]


def suite_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(body)
    return path


def test_stragglers_key_turns_per_iteration_on(tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, "tests:\n  - name: ar\n    tool: collective\n    stragglers: fail\n"))
    (test,) = suite.tests
    assert test.stragglers == "fail" and test.params["per_iteration"] is True
    with pytest.raises(ConfigError, match=r"s.yaml.*4.*stragglers needs per-iteration timing"):
        load_suite(suite_file(tmp_path, "tests:\n  - name: t\n    tool: iperf3\n    stragglers: warn\n"))
    with pytest.raises(ConfigError, match="stragglers"):
        load_suite(suite_file(tmp_path, "tests:\n  - name: ar\n    tool: collective\n    stragglers: loud\n"))


def test_shipped_stragglers_suite_plans(tmp_path: Path) -> None:
    suite = load_suite(REPO / "suites" / "stragglers.yaml")
    assert all(t.stragglers for t in suite.tests) and all(t.params.get("per_iteration") for t in suite.tests)
