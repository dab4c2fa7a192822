"""Release profiles, aliases, fallback brokers and release guessing (incl. live tansu)."""

from __future__ import annotations

import pytest

from kclient.errors import ConfigError
from kclient.negotiation import (
    GUESS_IGNORED_KEYS,
    ReleaseGuess,
    VersionRange,
    fallback_broker,
    guess_release,
    known_releases,
    release_profile,
    resolve_release,
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
    assert broker.source == "fallback:0.9"
    assert broker.apis == release_profile("0.9")
    assert broker.handshake == ("ApiVersions v0: closed",)
    assert broker.node_id == 3


@pytest.mark.parametrize("release", RELEASES)
def test_every_profile_guesses_itself(release: str) -> None:
    guess = guess_release(release_profile(release))
    assert guess == ReleaseGuess("exact", release)
    assert guess.text == release


def test_ignored_keys_do_not_matter() -> None:
    profile = dict(release_profile("3.9"))
    for key in GUESS_IGNORED_KEYS:
        profile.pop(key, None)
    profile[71] = VersionRange(0, 0)  # telemetry, advertised only when configured
    assert guess_release(profile).text == "3.9"


def test_newer_than_every_release() -> None:
    profile = dict(release_profile("4.3"))
    profile[0] = VersionRange(0, profile[0].max + 1)
    profile[500] = VersionRange(0, 0)
    assert guess_release(profile).text == "at least 4.3"


def test_between_two_releases() -> None:
    # A 2.7 broker with one API bumped as in 2.8: a build between the two.
    profile = dict(release_profile("2.7"))
    profile[0] = release_profile("2.8")[0]
    assert guess_release(profile).text == "between 2.7 and 2.8"


def test_custom_sets_are_unknown() -> None:
    assert guess_release({}).text == "unknown/custom"
    assert guess_release({0: VersionRange(0, 3), 18: VersionRange(0, 3)}).text == (
        "unknown/custom")
    only_ignored = {4: VersionRange(0, 1)}
    assert guess_release(only_ignored).kind == "unknown"
    assert str(ReleaseGuess("between", "1.0", "1.1")) == "between 1.0 and 1.1"


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
