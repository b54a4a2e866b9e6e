"""Who runs with whom: pairings and groupings of hosts, as pure functions.

Every function is generic over the host type (names in tests, ``Host`` objects in the planner)
and keeps the order it is given, so plans are deterministic. Pair tuples are ordered
``(server, client)``; incast groups are ``(receiver, sender, ...)``, one-to-many groups
``(source, receiver, ...)``. Functions that return *rounds* return lists of groups that share no
host and so may run at the same time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

H = TypeVar("H")

Pair = tuple[H, H]


def _distinct(hosts: Sequence[H]) -> list[H]:
    out = list(hosts)
    if len(set(out)) != len(out):
        raise ValueError(f"hosts repeat: {out!r}")
    return out


def all_pairs_rounds(hosts: Sequence[H]) -> list[list[tuple[H, H]]]:
    """Every unordered pair exactly once, in rounds of disjoint pairs (the circle method).

    Even N gives N-1 rounds of N/2 pairs; odd N gives N rounds of (N-1)/2 pairs, one host idle in
    each. Each host is server and client equally often, give or take one.
    """
    members: list[H | None] = list(_distinct(hosts))
    if len(members) < 2:
        return []
    if len(members) % 2:
        members.insert(0, None)  # the host paired with None sits the round out
    n = len(members)
    fixed, rotating = members[0], members[1:]
    rounds: list[list[tuple[H, H]]] = []
    for r in range(n - 1):
        order = [fixed, *rotating[r:], *rotating[:r]]
        this_round: list[tuple[H, H]] = []
        for i in range(n // 2):
            a, b = order[i], order[n - 1 - i]
            if i == 0 and r % 2:
                a, b = b, a  # the fixed host alternates roles; the rotation balances the rest
            if a is not None and b is not None:
                this_round.append((a, b))
        rounds.append(this_round)
    return rounds


def pairs(hosts: Sequence[H], explicit: Sequence[Sequence[H]] | None = None) -> list[tuple[H, H]]:
    """Explicit pairs as given, else consecutive hosts: (h1, h2), (h3, h4) ...

    With an odd number of hosts the last one is paired with the first, so that every host is
    measured.
    """
    if explicit is not None:
        out: list[tuple[H, H]] = []
        for pair in explicit:
            if len(pair) != 2:
                raise ValueError(f"a pair has two hosts: {list(pair)!r}")
            out.append((pair[0], pair[1]))
        return out
    members = _distinct(hosts)
    out = [(members[i], members[i + 1]) for i in range(0, len(members) - 1, 2)]
    if len(members) % 2 and len(members) > 1:
        out.append((members[-1], members[0]))
    return out


def pack_rounds(groups: Sequence[Sequence[H]]) -> list[list[tuple[H, ...]]]:
    """Greedy first-fit of groups into rounds in which no host appears twice; order is kept."""
    rounds: list[list[tuple[H, ...]]] = []
    busy: list[set[H]] = []
    for group in groups:
        members = set(group)
        for r, used in enumerate(busy):
            if not members & used:
                rounds[r].append(tuple(group))
                used |= members
                break
        else:
            rounds.append([tuple(group)])
            busy.append(set(members))
    return rounds


def ring(hosts: Sequence[H]) -> list[tuple[H, H]]:
    """Each host sends to the next one, all at once: (h2, h1), (h3, h2) ... (h1, hN).

    Pairs are (server, client), so traffic flows h1 → h2 → ... → hN → h1. Every host is server
    once and client once; two hosts give both directions.
    """
    members = _distinct(hosts)
    n = len(members)
    if n < 2:
        return []
    return [(members[(i + 1) % n], members[i]) for i in range(n)]


def one_to_many(hosts: Sequence[H]) -> list[tuple[H, ...]]:
    """Each host in turn sends to all the others at once: groups (source, receiver, ...)."""
    members = _distinct(hosts)
    if len(members) < 2:
        return []
    return [(src, *[h for h in members if h != src]) for src in members]


def incast(hosts: Sequence[H]) -> list[tuple[H, ...]]:
    """Each host in turn receives from all the others at once: groups (receiver, sender, ...)."""
    members = _distinct(hosts)
    if len(members) < 2:
        return []
    return [(dst, *[h for h in members if h != dst]) for dst in members]


def all_to_all_rounds(hosts: Sequence[H]) -> list[list[tuple[H, H]]]:
    """Every ordered pair once, in N-1 rounds; in round k host i sends to host i+k.

    Each round is a permutation: every host is client of one pair and server of another, so
    every NIC sends and receives at the same time.
    """
    members = _distinct(hosts)
    n = len(members)
    return [[(members[(i + k) % n], members[i]) for i in range(n)] for k in range(1, n)]


def scaling(hosts: Sequence[H]) -> list[tuple[H, ...]]:
    """Growing prefixes of the host list: 2, 4, 8 ... hosts, and all N last."""
    members = _distinct(hosts)
    n = len(members)
    if n < 2:
        return [tuple(members)] if members else []
    sizes: list[int] = []
    size = 2
    while size < n:
        sizes.append(size)
        size *= 2
    sizes.append(n)
    return [tuple(members[:k]) for k in sizes]
