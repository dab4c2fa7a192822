"""What brokers of each Apache Kafka release advertise, and guessing a release back.

The data (``releases.json`` next to this module, written by ``tools/gen_data.py``)
lists, for every release from 0.8.0 to 4.3, the version range of each API its
brokers advertise.  ZooKeeper-mode and KRaft-mode brokers of the same release
advertise different APIs, so releases 2.8 to 3.9 have two profiles: ``"3.7"``
(ZooKeeper mode) and ``"3.7-kraft"`` (KRaft mode).  Releases before 2.8 are
ZooKeeper-only and 4.0 and later KRaft-only.  The profiles of one mode form a
*lineage*: ZooKeeper 0.8.0 ... 3.9, KRaft 2.8-kraft ... 3.9-kraft, 4.0 ... 4.3.

The profiles serve as fallbacks for brokers that cannot answer ApiVersions, and
as the yardstick for :func:`guess_release`, which compares maximum versions
within each lineage and ignores the keys that say little about the release a
client talks to (requests brokers and controllers send among themselves, KRaft
quorum requests, requests advertised only when configured).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Literal

import attrs

from kclient._resources import package_path
from kclient.errors import ConfigError
from kclient.negotiation.ranges import VersionRange

if TYPE_CHECKING:
    from kclient.negotiation.model import BrokerVersions

# GUESS_IGNORED_KEYS (guess_ignored_keys() as a module attribute) is served by __getattr__.
__all__ = [
    "FALLBACK_PREFIX",
    "MODE_LABELS",
    "FeatureLevels",
    "Mode",
    "ReleaseGuess",
    "advertised_but_rejected",
    "fallback_release",
    "fallback_source",
    "guess_ignored_keys",
    "guess_release",
    "kafka_release_name",
    "known_releases",
    "last_release_guess",
    "rejected_versions",
    "release_feature_levels",
    "release_label",
    "release_mode",
    "release_number",
    "release_profile",
    "removed_in",
    "resolve_release",
]


#: A broker's mode: ZooKeeper-based or KRaft (KIP-500).
Mode = Literal["zookeeper", "kraft"]
#: How texts name each mode.
MODE_LABELS: dict[str, str] = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}


@attrs.frozen
class FeatureLevels:
    """The KIP-584 feature levels of a cluster freshly formatted with a release's defaults.

    ``finalized`` maps feature names (``group.version``...) to the level such a
    cluster finalizes (features at level 0 are left out, as brokers leave them out
    of ApiVersions); ``supported`` maps them to the range its brokers report.  An
    upgraded cluster keeps the levels it had, so these are a new cluster's levels
    only.  Empty for releases the data does not model (before 4.0).
    """

    finalized: Mapping[str, int] = attrs.field(factory=dict, hash=False)
    supported: Mapping[str, VersionRange] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class _Releases:
    names: tuple[str, ...]
    profiles: Mapping[str, Mapping[int, VersionRange]] = attrs.field(hash=False)
    levels: Mapping[str, FeatureLevels] = attrs.field(hash=False)
    modes: Mapping[str, Mode] = attrs.field(hash=False)
    numbers: Mapping[str, str] = attrs.field(hash=False)
    ignored: frozenset[int]
    removal_kips: Mapping[str, str] = attrs.field(hash=False)
    accepted_min: Mapping[int, tuple[str, int]] = attrs.field(hash=False)

    def lineage(self, mode: Mode) -> tuple[str, ...]:
        return tuple(n for n in self.names if self.modes[n] == mode)


def _mode(text: object) -> Mode:
    if text == "zookeeper":
        return "zookeeper"
    if text == "kraft":
        return "kraft"
    raise ValueError(f"unknown mode {text!r}")


@cache
def _releases() -> _Releases:
    # The shipped release data (a real path even when kclient is imported from a zip).
    path = package_path("negotiation/releases.json")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != 2:
            raise ValueError(f"unsupported format {data.get('format')!r}")
        names: list[str] = []
        profiles: dict[str, dict[int, VersionRange]] = {}
        modes: dict[str, Mode] = {}
        numbers: dict[str, str] = {}
        levels: dict[str, FeatureLevels] = {}
        for entry in data["releases"]:
            name = str(entry["name"])
            if "feature_levels" in entry:
                raw = entry["feature_levels"]
                levels[name] = FeatureLevels(
                    {str(k): int(v) for k, v in raw["finalized"].items()},
                    {str(k): VersionRange(int(v[0]), int(v[1]))
                     for k, v in raw["supported"].items()})
            names.append(name)
            modes[name] = _mode(entry["mode"])
            numbers[name] = str(entry["release"])
            profiles[name] = {
                int(key): VersionRange(int(rng[0]), int(rng[1]))
                for key, rng in sorted(entry["apis"].items(), key=lambda kv: int(kv[0]))
            }
        ignored = frozenset(int(k) for k in data["guess_ignored_keys"])
        kips = {str(k): str(v) for k, v in data["removal_kips"].items()}
        accepted = {int(k): (str(v["from"]), int(v["min"]))
                    for k, v in data["accepted_min"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ConfigError(f"{path}: release data is unreadable ({exc}); reinstall kclient"
                          ) from None
    return _Releases(tuple(names), profiles, levels, modes, numbers, ignored, kips,
                     accepted)


def guess_ignored_keys() -> frozenset[int]:
    """API keys :func:`guess_release` leaves out (inter-broker, quorum, opt-in requests)."""
    return _releases().ignored


def __getattr__(name: str) -> frozenset[int]:
    # GUESS_IGNORED_KEYS is release data, read on first use rather than at import.
    if name == "GUESS_IGNORED_KEYS":
        return guess_ignored_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def known_releases(mode: Mode | None = None) -> tuple[str, ...]:
    """Names of the release profiles, oldest first (``"0.8.0"`` ... ``"4.3"``).

    The KRaft profile of a release that had both modes follows its ZooKeeper
    one (``"3.7"``, ``"3.7-kraft"``).  With ``mode``, only that lineage.
    """
    data = _releases()
    return data.names if mode is None else data.lineage(mode)


def release_mode(name: str) -> Mode:
    """The mode of the brokers release profile ``name`` describes."""
    return _releases().modes[resolve_release(name)]


def release_number(name: str) -> str:
    """The Kafka release of profile ``name``, without the mode (``"3.7-kraft"`` -> ``"3.7"``)."""
    return _releases().numbers[resolve_release(name)]


def _both_modes(number: str) -> bool:
    data = _releases()
    return len({data.modes[n] for n in data.names if data.numbers[n] == number}) > 1


def release_label(name: str) -> str:
    """Profile ``name`` for people: ``"3.7 (KRaft)"``, ``"3.7 (ZooKeeper)"``, ``"4.0"``.

    The mode is named for the releases that had both (2.8 to 3.9).
    """
    canonical = resolve_release(name)
    number = release_number(canonical)
    if _both_modes(number):
        return f"{number} ({MODE_LABELS[release_mode(canonical)]})"
    return number


_SUFFIX = re.compile(r"[-+].*$")
_MODE_SUFFIX = re.compile(r"^(.*?)[\s_-]*\(?\s*(kraft|zk|zookeeper)\s*\)?$")


def _resolve_number(name: str, text: str) -> str:
    known = set(known_releases())
    text = _SUFFIX.sub("", text.removeprefix("v"))
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


def resolve_release(name: str) -> str:
    """The canonical release profile name for ``name``.

    Accepts the names of :func:`known_releases` and the usual spellings of the
    same releases: ``"v2.8"``, patch releases (``"2.8.1"``, ``"0.10.0.1"``), a
    trailing zero (``"0.9.0"``, ``"3.9.0"``), a qualifier (``"2.1.0-IV2"``) and
    a bare ``"0.10"`` (meaning 0.10.0).  A mode suffix picks the lineage:
    ``"3.7-kraft"``, ``"3.7.1 (KRaft)"``, ``"3.7-zk"``; without one, releases
    that had both modes mean the ZooKeeper profile.
    """
    text = name.strip().lower()
    match = _MODE_SUFFIX.match(text)
    mode = None
    if match is not None and match.group(1):
        text, mode = match.group(1), match.group(2)
    number = _resolve_number(name, text)
    data = _releases()
    if mode == "kraft":
        if data.modes[number] == "kraft":
            return number
        if f"{number}-kraft" in data.modes:
            return f"{number}-kraft"
        first = data.numbers[data.lineage("kraft")[0]]
        raise ConfigError(f"Kafka {number} has no KRaft mode ({name!r}); KRaft brokers "
                          f"exist from {first}: use {first}-kraft or later")
    if mode is not None and data.modes[number] != "zookeeper":
        last = data.lineage("zookeeper")[-1]
        raise ConfigError(f"Kafka {number} has no ZooKeeper mode ({name!r}); the last "
                          f"ZooKeeper release is {last}")
    return number


def release_profile(name: str) -> Mapping[int, VersionRange]:
    """The API ranges brokers of release profile ``name`` advertise (a fresh dict)."""
    return dict(_releases().profiles[resolve_release(name)])


def release_feature_levels(name: str) -> FeatureLevels:
    """The feature levels a cluster freshly formatted with release ``name`` finalizes,
    and the ranges its brokers support (empty before 4.0: not modelled)."""
    return _releases().levels.get(resolve_release(name), FeatureLevels())


def _number_key(number: str) -> tuple[int, ...]:
    return tuple(int(p) for p in number.split("."))


def removed_in(key: int, version: int) -> str | None:
    """Where brokers stopped accepting ``version`` of API ``key``, as short text.

    The first release (in either lineage) whose brokers' lowest accepted version
    of ``key`` is above ``version`` although an older release accepted it, e.g.
    ``"removed in Kafka 4.0 (KIP-896)"``; ``", restored in 4.1"`` is added when a
    later release accepts it again.  ``None`` when no release removed it.  The
    lowest accepted version is the advertised minimum, or higher where the data
    records that brokers reject versions they still advertise (Produce v0-v2
    from 4.0).
    """
    data = _releases()
    order = sorted(data.names, key=lambda n: _number_key(data.numbers[n]))
    accepted_from = data.accepted_min.get(key)
    seen = False
    removed: str | None = None
    for name in order:
        rng = data.profiles[name].get(key)
        if rng is None:
            continue
        lowest = rng.min
        number = data.numbers[name]
        if accepted_from is not None and _number_key(number) >= _number_key(accepted_from[0]):
            lowest = max(lowest, accepted_from[1])
        usable = lowest <= version <= rng.max
        if usable and removed is not None:
            return f"{_removal_text(removed)}, restored in {number}"
        if usable:
            seen = True
        elif seen and version < lowest and removed is None:
            removed = number
    return None if removed is None else _removal_text(removed)


def advertised_but_rejected(name: str) -> Mapping[int, VersionRange]:
    """The versions brokers of release profile ``name`` advertise but reject, per API key.

    A fresh dict, empty for most releases.  Kafka 4.0 removed Produce v0-v2
    (KIP-896) but its brokers keep advertising Produce from v0, because old
    librdkafka clients otherwise stop compressing (KAFKA-18659), and answer
    UNSUPPORTED_VERSION to those versions: for ``"4.0"`` to ``"4.3"`` this is
    ``{0: VersionRange(0, 2)}``.  A version listed here is never usable on a
    broker known to run that release, whatever it advertises.  Source: the
    release data's ``accepted_min`` (written by ``tools/gen_data.py``, checked
    against the lowest version of Kafka's current message specs).
    """
    data = _releases()
    canonical = resolve_release(name)
    number = _number_key(data.numbers[canonical])
    profile = data.profiles[canonical]
    rejected: dict[int, VersionRange] = {}
    for key, (since, lowest) in sorted(data.accepted_min.items()):
        rng = profile.get(key)
        if rng is not None and number >= _number_key(since) and rng.min < lowest:
            rejected[key] = VersionRange(rng.min, min(lowest - 1, rng.max))
    return rejected


def rejected_versions(apis: Mapping[int, VersionRange]) -> Mapping[int, VersionRange]:
    """The versions a broker advertising ``apis`` is known to reject, per API key.

    The broker's release is guessed from ``apis`` (:func:`guess_release`, once
    per distinct table) and :func:`advertised_but_rejected` of that release
    applies: a broker advertising what a 4.x broker does rejects Produce v0-v2.
    Empty (at the cost of a few lookups) when ``apis`` has none of the keys the
    release data lists such versions for.
    """
    if not any(key in apis for key in _releases().accepted_min):
        return {}
    return _rejected_by_table(tuple(sorted(apis.items())))


# A cluster's brokers share one or two API tables; a guess costs about a millisecond.
@lru_cache(maxsize=256)
def _rejected_by_table(table: tuple[tuple[int, VersionRange], ...]
                       ) -> Mapping[int, VersionRange]:
    guess = guess_release(dict(table))
    return {} if guess.low is None else advertised_but_rejected(guess.low)


def _removal_text(number: str) -> str:
    kip = _releases().removal_kips.get(number)
    return f"removed in Kafka {number}" + (f" ({kip})" if kip else "")


def kafka_release_name(release: str) -> str:
    """Release ``release`` named as Apache Kafka names it (its ``inter.broker.protocol.version``).

    Releases before 1.0 have three parts (``"0.9"``, ``"0.9.0.1"`` -> ``"0.9.0"``,
    ``"0.11"`` -> ``"0.11.0"``); later ones two (``"2.8.1"`` -> ``"2.8"``).  A KRaft
    profile keeps its suffix (``"3.7-kraft"``).
    """
    canonical = resolve_release(release)
    number = release_number(canonical)
    parts = number.split(".")
    name = f"{number}.0" if parts[0] == "0" and len(parts) == 2 else number
    return name + canonical.removeprefix(number)


#: How a broker's ``source`` starts when its versions were assumed from a release.
FALLBACK_PREFIX = "fallback:"


def fallback_source(release: str) -> str:
    """The ``source`` of a broker assumed from a release profile: ``"fallback:0.9.0"``.

    The one home of this label: connections, snapshot records, the fleet
    synthesiser and the tables all print it, with the release as Kafka names it
    (:func:`kafka_release_name`), whatever spelling the caller used.
    """
    return FALLBACK_PREFIX + kafka_release_name(release)


def fallback_release(source: str) -> str | None:
    """The release a ``fallback:<release>`` source names as written, else ``None``."""
    return source.removeprefix(FALLBACK_PREFIX) if source.startswith(FALLBACK_PREFIX) else None


GuessKind = Literal["exact", "at_least", "between", "unknown"]
_KIND_RANK: dict[str, int] = {"exact": 3, "between": 2, "at_least": 1, "unknown": 0}


@attrs.frozen
class ReleaseGuess:
    """A guess of a broker's release from what it advertises.

    ``kind`` is ``exact`` (``low`` is the release profile; when ``high`` is set
    too, the broker is one of the releases from ``low`` to ``high`` of its
    lineage, whose brokers advertise the same, so nothing tells them apart),
    ``at_least`` (newer than any release of its lineage kclient knows; ``low``
    is the newest it knows), ``between`` (newer than ``low`` and older than
    ``high``: a build between releases) or ``unknown`` (not Apache Kafka's set
    of APIs: a custom build, a proxy or another implementation).  ``low`` and
    ``high`` are profile names (``"3.7-kraft"``); ``mode`` is the lineage the
    guess comes from (``None`` for ``unknown``).
    """

    kind: GuessKind
    low: str | None = None
    high: str | None = None
    mode: Mode | None = None

    @property
    def text(self) -> str:
        """``3.9 (KRaft)``, ``3.3 or 3.4 (KRaft)``, ``at least 4.3``, ``between 3.8
        and 3.9 (ZooKeeper)``, ...

        ``unknown/custom`` for an unknown set of APIs.  An exact guess among
        releases that advertise the same names each of them, oldest first
        (``3.3 or 3.4``; ``3.3, 3.4 or 3.5`` for three).

        The mode is named where the releases involved had both (2.8 to 3.9).
        """
        if self.kind == "unknown" or self.low is None:
            return "unknown/custom"
        if self.kind == "exact" and self.high is not None:
            names = list(_span(self.low, self.high))
        else:
            names = [self.low] if self.high is None else [self.low, self.high]
        numbers = [release_number(n) for n in names]
        suffix = ""
        if self.mode is not None and any(_both_modes(n) for n in numbers):
            suffix = f" ({MODE_LABELS[self.mode]})"
        if self.kind == "exact":
            if len(numbers) == 1:
                return numbers[0] + suffix
            return f"{', '.join(numbers[:-1])} or {numbers[-1]}{suffix}"
        if self.kind == "at_least":
            return f"at least {numbers[0]}{suffix}"
        return f"between {numbers[0]} and {numbers[-1]}{suffix}"

    @property
    def order(self) -> tuple[int, int, int]:
        """Where the guess sorts among others: by release, oldest first.

        Releases follow :func:`known_releases`; ``between`` a release and the
        next comes right after the lower one, ``at least`` after the release it
        names, both modes of a release sit together (ZooKeeper first) and
        ``unknown/custom`` comes last.
        """
        data = _releases()
        numbers = list(dict.fromkeys(data.numbers[n] for n in data.names))
        if self.kind == "unknown" or self.low is None:
            return (len(numbers), 0, 0)
        step = {"exact": 0, "between": 1, "at_least": 2}[self.kind]
        return (numbers.index(release_number(self.low)), step,
                1 if self.mode == "kraft" else 0)

    @property
    def releases(self) -> tuple[str, ...]:
        """The profiles an ``exact`` guess leaves open, oldest first (one unless
        they advertise the same); empty for the other kinds."""
        if self.kind != "exact" or self.low is None:
            return ()
        return (self.low,) if self.high is None else _span(self.low, self.high)

    def __str__(self) -> str:
        return self.text


def _span(low: str, high: str) -> tuple[str, ...]:
    """The profiles of ``low``'s lineage from ``low`` to ``high``, oldest first."""
    data = _releases()
    lineage = data.lineage(data.modes[low])
    return lineage[lineage.index(low): lineage.index(high) + 1]


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
    """+1 per ignored key both advertise with the same max, -1 per other ignored key either has."""
    score = 0
    for key in _releases().ignored:
        mine, theirs = apis.get(key), profile.get(key)
        if mine is None and theirs is None:
            continue
        score += 1 if mine is not None and theirs is not None and mine.max == theirs.max else -1
    return score


def _guess_lineage(apis: Mapping[int, VersionRange], considered: Mapping[int, int],
                   mode: Mode) -> tuple[ReleaseGuess, int]:
    """The guess within one lineage and, for an exact guess, its tie score."""
    data = _releases()
    newer: str | None = None
    newer_mixed = False
    names = list(reversed(data.lineage(mode)))
    for index, name in enumerate(names):
        wanted = {k: r.max for k, r in data.profiles[name].items() if k not in data.ignored}
        under, over = _compare(considered, wanted)
        if not under and not over:
            candidates = [name]
            for older in names[index + 1:]:
                older_wanted = {k: r.max for k, r in data.profiles[older].items()
                                if k not in data.ignored}
                if older_wanted != wanted:
                    break
                candidates.append(older)
            scored = [(_tie_score(apis, data.profiles[n]), n) for n in candidates]
            top = max(score for score, _ in scored)
            # candidates run newest first: the oldest and newest with the top score.
            tied = [n for score, n in scored if score == top]
            high = tied[0] if len(tied) > 1 else None
            return ReleaseGuess("exact", tied[-1], high, mode=mode), top
        if over and not under:
            if newer is None:
                return ReleaseGuess("at_least", name, mode=mode), 0
            # A build between two releases lacks some of the newer one's bumps
            # but has nothing beyond it; above it on some keys as well means a
            # different set of APIs altogether.
            if newer_mixed:
                return ReleaseGuess("unknown"), 0
            return ReleaseGuess("between", name, newer, mode=mode), 0
        newer, newer_mixed = name, under and over
    return ReleaseGuess("unknown"), 0


def guess_release(apis: Mapping[int, VersionRange]) -> ReleaseGuess:
    """Guess which Kafka release, and which mode, advertised ``apis`` (key -> range).

    Within each lineage (ZooKeeper, KRaft) releases are tried newest first.  A
    broker matching a release on every considered key is that release; one
    above a release on some keys and below it on none is newer than it: ``at
    least`` the lineage's newest release, or ``between`` it and the next newer
    release when the broker is below that one on some keys and above it on none.
    Anything else (above and below the same release) is ``unknown/custom``, as
    for other implementations that pick their own set of APIs.  Releases that
    compare equal on the considered keys are told apart by the ignored keys:
    each one both advertise with the same max counts for a release, each one
    only the broker or only the release has counts against it (so ZooKeeper-only
    controller requests tell the modes apart).  Releases that remain tied
    advertise the same as far as the broker's answer shows: the guess names
    them all (``low`` to ``high``, text ``3.3 or 3.4 (KRaft)``) rather than
    picking one.

    Of the two lineages' guesses the better wins: exact over between over at
    least over unknown; then the higher tie score, the newer release, and KRaft
    over ZooKeeper.
    """
    data = _releases()
    considered = {k: r.max for k, r in apis.items() if k not in data.ignored}
    if not considered:
        return ReleaseGuess("unknown")
    best: tuple[tuple[int, int, tuple[int, ...], int], ReleaseGuess] | None = None
    for mode in ("zookeeper", "kraft"):
        guess, score = _guess_lineage(apis, considered, _mode(mode))
        newest = guess.high if guess.kind == "exact" and guess.high else guess.low
        number = _number_key(data.numbers[newest]) if newest is not None else ()
        rank = (_KIND_RANK[guess.kind], score, number, 1 if mode == "kraft" else 0)
        if best is None or rank > best[0]:
            best = (rank, guess)
    assert best is not None
    return best[1]


def last_release_guess(broker: BrokerVersions) -> str | None:
    """The release a broker's last answer showed, also when it has since become
    unreachable (its last answer still counts); ``None`` when it never answered.

    A broker assumed from a release profile (``fallback:0.9.0``) is that release,
    named as Kafka names it (as written when the release is unknown here).
    """
    if not broker.apis:
        return None
    release = fallback_release(broker.source)
    if release is None:
        return _guess_text(tuple(broker.apis.items()))
    try:
        return kafka_release_name(release)
    except ConfigError:  # an unknown release in a hand-written record: show it as written
        return release


# Brokers of a cluster nearly always share one API table (a few per rolling
# upgrade), and a guess costs ~1 ms: the guess of each table is made once.
@lru_cache(maxsize=1024)
def _guess_text(table: tuple[tuple[int, VersionRange], ...]) -> str:
    return guess_release(dict(table)).text
