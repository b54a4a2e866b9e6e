"""The IPMI power reader (ipmitool over RMCP+) against OpenIPMI's ipmi_sim on 127.0.0.1
(tests/bmc_emulators.py): ipmi_sim has no DCMI, so the reading comes from its Watts sensor, and
follows the node power the test sets; a wrong password and a BMC that is not there each give
their one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from bmc_emulators import free_port, ipmi_sim
from conftest import need_programs

from benchharness.core.model import Host
from benchharness.telemetry.bmc import BmcError
from benchharness.telemetry.power import Reader, reader_for

PW = "ipmi-Pw-77aa01"


def _reader(port: int, env: str) -> Reader:
    host = Host(name="gpu03", address="10.0.0.3", vars={
        "bmc_address": "127.0.0.1", "bmc_port": port, "bmc_user": "benchbmc", "bmc_password_env": env,
        "bmc_cipher_suite": "3"})
    found = reader_for(host)
    assert found is not None and found[0] == f"ipmi BMC 127.0.0.1:{port}"
    return found[1]


def test_ipmi_sim_power_follows_the_node_and_refuses_a_wrong_password(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmi_sim", "ipmitool", "sdrcomp")
    monkeypatch.setenv("GPU03_BMC_PW", PW)
    monkeypatch.setenv("GPU03_BMC_PW_WRONG", "wrong-Pw-0000")
    with ipmi_sim(tmp_path, "benchbmc", PW, 360) as bmc:
        reader = _reader(bmc.port, "GPU03_BMC_PW")
        first = reader.read()
        assert first is not None and (first.watts, first.source) == (360.0, "sdr:Pwr Consumption")
        bmc.set_watts(512)
        deadline = time.monotonic() + 10
        while (got := reader.read()) is not None and got.watts != 512.0 and time.monotonic() < deadline:
            time.sleep(0.2)  # the simulator polls its file every 250 ms
        assert got is not None and got.watts == 512.0
        with pytest.raises(BmcError) as err:
            _reader(bmc.port, "GPU03_BMC_PW_WRONG").read()
        assert str(err.value) == f"gpu03: ipmi BMC 127.0.0.1:{bmc.port} refused the login as benchbmc (wrong user or password)"


def test_an_ipmi_bmc_that_is_not_there_did_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    need_programs("ipmitool")
    monkeypatch.setenv("GPU03_BMC_PW", PW)
    port = free_port()
    with pytest.raises(BmcError, match=rf"^gpu03: ipmi BMC 127\.0\.0\.1:{port} did not answer"):
        _reader(port, "GPU03_BMC_PW").read()
