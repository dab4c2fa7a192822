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
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

import attrs

from kclient._resources import package_path
from kclient.errors import ConfigError
from kclient.negotiation.evaluation import check_level
from kclient.negotiation.features import LevelRequirement
from kclient.negotiation.judge import ApiJudgement, judge_api
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import guess_release, release_number
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import INT16_MAX, ApiKey

if TYPE_CHECKING:
    from kclient.negotiation.model import BrokerVersions

__all__ = [
    "COORDINATED",
    "COORDINATOR_APIS",
    "DEPENDS",
    "MAX_COMPONENT_DIGITS",
    "MAX_SPEC_LENGTH",
    "PROFILE_CACHE_ENTRIES",
    "ApiCell",
    "ApiUse",
    "Asks",
    "ClientFeature",
    "ClientProfile",
    "Compat",
    "CompatResult",
    "FeatureCondition",
    "FeatureUse",
    "Handshake",
    "Strategy",
    "SupportStatement",
    "UnprofiledRelease",
    "application_for",
    "check_client",
    "check_feature",
    "client_feature",
    "client_features",
    "client_lines",
    "client_profile",
    "default_features",
    "depends",
    "judge_for_client",
    "known_clients",
    "parse_client_spec",
    "printable_spec",
    "release_key",
    "support_notes",
]


class Strategy(enum.Enum):
    """How a library picks the version of a request."""

    #: The highest version it and each broker share, per broker (librdkafka, Java,
    #: aiokafka 0.13+, franz-go, sarama 1.46+).
    PER_BROKER = "per_broker"
    #: One broker's ApiVersions answer decides the version for every broker
    #: (kafkajs, @platformatic/kafka, kafka-python 2.1+).
    ONE_TABLE = "one_table"
    #: The first broker's answer decides for every broker (kafka-python 3.x).
    FIRST_BROKER = "first_broker"
    #: The release guessed from one broker decides every request's version
    #: (kafka-python before 2.1, aiokafka before 0.13).
    RELEASE_GUESS = "release_guess"
    #: Versions fixed by configuration, whatever the brokers offer (sarama before 1.46).
    PINNED = "pinned"

    @property
    def one_broker_decides(self) -> bool:
        """True when one broker's answer sets the version sent to every broker."""
        return self in (Strategy.ONE_TABLE, Strategy.FIRST_BROKER, Strategy.RELEASE_GUESS)


class Asks(enum.Enum):
    """Which broker decides, for a library where one broker's answer decides for all."""

    #: The first broker the application lists (kafkajs: round robin from the first).
    BOOTSTRAP = "bootstrap"
    #: One of the brokers the application lists, picked at random (kafka-python).
    LISTED = "listed"
    #: Any broker of the cluster, picked at random once the metadata is known
    #: (aiokafka before 0.13).
    ANY = "any"

    @property
    def text(self) -> str:
        """How the verdicts name the deciding broker."""
        return _ASKS_TEXT[self]


_ASKS_TEXT = {
    Asks.BOOTSTRAP: "the bootstrap broker (the first the application lists)",
    Asks.LISTED: "one of the brokers the application lists, at random",
    Asks.ANY: "any broker of the cluster, at random",
}

#: The words that start a verdict whose outcome depends on a random choice of broker.
DEPENDS = "depends on which broker it asks at start-up"
#: The words that start a verdict whose outcome depends on which broker coordinates.
COORDINATED = "depends on which broker coordinates the group or transaction"
#: Requests a client sends only to its group or transaction coordinator, which may be any
#: broker of the cluster (the leader of the __consumer_offsets or __transaction_state
#: partition the group or transactional id hashes to): a broker that would refuse one
#: matters only when it is the coordinator.
COORDINATOR_APIS = frozenset({
    ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN})


def depends(reason: str | None) -> bool:
    """Whether a verdict's reason says its outcome depends on a broker chosen at run time
    (:data:`DEPENDS`, :data:`COORDINATED`): either outcome is what it promised."""
    return reason is not None and reason.startswith((DEPENDS, COORDINATED))


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
    """Whether a library uses a client feature, and where that was read.

    ``uses`` is ``None`` when the profile has not read it (the feature is then
    judged *unknown*, and left out of the default set); ``fallback`` says what
    the library does instead, silently, where the cluster cannot take the feature.
    """

    uses: bool | None
    source: str
    fallback: str | None = None


@attrs.frozen
class FeatureCondition:
    """A need that holds only on some topics: ``when`` (``topics with
    compression.type=zstd``), what breaks there (``consuming``) and the needs."""

    when: str
    effect: str
    needs: Mapping[int, VersionRange] = attrs.field(hash=False)
    source: str


@attrs.frozen
class ClientFeature:
    """A client feature (``idempotence``...): what it needs, per API key.

    ``roles`` are the parts of a library that use it (``producer``,
    ``consumer``, ``admin``): where a library's roles send different versions,
    the feature is judged with the versions of its roles.  ``levels`` are the
    KIP-584 feature levels the brokers must have finalized (``group.version`` 1
    for the KIP-848 protocol, ``share.version`` 1 for share groups, ...): Kafka
    serves those APIs only then.  ``opt_in`` says how an application chooses a
    feature it never uses unless it chooses it (Kafka 4's group protocols): such
    a feature is judged when it is named, never by default (:func:`default_features`).
    """

    name: str
    about: str
    needs: Mapping[int, VersionRange] = attrs.field(hash=False)
    roles: tuple[str, ...] = ()
    conditions: tuple[FeatureCondition, ...] = ()
    levels: tuple[LevelRequirement, ...] = ()
    opt_in: str | None = None


@attrs.frozen
class SupportStatement:
    """What a project states about support (not the wire): Apache's or a library's own.

    Applies to ``library`` releases in [``clients_from``, ``clients_before``) on
    clusters with a broker of release ``brokers_from`` or newer (or, with
    ``brokers_before``, older than it).
    """

    library: str
    text: str
    source: str
    clients_from: str | None = None
    clients_before: str | None = None
    brokers_from: str | None = None
    brokers_before: str | None = None


@attrs.frozen
class ClientProfile:
    """One library's release line, as read at ``tag`` (or derived from a release).

    ``version`` is the release asked for (``None``: the line itself); the line
    covers ``first`` up to (not including) ``before``.  ``roles`` hold the cells
    a part of the library (``admin``...) sends differently from ``apis``.
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
    asks: Asks | None = None
    roles: Mapping[str, Mapping[int, ApiCell]] = attrs.field(factory=dict, hash=False)

    @property
    def label(self) -> str:
        """``aiokafka 0.14.0``, or ``aiokafka 0.14.x`` for a line."""
        return f"{self.library} {self.version or self.line + '.x'}"

    @property
    def covers(self) -> str:
        """The releases the line covers: ``0.13.0 to before 0.14.0``."""
        return f"{self.first} to before {self.before}" if self.before else f"{self.first} on"

    @property
    def read_at(self) -> str:
        """Where the profile comes from: ``aio-libs/aiokafka v0.14.0 (672947a)``; for a line
        observed live, the observation and the reading it completes."""
        src = self.source
        if "observed" in src:
            return (f"{src['observed']}, with {src['repo']} {src['tag']} ({src['commit'][:7]}) "
                    "for what was not observed")
        if "checked_live" in src:
            return (f"{src['repo']} {src['tag']} ({src['commit'][:7]}), checked live: "
                    f"{src['checked_live']}")
        if "tag" in src:
            return f"{src['repo']} {src['tag']} ({src['commit'][:7]})"
        if "package" in src:
            return f"{src['repo']}: the published package, {src['package']}"
        return f"{src['repo']}: the specs of Kafka {src['derived_from_release']}"

    def uses(self, feature: str) -> bool:
        """Whether the library uses ``feature`` (unknown or unread features: False)."""
        use = self.features.get(feature)
        return use is not None and use.uses is True

    def cells(self, roles: Sequence[str] = ()) -> Mapping[int, ApiCell]:
        """What the library sends per API, in ``roles`` (the first role that sends an
        API its own way wins; without roles, what every part sends)."""
        merged = dict(self.apis)
        for role in reversed(tuple(roles)):
            merged.update(self.roles.get(role, {}))
        return merged

    def application(self, roles: Sequence[str] = ()) -> ApplicationVersions:
        """What the library speaks (in ``roles``), as the application of every verdict.

        A pinned library speaks only its pinned version of each API.
        """
        apis: dict[int, VersionRange] = {}
        avoid: dict[int, frozenset[int]] = {}
        for key, cell in self.cells(roles).items():
            if self.strategy is Strategy.PINNED and cell.pinned is not None:
                apis[key] = VersionRange(cell.pinned, cell.pinned)
                continue
            apis[key] = cell.range
            if cell.avoid:
                avoid[key] = cell.avoid
        return ApplicationVersions(apis, avoid, default_catalog(), speaker=self.label)

    def sends(self, key: int, roles: Sequence[str] = ()) -> str:
        """``sends InitProducerId v0`` / ``sends Produce v0-7`` / ``does not send X``."""
        name = default_catalog().name_of(key)
        cell = self.cells(roles).get(key)
        where = _roles_text(self, key, roles)
        if cell is None:
            return f"does not send {name}"
        if self.strategy is Strategy.PINNED and cell.pinned is not None:
            return f"sends {name} v{cell.pinned} (pinned){where}"
        return f"sends {name} v{cell.text()}{where}"


def _roles_text(profile: ClientProfile, key: int, roles: Sequence[str]) -> str:
    """`` (its admin client)`` when a role sends ``key`` its own way."""
    for role in roles:
        if key in profile.roles.get(role, {}):
            return f" (its {role} client)"
    return ""


class UnprofiledRelease(ConfigError):
    """A release of a known library that no profiled line covers: its verdicts are unknown.

    ``nearest`` is the label of the closest profiled line (never used to judge it).
    """

    def __init__(self, message: str, *, library: str, version: str, nearest: str) -> None:
        super().__init__(message)
        self.library = library
        self.version = version
        self.nearest = nearest


def _range(pair: Sequence[Any]) -> VersionRange:
    return VersionRange(int(pair[0]), INT16_MAX if pair[1] is None else int(pair[1]))


def _needs(raw: Mapping[str, Any]) -> dict[int, VersionRange]:
    return {int(k): _range(v) for k, v in raw.items()}


@attrs.frozen
class _Data:
    features: dict[str, ClientFeature]
    lines: dict[str, tuple[dict[str, Any], ...]]
    names: dict[str, str]
    support: tuple[SupportStatement, ...]
    #: spelling of a package that bundles a library -> its releases whose bundled
    #: release has another number (confluent-kafka 2.16.1 bundles librdkafka 2.16.0)
    bundles: dict[str, dict[tuple[int, ...], str]]


@cache
def _data() -> _Data:
    path = package_path("negotiation/clients.json")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != 2:
            raise ValueError(f"unsupported format {data.get('format')!r}")
        features = {
            str(name): ClientFeature(
                str(name), str(spec["about"]), _needs(spec["needs"]),
                tuple(str(r) for r in spec["roles"]),
                tuple(FeatureCondition(str(c["when"]), str(c["effect"]), _needs(c["needs"]),
                                       str(c["source"])) for c in spec["conditions"]),
                tuple(LevelRequirement(str(feature), int(level))
                      for feature, level in spec.get("levels", {}).items()),
                spec.get("opt_in"))
            for name, spec in data["features"].items()}
        lines: dict[str, tuple[dict[str, Any], ...]] = {}
        names: dict[str, str] = {}
        bundles: dict[str, dict[tuple[int, ...], str]] = {}
        for client in data["clients"]:
            name = str(client["name"])
            lines[name] = tuple(client["lines"])
            for spelling in (name, *client["aliases"]):
                names[str(spelling).lower()] = name
            for package in client.get("packages", ()):
                differs = {release_key(str(k)): str(v["release"])
                           for k, v in package["differs"].items()}
                for spelling in package["spellings"]:
                    bundles[str(spelling).lower()] = differs
        support = tuple(SupportStatement(
            str(item["library"]), str(item["text"]), str(item["source"]),
            *(None if item[k] is None else str(item[k]) for k in (
                "clients_from", "clients_before", "brokers_from", "brokers_before")))
            for item in data["support"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ConfigError(f"{path}: client profiles are unreadable ({exc}); reinstall kclient"
                          ) from None
    return _Data(features, lines, names, support, bundles)


def client_features() -> Mapping[str, ClientFeature]:
    """Every client feature, by name (``produce``, ``consume_group``, ``idempotence``...)."""
    return dict(_data().features)


def client_feature(name: str) -> ClientFeature:
    """One client feature; an unknown name is a :class:`~kclient.errors.ConfigError`."""
    features = _data().features
    if name not in features:
        raise ConfigError(f"unknown client feature {name!r}; known: {', '.join(features)}")
    return features[name]


def client_lines(library: str) -> tuple[ClientProfile, ...]:
    """Every profiled release line of ``library`` (as :func:`known_clients` names it), oldest
    first."""
    return tuple(_profile(library, raw, None) for raw in _data().lines[library])


def known_clients() -> tuple[str, ...]:
    """The profiled libraries, as kclient names them."""
    return tuple(_data().lines)


#: The longest client spec read (``@platformatic/kafka==1.2.3`` is 27 characters); longer
#: text is refused before any pattern runs, so parsing stays linear in the input.
MAX_SPEC_LENGTH = 200
#: Digits per release-number component (``2.0.20240101`` has 8); more is not a release.
MAX_COMPONENT_DIGITS = 9
# Possessive blanks (``\s*+``): a run of blanks is read once, never re-split on a retry.
_SPEC = re.compile(r"([A-Za-z0-9@/_.\-]+?)(?:\s*+(?:==|@)\s*+|\s++)v?+"
                   rf"(\d{{1,{MAX_COMPONENT_DIGITS}}}(?:\.\d{{1,{MAX_COMPONENT_DIGITS}}}){{0,3}})"
                   r"|([A-Za-z0-9@/_.\-]+)")


def parse_client_spec(spec: str) -> tuple[str, str | None]:
    """``"aiokafka==0.14.0"`` as ``("aiokafka", "0.14.0")``; ``"kafkajs"`` as ``("kafkajs", None)``.

    The library is named as kclient names it or by an alias (``confluent-kafka``
    for librdkafka); a version (up to four numbers of at most
    :data:`MAX_COMPONENT_DIGITS` digits) may follow ``==``, ``@`` or a space.  A
    package that bundles the library is read as the release it bundles, which is
    what speaks to brokers (``confluent-kafka==2.16.1`` is ``("librdkafka",
    "2.16.0")``).  Text longer than :data:`MAX_SPEC_LENGTH` is refused.
    """
    text = spec.strip() if isinstance(spec, str) else None
    if text is not None and len(text) > MAX_SPEC_LENGTH:
        raise ConfigError(f"a client spec is at most {MAX_SPEC_LENGTH} characters, got "
                          f"{len(text)} ({text[:40]!r}...); name a library and a release, "
                          "e.g. 'aiokafka==0.14.0'")
    match = _SPEC.fullmatch(text) if text is not None else None
    if match is None:
        raise ConfigError(f"a client is a library and an optional version of up to four "
                          f"numbers (each at most {MAX_COMPONENT_DIGITS} digits), e.g. "
                          f"'aiokafka==0.14.0', got {printable_spec(spec)}")
    library = match.group(1) or match.group(3)
    data = _data()
    name = data.names.get(library.lower())
    if name is None:
        raise ConfigError(f"no profile for the client library {library!r}; profiled: "
                          f"{', '.join(known_clients())}")
    version = match.group(2)
    if version is not None:
        version = data.bundles.get(library.lower(), {}).get(release_key(version), version)
    return name, version


def printable_spec(spec: object) -> str:
    """``spec`` for a message: its repr, cut to 60 characters."""
    text = repr(spec)
    return text if len(text) <= 60 else text[:57] + "..."


def release_key(text: str) -> tuple[int, ...]:
    """A release number for comparison: ``"4.0"`` and ``"4.0.0"`` are the same release."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (4 - len(parts)))


_key = release_key


def _cells(raw: Mapping[str, Any]) -> dict[int, ApiCell]:
    return {int(k): ApiCell(VersionRange(int(c["min"]), int(c["max"])),
                            frozenset(int(v) for v in c["avoid"]), str(c["source"]),
                            None if c.get("pinned") is None else int(c["pinned"]))
            for k, c in raw.items()}


def _profile(name: str, raw: Mapping[str, Any], version: str | None) -> ClientProfile:
    source = {str(k): str(v) for k, v in raw["source"].items()}
    note = raw.get("note")
    asks = raw["strategy"].get("asks")
    return ClientProfile(
        library=name, line=str(raw["line"]), first=str(raw["first"]),
        before=None if raw["before"] is None else str(raw["before"]), source=source,
        strategy=Strategy(raw["strategy"]["kind"]), strategy_text=str(raw["strategy"]["text"]),
        strategy_source=str(raw["strategy"]["source"]),
        handshake=Handshake(**{k: str(v) for k, v in raw["handshake"].items()}),
        apis=_cells(raw["apis"]),
        features={str(k): FeatureUse(None if v["uses"] is None else bool(v["uses"]),
                                     str(v["source"]),
                                     None if v.get("fallback") is None else str(v["fallback"]))
                  for k, v in raw["features"].items()},
        version=version, note=None if note is None else str(note),
        asks=None if asks is None else Asks(asks),
        roles={str(role): _cells(cells) for role, cells in raw.get("roles", {}).items()})


#: How many client specs :func:`client_profile` remembers (the oldest are forgotten).
PROFILE_CACHE_ENTRIES = 256


def _nearest(lines: Sequence[Mapping[str, Any]], wanted: tuple[int, ...]) -> Mapping[str, Any]:
    """The line closest to ``wanted`` (for the words only): the newest line that starts at
    or before it, else the oldest line."""
    before = [raw for raw in lines if _key(raw["first"]) <= wanted]
    return before[-1] if before else lines[0]


def client_profile(spec: str) -> ClientProfile:
    """The profile of a library release: ``"aiokafka==0.14.0"``, ``"java 3.9"``, ``"kafkajs"``.

    Without a version, the newest line.  A version no profiled line covers
    (older than the first, in a gap, or newer than the newest line read) is an
    :class:`UnprofiledRelease` naming the lines there are and the nearest one:
    a neighbour's profile never judges it.  The answers for the last
    :data:`PROFILE_CACHE_ENTRIES` specs are remembered.
    """
    name, version = parse_client_spec(spec)
    return _lookup(name, version)


@lru_cache(maxsize=PROFILE_CACHE_ENTRIES)
def _lookup(name: str, version: str | None) -> ClientProfile:
    lines = _data().lines[name]
    if version is None:
        return _profile(name, lines[-1], None)
    wanted = _key(version)
    for raw in lines:
        if _key(raw["first"]) <= wanted and (raw["before"] is None
                                             or wanted < _key(raw["before"])):
            return _profile(name, raw, version)
    spans = ", ".join(f"{r['line']}.x ({r['first']} to before {r['before']})"
                      if r["before"] else f"{r['line']}.x ({r['first']} on)" for r in lines)
    nearest = _nearest(lines, wanted)
    label = f"{name} {nearest['line']}.x"
    raise UnprofiledRelease(
        f"{name} {version} is not profiled, so nothing can be promised for it; the nearest "
        f"line is {label}, which is not used to judge it (profiled: {spans})",
        library=name, version=version, nearest=label)


def application_for(spec: str) -> ApplicationVersions:
    """What the library release ``spec`` speaks: the application of a ``ClusterView``."""
    return client_profile(spec).application()


def _deciders(profile: ClientProfile, brokers: Sequence[BrokerVersions],
              bootstrap: Sequence[int] | None) -> tuple[BrokerVersions, ...]:
    """The brokers whose answer may decide for a one-broker library, in order.

    ``bootstrap`` is the node ids of the brokers the application lists, first
    first (live mode); ``None`` means offline, where the first broker plays the
    bootstrap broker and, for a library that picks among the listed brokers,
    the application is taken to list them all.
    """
    by_id = {b.node_id: b for b in brokers}
    listed = [by_id[n] for n in (bootstrap or ()) if n in by_id] or (
        list(brokers) if bootstrap is None else list(brokers[:1]))
    if profile.asks is Asks.ANY:
        return tuple(brokers)
    if profile.asks is Asks.LISTED:
        return tuple(listed)
    return tuple(listed[:1])


def _one_broker(profile: ClientProfile, brokers: Sequence[BrokerVersions], key: int, name: str,
                wanted: VersionRange, avoided: frozenset[int], subject: str,
                decider: BrokerVersions) -> ApiJudgement:
    first = judge_api((decider,), key, name, wanted, avoided, subject)
    if first.version is None:
        return first
    chosen = VersionRange(first.version, first.version)
    how = (f"{name}: {profile.label} picks v{first.version} from {decider.label}'s answer "
           "and sends it to every broker")
    return judge_api(brokers, key, name, chosen, frozenset(), how)


def judge_for_client(profile: ClientProfile, brokers: Sequence[BrokerVersions], key: int,
                     need: VersionRange | None = None, *, roles: Sequence[str] = (),
                     bootstrap: Sequence[int] | None = None) -> ApiJudgement:
    """The version ``profile``'s library sends of API ``key`` to ``brokers``, or why none.

    Applies the library's strategy with :func:`~kclient.negotiation.judge.judge_api`:

    * per broker: every broker must share a version with the library (each gets
      its own: ``version`` is the lowest sent, ``overlap`` spans what is sent);
      the judgement of the first broker that shares none is returned;
    * one broker decides (one table, first broker, release guess): the version
      is chosen from the deciding broker's answer and every broker must take it.
      Which broker decides is :attr:`ClientProfile.asks`: the bootstrap broker
      (``bootstrap``: the node ids the application lists, first first; offline,
      ``None``, the first of ``brokers``), or one picked at random, in which case
      every broker that may be picked is tried and the worst outcome is the
      verdict (its reason starts with :data:`DEPENDS`);
    * pinned: every broker must take the pinned version.

    A request only a coordinator gets (:data:`COORDINATOR_APIS`) is judged per broker
    that may coordinate: refused by some brokers and taken by others, its outcome
    depends on which one coordinates (the reason starts with :data:`COORDINATED`).

    ``need`` narrows the library's range (a feature's requirement); ``roles``
    the parts of the library that send the request (:meth:`ClientProfile.cells`).
    """
    catalog = default_catalog()
    name = catalog.name_of(key)
    application = profile.application(roles)
    wanted = application.apis.get(key)
    subject = f"{name}: {profile.label} {profile.sends(key, roles)}"
    if wanted is not None and need is not None:
        wanted = wanted.intersection(need)
    if wanted is None:
        needed = "" if need is None else (
            f"v{need.min}+" if need.max >= INT16_MAX else f"v{need}")
        why = (f"{profile.label} {profile.sends(key, roles)}" if key not in application.apis
               else f"{subject}; the feature needs {name} {needed}")
        return ApiJudgement(None, None, (), why)
    avoided = application.avoided(key)
    if not brokers:
        return judge_api((), key, name, wanted, avoided, subject)

    def reach(targets: Sequence[BrokerVersions]) -> ApiJudgement:
        """What the library sends ``targets``, by its strategy."""
        if profile.strategy.one_broker_decides and key != ApiKey.API_VERSIONS:
            # The handshake is each connection's own: it is retried lower per broker.
            deciders = _deciders(profile, brokers, bootstrap)
            judged = [_one_broker(profile, targets, key, name, wanted, avoided, subject, d)
                      for d in deciders]
            broken = [j for j in judged if j.version is None]
            if broken and len(broken) < len(judged):
                asks = "" if profile.asks is None else f" ({profile.asks.text})"
                return attrs.evolve(broken[0], reason=f"{DEPENDS}{asks}: {broken[0].reason}")
            if broken:
                return broken[0]
            return _spread([j.version for j in judged if j.version is not None])
        if profile.strategy is not Strategy.PINNED or key == ApiKey.API_VERSIONS:
            versions = []
            for broker in targets:
                one = judge_api((broker,), key, name, wanted, avoided, subject)
                if one.version is None:
                    return one
                versions.append(one.version)
            return _spread(versions)
        return judge_api(targets, key, name, wanted, avoided, subject)

    if key not in COORDINATOR_APIS or len(brokers) < 2:
        return reach(brokers)
    each = [reach((broker,)) for broker in brokers]
    broken = [j for j in each if j.version is None]
    if broken and len(broken) < len(each) and not depends(broken[0].reason):
        return attrs.evolve(broken[0], reason=f"{COORDINATED}: {broken[0].reason}")
    if broken:
        return broken[0]
    return reach(brokers)


def _spread(versions: Sequence[int]) -> ApiJudgement:
    """Brokers (or deciders) get different versions: the lowest is the version, overlap
    spans them all."""
    return ApiJudgement(min(versions), VersionRange(min(versions), max(versions)))


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
    """A library's feature on a cluster: :class:`Compat`, the reason and the APIs judged.

    ``caveats`` say where a feature that works breaks all the same (on some
    topics) or what the library does silently instead; ``support`` what Apache
    or the library itself states about this client on this cluster, beside the
    protocol verdict.
    """

    profile: ClientProfile
    feature: str
    state: Compat
    reason: str | None
    apis: tuple[ApiUse, ...] = ()
    caveats: tuple[str, ...] = ()
    support: tuple[str, ...] = ()

    @property
    def versions_text(self) -> str:
        """``Produce v7, Metadata v5``: what the library sends where the feature works."""
        return ", ".join(a.text() for a in self.apis if a.version is not None)

    @property
    def detail(self) -> str:
        """The one line people read: the reason (or the versions sent), then the caveats
        and the support statements."""
        head = self.reason if self.reason is not None else self.versions_text
        return "; ".join([head, *self.caveats, *self.support])


def _judge_needs(profile: ClientProfile, brokers: Sequence[BrokerVersions],
                 needs: Mapping[int, VersionRange | None], roles: Sequence[str],
                 bootstrap: Sequence[int] | None) -> tuple[list[ApiUse], list[str]]:
    cells = profile.cells(roles)
    uses: list[ApiUse] = []
    missing: list[str] = []
    for key, need in needs.items():
        name = default_catalog().name_of(key)
        if key not in cells:
            missing.append(name)
            continue
        judged = judge_for_client(profile, brokers, key, need, roles=roles, bootstrap=bootstrap)
        highest = judged.overlap.max if (judged.version is not None and judged.overlap
                                          and len(brokers) > 1) else judged.version
        uses.append(ApiUse(key, name, judged.version, judged.blocking, judged.reason, highest))
    return uses, missing


@lru_cache(maxsize=PROFILE_CACHE_ENTRIES)
def _broker_release(table: tuple[tuple[int, VersionRange], ...]) -> tuple[int, ...] | None:
    """The release a broker's answer names (its guess's lowest), as a comparable key."""
    guess = guess_release(dict(table)) if table else None
    if guess is None or guess.low is None:
        return None
    return _key(release_number(guess.low))


def support_notes(profile: ClientProfile, brokers: Sequence[BrokerVersions]) -> tuple[str, ...]:
    """What Apache and the library state about ``profile``'s release on ``brokers``.

    Each statement (:class:`SupportStatement`, shipped with its source) applies
    when the release lies in its client range and some broker's release (as
    guessed from its answer) in its broker range.
    """
    release = _key(profile.version or profile.first)
    statements = [item for item in _data().support if item.library == profile.library
                  and (item.clients_from is None or release >= _key(item.clients_from))
                  and (item.clients_before is None or release < _key(item.clients_before))]
    if not statements:
        return ()
    numbers = [n for b in brokers if (n := _broker_release(tuple(sorted(b.apis.items()))))]
    notes = []
    for item in statements:
        if item.brokers_from is not None and not any(
                n >= _key(item.brokers_from) for n in numbers):
            continue
        if item.brokers_before is not None and not any(
                n < _key(item.brokers_before) for n in numbers):
            continue
        notes.append(f"{item.text} ({item.source})")
    return tuple(notes)


def check_feature(profile: ClientProfile, brokers: Sequence[BrokerVersions], feature: str,
                  unknown_reason: str | None = None, *,
                  bootstrap: Sequence[int] | None = None) -> CompatResult:
    """Whether ``profile``'s library can use client ``feature`` on ``brokers``.

    The library's ApiVersions handshake (when it sends one) and every API the
    feature needs are judged with :func:`judge_for_client` (the library's range,
    in the feature's roles, narrowed by the need, its own strategy; ``bootstrap``
    as there), then the feature levels it needs finalized (the reason names the
    command that finalizes a missing one).  ``brokers`` are those whose answer
    counts; ``unknown_reason`` says that others have not answered yet, which
    makes a feature that no known broker breaks *unknown* (a definite "breaks"
    outranks "cannot tell").  A feature the library does not use breaks with the
    profile's source as the reason; one its profile has not read is unknown.  A
    need that holds only on some topics (:class:`FeatureCondition`) adds a caveat
    to a feature that works; a library that silently does something else where
    the feature breaks says so in the reason.
    """
    spec = client_feature(feature)
    support = support_notes(profile, brokers)
    use = profile.features.get(feature)
    if use is None or use.uses is None:
        where = f" ({use.source})" if use is not None else ""
        return CompatResult(profile, feature, Compat.UNKNOWN,
                            f"the {profile.library} {profile.line} profile has not read "
                            f"whether it supports {feature}{where}", support=support)
    if not use.uses:
        return CompatResult(profile, feature, Compat.BREAKS,
                            f"{profile.label} does not support {feature} ({use.source})",
                            support=support)
    # Every feature starts with the library's handshake, when it sends one.
    needs: dict[int, VersionRange | None] = {}
    if ApiKey.API_VERSIONS in profile.apis:
        needs[ApiKey.API_VERSIONS] = None
    needs.update(spec.needs)
    uses, missing = _judge_needs(profile, brokers, needs, spec.roles, bootstrap)
    broken = [u for u in uses if u.version is None]
    if broken:
        reasons = [str(u.reason) for u in broken]
        if all(depends(r) for r in reasons):  # say once what it depends on
            heads = list(dict.fromkeys(r.split(": ", 1)[0] for r in reasons))
            reasons = [r.split(": ", 1)[1] for r in reasons]
            reasons[0] = f"{'; '.join(heads)}: {reasons[0]}"
        else:  # one request breaks whatever broker is chosen: the feature breaks
            reasons = [r.split(": ", 1)[1] if depends(r) else r for r in reasons]
        reason = "; ".join(reasons)
        if use.fallback is not None:
            reason += f"; {profile.library} then {use.fallback}"
        return CompatResult(profile, feature, Compat.BREAKS, reason, tuple(uses),
                            support=support)
    if missing:
        return CompatResult(profile, feature, Compat.UNKNOWN,
                            f"the {profile.library} {profile.line} profile does not list "
                            f"{', '.join(missing)}", tuple(uses), support=support)
    unmet = [c for c in (check_level(brokers, level) for level in spec.levels) if not c.ok]
    if unmet:
        return CompatResult(profile, feature, Compat.BREAKS,
                            "; ".join(str(c.reason) for c in unmet), tuple(uses),
                            support=support)
    caveats = []
    for condition in spec.conditions:
        sent, _ = _judge_needs(profile, brokers, dict(condition.needs), spec.roles, bootstrap)
        failing = [u for u in sent if u.version is None]
        if failing:
            plain = [u for u in uses if u.key in {f.key for f in failing}]
            words = ", ".join(u.text() for u in plain)
            needed = ", ".join(f"{default_catalog().name_of(k)} v{r.min}+"
                               for k, r in condition.needs.items())
            cite = condition.source.split(";", 1)[0]
            caveats.append(f"{condition.effect} breaks on {condition.when} (it sends {words}; "
                           f"those topics need {needed}, {cite})")
    if unknown_reason is not None:
        return CompatResult(profile, feature, Compat.UNKNOWN, unknown_reason, tuple(uses),
                            tuple(caveats), support)
    return CompatResult(profile, feature, Compat.WORKS, None, tuple(uses), tuple(caveats),
                        support)


def default_features(profile: ClientProfile) -> tuple[str, ...]:
    """The features judged when none are named: those the library is known to use, but
    the ones an application must choose (:attr:`ClientFeature.opt_in`): a library able
    to speak share groups does not break an application that never chose them."""
    return tuple(name for name, feature in client_features().items()
                 if profile.uses(name) and feature.opt_in is None)


def check_client(profile: ClientProfile, brokers: Sequence[BrokerVersions],
                 features: Sequence[str] | None = None, unknown_reason: str | None = None,
                 *, bootstrap: Sequence[int] | None = None) -> tuple[CompatResult, ...]:
    """:func:`check_feature` for each of ``features`` (default: those the library uses)."""
    names = list(features) if features is not None else list(default_features(profile))
    return tuple(check_feature(profile, brokers, name, unknown_reason, bootstrap=bootstrap)
                 for name in names)
