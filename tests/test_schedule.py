"""Properties of the pairing functions, over host names."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchharness.planning.schedule import (
    all_pairs_rounds,
    all_to_all_rounds,
    incast,
    one_to_many,
    pack_rounds,
    pairs,
    ring,
    scaling,
)

# Pure functions over small lists: 60 examples each keep the module at a few seconds on 2 cores.
few = settings(max_examples=60, deadline=None)

host_lists = st.lists(st.text("abcdefgh0123456789-", min_size=1, max_size=6), unique=True, max_size=16)
two_or_more = st.lists(st.text("abcdefgh0123456789-", min_size=1, max_size=6), unique=True,
                       min_size=2, max_size=16)


@few
@given(host_lists)
def test_all_pairs_rounds_cover_every_pair_once(hosts: list[str]) -> None:
    rounds = all_pairs_rounds(hosts)
    n = len(hosts)
    seen = [frozenset(p) for r in rounds for p in r]
    assert Counter(seen) == Counter(frozenset(p) for p in combinations(hosts, 2))
    if n < 2:
        assert rounds == []
    else:
        assert len(rounds) == (n - 1 if n % 2 == 0 else n)
        assert all(len(r) == n // 2 for r in rounds)
    for r in rounds:
        members = [h for pair in r for h in pair]
        assert len(members) == len(set(members)), f"a host twice in round {r}"


@few
@given(two_or_more)
def test_all_pairs_rounds_balance_server_and_client_roles(hosts: list[str]) -> None:
    rounds = all_pairs_rounds(hosts)
    servers = Counter(a for r in rounds for a, _ in r)
    clients = Counter(b for r in rounds for _, b in r)
    assert all(abs(servers[h] - clients[h]) <= 1 for h in hosts)


def test_all_pairs_rounds_small_cases_are_readable() -> None:
    assert all_pairs_rounds(["h1", "h2"]) == [[("h1", "h2")]]
    assert all_pairs_rounds(["h1", "h2", "h3"]) == [[("h1", "h2")], [("h2", "h3")], [("h3", "h1")]]
    assert len(all_pairs_rounds(["h1", "h2", "h3", "h4"])) == 3


def test_repeated_host_is_rejected() -> None:
    with pytest.raises(ValueError, match="hosts repeat"):
        all_pairs_rounds(["h1", "h2", "h1"])


@few
@given(two_or_more)
def test_ring_each_host_serves_once_and_sends_once_to_its_neighbour(hosts: list[str]) -> None:
    pairs_ = ring(hosts)
    n = len(hosts)
    assert len(pairs_) == n
    assert Counter(s for s, _ in pairs_) == Counter(hosts)
    assert Counter(c for _, c in pairs_) == Counter(hosts)
    # client i sends to server i+1: following the arrows visits every host once, then closes
    nxt = {c: s for s, c in pairs_}
    walk = [hosts[0]]
    for _ in range(n - 1):
        walk.append(nxt[walk[-1]])
    assert walk == hosts and nxt[walk[-1]] == hosts[0]


def test_ring_needs_two_hosts() -> None:
    assert ring(["h1"]) == []
    assert ring(["h1", "h2"]) == [("h2", "h1"), ("h1", "h2")]


@few
@given(two_or_more)
def test_incast_each_host_receives_from_all_others(hosts: list[str]) -> None:
    groups = incast(hosts)
    assert [g[0] for g in groups] == hosts
    for receiver, *senders in groups:
        assert sorted(senders) == sorted(h for h in hosts if h != receiver)
        assert senders == [h for h in hosts if h != receiver]  # inventory order kept


@few
@given(two_or_more)
def test_one_to_many_each_host_sends_to_all_others(hosts: list[str]) -> None:
    groups = one_to_many(hosts)
    assert [g[0] for g in groups] == hosts
    for source, *receivers in groups:
        assert receivers == [h for h in hosts if h != source]


@few
@given(host_lists)
def test_all_to_all_rounds_are_permutations_covering_every_ordered_pair(hosts: list[str]) -> None:
    rounds = all_to_all_rounds(hosts)
    n = len(hosts)
    assert len(rounds) == max(n - 1, 0)
    for r in rounds:
        assert Counter(s for s, _ in r) == Counter(hosts)
        assert Counter(c for _, c in r) == Counter(hosts)
        assert all(s != c for s, c in r)
    assert Counter(p for r in rounds for p in r) == Counter(permutations(hosts, 2))


@few
@given(host_lists)
def test_scaling_grows_by_powers_of_two_up_to_all(hosts: list[str]) -> None:
    groups = scaling(hosts)
    n = len(hosts)
    if n == 0:
        assert groups == []
        return
    sizes = [len(g) for g in groups]
    assert sizes[-1] == n
    assert sizes == sorted(set(sizes))
    expected = [n] if n < 2 else [2**k for k in range(1, n.bit_length()) if 2**k < n] + [n]
    assert sizes == expected
    assert all(list(g) == hosts[: len(g)] for g in groups)


def test_scaling_examples() -> None:
    assert [len(g) for g in scaling([f"h{i}" for i in range(8)])] == [2, 4, 8]
    assert [len(g) for g in scaling([f"h{i}" for i in range(9)])] == [2, 4, 8, 9]
    assert scaling(["h1"]) == [("h1",)]


@few
@given(two_or_more)
def test_consecutive_pairs_cover_every_host(hosts: list[str]) -> None:
    got = pairs(hosts)
    assert {h for p in got for h in p} == set(hosts)
    assert all(a != b for a, b in got)
    assert got[: len(hosts) // 2] == [(hosts[i], hosts[i + 1]) for i in range(0, len(hosts) - 1, 2)]


def test_explicit_pairs_are_kept_as_given() -> None:
    assert pairs(["h1", "h2", "h3"], [["h3", "h1"], ["h1", "h2"]]) == [("h3", "h1"), ("h1", "h2")]
    with pytest.raises(ValueError, match="two hosts"):
        pairs([], [["h1"]])


@few
@given(st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3, unique=True), max_size=12))
def test_pack_rounds_never_puts_a_host_twice_in_a_round(groups: list[list[str]]) -> None:
    rounds = pack_rounds(groups)
    assert sorted(g for r in rounds for g in r) == sorted(tuple(g) for g in groups)
    for r in rounds:
        members = [h for g in r for h in g]
        assert len(members) == len(set(members))
    # first fit: a group sits in round k only because every earlier round already had a host of it
    for k, r in enumerate(rounds):
        for group in r:
            for earlier in rounds[:k]:
                assert any(set(group) & set(other) for other in earlier)
