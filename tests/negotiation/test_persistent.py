"""The persistent map behind cluster views: a dict's answers, and old copies never change."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.negotiation.persistent import MISSING, PMap


class Clash:
    """A key whose hash is chosen: equal hashes for different keys test the buckets."""

    def __init__(self, name: int, hashed: int) -> None:
        self.name, self.hashed = name, hashed

    def __hash__(self) -> int:
        return self.hashed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clash) and (other.name, hash(other)) == (self.name, hash(self))

    def __repr__(self) -> str:
        return f"Clash({self.name}, {self.hashed})"


# Few hashes for many names (buckets), hashes that agree on their low bits (deep
# paths), negative and huge ones, plain ints as node ids are.
_HASHES = st.sampled_from([0, 1, 32, 1024, 1 << 40, -1, -2, (1 << 63) + 5, 7 << 55])
KEYS = st.one_of(st.integers(-3, 3000),
                 st.builds(Clash, st.integers(0, 6), _HASHES))
OPS = st.lists(st.tuples(st.booleans(), KEYS, st.integers(0, 5)), max_size=120)


def _check(pmap: PMap[Any, int], model: dict[Any, int]) -> None:
    assert len(pmap) == len(model)
    assert dict(pmap.items()) == model
    assert dict(pmap.pairs()) == model
    assert sorted(map(repr, pmap)) == sorted(map(repr, model))
    for key, value in model.items():
        assert key in pmap and pmap[key] == value and pmap.get(key) == value


@settings(max_examples=150, deadline=None)
@given(OPS, st.lists(st.tuples(KEYS, st.integers(0, 5)), max_size=40))
def test_a_pmap_answers_as_a_dict_and_its_old_copies_stay(
        ops: list[tuple[bool, Any, int]], start: list[tuple[Any, int]]) -> None:
    model = dict(start)
    pmap: PMap[Any, int] = PMap(start)
    _check(pmap, model)
    history = [(pmap, dict(model))]
    for is_set, key, value in ops:
        before, before_model = pmap, dict(model)
        if is_set:
            pmap = pmap.set(key, value)
            model[key] = value
        else:
            pmap = pmap.delete(key)
            model.pop(key, None)
            assert key not in pmap
        if model == before_model and not is_set:
            assert pmap is before  # deleting an absent key copies nothing
        changed = {k for k, _, _ in before.changes(pmap)}
        truly = {k for k in before_model.keys() | model.keys()
                 if before_model.get(k, MISSING) is not model.get(k, MISSING)}
        assert changed == truly
        for key_, old, new in before.changes(pmap):
            assert old is before_model.get(key_, MISSING)
            assert new is model.get(key_, MISSING)
        history.append((pmap, dict(model)))
    for version, expected in history:  # every earlier copy is as it was
        _check(version, expected)


def test_setting_the_same_value_returns_the_same_map() -> None:
    value = object()
    pmap = PMap({1: value})
    assert pmap.set(1, value) is pmap
    assert pmap.set(1, object()) is not pmap


def test_a_changed_copy_shares_all_but_one_path() -> None:
    big = PMap((n, n) for n in range(10_000))
    changed = big.set(5, -5)
    assert list(big.changes(changed)) == [(5, 5, -5)]
    assert big[5] == 5 and changed[5] == -5
    # Only the nodes on the changed path are new: the root's other slots are shared.
    shared = sum(1 for slot, child in big._root.items() if changed._root[slot] is child)
    assert shared == len(big._root) - 1


def test_missing_keys_raise_key_error() -> None:
    pmap = PMap({Clash(1, 7): 1})
    assert Clash(2, 7) not in pmap
    assert pmap.get(Clash(2, 7)) is None
    assert repr(MISSING) == "MISSING"
    assert repr(PMap({1: 2})) == "PMap({1: 2})"
