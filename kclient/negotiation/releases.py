"""What brokers of each Apache Kafka release advertise, and guessing a release back.

The data (``releases.json`` next to this module) lists, for every release from
0.8.0 to 4.3, the version range of each API its brokers advertise.  It serves as
the fallback profile for brokers that cannot answer ApiVersions, and as the
yardstick for :func:`guess_release`.

Guessing compares maximum versions only, newest release first, and ignores the
keys that say little about the release a client talks to: requests brokers and
controllers send among themselves, KRaft quorum requests, and requests a broker
advertises only when configured to (client telemetry).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

import attrs

from kclient.errors import ConfigError
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.ranges import VersionRange

__all__ = [
    "GUESS_IGNORED_KEYS",
    "ReleaseGuess",
    "fallback_broker",
    "guess_release",
    "known_releases",
    "release_profile",
    "resolve_release",
]

_DATA = Path(__file__).resolve().parent / "releases.json"

#: Keys left out of release guessing: inter-broker and controller requests
#: (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
#: WriteTxnMarkers, AlterPartition, UpdateFeatures, Envelope, AllocateProducerIds,
#: broker registration and heartbeats, KRaft quorum and voter requests,
#: AssignReplicasToDirs) and the telemetry requests brokers advertise only when a
#: metrics plugin is configured.
GUESS_IGNORED_KEYS: frozenset[int] = frozenset(
    {4, 5, 6, 7, 27, 52, 53, 54, 55, 56, 57, 58, 59, 62, 63, 64, 67, 70, 71, 72, 73, 80, 81, 82}
)


@attrs.frozen
class _Releases:
    names: tuple[str, ...]
    profiles: Mapping[str, Mapping[int, VersionRange]] = attrs.field(hash=False)


@cache
def _releases() -> _Releases:
    try:
        data: Any = json.loads(_DATA.read_text(encoding="utf-8"))
        if data.get("format") != 1:
            raise ValueError(f"unsupported format {data.get('format')!r}")
        names: list[str] = []
        profiles: dict[str, dict[int, VersionRange]] = {}
        for entry in data["releases"]:
            name = str(entry["name"])
            names.append(name)
            profiles[name] = {
                int(key): VersionRange(int(rng[0]), int(rng[1]))
                for key, rng in sorted(entry["apis"].items(), key=lambda kv: int(kv[0]))
            }
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError(f"{_DATA}: release data is unreadable ({exc}); reinstall kclient"
                          ) from None
    return _Releases(tuple(names), profiles)


def known_releases() -> tuple[str, ...]:
    """Names of every release kclient knows, oldest first (``"0.8.0"`` ... ``"4.3"``)."""
    return _releases().names


_SUFFIX = re.compile(r"[-+].*$")


def resolve_release(name: str) -> str:
    """The canonical release name for ``name``.

    Accepts the names of :func:`known_releases` and the usual spellings of the
    same releases: ``"v2.8"``, patch releases (``"2.8.1"``, ``"0.10.0.1"``), a
    trailing zero (``"0.9.0"``, ``"3.9.0"``), a qualifier (``"2.1.0-IV2"``) and
    a bare ``"0.10"`` (meaning 0.10.0).
    """
    known = set(known_releases())
    text = _SUFFIX.sub("", name.strip().lower().removeprefix("v"))
    parts = text.split(".")
    if text and all(p.isdigit() for p in parts):
        parts = [str(int(p)) for p in parts]
        for length in range(len(parts), 0, -1):
            candidate = ".".join(parts[:length])
            if length >= 2 and candidate in known:
                return candidate
            if candidate + ".0" in known and length == len(parts) and length >= 2:
                return candidate + ".0"
    raise ConfigError(f"unknown Kafka release {name!r}; use one of "
                      f"{', '.join(known_releases())}")


def release_profile(name: str) -> Mapping[int, VersionRange]:
    """The API ranges brokers of release ``name`` advertise (a fresh dict)."""
    return dict(_releases().profiles[resolve_release(name)])


def fallback_broker(release: str, node_id: int = -1, host: str = "", port: int = 0,
                    rack: str | None = None, handshake: tuple[str, ...] = ()
                    ) -> BrokerVersions:
    """The versions to assume for a broker that cannot answer ApiVersions."""
    canonical = resolve_release(release)
    return BrokerVersions(node_id, host, port, release_profile(canonical), rack=rack,
                          source=f"fallback:{canonical}", handshake=handshake)


GuessKind = Literal["exact", "at_least", "between", "unknown"]


@attrs.frozen
class ReleaseGuess:
    """A guess of a broker's release from what it advertises.

    ``kind`` is ``exact`` (``low`` is the release), ``at_least`` (newer than any
    release kclient knows; ``low`` is the newest it knows), ``between`` (newer
    than ``low`` and older than ``high``: a build between releases) or
    ``unknown`` (not Apache Kafka's set of APIs: a custom build, a proxy or
    another implementation).
    """

    kind: GuessKind
    low: str | None = None
    high: str | None = None

    @property
    def text(self) -> str:
        """``3.9``, ``at least 4.3``, ``between 2.7 and 2.8`` or ``unknown/custom``."""
        if self.kind == "exact":
            return str(self.low)
        if self.kind == "at_least":
            return f"at least {self.low}"
        if self.kind == "between":
            return f"between {self.low} and {self.high}"
        return "unknown/custom"

    def __str__(self) -> str:
        return self.text


def _compare(apis: Mapping[int, int], profile: Mapping[int, int]) -> tuple[bool, bool]:
    """(under, over) of a broker's max versions against a release's."""
    under = over = False
    for key, vmax in apis.items():
        expected = profile.get(key)
        if expected is None or vmax > expected:
            over = True
        elif vmax < expected:
            under = True
    if any(key not in apis for key in profile):
        under = True
    return under, over


def _tie_score(apis: Mapping[int, VersionRange], profile: Mapping[int, VersionRange]) -> int:
    score = 0
    for key in GUESS_IGNORED_KEYS:
        if key in apis and key in profile:
            score += 1 if apis[key].max == profile[key].max else -1
    return score


def guess_release(apis: Mapping[int, VersionRange]) -> ReleaseGuess:
    """Guess which Kafka release advertised ``apis`` (key -> range).

    Releases are tried newest first.  A broker matching a release on every
    considered key is that release; one above a release on some keys and below
    it on none is newer than it: ``at least`` the newest release, or ``between``
    it and the next newer release when the broker is below that one on some keys
    and above it on none.  Anything else (above and below the same release) is
    ``unknown/custom``, as for other implementations that pick their own set of
    APIs.  Releases that compare equal on the considered keys are told apart by
    the ignored keys the broker does advertise.
    """
    data = _releases()
    considered = {k: r.max for k, r in apis.items() if k not in GUESS_IGNORED_KEYS}
    if not considered:
        return ReleaseGuess("unknown")
    newer: str | None = None
    newer_mixed = False
    names = list(reversed(data.names))
    for index, name in enumerate(names):
        profile = data.profiles[name]
        wanted = {k: r.max for k, r in profile.items() if k not in GUESS_IGNORED_KEYS}
        under, over = _compare(considered, wanted)
        if not under and not over:
            candidates = [name]
            for older in names[index + 1:]:
                older_wanted = {k: r.max for k, r in data.profiles[older].items()
                                if k not in GUESS_IGNORED_KEYS}
                if older_wanted != wanted:
                    break
                candidates.append(older)
            best = max(candidates, key=lambda n: _tie_score(apis, data.profiles[n]))
            return ReleaseGuess("exact", best)
        if over and not under:
            if newer is None:
                return ReleaseGuess("at_least", name)
            # A build between two releases lacks some of the newer one's bumps
            # but has nothing beyond it; above it on some keys as well means a
            # different set of APIs altogether.
            return ReleaseGuess("unknown") if newer_mixed else ReleaseGuess(
                "between", name, newer)
        newer, newer_mixed = name, under and over
    return ReleaseGuess("unknown")
