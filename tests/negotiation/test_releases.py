"""Release profiles, aliases, fallback brokers and release guessing (incl. live tansu)."""

from __future__ import annotations

import re

import pytest

from kclient.errors import ConfigError
from kclient.negotiation import (
    GUESS_IGNORED_KEYS,
    ReleaseGuess,
    VersionRange,
    fallback_broker,
    guess_release,
    known_releases,
    release_label,
    release_mode,
    release_number,
    release_profile,
    removed_in,
    resolve_release,
)
from kclient.negotiation.releases import (
    advertised_but_rejected,
    fallback_release,
    fallback_source,
)
from tests.conftest import TansuBroker, raw_api_versions

RELEASES = known_releases()


def test_known_releases_in_order() -> None:
    assert RELEASES[0] == "0.8.0"
    assert "0.9" in RELEASES and "2.8" in RELEASES and "3.9" in RELEASES
    assert RELEASES[-1] == "4.3"


def test_profile_facts() -> None:
    # Facts of Kafka history: ApiVersions (18) arrived in 0.10.0, v3 in 2.4.
    assert 18 not in release_profile("0.9")
    assert release_profile("0.10.0")[18] == VersionRange(0, 0)
    assert release_profile("2.4")[18] == VersionRange(0, 3)
    assert release_profile("2.1")[0] == VersionRange(0, 7)


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("0.9.0", "0.9"), ("0.9.0.1", "0.9"), ("v2.8", "2.8"), ("2.8.2", "2.8"),
     ("0.10.0.1", "0.10.0"), ("0.10", "0.10.0"), ("0.8", "0.8.0"), ("3.9.0", "3.9"),
     ("2.1.0-IV2", "2.1"), ("0.11.0.3", "0.11"), ("1.0.2", "1.0"), (" 4.0 ", "4.0")],
)
def test_release_aliases(alias: str, canonical: str) -> None:
    assert resolve_release(alias) == canonical
    assert release_profile(alias) == release_profile(canonical)


@pytest.mark.parametrize("bad", ["", "9.9", "0.7", "kafka", "2", "2.x"])
def test_unknown_release(bad: str) -> None:
    with pytest.raises(ConfigError, match="unknown Kafka release"):
        resolve_release(bad)


def test_fallback_broker() -> None:
    broker = fallback_broker("0.9.0", 3, "old", 9092, handshake=("ApiVersions v0: closed",))
    assert broker.source == "fallback:0.9.0"
    assert broker.apis == release_profile("0.9")
    assert broker.handshake == ("ApiVersions v0: closed",)
    assert broker.node_id == 3


def _alike(release: str) -> tuple[str, ...]:
    """The profiles advertising exactly what ``release`` does (itself included)."""
    profile = release_profile(release)
    return tuple(n for n in RELEASES if release_profile(n) == profile)


@pytest.mark.parametrize("release", RELEASES)
def test_every_profile_guesses_itself(release: str) -> None:
    guess = guess_release(release_profile(release))
    assert guess.kind == "exact" and guess.mode == release_mode(release)
    # A release is named alone unless other profiles advertise exactly the same
    # ranges; then the guess names all of them and picks none.
    assert guess.releases == _alike(release)
    assert all(release_mode(n) == release_mode(release) for n in guess.releases)
    if len(guess.releases) == 1:
        assert guess.low == release and guess.high is None
        assert guess.text == release_label(release)


# Releases whose brokers advertise identical tables (every key, minimum and
# maximum): no answer tells them apart.  From the release data; checked above
# against every profile, listed here so that a change to the data shows.
INDISTINGUISHABLE: list[tuple[str, ...]] = [("3.3-kraft", "3.4-kraft")]


def test_indistinguishable_releases_table() -> None:
    groups = sorted({_alike(n) for n in RELEASES if len(_alike(n)) > 1})
    assert groups == INDISTINGUISHABLE


def test_identical_releases_are_named_together() -> None:
    for release in ("3.3-kraft", "3.4-kraft"):
        guess = guess_release(release_profile(release))
        assert (guess.kind, guess.low, guess.high) == ("exact", "3.3-kraft", "3.4-kraft")
        assert guess.text == str(guess) == "3.3 or 3.4 (KRaft)"
    # Rebuilt from its fields (as the fleet pipeline does from its columns), the
    # guess says the same and sorts with 3.3, before 3.4's ZooKeeper profile.
    rebuilt = ReleaseGuess("exact", "3.3-kraft", "3.4-kraft", "kraft")
    assert rebuilt.text == "3.3 or 3.4 (KRaft)"
    assert rebuilt.releases == ("3.3-kraft", "3.4-kraft")
    assert (guess_release(release_profile("3.3")).order < rebuilt.order
            < guess_release(release_profile("3.4")).order)
    # Without the mode (one histogram bar for both modes of a release).
    assert ReleaseGuess("exact", "3.3-kraft", "3.4-kraft").text == "3.3 or 3.4"
    # Three releases in a row are listed, oldest first.
    assert ReleaseGuess("exact", "3.2-kraft", "3.4-kraft", "kraft").text == (
        "3.2, 3.3 or 3.4 (KRaft)")


def test_equal_considered_keys_are_told_apart_by_the_others() -> None:
    # ZooKeeper 3.3 and 3.4 brokers agree on every key the guess weighs but not on
    # the inter-broker ones, which the broker's own answer shows: one release each.
    for release in ("3.3", "3.4", "3.6", "3.6-kraft"):
        guess = guess_release(release_profile(release))
        assert guess.releases == (release,), release


@pytest.mark.parametrize(("release", "text"), [
    ("2.1", "2.1"), ("2.8", "2.8 (ZooKeeper)"), ("2.8-kraft", "2.8 (KRaft)"),
    ("3.3-kraft", "3.3 or 3.4 (KRaft)"), ("3.4-kraft", "3.3 or 3.4 (KRaft)"),
    ("3.5-kraft", "3.5 (KRaft)"), ("3.6", "3.6 (ZooKeeper)"),
    ("3.6-kraft", "3.6 (KRaft)"), ("3.7-kraft", "3.7 (KRaft)"), ("3.8-kraft", "3.8 (KRaft)"),
    ("3.9", "3.9 (ZooKeeper)"), ("3.9-kraft", "3.9 (KRaft)"), ("4.0", "4.0"), ("4.3", "4.3"),
])
def test_guess_texts_name_the_mode(release: str, text: str) -> None:
    assert guess_release(release_profile(release)).text == text


def test_kraft_profiles_follow_kafka_history() -> None:
    assert known_releases("kraft")[0] == "2.8-kraft"
    assert known_releases("kraft")[-1] == "4.3"
    assert known_releases("zookeeper")[-1] == "3.9"
    for name in known_releases("kraft"):
        profile = release_profile(name)
        assert not {4, 5, 6, 7} & set(profile), name  # ZooKeeper-mode controller requests
    assert 74 in release_profile("3.7-kraft") and 74 not in release_profile("3.6-kraft")
    assert 75 in release_profile("3.8-kraft") and 75 not in release_profile("3.8")
    assert 50 in release_profile("3.5-kraft") and 50 not in release_profile("3.4-kraft")
    assert 38 in release_profile("3.6-kraft") and 38 not in release_profile("3.5-kraft")
    assert release_profile("3.7-kraft")[0] == release_profile("3.7")[0]


@pytest.mark.parametrize(("alias", "canonical"), [
    ("3.7-kraft", "3.7-kraft"), ("3.7.1-KRaft", "3.7-kraft"), ("3.7 (KRaft)", "3.7-kraft"),
    ("v3.9.0_kraft", "3.9-kraft"), ("3.7-zk", "3.7"), ("3.7 (ZooKeeper)", "3.7"),
    ("4.0-kraft", "4.0"), ("4.1.1", "4.1"),
])
def test_mode_suffixes(alias: str, canonical: str) -> None:
    assert resolve_release(alias) == canonical
    assert release_number(alias) == canonical.removesuffix("-kraft")


@pytest.mark.parametrize(("bad", "fragment"), [
    ("2.1-kraft", "Kafka 2.1 has no KRaft mode"), ("4.0-zk", "Kafka 4.0 has no ZooKeeper"),
    ("-kraft", "unknown Kafka release"),
])
def test_impossible_modes(bad: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        resolve_release(bad)


def test_kraft_fallback_broker() -> None:
    broker = fallback_broker("3.8.1-kraft")
    assert broker.source == "fallback:3.8-kraft"  # the release series, as Kafka names it
    assert broker.apis == release_profile("3.8-kraft")


def test_mode_told_by_controller_requests_alone() -> None:
    # 3.6 ZooKeeper and KRaft brokers agree on every considered key; the
    # ZooKeeper-only controller requests (ignored keys) tell them apart.
    zk, kraft = release_profile("3.6"), release_profile("3.6-kraft")
    assert {k: r for k, r in zk.items() if k not in GUESS_IGNORED_KEYS} == {
        k: r for k, r in kraft.items() if k not in GUESS_IGNORED_KEYS}
    assert guess_release(zk).mode == "zookeeper"
    assert guess_release(kraft).mode == "kraft"


def test_between_kraft_releases() -> None:
    profile = dict(release_profile("3.9-kraft"))
    profile[0] = release_profile("4.0")[0]
    guess = guess_release(profile)
    assert guess == ReleaseGuess("between", "3.9-kraft", "4.0", mode="kraft")
    assert guess.text == "between 3.9 and 4.0 (KRaft)"


def test_newer_zookeeper_build() -> None:
    profile = dict(release_profile("3.9"))
    profile[1] = VersionRange(0, profile[1].max + 1)
    assert guess_release(profile).text == "at least 3.9 (ZooKeeper)"


@pytest.mark.parametrize(("key", "version", "text"), [
    (0, 2, "removed in Kafka 4.0 (KIP-896)"),  # advertised, yet rejected (KAFKA-18659)
    (0, 3, None),
    (1, 3, "removed in Kafka 4.0 (KIP-896)"),
    (1, 4, None),
    (11, 1, "removed in Kafka 4.0 (KIP-896), restored in 4.1"),
    (3, 0, None),
    (999, 0, None),
])
def test_removed_in(key: int, version: int, text: str | None) -> None:
    assert removed_in(key, version) == text


def test_ignored_keys_do_not_matter() -> None:
    profile = dict(release_profile("3.9"))
    for key in GUESS_IGNORED_KEYS:
        profile.pop(key, None)
    profile[71] = VersionRange(0, 0)  # telemetry, advertised only when configured
    assert guess_release(profile).text == "3.9 (ZooKeeper)"


def test_newer_than_every_release() -> None:
    profile = dict(release_profile("4.3"))
    profile[0] = VersionRange(0, profile[0].max + 1)
    profile[500] = VersionRange(0, 0)
    assert guess_release(profile).text == "at least 4.3"


def test_between_two_releases() -> None:
    # A 2.7 broker with one API bumped as in 2.8: a build between the two.
    profile = dict(release_profile("2.7"))
    profile[0] = release_profile("2.8")[0]
    assert guess_release(profile).text == "between 2.7 and 2.8 (ZooKeeper)"


def test_custom_sets_are_unknown() -> None:
    assert guess_release({}).text == "unknown/custom"
    assert guess_release({0: VersionRange(0, 3), 18: VersionRange(0, 3)}).text == (
        "unknown/custom")
    only_ignored = {4: VersionRange(0, 1)}
    assert guess_release(only_ignored).kind == "unknown"
    assert str(ReleaseGuess("between", "1.0", "1.1")) == "between 1.0 and 1.1"



def test_guesses_sort_by_release_oldest_first() -> None:
    exact = [ReleaseGuess("exact", name, mode=release_mode(name)) for name in known_releases()]
    assert [g.low for g in sorted(reversed(exact), key=lambda g: g.order)] == list(
        known_releases())
    between = ReleaseGuess("between", "3.8", "3.9", mode="zookeeper")
    at_least = ReleaseGuess("at_least", "4.3", mode="kraft")
    kraft_38 = ReleaseGuess("exact", "3.8-kraft", mode="kraft")
    zk_39 = ReleaseGuess("exact", "3.9", mode="zookeeper")
    mixed = [ReleaseGuess("unknown"), at_least, zk_39, between, kraft_38,
             ReleaseGuess("exact", "3.8", mode="zookeeper"), ReleaseGuess("exact", "0.9")]
    assert [g.text for g in sorted(mixed, key=lambda g: g.order)] == [
        "0.9", "3.8 (ZooKeeper)", "3.8 (KRaft)", "between 3.8 and 3.9 (ZooKeeper)",
        "3.9 (ZooKeeper)", "at least 4.3", "unknown/custom"]

# -- live: tansu -----------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_guess_for_live_tansu(tansu: TansuBroker) -> None:
    apis = raw_api_versions(tansu.host, tansu.port)
    assert apis[18].min == 0
    guess = guess_release(apis)
    # tansu implements Kafka's client APIs with its own choice of keys and
    # versions (above some release on some keys, below it on others): not a
    # build of any Apache Kafka release.
    assert guess.text == "unknown/custom"
    assert any(k not in apis for k in release_profile("2.1") if k not in GUESS_IGNORED_KEYS)


def test_mixed_above_and_below_is_custom() -> None:
    profile = dict(release_profile("3.9"))
    del profile[23]  # OffsetForLeaderEpoch, present since 0.11
    assert guess_release(profile).text == "unknown/custom"


@pytest.mark.parametrize(("written", "label"), [
    ("0.9", "fallback:0.9.0"), ("0.9.0.1", "fallback:0.9.0"), ("v0.11", "fallback:0.11.0"),
    ("0.10", "fallback:0.10.0"), ("0.8.2", "fallback:0.8.2"), ("2.8.1", "fallback:2.8"),
    ("3.7.1 (KRaft)", "fallback:3.7-kraft"), ("4.0", "fallback:4.0"),
])
def test_fallback_label_names_the_release_as_kafka_does(written: str, label: str) -> None:
    assert fallback_source(written) == label
    assert fallback_broker(written).source == label
    assert fallback_source(str(fallback_release(label))) == label  # the label reads back


def test_fallback_release_reads_only_fallback_sources() -> None:
    assert fallback_release("fallback:0.9.0") == "0.9.0"
    assert fallback_release("api_versions") is None
    assert fallback_release("error") is None


@pytest.mark.parametrize("release", RELEASES)
def test_advertised_but_rejected(release: str) -> None:
    rejected = advertised_but_rejected(release)
    if release_number(release).startswith("4."):
        # KIP-896: 4.x brokers advertise Produce from v0 but reject v0-v2 (KAFKA-18659).
        assert release_profile(release)[0].min == 0
        assert rejected == {0: VersionRange(0, 2)}
    else:
        assert rejected == {}


def test_advertised_but_rejected_agrees_with_removed_in() -> None:
    assert advertised_but_rejected("4.3.1") == advertised_but_rejected("4.3")
    for version in (0, 1, 2):
        assert removed_in(0, version) == "removed in Kafka 4.0 (KIP-896)"
    assert removed_in(0, 3) is None
    with pytest.raises(ConfigError, match="unknown Kafka release"):
        advertised_but_rejected("9.9")
