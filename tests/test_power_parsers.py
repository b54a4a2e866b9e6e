"""BMC node power parsers against real published outputs (tests/fixtures/power/real/SOURCES), the
energy integral against hand-computed figures, and the BMC settings' refusals of a literal password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.core.model import Host
from benchharness.telemetry import bmc
from benchharness.telemetry.bmc_ipmi import argv
from benchharness.telemetry.parsers.bmc_power import (
    dcmi_reading,
    parse_dcmi,
    redfish_environment_reading,
    redfish_power_reading,
    sdr_reading,
    sdr_watts,
)
from benchharness.telemetry.power import energy_j

REAL = Path(__file__).parent / "fixtures" / "power" / "real"
MOCKUP = REAL / "redfish-public-rackmount1"


@pytest.mark.parametrize(("name", "watts"), [
    ("dcmi_supermicro_lovoo_ipmi_exporter_18.txt", 215.0),
    ("dcmi_rabe_zabbix_101.txt", 197.0),
    ("dcmi_openbmc_witherspoon_3257.txt", 319.0),  # deactivated, but a real reading
])
def test_dcmi_power_reading_real_outputs(name: str, watts: float) -> None:
    got = dcmi_reading((REAL / name).read_text())
    assert got is not None and got.watts == watts and got.source == "dcmi"


def test_dcmi_fields_of_a_real_output() -> None:
    fields = parse_dcmi((REAL / "dcmi_supermicro_lovoo_ipmi_exporter_18.txt").read_text())
    assert fields == {"instant_w": 215.0, "min_w": 162.0, "max_w": 276.0, "avg_w": 176.0, "state": "activated"}


def test_an_unconfigured_dcmi_reading_is_not_zero_watts() -> None:
    # OpenBMC without power_reading.json: every figure 0 W, deactivated -> no reading at all
    assert dcmi_reading((REAL / "dcmi_openbmc_unconfigured_zero_167.txt").read_text()) is None
    assert dcmi_reading("    DCMI request failed because: Invalid command (c1)\n") is None


@pytest.mark.parametrize(("name", "watts", "source"), [
    ("sdr_type_current_dell.txt", 98.0, "sdr:Pwr Consumption"),
    ("sdr_type_current_system_level.txt", 105.0, "sdr:System Level"),
    ("sdr_power_in_ibm.txt", 292.0, "sdr:PS1 Power In+PS2 Power In"),
])
def test_sdr_watts_sensors_real_outputs(name: str, watts: float, source: str) -> None:
    got = sdr_reading((REAL / name).read_text())
    assert got is not None and (got.watts, got.source) == (watts, source)


def test_sdr_lines_in_amps_or_without_reading_are_not_power() -> None:
    text = (REAL / "sdr_type_current_system_level.txt").read_text()
    assert sdr_watts(text) == [("System Level", 105.0)]
    assert sdr_reading("Current 1        | 6Ah | ok  | 10.1 | 0.40 Amps\n") is None


def test_redfish_dmtf_mockup_power_and_environment_metrics() -> None:
    power = json.loads((MOCKUP / "Chassis/1U/Power/index.json").read_text())
    env = json.loads((MOCKUP / "Chassis/1U/EnvironmentMetrics/index.json").read_text())
    assert redfish_power_reading(power) is not None and redfish_power_reading(power).watts == 344.0  # type: ignore[union-attr]
    got = redfish_environment_reading(env)
    assert got is not None and got.watts == 374.0 and "EnvironmentMetrics" in got.source
    assert redfish_power_reading({"PowerControl": [{"PowerConsumedWatts": None}]}) is None


def test_energy_is_the_trapezoid_held_to_the_window_edges() -> None:
    # 100 W at t=1, 300 W at t=3, window 0..5: 100*1 + (100+300)/2*2 + 300*2 = 1100 J
    assert energy_j([(1.0, 100.0), (3.0, 300.0)], 0.0, 5.0) == pytest.approx(1100.0)
    assert energy_j([(2.0, 250.0)], 0.0, 10.0) == pytest.approx(2500.0)
    assert energy_j([], 0.0, 10.0) == 0.0
    assert energy_j([(20.0, 250.0)], 0.0, 10.0) == 0.0  # readings outside the window do not count


def _host(**v: object) -> Host:
    return Host(name="gpu01", address="10.0.0.1", vars=v)


def test_a_literal_password_in_the_inventory_is_refused() -> None:
    with pytest.raises(bmc.BmcError, match="gpu01: bmc_password must not be an inventory value"):
        bmc.target(_host(bmc_address="10.9.0.1", bmc_password="hunter2"))


def test_password_comes_from_env_or_file_and_never_reaches_the_command_line(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU01_BMC_PW", "s3cret-env")
    t = bmc.target(_host(bmc_address="10.9.0.1", bmc_user="admin", bmc_password_env="GPU01_BMC_PW", bmc_port="623"))
    assert t is not None and bmc.password(t) == "s3cret-env"
    line = argv(t, ("dcmi", "power", "reading"))
    assert "-E" in line and not any("s3cret" in a for a in line)
    assert line[:7] == ["ipmitool", "-I", "lanplus", "-H", "10.9.0.1", "-p", "623"]
    f = tmp_path / "pw"
    f.write_text("s3cret-file\n")
    t2 = bmc.target(_host(bmc_address="10.9.0.1", bmc_password_file=str(f)))
    assert t2 is not None and bmc.password(t2) == "s3cret-file"
    t3 = bmc.target(_host(bmc_address="10.9.0.1", bmc_password_env="NOT_SET_ANYWHERE_42"))
    with pytest.raises(bmc.BmcError, match=r"gpu01: ipmi BMC 10\.9\.0\.1: environment variable NOT_SET_ANYWHERE_42"):
        bmc.password(t3)  # type: ignore[arg-type]


def test_no_bmc_address_means_no_power_reader() -> None:
    assert bmc.target(_host()) is None
    with pytest.raises(bmc.BmcError, match="bmc_protocol='snmp'"):
        bmc.target(_host(bmc_address="10.9.0.1", bmc_protocol="snmp"))


def test_the_inventory_refuses_a_bmc_password_and_checks_the_bmc_settings(tmp_path: Path) -> None:
    from benchharness.config.inventory import load_inventory
    from benchharness.core.errors import ConfigError

    inv = tmp_path / "hosts.ini"
    inv.write_text("[gpu]\ngpu01 ansible_host=10.0.0.1 bmc_address=10.9.0.1 bmc_password=hunter2\n")
    with pytest.raises(ConfigError, match="host gpu01: bmc_password must not be written in the inventory") as err:
        load_inventory(str(inv))
    assert "hunter2" not in str(err.value) and err.value.path == str(inv)
    inv.write_text("[gpu]\ngpu01 ansible_host=10.0.0.1 bmc_address=10.9.0.1 bmc_protocol=snmp\n")
    with pytest.raises(ConfigError, match="bmc_protocol='snmp' is not valid, it must be ipmi or redfish"):
        load_inventory(str(inv))
    inv.write_text("[gpu]\ngpu01 ansible_host=10.0.0.1 bmc_address=10.9.0.1 bmc_protocol=Redfish bmc_port=8443\n")
    host = load_inventory(str(inv)).hosts[0]
    t = bmc.target(host)
    assert t is not None and (t.protocol, t.port, t.scheme) == ("redfish", 8443, "https")


def test_bench_parse_reads_the_bmc_outputs_as_the_power_reader_does() -> None:
    from benchharness.cli.parsers import describe, get_parser

    dcmi = get_parser("ipmitool-dcmi")((REAL / "dcmi_openbmc_witherspoon_3257.txt").read_text())
    assert (dcmi["watts"], dcmi["state"]) == (319.0, "deactivated")
    unconfigured = get_parser("ipmitool-dcmi")((REAL / "dcmi_openbmc_unconfigured_zero_167.txt").read_text())
    assert unconfigured["watts"] is None and unconfigured["instant_w"] == 0.0  # not 0 W: no reading
    sdr = get_parser("ipmitool-sdr")((REAL / "sdr_type_current_dell.txt").read_text())
    assert sdr["watts"] == 98.0 and sdr["sensors"] == [{"sensor": "Pwr Consumption", "watts": 98.0}]
    bay = get_parser("redfish-power")((MOCKUP / "Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics/index.json")
                                      .read_text())
    assert bay["watts"] == 937.4 and bay["resource"] == "PowerSupplyMetrics"
    assert get_parser("redfish-power")("$ curl -s https://bmc/redfish/v1/Chassis/1U/Power\n"
                                       + (MOCKUP / "Chassis/1U/Power/index.json").read_text())["watts"] == 344.0
    with pytest.raises(Exception, match="line 2"):
        get_parser("ipmitool-dcmi")("\n    Instantaneous power reading:   N/A\n")
    assert all(describe()[n].startswith(("ipmitool", "Redfish")) for n in ("ipmitool-dcmi", "ipmitool-sdr",
                                                                          "redfish-power"))
