"""Node power over Redfish, read on the controller: the chassis' ``EnvironmentMetrics``
(``PowerWatts``), else its ``Power`` (``PowerControl[].PowerConsumedWatts``), else the sum of its
``PowerSubsystem`` supplies' input power. HTTP Basic authentication; the password goes only into
the request's header."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from benchharness.telemetry.bmc import TIMEOUT_S, BmcError, BmcTarget, password
from benchharness.telemetry.parsers.bmc_power import (
    PowerReading,
    redfish_environment_reading,
    redfish_power_reading,
    redfish_supply_input,
)


def _link(doc: Mapping[str, Any], name: str) -> str | None:
    ref = doc.get(name)
    return str(ref["@odata.id"]) if isinstance(ref, Mapping) and ref.get("@odata.id") else None


class _NotFound(BmcError):
    """HTTP 404: a resource the service links to but does not serve."""


class RedfishReader:
    """Reads one host's node power; finds the chassis and the resource that answers once."""

    def __init__(self, t: BmcTarget) -> None:
        self.target = t
        port = f":{t.port}" if t.port else ""
        self._base = f"{t.scheme}://{t.address}{port}"
        secret = password(t)
        self._auth = "Basic " + base64.b64encode(f"{t.user}:{secret}".encode()).decode() if t.user else ""
        self._tls = None if t.verify_tls else ssl._create_unverified_context()  # noqa: S323 - a BMC's self-signed certificate, by inventory choice
        self._source: tuple[str, str] | None = None  # (kind, path)

    def get(self, path: str) -> dict[str, Any]:
        """One Redfish resource as JSON; BmcError (one line, naming host and BMC) when it cannot be read."""
        t = self.target
        req = urllib.request.Request(self._base + path, headers={"Accept": "application/json"})  # noqa: S310 - http(s) only: bmc_scheme
        if self._auth:
            req.add_header("Authorization", self._auth)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S, context=self._tls) as resp:  # noqa: S310 - the inventory's BMC URL
                doc = json.loads(resp.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise BmcError(f"{t.host}: {t.describe()} refused the login as {t.user or 'anonymous'} "
                               f"(HTTP {exc.code}: wrong user or password)") from None
            kind = _NotFound if exc.code == 404 else BmcError
            raise kind(f"{t.host}: {t.describe()}: GET {path} gave HTTP {exc.code}") from None
        except TimeoutError:
            raise BmcError(f"{t.host}: {t.describe()} did not answer within {TIMEOUT_S:.0f} s") from None
        except urllib.error.URLError as exc:
            raise BmcError(f"{t.host}: {t.describe()} did not answer: {exc.reason}") from None
        except (ValueError, OSError) as exc:
            raise BmcError(f"{t.host}: {t.describe()}: GET {path}: {exc}") from None
        if not isinstance(doc, dict):
            raise BmcError(f"{t.host}: {t.describe()}: GET {path} is not a Redfish resource")
        return doc

    def _chassis(self) -> str:
        if self.target.chassis:
            c = self.target.chassis
            return c if c.startswith("/") else f"/redfish/v1/Chassis/{c}"
        members = self.get("/redfish/v1/Chassis").get("Members") or []
        if not members:
            raise BmcError(f"{self.target.host}: {self.target.describe()} lists no chassis")
        return str(members[0]["@odata.id"])

    def _find(self) -> tuple[str, str] | None:
        chassis = self.get(self._chassis())
        for kind in ("EnvironmentMetrics", "Power", "PowerSubsystem"):
            path = _link(chassis, kind)
            try:
                if path and self._read(kind, path) is not None:
                    return kind, path
            except _NotFound:  # linked but not served: the next resource may answer
                continue
        return None

    def _read(self, kind: str, path: str) -> PowerReading | None:
        doc = self.get(path)
        if kind == "EnvironmentMetrics":
            return redfish_environment_reading(doc)
        if kind == "Power":
            return redfish_power_reading(doc)
        supplies = _link(doc, "PowerSupplies")
        members = self.get(supplies).get("Members") or [] if supplies else []
        metrics: list[Mapping[str, Any]] = []
        for m in members:
            supply = self._optional(str(m.get("@odata.id"))) if isinstance(m, Mapping) else None
            link = _link(supply, "Metrics") if supply else None
            found = self._optional(link) if link else None
            if found:
                metrics.append(found)
        return redfish_supply_input(metrics)

    def _optional(self, path: str) -> dict[str, Any] | None:
        """The resource, or None where the service lists it but does not serve it (an empty bay)."""
        try:
            return self.get(path)
        except _NotFound:
            return None

    def read(self) -> PowerReading | None:
        """One reading, or None when the chassis offers no power figure; BmcError when the BMC
        refuses the login or does not answer."""
        if self._source is None:
            self._source = self._find()
            if self._source is None:
                return None
        return self._read(*self._source)
