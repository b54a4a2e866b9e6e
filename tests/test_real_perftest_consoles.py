"""perftest outputs as consoles and launchers publish them: several runs of one console, each read
with the command that started it, and tables that ranks of a launcher print interleaved."""

from __future__ import annotations

import re
from pathlib import Path

from benchharness.tools import perftest_parse

REAL = Path(__file__).parent / "fixtures" / "real" / "perftest"


def _read(name: str) -> str:
    return (REAL / name).read_text()


def test_each_console_run_is_the_client_its_own_command_started():
    # the client's command sits above perftest's notices and the kernel's lines; the job report of
    # the backgrounded server ('[1]+  Done  ib_read_bw ... > /dev/null 2>&1') after a table is no
    # command of the next run (it read runs 2 and 3 as servers)
    rows = perftest_parse.parse_text(_read("read_bw_hns_roce_console_runs_kernel_lines_between.txt"))
    assert [(r["run"], r["role"], r["bw_avg_MBps_tool"]) for r in rows] == \
        [(1, "client", 6468.6), (2, "client", 9044.77), (3, "client", 8966.88)]


def test_a_command_line_after_an_output_does_not_name_it():
    text = _read("atomic_cmp_and_swap_bw_client_perftest_2.0.txt")
    body = text.split("\n", 1)[1]  # without its command line: no side is said
    later = body + "$ ib_atomic_bw -d pib_0 -A CMP_AND_SWAP\n"
    assert perftest_parse._command(later) is None
    assert perftest_parse.parse_text(later)[0]["role"] == "client"


def test_rank_labels_keep_each_ranks_table_apart():
    rows = perftest_parse.parse_text(_read("write_lat_rank_labelled_two_ranks_h200.txt"))
    assert [(r["run"], r["rank"], r["lat_max_us"]) for r in rows] == [(1, 1, 18.39), (2, 0, 18.86)]


def test_open_mpi_and_srun_labels_are_ranks_too():
    text = _read("write_lat_rank_labelled_two_ranks_h200.txt")
    for form in (r"[1,\1]<stdout>:", r"\1: ", r"[default\1]:"):
        relabelled = re.sub(r"^\[rank (\d)\]  ", form, text, flags=re.MULTILINE)
        rows = perftest_parse.parse_text(relabelled)
        assert [(r["rank"], r["lat_max_us"]) for r in rows] == [(1, 18.39), (0, 18.86)], form


def test_one_ranks_labelled_table_is_read_without_its_labels():
    text = _read("write_lat_rank_labelled_two_ranks_h200.txt")
    one = "\n".join(line for line in text.splitlines() if line.startswith("[rank 1]"))
    rows = perftest_parse.parse_text(one)
    assert len(rows) == 1 and rows[0]["lat_max_us"] == 18.39 and "rank" not in rows[0]
    assert perftest_parse._rank_streams(_read("write_lat_out_json_unquoted_keys_rxe_cat_prompt.txt")) is None
