"""What Kafka client libraries send, per release line: client profiles as data.

kclient's own ranges (:meth:`ApplicationVersions.from_catalog
<kclient.negotiation.model.ApplicationVersions.from_catalog>`) describe what
*kclient* speaks.  An application that runs librdkafka, kafka-python, aiokafka,
kafkajs, the Java client, franz-go or sarama speaks what *its library* speaks,
and picks a version its own way.  The shipped ``clients.json`` (written by
``tools/gen_clients.py`` from facts read in each library's source at a release
tag) holds, per library and release line:

* the versions the library can send per API (:class:`ApiCell`: a range, the
  versions inside it the library lacks, and for pinned libraries the version
  it sends), each with its source;
* its version-choice :class:`Strategy` and its :class:`Handshake`;
* which client features it uses (:data:`CLIENT_FEATURES` says what each needs).

:func:`client_profile` finds the profile of ``"aiokafka==0.14.0"``;
:meth:`ClientProfile.application` (or :func:`application_for`) turns it into the
:class:`~kclient.negotiation.model.ApplicationVersions` every verdict takes, so
``ClusterView(brokers, application_for("aiokafka==0.14.0"))`` answers
``version_for`` / ``supports`` / ``explain`` for that library with the one verdict
engine.  :func:`judge_for_client` applies the library's own strategy (per
broker, one broker's table for all, pinned) by calling the same
:func:`~kclient.negotiation.judge.judge_api` on the brokers that decide.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import attrs

from kclient._resources import package_path
from kclient.errors import ConfigError
from kclient.negotiation.judge import ApiJudgement, judge_api
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.ranges import VersionRange
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import INT16_MAX, ApiKey

if TYPE_CHECKING:
    from kclient.negotiation.model import BrokerVersions

__all__ = [
    "ApiCell",
    "ApiUse",
    "ClientFeature",
    "ClientProfile",
    "Compat",
    "CompatResult",
    "FeatureUse",
    "Handshake",
    "Strategy",
    "application_for",
    "check_client",
    "check_feature",
    "client_feature",
    "client_features",
    "client_lines",
    "client_profile",
    "judge_for_client",
    "known_clients",
    "parse_client_spec",
]


class Strategy(enum.Enum):
    """How a library picks the version of a request."""

    #: The highest version it and each broker share, per broker (librdkafka, Java,
    #: aiokafka 0.13+, franz-go, sarama 1.46+).
    PER_BROKER = "per_broker"
    #: One broker's ApiVersions answer decides the version for every broker
    #: (kafkajs, @platformatic/kafka).
    ONE_TABLE = "one_table"
    #: The first broker's answer decides for every broker (kafka-python 3.x).
    FIRST_BROKER = "first_broker"
    #: The release guessed from one broker decides every request's version
    #: (kafka-python 2.0, aiokafka before 0.13).
    RELEASE_GUESS = "release_guess"
    #: Versions fixed by configuration, whatever the brokers offer (sarama before 1.46).
    PINNED = "pinned"

    @property
    def one_broker_decides(self) -> bool:
        """True when one broker's answer sets the version sent to every broker."""
        return self in (Strategy.ONE_TABLE, Strategy.FIRST_BROKER, Strategy.RELEASE_GUESS)


@attrs.frozen
class ApiCell:
    """What a library sends of one API: ``range`` less ``avoid``; ``pinned`` if fixed."""

    range: VersionRange
    avoid: frozenset[int]
    source: str
    pinned: int | None = None

    @property
    def versions(self) -> tuple[int, ...]:
        """Every version the library can send."""
        return tuple(v for v in range(self.range.min, self.range.max + 1) if v not in self.avoid)

    def text(self) -> str:
        """``0-5`` or ``0,1,2,5``, as a range when it has no gap."""
        if not self.avoid:
            return str(self.range)
        return ",".join(str(v) for v in self.versions)


@attrs.frozen
class Handshake:
    """The library's ApiVersions handshake, in words, with its source."""

    api_versions: str
    unsupported_version: str
    pre_0_10: str
    source: str


@attrs.frozen
class FeatureUse:
    """Whether a library uses a client feature, and where that was read."""

    uses: bool
    source: str


@attrs.frozen
class ClientFeature:
    """A client feature (``idempotence``...): what it needs, per API key."""

    name: str
    about: str
    needs: Mapping[int, VersionRange] = attrs.field(hash=False)


@attrs.frozen
class ClientProfile:
    """One library's release line, as read at ``tag`` (or derived from a release).

    ``version`` is the release asked for (``None``: the line itself); ``note``
    says when it lies beyond what was read (a newer release judged with the
    newest profile).
    """

    library: str
    line: str
    first: str
    before: str | None
    source: Mapping[str, str] = attrs.field(hash=False)
    strategy: Strategy
    strategy_text: str
    strategy_source: str
    handshake: Handshake
    apis: Mapping[int, ApiCell] = attrs.field(hash=False)
    features: Mapping[str, FeatureUse] = attrs.field(hash=False)
    version: str | None = None
    note: str | None = None

    @property
    def label(self) -> str:
        """``aiokafka 0.14.0``, or ``aiokafka 0.14.x`` for a line."""
        return f"{self.library} {self.version or self.line + '.x'}"

    @property
    def read_at(self) -> str:
        """Where the profile comes from: ``aio-libs/aiokafka v0.14.0 (672947a)``."""
        src = self.source
        if "tag" in src:
            return f"{src['repo']} {src['tag']} ({src['commit'][:7]})"
        return f"{src['repo']}: the specs of Kafka {src['derived_from_release']}"

    def uses(self, feature: str) -> bool:
        """Whether the library uses ``feature`` (unknown features: False)."""
        use = self.features.get(feature)
        return use is not None and use.uses

    def application(self) -> ApplicationVersions:
        """What the library speaks, as the application of every verdict.

        A pinned library speaks only its pinned version of each API.
        """
        apis: dict[int, VersionRange] = {}
        avoid: dict[int, frozenset[int]] = {}
        for key, cell in self.apis.items():
            if self.strategy is Strategy.PINNED and cell.pinned is not None:
                apis[key] = VersionRange(cell.pinned, cell.pinned)
                continue
            apis[key] = cell.range
            if cell.avoid:
                avoid[key] = cell.avoid
        return ApplicationVersions(apis, avoid, default_catalog(), speaker=self.label)

    def sends(self, key: int) -> str:
        """``sends InitProducerId v0`` / ``sends Produce v0-7`` / ``does not send X``."""
        name = default_catalog().name_of(key)
        cell = self.apis.get(key)
        if cell is None:
            return f"does not send {name}"
        if self.strategy is Strategy.PINNED and cell.pinned is not None:
            return f"sends {name} v{cell.pinned} (pinned)"
        return f"sends {name} v{cell.text()}"


def _range(pair: Sequence[Any]) -> VersionRange:
    return VersionRange(int(pair[0]), INT16_MAX if pair[1] is None else int(pair[1]))


@cache
def _data() -> tuple[dict[str, ClientFeature], dict[str, tuple[dict[str, Any], ...]],
                     dict[str, str]]:
    path = package_path("negotiation/clients.json")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != 1:
            raise ValueError(f"unsupported format {data.get('format')!r}")
        features = {
            str(name): ClientFeature(str(name), str(spec["about"]),
                                     {int(k): _range(v) for k, v in spec["needs"].items()})
            for name, spec in data["features"].items()}
        lines: dict[str, tuple[dict[str, Any], ...]] = {}
        names: dict[str, str] = {}
        for client in data["clients"]:
            name = str(client["name"])
            lines[name] = tuple(client["lines"])
            for spelling in (name, *client["aliases"]):
                names[str(spelling).lower()] = name
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ConfigError(f"{path}: client profiles are unreadable ({exc}); reinstall kclient"
                          ) from None
    return features, lines, names


def client_features() -> Mapping[str, ClientFeature]:
    """Every client feature, by name (``produce``, ``consume_group``, ``idempotence``...)."""
    return dict(_data()[0])


def client_feature(name: str) -> ClientFeature:
    """One client feature; an unknown name is a :class:`~kclient.errors.ConfigError`."""
    features = _data()[0]
    if name not in features:
        raise ConfigError(f"unknown client feature {name!r}; known: {', '.join(features)}")
    return features[name]


def client_lines(library: str) -> tuple[ClientProfile, ...]:
    """Every profiled release line of ``library`` (as :func:`known_clients` names it), oldest
    first."""
    return tuple(_profile(library, raw, None) for raw in _data()[1][library])


def known_clients() -> tuple[str, ...]:
    """The profiled libraries, as kclient names them."""
    return tuple(_data()[1])


_SPEC = re.compile(r"^\s*([A-Za-z0-9@/_.\-]+?)\s*(?:(?:==|@|\s)\s*v?(\d+(?:\.\d+){0,3}))?\s*$")


def parse_client_spec(spec: str) -> tuple[str, str | None]:
    """``"aiokafka==0.14.0"`` as ``("aiokafka", "0.14.0")``; ``"kafkajs"`` as ``("kafkajs", None)``.

    The library is named as kclient names it or by an alias (``confluent-kafka``
    for librdkafka); a version may follow ``==``, ``@`` or a space.
    """
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if match is None:
        raise ConfigError(f"a client is a library and an optional version, e.g. "
                          f"'aiokafka==0.14.0', got {spec!r}")
    names = _data()[2]
    name = names.get(match.group(1).lower())
    if name is None:
        raise ConfigError(f"no profile for the client library {match.group(1)!r}; profiled: "
                          f"{', '.join(known_clients())}")
    return name, match.group(2)


def _key(text: str) -> tuple[int, ...]:
    """A release number for comparison: ``"4.0"`` and ``"4.0.0"`` are the same release."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (4 - len(parts)))


def _profile(name: str, raw: Mapping[str, Any], version: str | None) -> ClientProfile:
    source = {str(k): str(v) for k, v in raw["source"].items()}
    note = raw.get("note")
    tag = source.get("tag")
    if version is not None and tag is not None and raw["before"] is None:
        read = _key(tag.lstrip("v"))
        if _key(version)[:2] > read[:2]:
            note = (f"{name} {version} is newer than the newest release read ({tag}); judged "
                    f"with the {raw['line']} profile")
    return ClientProfile(
        library=name, line=str(raw["line"]), first=str(raw["first"]),
        before=None if raw["before"] is None else str(raw["before"]), source=source,
        strategy=Strategy(raw["strategy"]["kind"]), strategy_text=str(raw["strategy"]["text"]),
        strategy_source=str(raw["strategy"]["source"]),
        handshake=Handshake(**{k: str(v) for k, v in raw["handshake"].items()}),
        apis={int(k): ApiCell(VersionRange(int(c["min"]), int(c["max"])),
                              frozenset(int(v) for v in c["avoid"]), str(c["source"]),
                              None if c.get("pinned") is None else int(c["pinned"]))
              for k, c in raw["apis"].items()},
        features={str(k): FeatureUse(bool(v["uses"]), str(v["source"]))
                  for k, v in raw["features"].items()},
        version=version, note=None if note is None else str(note))


@cache
def client_profile(spec: str) -> ClientProfile:
    """The profile of a library release: ``"aiokafka==0.14.0"``, ``"java 3.9"``, ``"kafkajs"``.

    Without a version, the newest line.  A version in no profiled line (older
    than the first, or in a gap) is a :class:`~kclient.errors.ConfigError`
    naming the lines there are.
    """
    name, version = parse_client_spec(spec)
    lines = _data()[1][name]
    if version is None:
        return _profile(name, lines[-1], None)
    wanted = _key(version)
    for raw in lines:
        if _key(raw["first"]) <= wanted and (raw["before"] is None
                                             or wanted < _key(raw["before"])):
            return _profile(name, raw, version)
    spans = ", ".join(f"{r['first']}-" + (f"<{r['before']}" if r["before"] else "")
                      for r in lines)
    raise ConfigError(f"{name} {version} is not profiled (profiled: {spans})")


def application_for(spec: str) -> ApplicationVersions:
    """What the library release ``spec`` speaks: the application of a ``ClusterView``."""
    return client_profile(spec).application()


def judge_for_client(profile: ClientProfile, brokers: Sequence[BrokerVersions], key: int,
                     need: VersionRange | None = None) -> ApiJudgement:
    """The version ``profile``'s library sends of API ``key`` to ``brokers``, or why none.

    Applies the library's strategy with :func:`~kclient.negotiation.judge.judge_api`:

    * per broker: every broker must share a version with the library (each gets
      its own: ``version`` is the lowest sent, ``overlap`` spans what is sent);
      the judgement of the first broker that shares none is returned;
    * one broker decides (one table, first broker, release guess): the version
      is chosen from the first broker's answer and every broker must take it;
    * pinned: every broker must take the pinned version.

    ``need`` narrows the library's range (a feature's requirement).
    """
    catalog = default_catalog()
    name = catalog.name_of(key)
    application = profile.application()
    wanted = application.apis.get(key)
    subject = f"{name}: {profile.label} {profile.sends(key)}"
    if wanted is not None and need is not None:
        wanted = wanted.intersection(need)
    if wanted is None:
        needed = "" if need is None else (
            f"v{need.min}+" if need.max >= INT16_MAX else f"v{need}")
        why = (f"{profile.label} {profile.sends(key)}" if key not in application.apis
               else f"{subject}; the feature needs {name} {needed}")
        return ApiJudgement(None, None, (), why)
    avoided = application.avoided(key)
    if not brokers:
        return judge_api((), key, name, wanted, avoided, subject)
    if profile.strategy.one_broker_decides:
        first = judge_api(brokers[:1], key, name, wanted, avoided, subject)
        if first.version is None:
            return first
        chosen = VersionRange(first.version, first.version)
        how = (f"{name}: {profile.label} picks v{first.version} from {brokers[0].label}'s answer "
               "and sends it to every broker")
        return judge_api(brokers, key, name, chosen, frozenset(), how)
    if profile.strategy is Strategy.PER_BROKER:
        versions = []
        for broker in brokers:
            one = judge_api((broker,), key, name, wanted, avoided, subject)
            if one.version is None:
                return one
            versions.append(one.version)
        # Each broker gets its own: the lowest is the version, overlap spans them all.
        return ApiJudgement(min(versions), VersionRange(min(versions), max(versions)))
    return judge_api(brokers, key, name, wanted, avoided, subject)


class Compat(enum.Enum):
    """A client feature's verdict on a cluster: works, breaks or unknown."""

    WORKS = "works"
    BREAKS = "breaks"
    UNKNOWN = "unknown"


@attrs.frozen
class ApiUse:
    """One API a client feature needs: the version the library sends, or why none.

    ``version`` is the lowest version sent to any broker; ``highest`` the
    highest (they differ for a library that picks per broker in a mixed cluster).
    """

    key: int
    name: str
    version: int | None
    blocking: tuple[int, ...] = ()
    reason: str | None = None
    highest: int | None = None

    def text(self) -> str:
        """``Produce v7`` or, when brokers get different versions, ``Produce v2-10``."""
        if self.highest is not None and self.highest != self.version:
            return f"{self.name} v{self.version}-{self.highest}"
        return f"{self.name} v{self.version}"


@attrs.frozen
class CompatResult:
    """A library's feature on a cluster: :class:`Compat`, the reason and the APIs judged."""

    profile: ClientProfile
    feature: str
    state: Compat
    reason: str | None
    apis: tuple[ApiUse, ...] = ()

    @property
    def versions_text(self) -> str:
        """``Produce v7, Metadata v5``: what the library sends where the feature works."""
        return ", ".join(a.text() for a in self.apis if a.version is not None)


def check_feature(profile: ClientProfile, brokers: Sequence[BrokerVersions], feature: str,
                  unknown_reason: str | None = None) -> CompatResult:
    """Whether ``profile``'s library can use client ``feature`` on ``brokers``.

    The library's ApiVersions handshake (when it sends one) and every API the
    feature needs are judged with :func:`judge_for_client` (the library's range
    narrowed by the need, its own strategy).  ``brokers`` are
    those whose answer counts; ``unknown_reason`` says that others have not
    answered yet, which makes a feature that no known broker breaks *unknown*
    (a definite "breaks" outranks "cannot tell").  A feature the library does
    not use breaks with the profile's source as the reason.
    """
    spec = client_feature(feature)
    if not profile.uses(feature):
        use = profile.features.get(feature)
        where = f" ({use.source})" if use is not None else ""
        return CompatResult(profile, feature, Compat.BREAKS,
                            f"{profile.label} does not support {feature}{where}")
    uses: list[ApiUse] = []
    missing: list[str] = []
    # Every feature starts with the library's handshake, when it sends one.
    needs: dict[int, VersionRange | None] = {}
    if ApiKey.API_VERSIONS in profile.apis:
        needs[ApiKey.API_VERSIONS] = None
    needs.update(spec.needs)
    for key, need in needs.items():
        name = default_catalog().name_of(key)
        if key not in profile.apis:
            missing.append(name)
            continue
        judged = judge_for_client(profile, brokers, key, need)
        spread = profile.strategy is Strategy.PER_BROKER and brokers and judged.overlap
        highest = judged.overlap.max if spread and judged.overlap else judged.version
        uses.append(ApiUse(key, name, judged.version, judged.blocking, judged.reason, highest))
    broken = [u for u in uses if u.version is None]
    if broken:
        reason = "; ".join(str(u.reason) for u in broken)
        return CompatResult(profile, feature, Compat.BREAKS, reason, tuple(uses))
    if missing:
        return CompatResult(profile, feature, Compat.UNKNOWN,
                            f"the {profile.library} {profile.line} profile does not list "
                            f"{', '.join(missing)}", tuple(uses))
    if unknown_reason is not None:
        return CompatResult(profile, feature, Compat.UNKNOWN, unknown_reason, tuple(uses))
    return CompatResult(profile, feature, Compat.WORKS, None, tuple(uses))


def check_client(profile: ClientProfile, brokers: Sequence[BrokerVersions],
                 features: Sequence[str] | None = None, unknown_reason: str | None = None
                 ) -> tuple[CompatResult, ...]:
    """:func:`check_feature` for each of ``features`` (default: those the library uses)."""
    names = list(features) if features is not None else [
        name for name in client_features() if profile.uses(name)]
    return tuple(check_feature(profile, brokers, name, unknown_reason) for name in names)
