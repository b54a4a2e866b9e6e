"""A host's BMC as the inventory names it, and the one way its password is read.

Inventory variables (``docs/power.md``): ``bmc_address``, ``bmc_protocol`` (``ipmi`` | ``redfish``),
``bmc_port``, ``bmc_user``, ``bmc_password_env`` (an environment variable of the controller) or
``bmc_password_file`` (a file on the controller), ``bmc_cipher_suite`` (IPMI), ``bmc_chassis``
(Redfish, default the first chassis), ``bmc_scheme`` (Redfish: https, or http for a test
emulator), ``bmc_verify_tls``. The password itself is never an inventory value, never on a
command line and never stored: a reader gets it from :func:`password` and hands it on through
an environment variable (ipmitool ``-E``) or an HTTP header.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchharness.core.model import Host

PROTOCOLS = ("ipmi", "redfish")
TIMEOUT_S = 10.0
"""Seconds one BMC request may take before the BMC counts as not answering."""


class BmcError(Exception):
    """A BMC that cannot be read: the message is one line naming host and BMC, never a secret."""


@dataclass(frozen=True)
class BmcTarget:
    """Where and how to read one host's BMC (no secret in it: the password is read when needed)."""

    host: str
    protocol: str
    address: str
    port: int | None
    user: str
    password_env: str
    password_file: str
    cipher_suite: str
    chassis: str
    scheme: str
    verify_tls: bool

    def describe(self) -> str:
        """``ipmi BMC 127.0.0.1:623`` as messages name it."""
        port = f":{self.port}" if self.port else ""
        return f"{self.protocol} BMC {self.address}{port}"


def _flag(value: object, default: bool) -> bool:
    if value is None:
        return default
    return str(value).strip().lower() not in ("0", "false", "no", "off")


def _scheme(host: Host) -> str:
    scheme = str(host.var("bmc_scheme") or "https").lower()
    if scheme not in ("https", "http"):
        raise BmcError(f"{host.name}: bmc_scheme={scheme!r} is not https or http")
    return scheme


def target(host: Host) -> BmcTarget | None:
    """The host's BMC from its inventory variables; None when it names none. A literal
    ``bmc_password`` is refused: passwords come from an environment variable or a file."""
    address = host.var("bmc_address")
    if not address:
        return None
    if host.var("bmc_password") is not None:
        raise BmcError(f"{host.name}: bmc_password must not be an inventory value; name an environment "
                       f"variable (bmc_password_env) or a file (bmc_password_file) that holds it")
    protocol = str(host.var("bmc_protocol") or "ipmi").lower()
    if protocol not in PROTOCOLS:
        raise BmcError(f"{host.name}: bmc_protocol={protocol!r} is not one of {', '.join(PROTOCOLS)}")
    port = host.var("bmc_port")
    try:
        port_n = int(port) if port not in (None, "") else None
    except (TypeError, ValueError):
        raise BmcError(f"{host.name}: bmc_port={port!r} is not a port number") from None
    return BmcTarget(host=host.name, protocol=protocol, address=str(address), port=port_n,
                     user=str(host.var("bmc_user") or ""), password_env=str(host.var("bmc_password_env") or ""),
                     password_file=str(host.var("bmc_password_file") or ""),
                     cipher_suite=str(host.var("bmc_cipher_suite") or ""),
                     chassis=str(host.var("bmc_chassis") or ""),
                     scheme=_scheme(host),
                     verify_tls=_flag(host.var("bmc_verify_tls"), True))


def password(t: BmcTarget) -> str:
    """The BMC password from the variable or file the inventory names ("" when it names neither)."""
    if t.password_env:
        value = os.environ.get(t.password_env)
        if value is None:
            raise BmcError(f"{t.host}: {t.describe()}: environment variable {t.password_env} "
                           f"(bmc_password_env) is not set")
        return value
    if t.password_file:
        try:
            return Path(t.password_file).expanduser().read_text().rstrip("\r\n")
        except OSError as exc:
            raise BmcError(f"{t.host}: {t.describe()}: cannot read bmc_password_file "
                           f"{t.password_file}: {exc.strerror}") from None
    return ""
