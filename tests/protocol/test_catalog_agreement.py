"""The catalog, the codec, Kafka's release specs and the release data agree about every API.

The catalog's default range of a key is what the codec sends: its shipped spec's
stable versions (tools/gen_schemas.py lists the decode-only ones in the spec's
provenance).  Every version a Kafka release's specs mark stable (all of
../shared/kafka-specs/message-4.3.0 and message-4.2.0 checked) and every version a
Kafka release's brokers advertise is one the codec sends; a version the newest
corpus marks unstable is never sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from kclient.negotiation.releases import known_releases, release_profile
from kclient.protocol import default_catalog, default_registry, encode, encode_response
from kclient.protocol.schema import parse_versions, strip_comments

LATEST_RELEASE = "4.3"
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
# Kafka's specs exactly as released (../shared/kafka-specs), and the newest corpus.
RELEASE_CORPORA = ("message-4.2.0", "message-4.3.0")
NEWEST_CORPUS = "message-4.3.0"


def _decode_only(name: str) -> set[int]:
    """The versions of a shipped spec its provenance marks unstable (decoded, never sent)."""
    provenance = json.loads((SCHEMAS / f"{name}.json").read_text())["provenance"]
    versions = parse_versions(provenance.get("unstable", "none"), name, "provenance.unstable")
    return set(range(versions.lo, versions.hi + 1))


def _sendable(key: int) -> set[int]:
    sendable = default_catalog().resolve(key).sendable
    return set() if sendable is None else set(range(sendable[0], sendable[1] + 1))


def _release_requests(shared_dir: Path, corpus: str) -> dict[int, tuple[set[int], set[int]]]:
    """API key -> (stable versions, unstable versions) of a corpus's request specs."""
    found: dict[int, tuple[set[int], set[int]]] = {}
    for path in sorted((shared_dir / "kafka-specs" / corpus).glob("*Request.json")):
        raw = json.loads(strip_comments(path.read_text()))
        if raw.get("type") != "request":
            continue
        valid = parse_versions(raw["validVersions"], path.name, "validVersions")
        versions = set(range(valid.lo, valid.hi + 1))
        unstable = {valid.hi} if raw.get("latestVersionUnstable") and versions else set()
        found[int(raw["apiKey"])] = (versions - unstable, unstable)
    return found


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
        stable = sorted(set(range(request.valid.lo, request.valid.hi + 1))
                        - _decode_only(names[0]))
        expected = (stable[0], stable[-1]) if stable else None
        assert info.sendable == expected, info.name
        if info.sendable is not None:
            # Never above (or below) what the codec sends.
            assert (info.min_version, info.max_version) == info.sendable, info.name


def test_every_version_a_release_s_specs_mark_stable_is_sendable(shared_dir: Path) -> None:
    """All of 4.3.0's and 4.2.0's request specs: each stable version is one kclient sends."""
    missing = []
    checked = 0
    for corpus in RELEASE_CORPORA:
        for key, (stable, _unstable) in _release_requests(shared_dir, corpus).items():
            missing += [(corpus, key, v) for v in sorted(stable - _sendable(key))]
            checked += len(stable)
    assert not missing, f"stable in a Kafka release but not sendable by kclient: {missing}"
    assert checked == 600  # every stable (key, version) of both release corpora


def test_no_version_the_newest_corpus_marks_unstable_is_sent(shared_dir: Path) -> None:
    unstable = {(key, v) for key, (_, marked) in
                _release_requests(shared_dir, NEWEST_CORPUS).items() for v in marked}
    assert unstable == {(22, 6)}  # InitProducerId 6 in Kafka 4.3.0
    for key, version in unstable:
        assert version not in _sendable(key)
        assert version in range(*(lambda c: (c[0], c[1] + 1))(
            default_catalog().resolve(key).codec_versions))  # decoded all the same


def test_every_key_has_a_stable_spec_version() -> None:
    """Every key a broker may advertise (0-92) is spoken: the share-group APIs at
    their released versions, the streams-group APIs and 90-92 included."""
    assert {info.key for info in default_catalog() if info.sendable is None} == set()
    share_v0 = {info.key for info in default_catalog()
                if info.codec_versions is not None and info.codec_versions[0] == 0
                and info.sendable is not None and info.sendable[0] == 1}
    # Their early-access v0 (Kafka 4.0, unstable) stays decodable, never sent.
    assert share_v0 == {76, 77, 78, 79}


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
    assert gaps == {}


def test_no_release_advertises_a_version_kclient_decodes_only() -> None:
    """The decode-only versions (InitProducerId 6, the share-group APIs' early-access
    v0) are advertised by no release's default broker."""
    decode_only = {(info.key, v) for info in default_catalog()
                   if info.codec_versions is not None
                   for v in _decode_only(f"{info.name}Request")}
    assert decode_only == {(22, 6), (76, 0), (77, 0), (78, 0), (79, 0)}
    for release in known_releases():
        profile = release_profile(release)
        assert not [(k, v) for k, v in decode_only if k in profile and v in profile[k]], release


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
