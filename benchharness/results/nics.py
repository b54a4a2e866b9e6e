"""Which NIC a host had in a run: model, serial number and firmware.

Telemetry facts are what is really there, so serial and firmware come from them first (the
probe's ``nics: {devices: [...]}`` record of the benchmark netdev); the model comes from the
inventory's ``nic_model`` first (telemetry rarely has a marketing name); ``nic_serial`` and
``nic_firmware`` inventory vars fill what telemetry lacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.results import runview

_SERIAL_KEYS = ("serial_number", "serial", "sn", "board_serial", "nic_serial")
_FIRMWARE_KEYS = ("firmware", "fw_ver", "firmware_version", "fw_version", "nic_firmware")
_MODEL_KEYS = ("model", "part_number", "product", "board_id", "hca_type", "nic_model")


@dataclass(frozen=True)
class Nic:
    """What a run knew about one host's benchmark NIC."""

    model: str = ""
    serial: str = ""
    firmware: str = ""


def _text(value: Any) -> str:
    return str(value).strip() if isinstance(value, str | int | float) and not isinstance(value, bool) else ""


def _leaf(flat: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        for k, v in flat.items():
            if k.split(".")[-1].lower() == key and _text(v):
                return _text(v)
    return ""


def _nic_list(host_facts: Any) -> list[dict[str, Any]]:
    """NIC records of one host's facts: the probe's ``nics: {devices: [...]}``, or older shapes."""
    nics = host_facts.get("nics") if isinstance(host_facts, Mapping) else None
    if isinstance(nics, Mapping) and isinstance(nics.get("devices"), list):
        return [dict(n) for n in nics["devices"] if isinstance(n, Mapping)]
    return runview.nic_entries(host_facts)


def host_nics(info: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Nic]:
    """Host -> NIC model, serial and firmware: telemetry facts for serial and firmware (what is
    really there), inventory ``nic_model`` first for the model (telemetry rarely has a marketing
    name), the inventory's ``nic_serial`` / ``nic_firmware`` when telemetry has none."""
    inv = runview.inventory_hosts(info)
    out: dict[str, Nic] = {}
    for host in runview.run_host_names(info):
        hvars = inv.get(host, {})
        netdev = hvars.get("netdev") or hvars.get("rdma_dev")
        entries = _nic_list(facts.get(host))
        chosen = next((n for n in entries if netdev and netdev in
                       {str(n.get(k)) for k in ("name", "netdev", "device")}), None)
        chosen = chosen or next((n for n in entries if not n.get("virtual")), None)
        flat = runview.flatten(chosen, limit=400) if chosen else {}
        model = _text(hvars.get("nic_model")) or _leaf(flat, _MODEL_KEYS)
        serial = _leaf(flat, _SERIAL_KEYS) or _text(hvars.get("nic_serial"))
        firmware = _leaf(flat, _FIRMWARE_KEYS) or _text(hvars.get("nic_firmware"))
        out[host] = Nic(model, serial, firmware)
        for rail in runview.inventory_rails(hvars):  # each NIC of a multi-rail host on its own
            entry = next((n for n in entries if rail.get("netdev") and rail["netdev"] in
                          {str(n.get(k)) for k in ("name", "netdev", "device")}), None)
            rflat = runview.flatten(entry, limit=400) if entry else {}
            out[f"{host}.{rail['name']}"] = Nic(model, _leaf(rflat, _SERIAL_KEYS) or _text(rail.get("serial")),
                                                _leaf(rflat, _FIRMWARE_KEYS) or firmware)
    return out
