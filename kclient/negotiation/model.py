"""What brokers advertise, what the application speaks, and the cluster view.

The rules are those of KIP-35 (see the Concepts page): per broker the usable range of an
API is the application's range intersected with the broker's
(:meth:`ApplicationVersions.version_with` is the one place that picks a version
for one broker); cluster-wide an API counts only when every broker in the view
has it, and its range is the maximum of the minimums to the minimum of the
maximums.  The version to send is the highest usable version the application
does not avoid.

Verdicts fail closed: a broker that has answered before and is unreachable now
(*stale*) keeps its last answer, so ranges never widen because a broker went
away; a broker never heard from (*unknown*) makes every API it could still
block *unknown* rather than usable, unless the view is lenient
(``strict=False``), which ignores such brokers and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs

from kclient.address import format_address
from kclient.errors import (
    ConfigError,
    UnknownMessageError,
    UnsupportedVersionError,
    VerdictUnknownError,
)
from kclient.negotiation.clientrules import CLIENT_MAX_VERSIONS
from kclient.negotiation.deferred import BrokerTable, fill_when_read
from kclient.negotiation.evaluation import FeatureReport, cluster_state, evaluate_features
from kclient.negotiation.features import Feature, FeatureSet
from kclient.negotiation.judge import judge_api
from kclient.negotiation.ranges import (
    VersionRange,
    highest_allowed,
    intersect_all,
    parse_range,
    trusted_range,
)
from kclient.negotiation.releases import (
    fallback_source,
    rejected_versions,
    release_feature_levels,
    release_profile,
    resolve_release,
)
from kclient.negotiation.tally import Answer, ViewTally
from kclient.negotiation.verdict import (
    APP_LACKS,
    APP_SPEAKS,
    NO_BROKER,
    BrokerState,
    Verdict,
    broker_label,
    offers_text,
    stale_text,
    unknown_text,
)
from kclient.protocol.catalog import Catalog, default_catalog

__all__ = [
    "ApiSupport",
    "ApplicationVersions",
    "BrokerVersions",
    "ClusterView",
    "api_key_of",
    "fallback_broker",
]

ApiRef = str | int


def _api_map(value: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> dict[int, VersionRange]:
    items = value.items() if isinstance(value, Mapping) else value
    result = {int(key): parse_range(rng) for key, rng in items}
    return dict(sorted(result.items()))


def _feature_map(value: Mapping[str, Any] | None) -> dict[str, VersionRange]:
    if not value:
        return {}
    return {str(name): parse_range(rng) for name, rng in sorted(value.items())}


def _brokers(value: Iterable[BrokerVersions]) -> tuple[BrokerVersions, ...]:
    return tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _software(value: Any) -> tuple[str, str] | None:
    if value is None:
        return None
    name, version = value
    return (str(name), str(version))


def api_key_of(api: ApiRef, catalog: Catalog | None = None) -> int:
    """The API key of ``api`` given by name (``"Produce"``), key (``0``) or ``"0"``.

    Keys the catalog does not know are accepted as integers (brokers may
    advertise newer APIs); unknown names raise
    :class:`~kclient.errors.UnknownMessageError`.
    """
    if isinstance(api, bool) or not isinstance(api, int | str):
        raise UnknownMessageError(f"an API is a name such as 'Produce' or an integer key, "
                                  f"not {api!r}")
    if isinstance(api, int):
        return api
    text = api.strip()
    if text.isdigit():
        return int(text)
    if text.startswith("UNKNOWN(") and text.endswith(")") and text[8:-1].isdigit():
        return int(text[8:-1])
    return (catalog or default_catalog()).resolve(text).key


@attrs.frozen
class BrokerVersions:
    """One broker's answer to ApiVersions (or what is assumed when it cannot answer).

    ``source`` says where the ranges come from: ``"api_versions"`` (the broker
    answered), ``"fallback:<release>"`` (assumed from a release profile) or
    ``"configured"`` (given by the application).  ``error`` is set when the
    latest attempt to negotiate with the broker failed.  ``answered_at`` is when
    the ranges in ``apis`` were received (``None`` when the broker has never
    answered); it decides the broker's :attr:`state`: a failed broker that
    answered before is *stale* and its last answer still counts, one that never
    answered is *unknown*.  ``handshake`` lists the steps of the handshake
    ladder that led here.
    """

    node_id: int
    host: str
    port: int
    apis: Mapping[int, VersionRange] = attrs.field(factory=dict, converter=_api_map, hash=False)
    rack: str | None = None
    supported_features: Mapping[str, VersionRange] = attrs.field(
        factory=dict, converter=_feature_map, hash=False
    )
    finalized_features: Mapping[str, VersionRange] = attrs.field(
        factory=dict, converter=_feature_map, hash=False
    )
    finalized_features_epoch: int = -1
    software: tuple[str, str] | None = attrs.field(default=None, converter=_software)
    source: str = "api_versions"
    error: str | None = None
    handshake: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    answered_at: datetime | None = attrs.field(default=None, eq=False)
    # What this broker takes of each API it advertises (see takes()), once known.
    _taken: Mapping[int, VersionRange | None] | None = attrs.field(
        init=False, default=None, eq=False, repr=False)
    # Its answer as a cluster view groups brokers (kclient.negotiation.tally), once made.
    _answer: Answer | None = attrs.field(init=False, default=None, eq=False, repr=False)

    @classmethod
    def of_release(cls, release: str, node_id: int = 1, host: str = "broker",
                   port: int = 9092, *, source: str = "configured") -> BrokerVersions:
        """A broker of Kafka ``release`` in a freshly formatted cluster: the release's API
        ranges and the KIP-584 feature levels such a cluster finalizes and supports
        (:func:`~kclient.negotiation.releases.release_feature_levels`; a cluster upgraded
        from an older release keeps lower levels until an operator raises them)."""
        levels = release_feature_levels(release)
        return cls(node_id, host, port, release_profile(release),
                   supported_features=dict(levels.supported),
                   finalized_features={n: (v, v) for n, v in levels.finalized.items()},
                   finalized_features_epoch=1 if levels.finalized else -1, source=source)

    @property
    def address(self) -> str:
        """``host:port`` (an IPv6 host in brackets: ``[::1]:9092``)."""
        return format_address(self.host, self.port)

    @property
    def label(self) -> str:
        """How messages name this broker: ``broker 2 (10.0.0.5:9092)``."""
        return broker_label(self.node_id, self.host, self.port)

    @property
    def failed(self) -> bool:
        """True when the latest negotiation with this broker failed."""
        return self.error is not None

    @property
    def state(self) -> BrokerState:
        """Answered (current ranges), stale (last answer kept) or unknown (never answered)."""
        if self.error is None:
            return BrokerState.ANSWERED
        return BrokerState.STALE if self.answered_at is not None else BrokerState.UNKNOWN

    @property
    def known(self) -> bool:
        """True when the broker's ranges are evidence (answered now or before)."""
        return self.error is None or self.answered_at is not None

    def went_stale(self, error: str) -> BrokerVersions:
        """This broker after a failed attempt: its last answer kept, marked stale.

        A broker that never answered stays unknown (its ranges are dropped).
        """
        if self.answered_at is None:
            return attrs.evolve(self, apis={}, error=error)
        stale = attrs.evolve(self, error=error)
        # Same answer: what was worked out from it still holds.
        object.__setattr__(stale, "_taken", self._taken)
        object.__setattr__(stale, "_answer", self._answer)
        return stale

    def range_for(self, api: ApiRef) -> VersionRange | None:
        """The range the broker advertises for ``api``, or ``None`` when it lacks it."""
        return self.apis.get(api_key_of(api))

    def takes(self, key: int) -> VersionRange | None:
        """The versions of API ``key`` this broker takes from a client, or ``None``.

        What it advertises less what its release is known to reject
        (:func:`~kclient.negotiation.releases.rejected_versions`: a 4.x broker
        advertises Produce v0-v2 and refuses them).  Every verdict and version
        choice reads this; texts and snapshots show what was advertised.
        """
        known = self._taken
        if known is None:  # once per broker entry: its table less a release guess's rejects
            rejected = rejected_versions(self.apis)
            taken: dict[int, VersionRange | None] = {}
            for api, rng in self.apis.items():
                cut = rejected.get(api)
                if cut is None or cut.max < rng.min:
                    taken[api] = rng
                elif cut.max < rng.max:
                    taken[api] = trusted_range(cut.max + 1, rng.max)
                else:
                    taken[api] = None
            object.__setattr__(self, "_taken", taken)
            known = taken
        return known.get(key)

    def finalized_level(self, feature: str) -> int | None:
        """The finalized level of a KIP-584 feature (its max level), or ``None``."""
        rng = self.finalized_features.get(feature)
        return None if rng is None else rng.max


def _normalise_limits(
    catalog: Catalog, values: Mapping[ApiRef, int] | None, what: str
) -> dict[int, int]:
    result: dict[int, int] = {}
    if values is not None and not isinstance(values, Mapping):
        raise ConfigError(f"{what} must be a mapping of API to version, e.g. "
                          f"{{'Produce': 9}}; got {type(values).__name__}")
    for api, version in (values or {}).items():
        try:
            key = api_key_of(api, catalog)
        except UnknownMessageError as exc:
            raise ConfigError(f"{what}: {exc}") from None
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ConfigError(f"{what}[{api!r}] must be a version number (0 or more), "
                              f"got {version!r}")
        result[key] = version
    return result


@attrs.frozen
class ApplicationVersions:
    """The versions the application itself can speak, per API key.

    Built from the API catalog, narrowed by the application's own settings (see
    :meth:`from_catalog`).  ``avoid`` lists versions never to send even when a
    broker advertises them (KIP-35: a version may be known to be broken).
    """

    apis: Mapping[int, VersionRange] = attrs.field(converter=_api_map, hash=False)
    avoid: Mapping[int, frozenset[int]] = attrs.field(factory=dict, hash=False)
    catalog: Catalog = attrs.field(factory=default_catalog, eq=False, repr=False)
    #: Who the application is, for texts: ``None`` is kclient itself; a client
    #: profile names its library (``"aiokafka 0.14"``).
    speaker: str | None = attrs.field(default=None, eq=False)

    @classmethod
    def from_catalog(
        cls,
        catalog: Catalog | None = None,
        *,
        max_versions: Mapping[ApiRef, int] | None = None,
        min_versions: Mapping[ApiRef, int] | None = None,
        avoid_versions: Mapping[ApiRef, Iterable[int]] | None = None,
    ) -> ApplicationVersions:
        """The catalog's ranges, capped by ``max_versions`` and raised by ``min_versions``.

        Each mapping is keyed by API name or key.  A cap below the catalog's
        minimum (or a minimum above its maximum) is a :class:`ConfigError`:
        the application could never send that request.
        """
        cat = catalog or default_catalog()
        caps = _normalise_limits(cat, max_versions, "max_versions")
        floors = _normalise_limits(cat, min_versions, "min_versions")
        apis: dict[int, VersionRange] = {}
        for info in cat:
            if info.sendable is None:
                continue  # no stable version the codec can send: not spoken
            first, last = info.sendable
            low = max(first, floors.get(info.key, first))
            # Versions reserved for brokers are never a client's to choose.
            client_max = CLIENT_MAX_VERSIONS.get(info.key)
            top = last if client_max is None else min(last, client_max.value)
            high = min(top, caps.get(info.key, top))
            if low > high:
                raise ConfigError(
                    f"{info.name}: versions narrowed to {low}-{high}, which is empty "
                    f"(kclient speaks {first}-{last}); fix max_versions/min_versions"
                )
            apis[info.key] = VersionRange(low, high)
        for key in set(caps) | set(floors):
            if key not in apis and cat.by_key(key) is None:
                raise ConfigError(f"max_versions/min_versions name API key {key}, which "
                                  "kclient does not know; remove it")
        avoid: dict[int, frozenset[int]] = {}
        if avoid_versions is not None and not isinstance(avoid_versions, Mapping):
            raise ConfigError("avoid_versions must be a mapping of API to versions, e.g. "
                              f"{{'Produce': [9]}}; got {type(avoid_versions).__name__}")
        for api, versions in (avoid_versions or {}).items():
            try:
                key = api_key_of(api, cat)
            except UnknownMessageError as exc:
                raise ConfigError(f"avoid_versions: {exc}") from None
            if isinstance(versions, str | bytes) or not isinstance(versions, Iterable) or any(
                    isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in versions):
                raise ConfigError(f"avoid_versions[{api!r}] must be a list of version numbers "
                                  f"(0 or more), e.g. [9]; got {versions!r}")
            chosen = frozenset(versions)
            if chosen:
                avoid[key] = chosen
        return cls(apis, avoid, cat)

    def range_for(self, api: ApiRef) -> VersionRange | None:
        """The application's range for ``api`` (``None`` when it does not speak it)."""
        return self.apis.get(api_key_of(api, self.catalog))

    def avoided(self, key: int) -> frozenset[int]:
        """The versions of ``key`` the application never sends."""
        return self.avoid.get(key, frozenset())

    def name_of(self, key: int) -> str:
        """Kafka's name of the API, or ``UNKNOWN(<key>)``."""
        return self.catalog.name_of(key)

    def version_with(self, key: int, broker_range: VersionRange | None,
                     ceiling: int | None = None) -> int | None:
        """The version of ``key`` to send to a broker offering ``broker_range``, or ``None``.

        The one rule for a single broker: the highest version in the
        application's range and the broker's that the application does not avoid
        (and, for a request whose body rules newer versions out, at most
        ``ceiling``: see :func:`~kclient.negotiation.clientrules.topic_name_cap`).
        """
        ours = self.apis.get(key)
        if ours is None or broker_range is None:
            return None
        usable = ours.intersection(broker_range)
        if usable is not None and ceiling is not None:
            usable = usable.intersection(VersionRange(0, ceiling))
        return highest_allowed(usable, self.avoided(key))

    def require_version(self, api: ApiRef, broker: BrokerVersions,
                        ceiling: int | None = None) -> int:
        """:meth:`version_with` for ``broker``'s answer, raising when there is no version.

        Raises :class:`~kclient.errors.UnsupportedVersionError` naming the
        application's range and what the broker offers.
        """
        key = api_key_of(api, self.catalog)
        version = self.version_with(key, broker.takes(key), ceiling)
        if version is not None:
            return version
        if ceiling is not None and self.version_with(key, broker.takes(key)) is not None:
            raise UnsupportedVersionError(
                f"no version of {self.name_of(key)} up to v{ceiling} is usable with "
                f"{broker.label} ({offers_text(broker.node_id, broker.takes(key))}), and newer "
                "versions name topics by id only: give every topic its topic_id",
                api_key=key, api=self.name_of(key), application=self.describe(key),
                offers=_offers([broker], key), blocking=(broker.node_id,))
        name, app, offered = self.name_of(key), self.describe(key), _offers([broker], key)
        if not broker.known:
            raise VerdictUnknownError(
                f"no version of {self.name_of(key)} can be chosen for {broker.label}: it has "
                f"not answered ApiVersions ({broker.error}); retry once it is connected",
                (broker.node_id,), api_key=key, api=name, application=app, offers=offered)
        raise UnsupportedVersionError(
            f"no usable version of {self.name_of(key)} (key {key}) with {broker.label}: "
            f"application speaks {self.describe(key)}; "
            f"{offers_text(broker.node_id, broker.takes(key))}", api_key=key, api=name,
            application=app, offers=offered, blocking=(broker.node_id,))

    def describe(self, key: int) -> str:
        """The application's range in words, e.g. ``3-11 (avoiding 9)``."""
        rng = self.apis.get(key)
        if rng is None:
            if self.speaker is not None:
                return f"none ({self.speaker} does not send this API)"
            if self.catalog.by_key(key) is None:
                return "none (kclient does not know this API)"
            return "none (kclient has no stable version of this API to send)"
        avoided = sorted(v for v in self.avoided(key) if v in rng)
        extra = f" (avoiding {', '.join(map(str, avoided))})" if avoided else ""
        return f"{rng}{extra}"


def _offers(brokers: Iterable[BrokerVersions], key: int) -> dict[int, tuple[int, int] | None]:
    """What each broker takes of API ``key``, for an error's ``offers``."""
    return {b.node_id: (None if (rng := b.takes(key)) is None else (rng.min, rng.max))
            for b in brokers}


def _default_application() -> ApplicationVersions:
    return ApplicationVersions.from_catalog()


@attrs.frozen
class ApiSupport:
    """Cluster-wide support of one API.

    ``state`` is the verdict (:class:`~kclient.negotiation.verdict.Verdict`):
    available, unavailable (``blocking`` names the brokers in the way) or
    unknown (``unknown`` names the brokers that have not answered; no version is
    promised).  ``brokers`` maps each broker whose answer counts (node id) to the
    range it advertises, ``None`` when it lacks the API; ``stale`` lists those
    of them that are unreachable now and count with their last answer.
    ``cluster`` is the intersection of those ranges (``None`` unless every such
    broker has the API and they overlap); ``usable`` is ``cluster`` intersected
    with the application's range and ``version`` the version to send (both
    ``None`` unless available).  ``reason`` explains any state but available.
    """

    key: int
    name: str
    application: VersionRange | None
    brokers: Mapping[int, VersionRange | None] = attrs.field(hash=False)
    cluster: VersionRange | None
    usable: VersionRange | None
    version: int | None
    blocking: tuple[int, ...] = ()
    reason: str | None = None
    state: Verdict = Verdict.UNAVAILABLE
    unknown: tuple[int, ...] = ()
    stale: tuple[int, ...] = ()

    @property
    def available(self) -> bool:
        """True when a version can be promised cluster-wide."""
        return self.state is Verdict.AVAILABLE

    @property
    def on_every_broker(self) -> bool:
        """True when every broker whose answer counts advertises the API."""
        return bool(self.brokers) and all(r is not None for r in self.brokers.values())

    @property
    def bounds(self) -> tuple[int, int] | None:
        """KIP-35's (max of mins, min of maxes), even when empty; ``None`` if a broker lacks it."""
        if not self.on_every_broker:
            return None
        ranges = [r for r in self.brokers.values() if r is not None]
        return max(r.min for r in ranges), min(r.max for r in ranges)


@attrs.frozen
class ClusterView:
    """The brokers of one cluster and the application, with KIP-35 semantics.

    Strict (the default) fails closed: while a listed broker has never answered
    (:attr:`unknown_brokers`), no API or feature it could block is promised.
    Lenient (``strict=False``) is the explicit opt-in to ignore such brokers;
    they are listed in :attr:`ignored_brokers`.  Stale brokers (unreachable now,
    answered before) count with their last answer in both modes.

    A view is a frozen value.  :meth:`with_broker` and :meth:`without_broker`
    make the next one in time that does not grow with the number of brokers
    (the view shares all it can with this one; see
    :mod:`kclient.negotiation.tally`): the client's view changes that way with
    each broker's answer.  What a query works out (an API's support, a
    feature's verdict) is worked out when first asked and kept with the view.
    """

    brokers: tuple[BrokerVersions, ...] = attrs.field(converter=_brokers)
    application: ApplicationVersions = attrs.field(factory=_default_application)
    strict: bool = True
    name: str | None = None
    # The brokers counted by answer (made when first needed), and what was worked out.
    _tally: ViewTally | None = attrs.field(init=False, default=None, eq=False, repr=False)
    _memo: dict[Any, Any] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        seen: set[int] = set()
        for broker in self.brokers:
            if broker.node_id in seen:
                raise ConfigError(
                    f"broker id {broker.node_id} appears twice in cluster {self.name or ''}"
                    .rstrip() + "; each broker must appear once"
                )
            seen.add(broker.node_id)

    def _state(self) -> ViewTally:
        """The view's brokers counted by answer (see :mod:`kclient.negotiation.tally`)."""
        tally = self._tally
        if tally is None:
            tally = ViewTally.build(self.brokers, self.application, self.strict)
            object.__setattr__(self, "_tally", tally)
        return tally

    def _derived(self, tally: ViewTally) -> ClusterView:
        """A view like this one over ``tally``'s brokers (listed when first read)."""
        view = object.__new__(ClusterView)
        for field, value in (("application", self.application), ("strict", self.strict),
                             ("name", self.name), ("_tally", tally), ("_memo", {})):
            object.__setattr__(view, field, value)
        return view

    def _in_state(self, state: BrokerState) -> tuple[BrokerVersions, ...]:
        found: tuple[BrokerVersions, ...] | None = self._memo.get(("state", state))
        if found is None:
            tally = self._tally
            if tally is not None and state is BrokerState.STALE:
                found = tally.in_order(tally.stale)
            elif tally is not None and state is BrokerState.UNKNOWN:
                found = tally.in_order(tally.unknown)
            else:
                found = tuple(b for b in self.brokers if b.state is state)
            self._memo[("state", state)] = found
        return found

    # -- brokers ---------------------------------------------------------------
    @property
    def live_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers whose latest negotiation succeeded."""
        return self._in_state(BrokerState.ANSWERED)

    @property
    def stale_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers unreachable now that count with their last answer."""
        return self._in_state(BrokerState.STALE)

    @property
    def unknown_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers that have never answered ApiVersions on a live connection."""
        return self._in_state(BrokerState.UNKNOWN)

    @property
    def known_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers whose ranges count: answered ones and stale ones."""
        found: tuple[BrokerVersions, ...] | None = self._memo.get(("known",))
        if found is None:
            found = self._memo[("known",)] = tuple(b for b in self.brokers if b.known)
        return found

    @property
    def failed_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers whose latest negotiation failed (stale and unknown ones)."""
        return tuple(b for b in self.brokers if b.error is not None)

    @property
    def ignored_brokers(self) -> tuple[BrokerVersions, ...]:
        """Unknown brokers left out of verdicts because the view is lenient."""
        return () if self.strict else self.unknown_brokers

    def broker(self, node_id: int) -> BrokerVersions:
        """The broker with ``node_id``; :class:`ConfigError` when it is not in the view."""
        tally = self._tally
        if tally is not None:
            entry: tuple[int, BrokerVersions] | None = tally.members.get(node_id)
            if entry is not None:
                return entry[1]
        else:
            for broker in self.brokers:
                if broker.node_id == node_id:
                    return broker
        known = ", ".join(str(b.node_id) for b in self.brokers) or "none"
        raise ConfigError(f"broker {node_id} is not in this cluster view (brokers: {known})")

    def with_broker(self, broker: BrokerVersions) -> ClusterView:
        """A new view where ``broker`` is added, or replaces the one with its id.

        The brokers stay ordered by node id.
        """
        tally = self._state()
        if tally.ordered:
            return self._derived(tally.changed(broker.node_id, broker))
        others = [b for b in self.brokers if b.node_id != broker.node_id]
        ordered = sorted([*others, broker], key=lambda b: b.node_id)
        return attrs.evolve(self, brokers=tuple(ordered))

    def without_broker(self, node_id: int) -> ClusterView:
        """A new view without the broker ``node_id``."""
        return self._derived(self._state().changed(node_id, None))

    def unknown_reason(self) -> str | None:
        """Why nothing can be promised yet (strict views with unknown brokers), else ``None``."""
        if not self.strict:
            return None
        memo = self._memo
        if ("unknown_reason",) not in memo:
            unknown = self.unknown_brokers
            memo[("unknown_reason",)] = (
                unknown_text((b.label, b.error) for b in unknown) if unknown else None)
        reason: str | None = memo[("unknown_reason",)]
        return reason

    def stale_notes(self, now: datetime | None = None) -> tuple[str, ...]:
        """One sentence per stale broker: unreachable, last answer used (and its age)."""
        return tuple(stale_text(b.label, b.error, b.answered_at, now)
                     for b in self.stale_brokers)

    # -- APIs ------------------------------------------------------------------
    def api_keys(self) -> list[int]:
        """Every key the application or a broker whose answer counts knows, ascending."""
        return list(self._state().keys())

    def api_support(self, api: ApiRef) -> ApiSupport:
        """Cluster-wide support of ``api`` (name or key): the verdict and its reasons.

        The version and the brokers in the way come from
        :func:`~kclient.negotiation.judge.judge_api`, the rule every feature's API
        requirement uses too.
        """
        return self._support(api_key_of(api, self.application.catalog))

    def api_ranges(self) -> dict[int, ApiSupport]:
        """:meth:`api_support` for every key the application or any known broker knows."""
        return {key: self._support(key) for key in self.api_keys()}

    def _silent_ids(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """What every API's support names: the brokers whose silence counts (strict views)
        and the stale ones."""
        found: tuple[tuple[int, ...], tuple[int, ...]] | None = self._memo.get(("silent",))
        if found is None:
            found = self._memo[("silent",)] = (
                tuple(b.node_id for b in self.unknown_brokers) if self.strict else (),
                tuple(b.node_id for b in self.stale_brokers))
        return found

    def _support(self, key: int) -> ApiSupport:
        memo = self._memo  # an int key: that API's support
        found: ApiSupport | None = memo.get(key)
        if found is not None:
            return found
        tally = self._tally or self._state()
        judged_brokers = tally.judged()  # one per distinct answer, naming all who share it
        application = self.application
        app = application.apis.get(key)
        name = application.name_of(key)
        cluster = (intersect_all([b.apis.get(key) for b in judged_brokers]) if judged_brokers
                   else None)
        unknown, stale = memo.get(("silent",)) or self._silent_ids()
        usable: VersionRange | None = None
        version: int | None = None
        blocking: tuple[int, ...] = ()
        state = Verdict.UNAVAILABLE
        reason: str | None = None
        if app is None:
            reason = f"{APP_LACKS}{name}"
        else:
            # As a feature's verdict: what rules it out (the application itself
            # when no broker counts) first, then silence makes it unknown.
            judged = judge_api(judged_brokers, key, name, app, application.avoided(key),
                               lambda: f"{name}{APP_SPEAKS}{application.describe(key)}",
                               tally.named)
            state = cluster_state(judged.ok, bool(unknown), tally.known)
            if state is Verdict.UNAVAILABLE:
                blocking, reason = judged.blocking, judged.reason
            elif state is Verdict.UNKNOWN:
                reason = self.unknown_reason() or NO_BROKER
            else:
                usable, version = judged.overlap, judged.version
        per_broker = BrokerTable(lambda: {b.node_id: b.apis.get(key)
                                          for b in self.known_brokers})
        found = memo[key] = ApiSupport(
            key=key, name=name, application=app, brokers=per_broker, cluster=cluster,
            usable=usable, version=version, blocking=blocking, reason=reason, state=state,
            unknown=unknown, stale=stale)
        return found

    def usable_range(self, api: ApiRef, broker: int | BrokerVersions | None = None
                     ) -> VersionRange | None:
        """The usable range of ``api`` cluster-wide, or with one broker."""
        key = api_key_of(api, self.application.catalog)
        if broker is None:
            return self.api_support(key).usable
        target = self._target(broker)
        app = self.application.apis.get(key)
        rng = target.takes(key)
        if app is None or rng is None:
            return None
        return app.intersection(rng)

    def _target(self, broker: int | BrokerVersions) -> BrokerVersions:
        return broker if isinstance(broker, BrokerVersions) else self.broker(broker)

    def version_for(self, api: ApiRef, broker: int | BrokerVersions | None = None, *,
                    ceiling: int | None = None) -> int:
        """The version of ``api`` to send: cluster-wide, or to one broker.

        Cluster-wide (``broker=None``) is the highest version every broker whose
        answer counts can take; per broker it is that broker's own highest usable
        version.  Raises :class:`~kclient.errors.UnsupportedVersionError` naming
        the application's range and the blocking brokers when no version is
        usable, and :class:`~kclient.errors.VerdictUnknownError` (a subclass)
        when some listed broker has not answered yet (strict views).  ``ceiling``
        keeps the answer at or below a version a request's body needs (see
        :func:`~kclient.negotiation.clientrules.topic_name_cap`).
        """
        key = api_key_of(api, self.application.catalog)
        name = self.application.name_of(key)
        app = self.application.describe(key)
        if broker is not None:
            target = self._target(broker)
            if target.error is not None:
                raise UnsupportedVersionError(
                    f"no usable version of {name} with {target.label}: negotiation failed "
                    f"({target.error}); reconnect to retry", api_key=key, api=name,
                    application=app)
            return self.application.require_version(key, target, ceiling)
        support = self.api_support(key)
        if support.version is not None and (ceiling is None or support.version <= ceiling):
            return support.version
        if support.usable is not None and ceiling is not None:
            capped = highest_allowed(support.usable.intersection(VersionRange(0, ceiling)),
                                     self.application.avoided(key))
            if capped is not None:
                return capped
            raise UnsupportedVersionError(
                f"no version of {name} up to v{ceiling} is usable in cluster "
                f"{self.name or '(unnamed)'} (usable: {support.usable}), and newer versions "
                "name topics by id only: give every topic its topic_id",
                api_key=key, api=name, application=self.application.describe(key),
                offers=_offers(self.known_brokers, key))
        cluster = self.name or "(unnamed)"
        offered = _offers(self.known_brokers, key)
        if support.state is Verdict.UNKNOWN:
            raise VerdictUnknownError(
                f"no version of {name} (key {key}) can be promised in cluster {cluster} yet: "
                f"{support.reason}", support.unknown, api_key=key, api=name, application=app,
                offers=offered)
        detail = str(support.reason)
        if support.blocking:
            # Name what every broker offers, not only the blocking ones: the
            # reader needs the target to upgrade towards.
            offers = "; ".join(offers_text(b.node_id, b.takes(key))
                               for b in self.known_brokers)
            detail = (f"application speaks {self.application.describe(key)}; {offers}; "
                      "blocked by broker(s) " + ", ".join(map(str, support.blocking)))
        raise UnsupportedVersionError(
            f"no usable version of {name} (key {key}) in cluster {cluster}: {detail}. "
            "Upgrade the blocking broker(s) or change the application's version settings",
            api_key=key, api=name, application=app, offers=offered, blocking=support.blocking)

    # -- features --------------------------------------------------------------
    def evaluate(self, features: FeatureSet | Iterable[Feature],
                 now: datetime | None = None) -> FeatureReport:
        """Evaluate named features against this view (see :func:`evaluate_features`).

        Pass the features to judge: ``kclient.negotiation.default_features()``
        for the shipped features.yaml, or a set loaded with ``load_features``.
        """
        return evaluate_features(self, features, now)


# A view made by with_broker / without_broker lists its brokers when first read.
fill_when_read(ClusterView, "brokers", lambda view: view._state().brokers())


def fallback_broker(release: str, node_id: int = -1, host: str = "", port: int = 0,
                    rack: str | None = None, handshake: tuple[str, ...] = ()
                    ) -> BrokerVersions:
    """The versions to assume for a broker that cannot answer ApiVersions.

    ``source`` is :func:`~kclient.negotiation.releases.fallback_source`
    (``fallback:0.9.0``: the release as Kafka names it).
    """
    canonical = resolve_release(release)
    return BrokerVersions(node_id, host, port, release_profile(canonical), rack=rack,
                          source=fallback_source(canonical), handshake=handshake)
