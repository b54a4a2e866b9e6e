"""The capacity a ``line_rate`` check holds a measurement to, derived from the hosts' NICs.

* one NIC, one direction: its line rate (a rail's own ``line_rate_gbps`` where rails differ);
* a bidirectional measurement (perftest ``-b``, both directions summed): twice the line rate;
* a collective (a group of hosts): each host's aggregate, the sum of its rails' line rates,
  since NCCL/RCCL spread a collective over every rail (``NCCL_IB_HCA`` lists them all).

The smallest capacity among the unit's hosts (or NICs) is the reference: a pair is no faster
than its slower end. ``rates`` is ``runview.line_rates``: host -> rate and ``host.railN`` -> rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import split_endpoint

#: Patterns whose one step spans every host's NICs at once (collectives).
GROUP_PATTERNS = ("group", "scaling")


def host_aggregate(rates: Mapping[str, float], host: str) -> float | None:
    """Sum of a host's rails' line rates (Gbit/s), else its one NIC's rate; None if unknown."""
    rails = [r for name, r in rates.items() if split_endpoint(name) == (host, split_endpoint(name)[1])
             and split_endpoint(name)[1]]
    return sum(rails) if rails else rates.get(host)


def is_bidirectional(case: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """Whether a unit sums both directions: ``bidir`` swept into its case, or set for the whole test."""
    if "bidir" in case:
        return case["bidir"] is True or str(case["bidir"]).lower() == "true"
    params = test.get("params") if isinstance(test.get("params"), Mapping) else {}
    return (params or {}).get("bidir") is True


def capacity_gbps(hosts: Sequence[str], rates: Mapping[str, float], *, group: bool,
                  bidir: bool) -> tuple[float | None, str]:
    """The reference capacity of a unit over ``hosts`` (names or ``host.railN`` endpoints), with
    the words that say what it is; ``(None, "line rate unknown")`` when a rate is missing."""
    if group:
        found = [host_aggregate(rates, split_endpoint(h)[0]) for h in hosts]
        what = "aggregate of the host's NICs"
    else:
        found = [rates.get(h) or rates.get(split_endpoint(h)[0]) for h in hosts]
        what = "line rate"
    if not found or any(r is None for r in found):
        return None, "line rate unknown"
    rate = min(r for r in found if r is not None)
    if bidir:
        return 2 * rate, f"2 x {what} {rate:g} Gbit/s (both directions)"
    return rate, f"{what} {rate:g} Gbit/s"


#: Inventory variable: the NIC's rated message rate (million messages/s), e.g. from its datasheet.
MSG_RATE_VAR = "nic_msg_rate_mpps"


def rated_msg_rate(hosts: Sequence[str], inventory: Mapping[str, Mapping[str, Any]], *,
                   bidir: bool) -> tuple[float | None, str]:
    """The rated message rate a unit over ``hosts`` (names or ``host.railN``) is held to: the lowest
    ``nic_msg_rate_mpps`` of its hosts (per NIC; twice that when both directions are summed), and
    how to describe it; None when a host's inventory lacks it."""
    values = []
    for name in hosts:
        host = split_endpoint(name)[0]
        try:
            values.append(float((inventory.get(host) or {}).get(MSG_RATE_VAR)))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None, f"{host}: no {MSG_RATE_VAR}"
    if not values:
        return None, "no hosts"
    rate = min(values) * (2 if bidir else 1)
    return rate, f"rated {rate:g} Mpps ({MSG_RATE_VAR}{', x2 both directions' if bidir else ''})"
