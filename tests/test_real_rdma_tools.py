"""RDMA host tools against the published outputs in ``tests/fixtures/real`` (see SOURCES there):
what a paste cut short or a neighbouring tool's lines must not turn into figures.

The figures of each fixture are checked by ``tests/test_real_outputs.py`` (``*.expected.json``);
these tests cover the refusals and the lines that belong to other tools.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry.parsers.rdma import parse_ibv_devinfo, parse_rdma, parse_rdma_statistic
from benchharness.telemetry.parsers.show_gids import parse_show_gids

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_show_gids_row_cut_inside_its_gid_is_refused_naming_the_line() -> None:
    """The stored copy of NVIDIA/nccl#1573 stops inside a row ("mlx5_2 1 5 fe"): kept in the
    fixture up to the last complete row; with the cut row it is an error, not 9 good rows."""
    text = _text("show_gids/pod_macvlan_indices_4_to_7_tabs_prompt.txt")
    assert len(parse_show_gids(text)) == 9
    with pytest.raises(ToolFailure) as info:
        parse_show_gids(text + "mlx5_2\t1\t5\tfe")
    assert info.value.kind == "unreadable"
    assert "line 13" in info.value.message and "mlx5_2" in info.value.message


def test_ibv_devinfo_gid_value_without_its_header_is_refused() -> None:
    """The rxe mail with the line "GID[  0]:" dropped leaves its wrapped value alone on a line."""
    lines = _text("ibv_devinfo/rxe_v_mail_wrapped_gids_elided.txt").splitlines()
    dropped = [ln for ln in lines if ln.strip() != "GID[  0]:"]
    assert len(dropped) == len(lines) - 1
    with pytest.raises(ToolFailure) as info:
        parse_ibv_devinfo("\n".join(dropped))
    assert "without its GID[n]" in info.value.message and "fe80::a00:27ff:fe2e:f7a5" in info.value.message


def test_ibv_devinfo_gid_header_at_the_end_without_value_is_refused() -> None:
    text = _text("ibv_devinfo/rxe_v_mail_wrapped_gids_elided.txt").rstrip("\n")
    cut = text[:text.rindex("\n")]  # the last GID's wrapped value line gone: "GID[  5]:" ends the text
    with pytest.raises(ToolFailure) as info:
        parse_ibv_devinfo(cut)
    assert "GID[5] has no value" in info.value.message


def test_ip_addr_lines_are_not_rdma_devices() -> None:
    """``11: ib1: <NO-CARRIER,...> mtu 4092`` (ip addr) has the ``IDX: NAME:`` shape of ``rdma dev``."""
    text = _text("ibstat/cx6_vf_after_sriov_session_then_ip_link.txt")
    assert "11: ib1: <NO-CARRIER" in text
    assert parse_rdma(text) == {"ports": []}


def test_rdma_dev_and_resource_records_give_no_counters() -> None:
    """``rdma statistic`` reads counters only: device and resource records are not port counters."""
    assert parse_rdma_statistic(_text("rdma/resource_show_summary_two_mlx5_fenced.txt")) == {}
    assert parse_rdma_statistic(_text("rdma/dev_show_mail_wrapped_then_resource_cq.txt")) == {}


def test_bench_parse_reads_rdma_dev_and_link_from_one_paste() -> None:
    rel = "rdma/dev_link_old_index_ib_two_ports_prompts.txt"
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "rdma", str(REAL / rel)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [d["device"] for d in data["devices"]] == ["ibp0s9"]
    assert [(p["port"], p["state"]) for p in data["ports"]] == [(1, "ACTIVE"), (2, "UNKNOWN")]


def test_show_gids_empty_table_is_zero_gids_but_a_bare_header_is_nothing_read() -> None:
    """k8s-rdma-sriov-dev-plugin#30: header, ruler, ``n_gids_found=0`` is show_gids' own answer (exit 0);
    the same header cut before its count line reads nothing (exit 3)."""
    rel = "show_gids/pod_calico_empty_table_n_gids_found_0.txt"
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "show_gids", str(REAL / rel)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"gids": [], "n_gids_found": 0}
    header = "\n".join(_text(rel).splitlines()[:3]) + "\n"
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "show_gids", "-"], input=header,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 3 and "nothing read" in res.stderr
