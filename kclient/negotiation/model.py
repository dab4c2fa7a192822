"""What brokers advertise, what the application speaks, and the cluster view.

The rules are those of KIP-35 (DESIGN.md §4): per broker the usable range of an
API is the application's range intersected with the broker's; cluster-wide an API
counts only when every broker in the view has it, and its range is the maximum of
the minimums to the minimum of the maximums.  The version to send is the highest
usable version the application does not avoid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kclient.errors import ConfigError, UnknownMessageError, UnsupportedVersionError
from kclient.negotiation.ranges import VersionRange, highest_allowed, intersect_all, parse_range
from kclient.protocol.catalog import Catalog, default_catalog

if TYPE_CHECKING:
    from kclient.negotiation.features import FeatureReport, FeatureSet

__all__ = [
    "ApiSupport",
    "ApplicationVersions",
    "BrokerVersions",
    "ClusterView",
    "api_key_of",
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
    if isinstance(api, bool):
        raise TypeError("an API is a name or an integer key, not a bool")
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
    ``"configured"`` (given by the application).  ``error`` is set when
    negotiation with the broker failed; such a broker advertises nothing and is
    ignored (lenient) or blocks everything (strict) in a :class:`ClusterView`.
    ``handshake`` lists the steps of the handshake ladder that led here.
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

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def label(self) -> str:
        """How messages name this broker: ``broker 2 (10.0.0.5:9092)``."""
        return f"broker {self.node_id} ({self.address})"

    @property
    def failed(self) -> bool:
        """True when negotiation with this broker failed."""
        return self.error is not None

    def range_for(self, api: ApiRef) -> VersionRange | None:
        """The range the broker advertises for ``api``, or ``None`` when it lacks it."""
        return self.apis.get(api_key_of(api))

    def finalized_level(self, feature: str) -> int | None:
        """The finalized level of a KIP-584 feature (its max level), or ``None``."""
        rng = self.finalized_features.get(feature)
        return None if rng is None else rng.max


def _normalise_limits(
    catalog: Catalog, values: Mapping[ApiRef, int] | None, what: str
) -> dict[int, int]:
    result: dict[int, int] = {}
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
            low = max(info.min_version, floors.get(info.key, info.min_version))
            high = min(info.max_version, caps.get(info.key, info.max_version))
            if low > high:
                raise ConfigError(
                    f"{info.name}: versions narrowed to {low}-{high}, which is empty "
                    f"(kclient speaks {info.min_version}-{info.max_version}); "
                    "fix max_versions/min_versions"
                )
            apis[info.key] = VersionRange(low, high)
        for key in set(caps) | set(floors):
            if key not in apis:
                raise ConfigError(f"max_versions/min_versions name API key {key}, which "
                                  "kclient does not know; remove it")
        avoid: dict[int, frozenset[int]] = {}
        for api, versions in (avoid_versions or {}).items():
            try:
                key = api_key_of(api, cat)
            except UnknownMessageError as exc:
                raise ConfigError(f"avoid_versions: {exc}") from None
            chosen = frozenset(int(v) for v in versions)
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

    def describe(self, key: int) -> str:
        """The application's range in words, e.g. ``3-11 (avoiding 9)``."""
        rng = self.apis.get(key)
        if rng is None:
            return "none (kclient does not know this API)"
        avoided = sorted(v for v in self.avoided(key) if v in rng)
        extra = f" (avoiding {', '.join(map(str, avoided))})" if avoided else ""
        return f"{rng}{extra}"


def _default_application() -> ApplicationVersions:
    return ApplicationVersions.from_catalog()


@attrs.frozen
class ApiSupport:
    """Cluster-wide support of one API.

    ``brokers`` maps each broker taking part (node id) to the range it
    advertises, ``None`` when it lacks the API.  ``cluster`` is the intersection
    of those ranges (``None`` unless every broker has the API and they overlap);
    ``usable`` is ``cluster`` intersected with the application's range and
    ``version`` the version to send.  ``blocking`` names the brokers that make the
    API unusable, ``reason`` says why in words.
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

    @property
    def on_every_broker(self) -> bool:
        """True when every broker taking part advertises the API."""
        return bool(self.brokers) and all(r is not None for r in self.brokers.values())

    @property
    def bounds(self) -> tuple[int, int] | None:
        """KIP-35's (max of mins, min of maxes), even when empty; ``None`` if a broker lacks it."""
        if not self.on_every_broker:
            return None
        ranges = [r for r in self.brokers.values() if r is not None]
        return max(r.min for r in ranges), min(r.max for r in ranges)


def _offers(broker: BrokerVersions, rng: VersionRange | None) -> str:
    return f"broker {broker.node_id} offers {rng}" if rng is not None else (
        f"broker {broker.node_id} lacks it"
    )


@attrs.frozen
class ClusterView:
    """The brokers of one cluster and the application, with KIP-35 semantics.

    In lenient mode (the default) brokers whose negotiation failed are ignored
    and listed in :attr:`failed_brokers`; in strict mode they make every API
    unusable.
    """

    brokers: tuple[BrokerVersions, ...] = attrs.field(converter=_brokers)
    application: ApplicationVersions = attrs.field(factory=_default_application)
    strict: bool = False
    name: str | None = None

    def __attrs_post_init__(self) -> None:
        seen: set[int] = set()
        for broker in self.brokers:
            if broker.node_id in seen:
                raise ConfigError(
                    f"broker id {broker.node_id} appears twice in cluster {self.name or ''}"
                    .rstrip() + "; each broker must appear once"
                )
            seen.add(broker.node_id)

    # -- brokers ---------------------------------------------------------------
    @property
    def live_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers whose negotiation succeeded."""
        return tuple(b for b in self.brokers if b.error is None)

    @property
    def failed_brokers(self) -> tuple[BrokerVersions, ...]:
        """Brokers whose negotiation failed."""
        return tuple(b for b in self.brokers if b.error is not None)

    def broker(self, node_id: int) -> BrokerVersions:
        """The broker with ``node_id``; :class:`ConfigError` when it is not in the view."""
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        known = ", ".join(str(b.node_id) for b in self.brokers) or "none"
        raise ConfigError(f"broker {node_id} is not in this cluster view (brokers: {known})")

    def with_broker(self, broker: BrokerVersions) -> ClusterView:
        """A new view where ``broker`` is added, or replaces the one with its id."""
        others = [b for b in self.brokers if b.node_id != broker.node_id]
        ordered = sorted([*others, broker], key=lambda b: b.node_id)
        return attrs.evolve(self, brokers=tuple(ordered))

    def without_broker(self, node_id: int) -> ClusterView:
        """A new view without the broker ``node_id``."""
        return attrs.evolve(self, brokers=tuple(b for b in self.brokers if b.node_id != node_id))

    # -- APIs ------------------------------------------------------------------
    def api_keys(self) -> list[int]:
        """Every key the application or a live broker knows, ascending."""
        keys = set(self.application.apis)
        for broker in self.live_brokers:
            keys.update(broker.apis)
        return sorted(keys)

    def api_support(self, api: ApiRef) -> ApiSupport:
        """Cluster-wide support of ``api`` (name or key) with reasons."""
        key = api_key_of(api, self.application.catalog)
        app = self.application.apis.get(key)
        name = self.application.name_of(key)
        live = self.live_brokers
        per_broker = {b.node_id: b.apis.get(key) for b in live}
        cluster = intersect_all(per_broker.values()) if live else None
        usable = cluster.intersection(app) if cluster is not None and app is not None else None
        version = highest_allowed(usable, self.application.avoided(key))
        blocking: list[int] = []
        reason: str | None = None
        failed = self.failed_brokers
        if self.strict and failed:
            blocking = [b.node_id for b in failed]
            detail = "; ".join(f"{b.label}: {b.error}" for b in failed)
            reason = f"negotiation failed with {len(failed)} broker(s) (strict mode): {detail}"
            usable, version = None, None
        elif not live:
            reason = "no broker answered ApiVersions"
        elif app is None:
            reason = f"the application does not speak {name}"
        elif version is None:
            blocking = self._blocking(key, app)
            reason = self._explain(key, app, usable)
        return ApiSupport(
            key=key,
            name=name,
            application=app,
            brokers=per_broker,
            cluster=cluster,
            usable=usable,
            version=version,
            blocking=tuple(blocking),
            reason=reason,
        )

    def api_ranges(self) -> dict[int, ApiSupport]:
        """:meth:`api_support` for every key the application or any live broker knows."""
        return {key: self.api_support(key) for key in self.api_keys()}

    def _blocking(self, key: int, app: VersionRange) -> list[int]:
        blocking = []
        for broker in self.live_brokers:
            rng = broker.apis.get(key)
            if rng is None or not rng.overlaps(app):
                blocking.append(broker.node_id)
        if not blocking:
            # Every broker overlaps the application but not one another: the
            # brokers at the extremes are to blame.
            ranges = {b.node_id: b.apis[key] for b in self.live_brokers}
            low = min(r.max for r in ranges.values())
            high = max(r.min for r in ranges.values())
            blocking = [n for n, r in ranges.items() if r.max == low or r.min == high]
        return blocking

    def _explain(self, key: int, app: VersionRange, usable: VersionRange | None) -> str:
        name = self.application.name_of(key)
        wanted = self.application.describe(key)
        if usable is not None:
            return (f"{name}: every usable version ({usable}) is avoided by the application "
                    f"(application speaks {wanted})")
        parts = [f"{_offers(b, b.apis.get(key))}" for b in self.live_brokers
                 if b.node_id in self._blocking(key, app)]
        return f"{name}: application speaks {wanted}; " + "; ".join(parts)

    def usable_range(self, api: ApiRef, broker: int | BrokerVersions | None = None
                     ) -> VersionRange | None:
        """The usable range of ``api`` cluster-wide, or with one broker."""
        key = api_key_of(api, self.application.catalog)
        if broker is None:
            return self.api_support(key).usable
        target = self._target(broker)
        app = self.application.apis.get(key)
        rng = target.apis.get(key)
        if app is None or rng is None:
            return None
        return app.intersection(rng)

    def _target(self, broker: int | BrokerVersions) -> BrokerVersions:
        return broker if isinstance(broker, BrokerVersions) else self.broker(broker)

    def version_for(self, api: ApiRef, broker: int | BrokerVersions | None = None) -> int:
        """The version of ``api`` to send: cluster-wide, or to one broker.

        Raises :class:`~kclient.errors.UnsupportedVersionError` naming the
        application's range and the brokers' ranges when no version is usable.
        """
        key = api_key_of(api, self.application.catalog)
        name = self.application.name_of(key)
        wanted = self.application.describe(key)
        if broker is None:
            support = self.api_support(key)
            if support.version is not None:
                return support.version
            cluster = self.name or "(unnamed)"
            if (self.strict and self.failed_brokers) or not self.live_brokers or (
                support.application is None
            ):
                detail = str(support.reason)
            else:
                offers = "; ".join(_offers(b, b.apis.get(key)) for b in self.live_brokers)
                blockers = ", ".join(str(n) for n in support.blocking)
                detail = f"application speaks {wanted}; {offers}"
                if support.usable is not None:
                    detail += f"; every usable version ({support.usable}) is avoided"
                else:
                    detail += f"; blocked by broker(s) {blockers}"
            raise UnsupportedVersionError(
                f"no usable version of {name} (key {key}) in cluster {cluster}: {detail}. "
                "Upgrade the blocking broker(s) or change the application's version settings"
            )
        target = self._target(broker)
        if target.error is not None:
            raise UnsupportedVersionError(
                f"no usable version of {name} with {target.label}: negotiation failed "
                f"({target.error}); reconnect to retry"
            )
        usable = self.usable_range(key, target)
        version = highest_allowed(usable, self.application.avoided(key))
        if version is None:
            raise UnsupportedVersionError(
                f"no usable version of {name} (key {key}) with {target.label}: application "
                f"speaks {wanted}; {_offers(target, target.apis.get(key))}"
            )
        return version

    # -- features --------------------------------------------------------------
    def evaluate(self, features: FeatureSet | None = None) -> FeatureReport:
        """Evaluate named features (the default features.yaml when omitted)."""
        from kclient.negotiation.features import evaluate_features, load_features

        return evaluate_features(self, features if features is not None else load_features())

