"""Pair patterns per rail: the host groups of a round become groups of rail views of those hosts.

``aligned``: rail i of every host of a group meets rail i of the others, every rail at once (one
step per rail in the same round, each with its own port). ``each``: the same pairs, one rail per
round. ``cross``: rail i of the first host (server, receiver) meets rail j (j != i) of the
others, one combination per round. Hosts with fewer NICs than their peers take part in the rails
they have; a round of hosts that list no rails (single-NIC inventories) stays as it is. A rail view (``Host.on_rail``) carries the NIC's address and variables, so tool
adapters build per-rail command lines unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchharness.core.model import Host, endpoint

Group = tuple[Host, ...]


def _count(group: Group) -> int:
    return min(len(h.nics()) for h in group) if group else 0


def _view(group: Group, rails: Sequence[int]) -> Group:
    return tuple(h.on_rail(h.nics()[i]) for h, i in zip(group, rails, strict=True))


def rail_rounds(rounds: Sequence[Sequence[Group]], mode: str) -> list[list[Group]]:
    """Rounds of rail-view groups for ``mode`` (aligned, each, cross); see the module docstring."""
    out: list[list[Group]] = []
    for groups in rounds:
        if not any(h.rails for g in groups for h in g):
            out.append(list(groups))  # single-NIC hosts: the steps of today, unlabelled
        elif mode == "aligned":
            out.append([_view(g, [i] * len(g)) for g in groups for i in range(_count(g))])
        elif mode == "each":
            for i in range(max((_count(g) for g in groups), default=0)):
                out.append([_view(g, [i] * len(g)) for g in groups if i < _count(g)])
        elif mode == "cross":
            most = max((_count(g) for g in groups), default=0)
            for i in range(most):
                for j in range(most):
                    if i == j:
                        continue
                    here = [_view(g, [i] + [j] * (len(g) - 1)) for g in groups if max(i, j) < _count(g)]
                    if here:
                        out.append(here)
        else:
            raise ValueError(f"unknown rails mode {mode!r}")
    return [r for r in out if r]


def rail_labels(group: Group) -> dict[str, str]:
    """Labels of a rail step: ``rail`` (``rail2``, or ``rail0-rail3`` across rails), ``endpoints``
    (``h1.rail2,h2.rail2`` in the group's order) and, for pairs, each side's rail and NIC serial."""
    rails = [h.rail or "" for h in group]
    labels = {"rail": rails[0] if len(set(rails)) == 1 else f"{rails[0]}-{rails[1]}",
              "endpoints": ",".join(endpoint(h.name, h.rail) for h in group)}
    if len(group) == 2:
        for side, host in zip(("server", "client"), group, strict=True):
            labels[f"{side}_rail"] = host.rail or ""
            if host.var("nic_serial"):
                labels[f"{side}_nic_serial"] = str(host.var("nic_serial"))
    return labels
