"""Real BMC emulators for the power tests, bound to 127.0.0.1 on free ports.

* ``ipmi_sim`` (Debian ``openipmi``): an IPMI 2.0 (RMCP+) BMC with one user and one Watts sensor,
  "Pwr Consumption", whose SDR ``sdrcomp`` compiles here; the sensor reads a file of watts (the
  simulator polls it), so a test sets the node's power. ipmi_sim has no DCMI: ipmitool's ``dcmi
  power reading`` gets "Invalid command", and the reader falls back to the sensors, as on many BMCs.
* ``sushy-static`` (PyPI ``sushy-tools``): serves a copy of the DMTF's published Redfish mockup
  (tests/fixtures/power/real/redfish-public-rackmount1); it accepts any credentials.
* ``sushy-emulator --fake`` with an htpasswd file: a Redfish service that refuses a wrong password (401).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import bcrypt

LOOPBACK = "127.0.0.1"
MOCKUP = Path(__file__).parent / "fixtures" / "power" / "real" / "redfish-public-rackmount1"
VENV_BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin"

#: The Watts sensor's SDR (full sensor record, type 1), in sdrcomp's language: reading x 4 = watts.
POWER_SDR = """sdr type 1
	sensor_owner_id		0x20
	channel_number		0
	sensor_owner_lun	0
	sensor_number		1
	entity_id		system_board
	entity_instance		1
	init_scanning		true
	default_sensor_scan_on	true
	sensor_type		Current
	event_reading_type_code	1
	analog_data_format	unsigned
	base_unit		Watts
	m			4
	b			0
	r_exp			0
	b_exp			0
	id_string		"Pwr Consumption"
endsdr
"""


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


@dataclass
class Bmc:
    """A running emulator: where it listens and how to stop it."""

    port: int
    proc: subprocess.Popen[bytes]
    watts_file: Path | None = None

    def set_watts(self, watts: int) -> None:
        """The node power the IPMI sensor reports from now on (a multiple of 4 reads back exactly)."""
        assert self.watts_file is not None
        self.watts_file.write_text(f"{watts}\n")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _wait_tcp(port: int, proc: subprocess.Popen[bytes], limit_s: float = 30.0) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"emulator on port {port} exited {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=0.5):
            return
        time.sleep(0.2)
    raise RuntimeError(f"emulator on port {port} did not listen within {limit_s:.0f} s")


@contextlib.contextmanager
def ipmi_sim(workdir: Path, user: str, password: str, watts: int) -> Iterator[Bmc]:
    """ipmi_sim with ``user``/``password`` (admin) and a Watts sensor at ``watts``."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port(socket.SOCK_DGRAM)
    (workdir / "power.sdrs").write_text(POWER_SDR)
    subprocess.run(["sdrcomp", "-r", "-o", str(workdir / "power.raw"), str(workdir / "power.sdrs")], check=True)
    sdr = " ".join(f"0x{b:02x}" for b in (workdir / "power.raw").read_bytes())
    watts_file = workdir / "watts.val"
    watts_file.write_text(f"{watts}\n")
    (workdir / "lan.conf").write_text(f"""name "bench{port}"
set_working_mc 0x20
  startlan 1
    addr {LOOPBACK} {port}
    priv_limit admin
    allowed_auths_callback md5
    allowed_auths_user md5
    allowed_auths_operator md5
    allowed_auths_admin md5
    guid a123456789abcdefa123456789abcdef
  endlan
  user 2 true "{user}" "{password}" admin 10 md5
""")
    (workdir / "bmc.emu").write_text(f"""mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02
main_sdr_add 0x20 {sdr}
sensor_add 0x20 0 1 0x03 0x01 poll 250 file "{watts_file}" div=4
mc_enable 0x20
""")
    state = workdir / "state"
    state.mkdir(exist_ok=True)
    proc = subprocess.Popen(["ipmi_sim", "-c", str(workdir / "lan.conf"), "-f", str(workdir / "bmc.emu"),
                             "-s", str(state), "-n"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # UDP: nothing to connect to; the simulator answers within a second of starting
        if proc.poll() is not None:
            raise RuntimeError(f"ipmi_sim exited {proc.returncode}")
        yield Bmc(port, proc, watts_file)
    finally:
        _stop(proc)


@contextlib.contextmanager
def redfish_mockup(workdir: Path, drop: Sequence[str] = ()) -> Iterator[Bmc]:
    """sushy-static serving a copy of the DMTF mockup; ``drop``: chassis links to take out (e.g.
    ``EnvironmentMetrics``, so that only the deprecated Power resource gives watts)."""
    root = workdir / "mockup"
    shutil.copytree(MOCKUP, root)
    (root / "SOURCES").unlink()
    chassis = root / "Chassis" / "1U" / "index.json"
    text = chassis.read_text()
    for name in drop:
        text, n = re.subn(rf'\n    "{name}": {{\n        "@odata.id": "[^"]*"\n    }},', "", text)
        assert n == 1, name
    chassis.write_text(text)
    port = free_port()
    proc = subprocess.Popen([str(VENV_BIN / "sushy-static"), "-i", LOOPBACK, "-p", str(port), "-m", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_tcp(port, proc)
        yield Bmc(port, proc)
    finally:
        _stop(proc)


@contextlib.contextmanager
def redfish_with_login(workdir: Path, user: str, password: str) -> Iterator[Bmc]:
    """sushy-emulator with its fake driver, accepting only ``user``/``password`` (HTTP Basic)."""
    workdir.mkdir(parents=True, exist_ok=True)
    htpasswd = workdir / "htpasswd"
    htpasswd.write_text(f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()}\n")
    config = workdir / "sushy.conf"
    config.write_text(f"SUSHY_EMULATOR_AUTH_FILE = {str(htpasswd)!r}\n")
    port = free_port()
    proc = subprocess.Popen([str(VENV_BIN / "sushy-emulator"), "--fake", "-i", LOOPBACK, "-p", str(port),
                             "--config", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_tcp(port, proc)
        yield Bmc(port, proc)
    finally:
        _stop(proc)
