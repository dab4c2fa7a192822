"""protocol.decode/encode keep no codec of their own: a spec added to the default
registry replaces the old one at once, as for every other user of the registry."""

from __future__ import annotations

import json

from kclient.protocol import decode, default_registry, encode, parse_spec


def test_a_replaced_spec_is_used_by_the_next_decode_and_encode() -> None:
    registry = default_registry()
    name = "UnregisterBrokerRequest"  # v0: BrokerId int32, then an empty tag section
    original = registry.spec(name)
    wire = b"\0\0\0\x07\0"
    assert decode(name, 0, wire).broker_id == 7  # type: ignore[attr-defined]
    assert encode(name, 0, {"broker_id": 7}) == wire
    replacement = {"apiKey": original.api_key, "type": "request", "name": name,
                   "validVersions": "0", "flexibleVersions": "0+", "fields": [
                       {"name": "A", "type": "int16", "versions": "0+"},
                       {"name": "B", "type": "int16", "versions": "0+"}]}
    try:
        registry.add(parse_spec(json.dumps(replacement), "replacement"))
        again = decode(name, 0, wire)
        assert (again.a, again.b) == (0, 7)  # type: ignore[attr-defined]
        assert encode(name, 0, {"a": 1, "b": 2}) == b"\0\x01\0\x02\0"
    finally:
        registry.add(original)
    assert decode(name, 0, wire).broker_id == 7  # type: ignore[attr-defined]
