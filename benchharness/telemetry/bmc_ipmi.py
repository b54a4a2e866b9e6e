"""Node power over IPMI, run on the controller: ``ipmitool -I lanplus ... dcmi power reading``, and
where the BMC has no DCMI (or no configured power reading) the Watts sensors of ``sdr type
Current`` and then the whole ``sdr elist``. The password reaches ipmitool only through its
environment (``-E`` reads ``IPMI_PASSWORD``), never its command line."""

from __future__ import annotations

import os
import subprocess

from benchharness.telemetry.bmc import TIMEOUT_S, BmcError, BmcTarget, password
from benchharness.telemetry.parsers.bmc_power import PowerReading, dcmi_reading, sdr_reading

PROGRAM = "ipmitool"
QUERIES: tuple[tuple[str, ...], ...] = (("dcmi", "power", "reading"), ("sdr", "type", "Current"), ("sdr", "elist"))
"""What is asked, in order, until one answers with node power (``parse`` says which parser)."""


def argv(t: BmcTarget, query: tuple[str, ...]) -> list[str]:
    """ipmitool's command line for ``query`` (no password in it: ``-E``)."""
    line = [PROGRAM, "-I", "lanplus", "-H", t.address]
    if t.port:
        line += ["-p", str(t.port)]
    if t.user:
        line += ["-U", t.user]
    if t.cipher_suite:
        line += ["-C", t.cipher_suite]
    return [*line, "-E", "-N", "2", "-R", "1", *query]


def parse(query: tuple[str, ...], text: str) -> PowerReading | None:
    """Node power from the output of ``query``."""
    return dcmi_reading(text) if query[0] == "dcmi" else sdr_reading(text)


_NO_SESSION = "unable to establish"
_REFUSED = ("rakp 2 hmac is invalid", "rakp 2 message indicates an error", "unauthorized name",
            "invalid user", "insufficient privilege", "invalid session")
"""ipmitool -v's lines when the BMC answered but refused the login (ipmitool 1.8.19 against
OpenIPMI's ipmi_sim: "RAKP 2 HMAC is invalid" for a wrong password)."""


class IpmiReader:
    """Reads one host's node power; remembers which query answered, so later reads ask only that."""

    def __init__(self, t: BmcTarget) -> None:
        self.target = t
        self._env = {**os.environ, "IPMI_PASSWORD": password(t)}
        self._query: tuple[str, ...] | None = None

    def _run(self, query: tuple[str, ...]) -> tuple[int, str, str]:
        try:
            res = subprocess.run(argv(self.target, query), env=self._env, capture_output=True, text=True,
                                 timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise BmcError(f"{self.target.host}: {self.target.describe()} did not answer within "
                           f"{TIMEOUT_S:.0f} s") from None
        except FileNotFoundError:
            raise BmcError(f"{self.target.host}: {PROGRAM} is not installed on the controller "
                           f"(Debian package ipmitool)") from None
        return res.returncode, res.stdout, res.stderr

    def _no_session(self) -> BmcError:
        """Why no session opened, from one verbose try: refused (wrong user or password) or no answer."""
        t = self.target
        _, _, err = self._run(("-v", "mc", "info"))
        if any(s in err.lower() for s in _REFUSED):
            return BmcError(f"{t.host}: {t.describe()} refused the login as {t.user or 'anonymous'} "
                            f"(wrong user or password)")
        return BmcError(f"{t.host}: {t.describe()} did not answer (no IPMI session opened)")

    def read(self) -> PowerReading | None:
        """One reading, or None when the BMC answered without node power; raises BmcError when the
        BMC refuses the login or does not answer."""
        for query in (self._query,) if self._query else QUERIES:
            rc, out, err = self._run(query)
            if rc != 0 and _NO_SESSION in err.lower():
                raise self._no_session()
            reading = parse(query, out) if rc == 0 or out.strip() else None
            if reading is not None:
                self._query = query
                return reading
        return None
