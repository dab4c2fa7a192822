"""The catalog, the codec and the release data agree about every API.

The catalog's default range of a key is what the codec sends (its shipped spec's
versions, an unstable newest one left out); every version a Kafka release's
brokers advertise is one the codec can send, except the gaps listed here: versions
no spec of either corpus describes as stable (the 2026 corpus has only the
client-facing APIs kafka-python bundles, so the share-group, streams-group and
newer KIP-848 specs are missing from it).  A gap that opens or closes fails the test.
"""

from __future__ import annotations

from kclient.negotiation.releases import known_releases, release_profile
from kclient.protocol import default_catalog, default_registry, encode, encode_response

LATEST_RELEASE = "4.3"

# key -> the advertised versions the codec cannot send, and why.
_SHARE = "KIP-932 share groups: brokers from 4.1 advertise the released versions; the " \
         "2024 corpus has the early-access v0 only, marked unstable"
KNOWN_GAPS: dict[int, tuple[frozenset[int], str]] = {
    68: (frozenset({1}), "ConsumerGroupHeartbeat v1 (4.0): the 2024 corpus marks it "
         "unstable (still in development then); the 2026 corpus lacks KIP-848's specs"),
    69: (frozenset({1}), "ConsumerGroupDescribe v1 (4.0+): in neither corpus"),
    76: (frozenset({1}), _SHARE),
    77: (frozenset({1}), _SHARE),
    78: (frozenset({1, 2}), _SHARE),
    79: (frozenset({1, 2}), _SHARE),
    80: (frozenset({1}), "AddRaftVoter v1: newer than the 2024 corpus, not in the 2026 one"),
    83: (frozenset({0}), _SHARE + " (share-group state, broker to share coordinator)"),
    84: (frozenset({0}), _SHARE + " (share-group state, broker to share coordinator)"),
    85: (frozenset({0, 1}), _SHARE + " (share-group state, broker to share coordinator)"),
    86: (frozenset({0}), _SHARE + " (share-group state, broker to share coordinator)"),
    87: (frozenset({0, 1}), _SHARE + " (share-group state, broker to share coordinator)"),
    88: (frozenset({0}), "StreamsGroupHeartbeat (KIP-1071, 4.1+): in neither corpus"),
    89: (frozenset({0}), "StreamsGroupDescribe (KIP-1071, 4.1+): in neither corpus"),
    90: (frozenset({0, 1}), "DescribeShareGroupOffsets (KIP-932, 4.1+): in neither corpus"),
    91: (frozenset({0}), "AlterShareGroupOffsets (KIP-932, 4.1+): in neither corpus"),
    92: (frozenset({0}), "DeleteShareGroupOffsets (KIP-932, 4.1+): in neither corpus"),
}


def test_the_catalog_range_is_what_the_codec_sends() -> None:
    registry = default_registry()
    for info in default_catalog():
        names = (f"{info.name}Request", f"{info.name}Response")
        if info.codec_versions is None:
            assert not any(n in registry for n in names), info.name
            assert info.sendable is None
            continue
        for name in names:
            spec = registry.spec(name)
            assert (spec.valid.lo, spec.valid.hi) == info.codec_versions, name
        request = registry.spec(names[0])
        stable_hi = request.valid.hi - (1 if request.latest_version_unstable else 0)
        expected = (request.valid.lo, stable_hi) if request.valid.lo <= stable_hi else None
        assert info.sendable == expected, info.name
        if info.sendable is not None:
            # Never above (or below) what the codec sends.
            assert (info.min_version, info.max_version) == info.sendable, info.name


def test_keys_without_a_stable_spec_keep_the_newest_release_range() -> None:
    latest = release_profile(LATEST_RELEASE)
    unsendable = {info.key for info in default_catalog() if info.sendable is None}
    # Share groups (76-79, 83-87: unstable v0 only) and 88-92 (no spec at all).
    assert unsendable == {76, 77, 78, 79, *range(83, 93)}
    for key in unsendable:
        info = default_catalog().resolve(key)
        assert (info.min_version, info.max_version) == (latest[key].min, latest[key].max)


def test_every_version_a_release_advertises_is_one_the_codec_sends() -> None:
    catalog = default_catalog()
    gaps: dict[int, set[int]] = {}
    releases = known_releases()
    assert LATEST_RELEASE in releases and "4.0" in releases and "3.9-kraft" in releases
    for release in releases:
        for key, advertised in release_profile(release).items():
            info = catalog.resolve(key)
            sendable = info.sendable or (1, 0)
            missing = {v for v in range(advertised.min, advertised.max + 1)
                       if not sendable[0] <= v <= sendable[1]}
            if missing:
                gaps.setdefault(key, set()).update(missing)
    assert gaps == {k: set(v) for k, (v, _) in KNOWN_GAPS.items()}


def test_the_only_unstable_versions_releases_advertise_are_stale_2024_marks() -> None:
    """The 2024 corpus marked versions still in development then (ConsumerGroupHeartbeat
    v1, the share-group state APIs' v0), which later releases shipped; no release
    advertises a version the 2026 corpus marks unstable (InitProducerId 6)."""
    registry = default_registry()
    advertised_unstable = set()
    for info in default_catalog():
        name = f"{info.name}Request"
        if name in registry and registry.spec(name).latest_version_unstable:
            newest = registry.spec(name).valid.hi
            if any(newest in release_profile(r).get(info.key, range(0))
                   for r in known_releases()):
                advertised_unstable.add((info.key, newest))
    assert advertised_unstable == {(68, 1), (83, 0), (84, 0), (85, 0), (86, 0), (87, 0)}
    assert all(k in KNOWN_GAPS and v in KNOWN_GAPS[k][0] for k, v in advertised_unstable)


def test_the_codec_encodes_every_sendable_version_of_every_api() -> None:
    """Defaults only: every (request, response) of every sendable version compiles and
    encodes, the newest stable one of each API included."""
    count = 0
    for info in default_catalog():
        if info.sendable is None:
            continue
        for version in range(info.sendable[0], info.sendable[1] + 1):
            assert isinstance(encode(f"{info.name}Request", version, {}), bytes)
            assert encode_response(info.key, version, 1, {})
            count += 1
    assert count > 300
