"""A compared run's NIC and optics price and power, as the training projection counts them.

From the run's inventory snapshot (host variables, ``config/inventory_vars.py``): ``nic_price_usd``
and ``nic_power_w`` per NIC, ``optic_price_usd`` and ``optic_power_w`` per transceiver, and
``optics_per_nic`` (default 1 where an optic figure is given). Measured where the run stored it:
hwmon power sensors of the NIC's driver, as the samplers read them (``results/power.device_power``;
a sensor belongs to a NIC when its hwmon chip name is the driver the probe read for one of the
host's NICs, ``mlx5`` for ``mlx5_core``); the measured figure replaces ``nic_power_w``. Over the
run's hosts the mean is taken; the source says which variables and how many hosts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.analysis.projection import NicCost
from benchharness.results import runview
from benchharness.results.power import device_power
from benchharness.results.store import RunDir


def _mean(inv: Mapping[str, Mapping[str, Any]], hosts: Sequence[str], var: str) -> tuple[float, int] | None:
    """(mean of ``var`` over ``hosts`` that set it, how many did), or None."""
    found = []
    for h in hosts:
        try:
            found.append(float(inv[h][var]))
        except (KeyError, TypeError, ValueError):
            continue
    return (sum(found) / len(found), len(found)) if found else None


def _hosts_note(count: int, total: int) -> str:
    return "" if count == total else f", {count} of {total} hosts"


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _combined(inv: Mapping[str, Mapping[str, Any]], hosts: Sequence[str], nic_var: str, optic_var: str,
              nic: tuple[float, str] | None = None) -> tuple[float | None, str]:
    """NIC figure plus optics_per_nic x optic figure, and the words for where they came from."""
    total = len(hosts)
    got = _mean(inv, hosts, nic_var)
    base = nic or ((got[0], f"inventory {nic_var} {_num(got[0])}{_hosts_note(got[1], total)}") if got else None)
    optic = _mean(inv, hosts, optic_var)
    per = _mean(inv, hosts, "optics_per_nic")
    count = per[0] if per else 1.0
    if optic is not None and count:
        part = f"{count:g} x inventory {optic_var} {_num(optic[0])}{_hosts_note(optic[1], total)}"
        value = (base[0] if base else 0.0) + count * optic[0]
        return value, f"{base[1]} + {part}" if base else f"optics only: {part}"
    return (base[0], base[1]) if base else (None, "")


def measured_nic_w(run: RunDir) -> tuple[float, str] | None:
    """(mean watts per NIC, source) from the hwmon power sensors of the hosts' NIC drivers: per
    step, host and hwmon device (one NIC) the sum of its sensors' mean power; None without any."""
    drivers = {host: {str(n["driver"]) for n in runview.nic_entries(facts) if n.get("driver")}
               for host, facts in runview.read_facts(run).items()}
    per_device: dict[tuple[str, str, str], float] = {}
    chips: set[str] = set()
    for row in device_power(run):
        parts = str(row["sensor"]).split("/")
        if len(parts) < 3:
            continue
        mon, chip = parts[1], parts[2]
        if not any(d == chip or d.startswith(chip + "_") for d in drivers.get(row["host"], ())):
            continue
        key = (row["step"], row["host"], mon)
        per_device[key] = per_device.get(key, 0.0) + float(row["device_power_w_avg"])
        chips.add(chip)
    if not per_device:
        return None
    values = list(per_device.values())
    hosts = {k[1] for k in per_device}
    return sum(values) / len(values), (f"measured: hwmon {', '.join(sorted(chips))} power, mean of "
                                       f"{len(values)} NIC-steps on {len(hosts)} hosts")


def _run_hosts(info: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    inv = runview.inventory_hosts(info)
    return inv, [h for h in runview.run_host_names(info) if h in inv] or list(inv)


def inventory_price(info: Mapping[str, Any]) -> tuple[float | None, str]:
    """(price of one NIC with its optics, where it came from) from the run's inventory; (None, "")
    without ``nic_price_usd`` or ``optic_price_usd``. The scorecard's price row and the
    projection read it here."""
    inv, hosts = _run_hosts(info)
    return _combined(inv, hosts, "nic_price_usd", "optic_price_usd")


def run_nic_cost(run: RunDir, info: Mapping[str, Any]) -> NicCost:
    """The run's NIC with its optics: price from the inventory; power measured, else from the inventory."""
    inv, hosts = _run_hosts(info)
    price, price_source = inventory_price(info)
    power, power_source = _combined(inv, hosts, "nic_power_w", "optic_power_w", measured_nic_w(run))
    return NicCost(price, power, price_source, power_source)
