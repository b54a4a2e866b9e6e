"""Host-fact parsers on real published outputs (mlxlink, numactl): figures that matter more than a subset.

The fixtures are under tests/fixtures/real/<parser>/ (SOURCES there says where each came from)."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _read(folder: str, name: str) -> str:
    return (REAL / folder / name).read_text()


def test_mlxlink_pcie_port_link_in_use_against_enabled_and_the_errors_section() -> None:
    mlxlink = get_parser("mlxlink")
    slow = mlxlink(_read("mlxlink", "cx6_ocp3_pcie_port_gen1_x4_of_gen4_x16_eye_refused_errors_section.txt"))
    assert slow["pcie"]["gen"] == 1 and slow["pcie"]["enabled_gen"] == 4 and slow["pcie"]["downgraded"] is True
    assert slow["errors"] and slow["errors"][0].startswith("Showing Eye via SLRG raised")  # was dropped
    eye = mlxlink(_read("mlxlink", "cx6_ocp3_pcie_port_gen3_x16_eye_opening_16_lanes.txt"))["eye"]
    assert len(eye["physical_grade"]) == 16 and min(eye["height_eye_opening_mv"]) == 147


def test_mlxlink_script_banners_without_mlxlink_output_are_not_devices() -> None:
    got = get_parser("mlxlink")(_read("mlxlink", "cx7_aws_health_script_four_ports_banners_mixed_tools.txt"))
    assert [d["device"] for d in got["devices"]] == [
        "Device: 0000:05:00.0", "Device: 0000:05:00.1", "Device: 0001:05:00.0", "Device: 0001:05:00.1"]
    assert all("errors" not in d for d in got["devices"])  # mst start's -W- about lsusb is not mlxlink's


def test_mlxlink_json_per_lane_values_and_ber_as_numbers() -> None:
    doc = ('{"result": {"output": {"Physical Counters and BER Info": {"Raw Physical BER": "1E-8",'
           ' "Effective Physical BER": "15E-255", "Raw Physical Errors Per Lane": {"values": ["3", "0"]}},'
           ' "EYE Opening Info (PCIe)": {"Initial FOM": {"values": ["145", "140"]}}}},'
           ' "status": {"code": 0, "message": "OK"}}')
    got = get_parser("mlxlink")(doc)
    assert got["lanes"]["raw_physical_errors_per_lane"] == [3, 0]
    assert got["ber"] == {"raw_physical_ber": 1e-8, "effective_physical_ber": 1.5e-254}
    assert got["eye"]["initial_fom"] == [145, 140]


def test_numactl_indented_listing_and_a_readers_elisions() -> None:
    numactl = get_parser("numactl")
    text = _read("numactl", "eiger_rome_2x64_nps4_8_nodes_indented_admonition_srun.txt")
    whole = numactl(text)  # was: nothing read (every line indented by four spaces)
    assert len(whole["nodes"]) == 8 and "elided" not in whole
    assert whole["nodes"][4]["distances"][:5] == [32, 32, 32, 32, 10]
    # the same listing as a slide shortens it: CPUs and whole nodes left out with "..."
    lines = text.splitlines()
    short = [lines[1], lines[2].replace(" 131 132 133 134 135 136 137 138 139 140 ", " ... "), *lines[3:5], "    ...",
             *lines[23:26]]
    cut = numactl("\n".join(short) + "\n")  # was: "CPU numbers expected"
    assert cut["elided"] is True and [n["node"] for n in cut["nodes"]] == [0, 7]
    assert cut["nodes"][0]["cpus_elided"] is True and cut["nodes"][0]["cpus"][-5:] == [129, 130, 141, 142, 143]
    assert cut["cpuless_nodes"] == []
