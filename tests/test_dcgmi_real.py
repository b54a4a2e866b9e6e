"""``bench parse dcgmi`` on ``dcgmi dmon`` of two DCGM generations (real published outputs,
tests/fixtures/health/real and tests/fixtures/real/dcgmi, SOURCES there): the older ``# Entity`` header
with MIG instances (``GPU-I``) indented as an article printed it, and DCGM 3.x/4.x ``#Entity`` rows
with N/A. Figures read by hand."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

ROOT = Path(__file__).parent / "fixtures"
parse = get_parser("dcgmi")


def test_mig_instances_under_the_older_header() -> None:
    rows = parse((ROOT / "health" / "real" / "dcgmi_dmon_mig_gpu_i_entities_hash_space_indented.txt").read_text())
    assert [(r["entity"], r["id"], r["SMACT"]) for r in rows] == [("GPU", 0, 0.429), ("GPU-I", 0, 0.0),
                                                                  ("GPU-I", 1, 0.75)]
    assert rows[0]["DRAMA"] == 0.4 and rows[2]["TENSO"] == 0.02


def test_both_generations_give_the_same_record_shape() -> None:
    old = parse((ROOT / "health" / "real" / "dcgmi_dmon_mig_gpu_i_entities_hash_space_indented.txt").read_text())
    new = parse((ROOT / "real" / "dcgmi" / "dmon_prof_fields_8gpu_na_cut.txt").read_text())
    assert {"entity", "id", "sample", "GRACT", "SMACT"} <= set(old[0]) & set(new[0])
    assert new[0]["GRACT"] is None and new[8]["GRACT"] == 0.888
