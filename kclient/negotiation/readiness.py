"""Who breaks when a cluster moves to a Kafka release: the verdict per client software.

For every cluster of an :class:`~kclient.negotiation.inventory.Inventory` and every
client software its brokers saw, :func:`judge_readiness` says *works*, *breaks* or
*unknown* on the target brokers (``brokers``: those of the release the cluster
moves to), with the reason and the evidence, observed first:

* **observed**: request versions the brokers saw the software send
  (``DeprecatedRequestsPerSec``, or a recording) that the target's brokers refuse
  (:meth:`~kclient.negotiation.model.BrokerVersions.takes`: Kafka 4.0 removed
  Produce v0-v2, Fetch v0-v3... KIP-896).  Such a software *breaks*, whatever its
  profile says: observed beats predicted, and where the profile predicted
  otherwise, or does not list the version seen, the disagreement is listed;
* **predicted**: the library and release the software names
  (:func:`~kclient.negotiation.software.identify`) judged by its profile with the
  one verdict function :func:`~kclient.negotiation.clients.check_client`, over the
  features the library uses: *breaks* if one breaks, *unknown* if one is unknown
  (or the release is not profiled), else *works*.

A software that names nothing (``unknown``), or a name kclient's table lacks, is
unidentified: *unknown*, with whatever request versions were seen.  Requests the
brokers counted per version from every client (``RequestsPerSec``) at versions the
target refuses, and that no named software accounts for, are listed as
unattributed: they block the cluster although nobody can be named.

A cluster is *ready* when every software works, *blocked* when one breaks (or
unattributed requests would be refused), *unknown* otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from kclient.errors import ConfigError
from kclient.negotiation.clients import (
    ClientProfile,
    Compat,
    CompatResult,
    check_client,
    client_features,
    client_profile,
    default_features,
)
from kclient.negotiation.inventory import ClusterInventory, Inventory, SoftwareUse
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import (
    release_label,
    removed_in,
    resolve_release,
)
from kclient.negotiation.software import ClientSoftware, Identification, identify
from kclient.protocol.catalog import default_catalog

__all__ = [
    "ClusterReadiness",
    "Evidence",
    "ObservedRequest",
    "Readiness",
    "SoftwareVerdict",
    "judge_cluster",
    "judge_readiness",
    "refused_text",
    "release_cluster",
]


class Readiness(enum.Enum):
    """A cluster's readiness for the target release."""

    READY = "ready"
    BLOCKED = "blocked"
    UNKNOWN = "unknown"


@attrs.frozen
class ObservedRequest:
    """Requests of one API version the brokers saw, and why the target refuses them.

    ``refused`` is ``None`` when the target's brokers take the version.
    """

    api_key: int
    version: int
    count: int
    refused: str | None = None

    @property
    def name(self) -> str:
        """The API's name (``Produce``)."""
        return default_catalog().name_of(self.api_key)

    def text(self) -> str:
        """``Produce v2 (340 requests)``."""
        return f"{self.name} v{self.version} ({self.count:,} request{'s' * (self.count != 1)})"

    def refusal(self) -> str:
        """``Produce v2 (340): removed in Kafka 4.0 (KIP-896)``."""
        return f"{self.name} v{self.version} ({self.count:,}): {self.refused}"

    def unattributed(self) -> str:
        """The sentence for requests no named client software accounts for."""
        return (f"the brokers counted {self.text()} from clients they do not name "
                f"(RequestsPerSec): {self.refused}")


@attrs.frozen
class Evidence:
    """One piece of a verdict's evidence: ``observed`` (what brokers saw) or ``predicted``
    (what the library's profile says)."""

    kind: str
    text: str


@attrs.frozen
class SoftwareVerdict:
    """One client software on one cluster, judged on the target release.

    ``state`` is the verdict (:class:`~kclient.negotiation.clients.Compat`),
    ``reason`` the one line people read; ``evidence`` lists what was observed
    first, then the prediction; ``disagreements`` where observation and profile
    differ; ``observed`` the request versions seen from it (``refused`` set where
    the target refuses them); ``results`` the profile's verdict per feature
    (empty when no profile judged it).
    """

    cluster: str
    software: ClientSoftware
    connections: int | None
    state: Compat
    reason: str
    identification: Identification
    profile: str | None
    evidence: tuple[Evidence, ...]
    disagreements: tuple[str, ...] = ()
    observed: tuple[ObservedRequest, ...] = ()
    results: tuple[CompatResult, ...] = attrs.field(default=(), eq=False)
    predicted: Compat | None = None

    @property
    def refused(self) -> tuple[ObservedRequest, ...]:
        """The observed request versions the target refuses."""
        return tuple(r for r in self.observed if r.refused is not None)

    @property
    def blocks(self) -> bool:
        """True when this software breaks on the target."""
        return self.state is Compat.BREAKS


@attrs.frozen
class ClusterReadiness:
    """A cluster's readiness for ``target``: its client software, blocking ones first."""

    cluster: str
    target: str
    state: Readiness
    software: tuple[SoftwareVerdict, ...]
    unattributed: tuple[ObservedRequest, ...] = ()

    @property
    def blocking(self) -> tuple[SoftwareVerdict, ...]:
        """The software that breaks, observed first, then by connections."""
        return tuple(v for v in self.software if v.blocks)

    @property
    def disagreements(self) -> tuple[str, ...]:
        """Every disagreement between observation and profile, software by software."""
        return tuple(f"{v.software.label}: {d}" for v in self.software for d in v.disagreements)


def release_cluster(value: str, option: str = "--release") -> tuple[str, list[BrokerVersions]]:
    """The cluster ``3.9,4.0`` names: ``("Kafka 3.9 + 4.0", brokers)``, one broker of each
    release (from kclient's release profiles, at the feature levels a freshly formatted
    cluster of the release finalizes), the first playing the bootstrap broker.

    ``option`` names the value in errors (a :class:`~kclient.errors.ConfigError`).
    """
    names = [part.strip() for part in value.split(",") if part.strip()]
    if not names:
        raise ConfigError(f"{option} {value!r}: name a Kafka release, e.g. 4.0")
    brokers = []
    labels = []
    for node, text in enumerate(names, 1):
        try:
            release = resolve_release(text)
        except ConfigError as exc:
            raise ConfigError(f"{option} {text}: {exc}") from None
        brokers.append(BrokerVersions.of_release(release, node, f"kafka-{text}"))
        labels.append(release_label(release))
    return "Kafka " + " + ".join(labels), brokers


def _taken(brokers: Sequence[BrokerVersions], key: int, version: int) -> bool:
    for broker in brokers:
        taken = broker.takes(key)
        if taken is None or version not in taken:
            return False
    return True


def refused_text(brokers: Sequence[BrokerVersions], target: str, key: int, version: int
                 ) -> str | None:
    """Why ``target``'s ``brokers`` refuse ``version`` of API ``key`` (``None``: they take it).

    ``removed in Kafka 4.0 (KIP-896)`` where a release removed it (the release
    data's own words), else what the brokers take.
    """
    if _taken(brokers, key, version):
        return None
    removed = removed_in(key, version)
    if removed is not None:
        return removed
    name = default_catalog().name_of(key)
    ranges = sorted({str(r) for b in brokers if (r := b.takes(key)) is not None})
    takes = f"take {name} v{', v'.join(ranges)}" if ranges else f"do not take {name}"
    return f"{target} brokers {takes}"


def _observed(use: SoftwareUse, brokers: Sequence[BrokerVersions], target: str
              ) -> tuple[ObservedRequest, ...]:
    return tuple(ObservedRequest(key, version, count, refused_text(brokers, target, key, version))
                 for (key, version), count in use.requests.items())


def _observed_evidence(use: SoftwareUse, observed: Sequence[ObservedRequest], target: str
                       ) -> list[Evidence]:
    where = use.seen_in or "the inventory"
    refused = [r for r in observed if r.refused is not None]
    evidence = []
    if refused:
        by_reason: dict[str, list[str]] = {}
        for item in sorted(refused, key=lambda r: -r.count):
            by_reason.setdefault(str(item.refused), []).append(item.text())
        parts = "; ".join(f"{', '.join(texts)}: {why}" for why, texts in by_reason.items())
        evidence.append(Evidence("observed", f"the brokers saw it send {parts} ({where})"))
    taken = [r for r in observed if r.refused is None]
    if taken and not use.complete:
        evidence.append(Evidence("observed", "deprecated versions still taken by "
                                 f"{target}: {', '.join(r.text() for r in taken)} ({where})"))
    elif observed and not refused and use.complete:
        evidence.append(Evidence("observed", f"every request version recorded from it "
                                 f"({len(observed)}) is one {target} takes ({where})"))
    return evidence


def _predict(profile: ClientProfile, brokers: Sequence[BrokerVersions],
             features: Sequence[str] | None) -> tuple[Compat, str, tuple[CompatResult, ...]]:
    results = check_client(profile, brokers, features)
    broken = [r for r in results if r.state is Compat.BREAKS]
    unknown = [r for r in results if r.state is Compat.UNKNOWN]
    if broken:
        return Compat.BREAKS, "; ".join(f"{r.feature}: {r.reason}" for r in broken), results
    if unknown:
        return Compat.UNKNOWN, "; ".join(f"{r.feature}: {r.reason}" for r in unknown), results
    return Compat.WORKS, ", ".join(r.feature for r in results), results


class _Judge:
    """Judges client software on one target, each library release once."""

    def __init__(self, brokers: Sequence[BrokerVersions], target: str,
                 features: Sequence[str] | None) -> None:
        self.brokers = list(brokers)
        self.target = target
        self.features = features
        self._profiles: dict[str, tuple[ClientProfile | None, str | None]] = {}
        self._predicted: dict[tuple[str, tuple[str, ...]],
                              tuple[Compat, str, tuple[CompatResult, ...]]] = {}

    def profile(self, spec: str) -> tuple[ClientProfile | None, str | None]:
        """The profile of ``spec``, or why there is none (not profiled)."""
        found = self._profiles.get(spec)
        if found is None:
            try:
                found = (client_profile(spec), None)
            except ConfigError as exc:  # UnprofiledRelease, or a release no profile reads
                found = (None, str(exc))
            self._profiles[spec] = found
        return found

    def predict(self, spec: str, profile: ClientProfile, use: SoftwareUse
                ) -> tuple[Compat, str, tuple[CompatResult, ...]]:
        features = self.features_of(profile, use)
        key = (spec, features)
        found = self._predicted.get(key)
        if found is None:
            found = self._predicted[key] = _predict(profile, self.brokers, features)
        return found

    def features_of(self, profile: ClientProfile, use: SoftwareUse) -> tuple[str, ...]:
        """The features judged for ``use``: those asked for, else those the library uses
        by default and those an application must choose that the brokers saw it send
        (a ShareFetch recorded: it runs a share consumer)."""
        if self.features is not None:
            return tuple(self.features)
        seen = {key for key, _version in use.requests}
        chosen = tuple(name for name, feature in client_features().items()
                       if feature.opt_in is not None and profile.uses(name)
                       and seen & set(feature.needs))
        return (*default_features(profile), *chosen)

    def software(self, use: SoftwareUse) -> SoftwareVerdict:
        ident = identify(use.software)
        observed = _observed(use, self.brokers, self.target)
        evidence = _observed_evidence(use, observed, self.target)
        refused = [r for r in observed if r.refused is not None]
        profile: ClientProfile | None = None
        results: tuple[CompatResult, ...] = ()
        if ident.spec is None:
            predicted, why = Compat.UNKNOWN, ident.how
            if ident.library is not None:
                why = f"{ident.library}, release unknown: {ident.how}"
        else:
            profile, unprofiled = self.profile(ident.spec)
            if profile is None:
                predicted, why = Compat.UNKNOWN, str(unprofiled)
            else:
                predicted, why, results = self.predict(ident.spec, profile, use)
        label = profile.label if profile is not None else None
        shown = f"the {label} profile" if label else "no profile"
        words = {Compat.WORKS: f"{shown} predicts it works on {self.target} ({why})",
                 Compat.BREAKS: f"{shown} predicts it breaks on {self.target}: {why}",
                 Compat.UNKNOWN: (f"{shown} cannot tell on {self.target}: {why}" if label
                                  else f"unknown: {why}")}
        evidence.append(Evidence("predicted", words[predicted]))
        disagreements = []
        if refused:
            state = Compat.BREAKS
            reason = evidence[0].text
            if profile is not None and predicted is not Compat.BREAKS:
                disagreements.append(
                    f"the {label} profile predicts it {predicted.value} on {self.target}, but "
                    f"the brokers saw it send {', '.join(r.text() for r in refused)}, which "
                    f"{self.target} refuses")
        else:
            state, reason = predicted, evidence[-1].text
        if profile is not None:
            outside = [r for r in observed if r.version not in _sendable(profile, r.api_key)]
            if outside:
                disagreements.append(
                    f"the brokers saw it send {', '.join(r.text() for r in outside)}, which the "
                    f"{label} profile does not list: the name, the profile or the "
                    "identification is wrong")
        return SoftwareVerdict(use.cluster, use.software, use.connections, state, reason, ident,
                               label, tuple(evidence), tuple(disagreements), observed, results,
                               predicted)


def _sendable(profile: ClientProfile, key: int) -> frozenset[int]:
    """Every version of ``key`` some part of the library sends (its roles included)."""
    cells = [profile.apis.get(key), *(role.get(key) for role in profile.roles.values())]
    return frozenset(v for cell in cells if cell is not None for v in cell.versions)


_ORDER = {Compat.BREAKS: 0, Compat.UNKNOWN: 1, Compat.WORKS: 2}


def _unattributed(cluster: ClusterInventory, judge: _Judge) -> tuple[ObservedRequest, ...]:
    attributed: dict[tuple[int, int], int] = {}
    for use in cluster.software:
        for pair, count in use.requests.items():
            attributed[pair] = attributed.get(pair, 0) + count
    left = []
    for (key, version), count in cluster.requests.items():
        why = refused_text(judge.brokers, judge.target, key, version)
        rest = count - attributed.get((key, version), 0)
        if why is not None and rest > 0:
            left.append(ObservedRequest(key, version, rest, why))
    return tuple(sorted(left, key=lambda r: -r.count))


def _judged(cluster: ClusterInventory, judge: _Judge) -> ClusterReadiness:
    verdicts = sorted((judge.software(use) for use in cluster.software), key=lambda v: (
        _ORDER[v.state], not v.refused, -(v.connections or 0), v.software.name,
        v.software.version))
    unattributed = _unattributed(cluster, judge)
    states = {v.state for v in verdicts}
    if Compat.BREAKS in states or unattributed:
        state = Readiness.BLOCKED
    elif Compat.UNKNOWN in states or not verdicts:
        state = Readiness.UNKNOWN
    else:
        state = Readiness.READY
    return ClusterReadiness(cluster.name, judge.target, state, tuple(verdicts), unattributed)


def judge_cluster(cluster: ClusterInventory, brokers: Sequence[BrokerVersions], target: str,
                  features: Sequence[str] | None = None) -> ClusterReadiness:
    """One cluster's readiness for ``target`` (see the module text)."""
    return _judged(cluster, _Judge(brokers, target, features))


def judge_readiness(inventory: Inventory | Sequence[ClusterInventory],
                    brokers: Sequence[BrokerVersions], target: str,
                    features: Sequence[str] | None = None) -> tuple[ClusterReadiness, ...]:
    """Every cluster's readiness for ``target``, whose brokers are ``brokers``.

    ``target`` names the release in the texts (``Kafka 4.0``); ``features``
    narrows the client features judged (default: those each library uses).
    """
    if not brokers:
        raise ConfigError("judge readiness against at least one broker of the target release")
    clusters = inventory.clusters if isinstance(inventory, Inventory) else tuple(inventory)
    judge = _Judge(brokers, target, features)
    return tuple(_judged(cluster, judge) for cluster in clusters)
