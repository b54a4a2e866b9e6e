"""The Redfish power reader against real Redfish services on 127.0.0.1 (tests/bmc_emulators.py):
sushy-static serving the DMTF's published rack-server mockup, with chassis links taken out so
that each of EnvironmentMetrics, Power and PowerSubsystem is the one that answers, and
sushy-emulator --fake with a login (its chassis has no power resource at all)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bmc_emulators import VENV_BIN, redfish_mockup, redfish_with_login

from benchharness.core.model import Host
from benchharness.telemetry.bmc import BmcError
from benchharness.telemetry.power import Reader, reader_for

pytestmark = pytest.mark.skipif(not (VENV_BIN / "sushy-static").exists(),
                                reason="not installed: sushy-tools (PyPI; ./setup.sh installs .[dev])")


def _reader(port: int, password_file: Path, user: str = "admin") -> Reader:
    host = Host(name="gpu07", address="10.0.0.7", vars={
        "bmc_address": "127.0.0.1", "bmc_port": port, "bmc_protocol": "redfish", "bmc_scheme": "http",
        "bmc_user": user, "bmc_password_file": str(password_file)})
    found = reader_for(host)
    assert found is not None
    return found[1]


@pytest.mark.parametrize(("drop", "watts", "source"), [
    ((), 374.0, "redfish:EnvironmentMetrics.PowerWatts"),
    (("EnvironmentMetrics",), 344.0, "redfish:Power.PowerControl[0].PowerConsumedWatts"),
    # the supplies' input power; Bay2 is listed but not served (404) and is left out
    (("EnvironmentMetrics", "Power"), 937.4, "redfish:PowerSubsystem.PowerSupplies.InputPowerWatts"),
])
def test_each_redfish_power_resource_of_the_dmtf_mockup(tmp_path: Path, drop: tuple[str, ...], watts: float,
                                                         source: str) -> None:
    pw = tmp_path / "pw"
    pw.write_text("any\n")
    with redfish_mockup(tmp_path, drop=drop) as bmc:
        reader = _reader(bmc.port, pw)
        first, again = reader.read(), reader.read()
    assert first is not None and (first.watts, first.source) == (watts, source)
    assert again == first


def test_a_redfish_login_refused_and_a_chassis_without_power(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("right-Pw-1c2d\n")
    bad.write_text("wrong-Pw-3e4f\n")
    with redfish_with_login(tmp_path / "emu", "admin", "right-Pw-1c2d") as bmc:
        with pytest.raises(BmcError) as err:
            _reader(bmc.port, bad).read()
        assert str(err.value) == (f"gpu07: redfish BMC 127.0.0.1:{bmc.port} refused the login as admin "
                                  f"(HTTP 401: wrong user or password)")
        assert _reader(bmc.port, good).read() is None  # logged in; its chassis offers no power figure
    with pytest.raises(BmcError, match=rf"gpu07: redfish BMC 127.0.0.1:{bmc.port} did not answer"):
        _reader(bmc.port, good).read()  # the emulator is gone
