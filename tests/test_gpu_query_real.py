"""nvidia-smi --query-gpu, amd-smi --json and numactl -H: real published outputs damaged the way
captures are (cut short, a value lost, inside a terminal's box), read or refused naming the line.

The texts are the real fixtures under tests/fixtures/real/ (see SOURCES there), changed here only
by the damage each test names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry.parsers.gpu import parse_amd_smi, parse_nvidia_query
from benchharness.telemetry.parsers.numactl import parse_numactl

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_a_sample_row_that_lost_a_value_names_its_line() -> None:
    lines = _text("nvidia-smi/r520_loop_13_samples_pstate_power.csv").splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0]  # the 5th sample cut before its last value
    with pytest.raises(ToolFailure) as info:
        parse_nvidia_query("\n".join(lines))
    assert info.value.kind == "unreadable"
    assert "line 6" in info.value.message and "9 values for the 10 fields" in info.value.message


def test_the_csv_inside_a_terminal_box_reads_as_without_it() -> None:
    text = _text("nvidia-smi/rtx2060_r460_units_in_header_and_values.csv")
    width = max(len(line) for line in text.splitlines())
    boxed = "\n".join(["┌" + "─" * (width + 2) + "┐"] + [f"│ {line:<{width}} │" for line in text.splitlines()]
                      + ["└" + "─" * (width + 2) + "┘"])
    assert parse_nvidia_query(boxed) == parse_nvidia_query(text)
    assert parse_nvidia_query(boxed)[0]["memory_free_mib"] == 5252


def test_noheader_rows_take_the_given_fields() -> None:
    body = _text("nvidia-smi/r520_loop_13_samples_pstate_power.csv").splitlines()[1:3]
    fields = ["index", "temperature.gpu", "utilization.gpu", "utilization.memory", "fan.speed", "pstate",
              "power.draw", "clocks.sm", "clocks.mem", "clocks.gr"]
    rows = parse_nvidia_query("\n".join(body), fields)
    assert [r["power_w"] for r in rows] == [83.92, 78.22]
    assert rows[1]["clock_sm_mhz"] == 1470 and rows[0]["pstate"] == "P3"


def test_amd_smi_json_cut_short_names_the_line_where_it_stops() -> None:
    lines = _text("amd-smi/rocm61_metric_power_json_command_echo.txt").splitlines()
    with pytest.raises(ToolFailure) as info:
        parse_amd_smi("\n".join(lines[:12]))  # cut after '"value": 6,'
    assert info.value.kind == "unreadable" and info.value.message.startswith("line 12:")


def test_amd_smi_after_python_warnings_and_in_watch_mode() -> None:
    doc = _text("amd-smi/rocm61_metric_power_json_command_echo.txt").split("\n", 1)[1]
    warned = ("/usr/lib/python3.14/site-packages/amdsmi/amdsmi_interface.py:3569: SyntaxWarning: "
              "'return' in a 'finally' block\n  return return_dictionary\n")
    assert parse_amd_smi(warned + doc) == [{"index": 0, "power_w": 10.0}]
    watched = "'CTRL' + 'C' to stop watching output:\n" + doc + doc.replace('"value": 10,', '"value": 12,')
    assert [g["power_w"] for g in parse_amd_smi(watched)] == [10.0, 12.0]


def test_amd_smi_document_that_is_not_a_gpu_list_is_refused() -> None:
    with pytest.raises(ToolFailure, match="line 2: amd-smi JSON is not a list of GPUs"):
        parse_amd_smi("$ amd-smi metric --json\n[1, 2]\n")


def test_numactl_row_that_is_not_numbers_names_its_line() -> None:
    text = _text("numactl/c5n_18xlarge_two_sockets_command_label.txt").replace("  1:  21  10", "  1:  21  1O")
    with pytest.raises(ToolFailure, match="line 12: distances expected"):
        parse_numactl(text)


@pytest.mark.parametrize(("parser", "rel", "rc"), [
    ("nvidia-smi", "nvidia-smi/gtx1080_column_t_table_prompt.txt", 0),
    ("amd-smi", "amd-smi/mi210_static_json_gpu_data_no_bdf.json", 0),
    ("amd-smi", "numactl/c5n_18xlarge_two_sockets_command_label.txt", 3),  # nothing of amd-smi's in it
])
def test_bench_parse_exit_status(parser: str, rel: str, rc: int) -> None:
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", parser, str(REAL / rel)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == rc, res.stderr
    if rc == 0:
        assert json.loads(res.stdout)
    else:
        assert res.stderr.strip().count("\n") == 0 and rel in res.stderr
