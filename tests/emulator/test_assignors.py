"""The server-side assignors: Kafka's uniform and range for consumer groups, simple for
share groups (balance, stickiness, Kafka's range layout)."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.emulator.assignors import MemberSpec, range_assignor, simple, uniform

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))


def owners(result: dict[str, dict[uuid.UUID, frozenset[int]]]) -> dict[tuple[uuid.UUID, int],
                                                                        list[str]]:
    out: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member, parts in result.items():
        for topic, partitions in parts.items():
            for p in partitions:
                out.setdefault((topic, p), []).append(member)
    return out


def count(parts: dict[uuid.UUID, frozenset[int]]) -> int:
    return sum(len(p) for p in parts.values())


@settings(max_examples=200, deadline=None)
@given(members=st.integers(1, 8), partitions=st.lists(st.integers(0, 7), min_size=1, max_size=3),
       data=st.data())
def test_uniform_gives_every_partition_once_and_balances(members: int, partitions: list[int],
                                                         data: st.DataObject) -> None:
    topics = [T1, T2, T3][:len(partitions)]
    counts = dict(zip(topics, partitions, strict=True))
    subscribed = [frozenset(data.draw(st.sets(st.sampled_from(topics), min_size=1)))
                  for _ in range(members)]
    specs = [MemberSpec(f"m{i}", subscribed[i]) for i in range(members)]
    first = uniform(specs, counts)
    every = {(t, p) for t in set().union(*subscribed) for p in range(counts[t])}
    assert set(owners(first)) == every and all(len(o) == 1 for o in owners(first).values())
    for member, parts in first.items():
        index = int(member[1:])
        assert set(parts) <= subscribed[index]
    if len(set(subscribed)) == 1:
        sizes = [count(p) for p in first.values()]
        assert max(sizes) - min(sizes) <= 1
    # Run again from that assignment: nothing moves (stickiness).
    again = uniform([MemberSpec(s.member_id, s.topics, first[s.member_id]) for s in specs], counts)
    assert again == first


def test_uniform_keeps_what_it_can_when_a_member_joins() -> None:
    counts = {T1: 6}
    two = uniform([MemberSpec("a", frozenset({T1})), MemberSpec("b", frozenset({T1}))], counts)
    assert [count(two["a"]), count(two["b"])] == [3, 3]
    three = uniform([MemberSpec("a", frozenset({T1}), two["a"]),
                     MemberSpec("b", frozenset({T1}), two["b"]),
                     MemberSpec("c", frozenset({T1}))], counts)
    assert [count(three[m]) for m in "abc"] == [2, 2, 2]
    # a and b each give up one partition and keep the other two.
    assert three["a"][T1] < two["a"][T1] and three["b"][T1] < two["b"][T1]


def test_range_cuts_each_topic_into_co_partitioned_ranges() -> None:
    specs = [MemberSpec("m2", frozenset({T1, T2})), MemberSpec("m1", frozenset({T1, T2}))]
    result = range_assignor(specs, {T1: 3, T2: 3})
    # Sorted by member id: m1 gets the first range of both topics.
    assert result["m1"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["m2"] == {T1: frozenset({2}), T2: frozenset({2})}
    static = range_assignor([MemberSpec("a", frozenset({T1})),
                             MemberSpec("z", frozenset({T1}), instance_id="i0")], {T1: 2})
    assert static["z"] == {T1: frozenset({0})}  # static members come first


def test_simple_shares_partitions_when_members_outnumber_them() -> None:
    specs = [MemberSpec(f"m{i}", frozenset({T1})) for i in range(4)]
    result = simple(specs, {T1: 2})
    assert all(count(parts) == 1 for parts in result.values())
    assert {p for parts in result.values() for p in parts[T1]} == {0, 1}
    fewer = simple(specs[:2], {T1: 5})
    assert sorted(count(p) for p in fewer.values()) == [2, 3]
    assert set(owners(fewer)) == {(T1, p) for p in range(5)}
