"""What every adapter needs: the cluster's verdicts, its oldest release, codec choice.

Nothing here imports a Kafka library; each adapter module brings its own
library (optionally) and asks this module what the cluster allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from kclient.errors import ConfigError
from kclient.negotiation.clients import ClientProfile, client_feature
from kclient.negotiation.evaluation import FeatureReport, FeatureResult
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import BrokerVersions, ClusterView
from kclient.negotiation.releases import (
    fallback_release,
    guess_release,
    release_number,
    resolve_release,
)
from kclient.negotiation.verdict import BrokerState, Verdict

if TYPE_CHECKING:
    from kclient.negotiation.releases import ReleaseGuess

__all__ = [
    "CODEC_PREFERENCE",
    "AdviceSource",
    "ClusterFacts",
    "ConfigAdvice",
    "OldestRelease",
    "cluster_facts",
    "package_missing",
]

#: Codecs from best to worst: compression ratio and speed together (zstd, then
#: lz4, then snappy), gzip last because it costs the most CPU.
CODEC_PREFERENCE: tuple[str, ...] = ("zstd", "lz4", "snappy", "gzip")
#: The feature of features.yaml a codec needs on every broker (None: every
#: Kafka release since 0.8 has it).
_CODEC_FEATURE: dict[str, str | None] = {"zstd": "ZSTD", "lz4": "LZ4", "snappy": None,
                                         "gzip": None}
#: The client feature of a library profile (kclient.negotiation.clients) behind
#: a feature of features.yaml: a library that does not use it never gets it.
_CLIENT_FEATURE: dict[str, str] = {"IdempotentProducer": "idempotence",
                                   "Transactions": "transactions",
                                   "ConsumerGroupProtocol": "kip848", "ZSTD": "zstd"}


def package_missing(library: str, packages: Mapping[str, str]) -> Callable[[str], str]:
    """Why a Python library cannot use a codec here: the package it needs for the codec
    (``packages``: codec -> distribution) is not installed."""
    def missing(codec: str) -> str:
        package = packages.get(codec)
        if package is None:
            return f"{library} lacks it"
        return (f"the {package} package {library} needs for it is not installed "
                f"(pip install {package})")
    return missing


class _LiveClient(Protocol):
    """What the adapters read from a Client or SyncClient."""

    @property
    def view(self) -> ClusterView: ...

    def report(self) -> FeatureReport: ...


#: A live :class:`~kclient.Client` / :class:`~kclient.SyncClient` or a :class:`ClusterView`.
AdviceSource = _LiveClient | ClusterView


def _settings(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


def _reasons(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


def _warnings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class ConfigAdvice:
    """A configuration fragment for one library, with the reason for every key.

    ``settings`` is what to merge into the library's configuration (a new dict
    each time it is read, so callers may change their copy); ``reasons`` says,
    per key considered, why it is set or why it is left out (keys the cluster
    does not allow yet are in ``reasons`` but not in ``settings``); ``warnings``
    are things to act on (deprecated options, a broker that has not answered).
    """

    library: str
    _settings: Mapping[str, Any] = attrs.field(converter=_settings, alias="settings")
    reasons: Mapping[str, str] = attrs.field(converter=_reasons)
    warnings: tuple[str, ...] = attrs.field(default=(), converter=_warnings)

    @property
    def settings(self) -> dict[str, Any]:
        """The configuration fragment (a fresh copy)."""
        return dict(self._settings)

    def explain(self) -> str:
        """One line per key (``key = value: reason``), then the warnings."""
        lines = []
        for key, reason in self.reasons.items():
            shown = f"{key} = {self._settings[key]!r}" if key in self._settings else (
                f"{key} (not set)")
            lines.append(f"{shown}: {reason}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


@attrs.frozen
class OldestRelease:
    """The release of the cluster's oldest broker, as far as it can be told.

    ``number`` is a release number (``"2.8"``), or ``None`` when it cannot be
    told (a broker that has not answered, or an unknown/custom set of APIs);
    ``reason`` says how it was found or why not; ``fallback`` is True when the
    oldest broker predates ApiVersions and was assumed from the configured
    fallback release.
    """

    number: str | None
    reason: str
    fallback: bool = False

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        """``number`` as integers (``(2, 8)``), or ``None``."""
        return None if self.number is None else _number_tuple(self.number)


def _number_tuple(number: str) -> tuple[int, ...]:
    return tuple(int(part) for part in number.split("."))


def _broker_release(broker: BrokerVersions) -> tuple[str | None, str, bool]:
    """(release number or None, how it was found, from a fallback)."""
    assumed = fallback_release(broker.source)
    if assumed is not None:
        number = release_number(resolve_release(assumed))
        return number, f"{broker.label} predates ApiVersions; assumed {number}", True
    guess: ReleaseGuess = guess_release(broker.apis)
    if guess.kind == "unknown" or guess.low is None:
        return None, f"{broker.label} advertises an unknown/custom set of APIs", False
    # between and at_least: the lower bound is a release the broker is at least.
    number = release_number(guess.low)
    how = {"exact": "is", "between": "is newer than", "at_least": "is at least"}[guess.kind]
    return number, f"{broker.label} {how} {number} (release guess: {guess.text})", False


@attrs.frozen
class ClusterFacts:
    """The cluster as the adapters see it: a view and its feature verdicts.

    With a library ``profile`` the view's application is that library (its
    ranges, from :mod:`kclient.negotiation.clients`), so every verdict says
    what the library itself can do.
    """

    view: ClusterView
    report: FeatureReport
    profile: ClientProfile | None = None

    def verdict(self, feature: str) -> FeatureResult:
        """The verdict on one feature of the report."""
        return self.report[feature]

    def gate(self, feature: str) -> tuple[bool, str]:
        """(use it?, why) for a feature: only an available verdict says yes."""
        result = self.verdict(feature)
        profile = self.profile
        used = _CLIENT_FEATURE.get(feature)
        if profile is not None and used is not None and not profile.uses(used):
            return False, (f"{profile.label} does not use {feature} "
                           f"({profile.features[used].source})")
        if result.state is Verdict.AVAILABLE:
            if profile is not None:
                return True, f"{feature} is available on every broker for {profile.label}"
            return True, f"{feature} is available on every broker"
        detail = "; ".join(result.reasons) or "no detail"
        if profile is not None and used is not None:
            sends = [profile.sends(key) for key in client_feature(used).needs]
            detail += f"; {profile.label} " + ", ".join(sends)
        if result.state is Verdict.UNKNOWN:
            return False, (f"{feature} is unknown ({detail}); not enabled until every broker "
                           "has answered")
        return False, f"{feature} is unavailable ({detail})"

    def notes(self) -> list[str]:
        """Warnings every adapter repeats: silent brokers, stale answers in use."""
        notes = list(self.view.stale_notes())
        unknown = self.view.unknown_reason()
        if unknown is not None:
            notes.insert(0, unknown)
        return notes

    def oldest_release(self) -> OldestRelease:
        """The release of the oldest broker (see :class:`OldestRelease`)."""
        brokers = self.view.brokers
        if not brokers:
            return OldestRelease(None, "no broker is known")
        silent = [b for b in brokers if b.state is BrokerState.UNKNOWN]
        if silent:
            names = ", ".join(b.label for b in silent)
            return OldestRelease(None, f"{names} has not answered ApiVersions, so the oldest "
                                       "release cannot be told")
        found = [_broker_release(b) for b in brokers]
        unknown = [how for number, how, _ in found if number is None]
        if unknown:
            return OldestRelease(None, "; ".join(unknown))
        number, how, fallback = min(found, key=lambda item: _number_tuple(str(item[0])))
        return OldestRelease(number, f"oldest broker: {how}", fallback)

    def choose_codec(self, library: str, has_codec: Callable[[str], bool],
                     missing: Callable[[str], str] | None = None) -> tuple[str, str]:
        """The best codec both the cluster and the library support, and why.

        gzip is the last resort: every Kafka release and every library has it.
        ``missing(codec)`` says why the library cannot use a codec here (a Python
        package that is not installed, say); default: the library lacks it.
        """
        skipped: list[str] = []
        for codec in CODEC_PREFERENCE:
            feature = _CODEC_FEATURE[codec]
            if feature is not None:
                usable, why = self.gate(feature)
                if not usable:
                    skipped.append(f"{codec}: {why}")
                    continue
            if not has_codec(codec):
                skipped.append(f"{codec}: " + (missing(codec) if missing is not None
                                                else f"{library} lacks it"))
                continue
            chosen = f"{codec}: the best codec the cluster and {library} both support"
            return codec, "; ".join([chosen, *(f"not {s}" for s in skipped)])
        raise ConfigError(f"{library} supports none of {', '.join(CODEC_PREFERENCE)}; "
                          "check its installation")

    def producer_gates(self, library: str, has_codec: Callable[[str], bool],
                       settings: dict[str, Any], reasons: dict[str, str],
                       keys: tuple[str, str, str] = ("compression_type", "enable_idempotence",
                                                     "transactional_id"),
                       missing: Callable[[str], str] | None = None) -> None:
        """The producer settings every library gets, added under that library's ``keys``.

        The codec, idempotence and, as a reason only, whether a transactional id
        may be set.  ``keys`` name them as the library does (kafka-python and
        aiokafka by default; librdkafka passes its dotted names); ``missing`` as
        for :meth:`choose_codec`.
        """
        codec_key, idempotence_key, transactional_key = keys
        codec, why = self.choose_codec(library, has_codec, missing)
        settings[codec_key] = codec
        reasons[codec_key] = why
        idempotent, why = self.gate("IdempotentProducer")
        settings[idempotence_key] = idempotent
        reasons[idempotence_key] = why
        transactions, why = self.gate("Transactions")
        reasons[transactional_key] = (("may be set: " if transactions else
                                       "must not be set: ") + why)


def cluster_facts(source: AdviceSource, features: FeatureSet | None = None,
                  profile: ClientProfile | None = None) -> ClusterFacts:
    """The facts of a live client (its own features) or a view (``features`` or the shipped).

    With ``profile`` (a library's client profile) the verdicts are the library's:
    the view's application is replaced by what the library speaks.
    """
    if isinstance(source, ClusterView):
        view = source
        chosen = features or load_features()
    else:
        live = getattr(source, "view", None)
        if not isinstance(live, ClusterView):
            raise ConfigError(f"expected a Client, SyncClient or ClusterView, not "
                              f"{type(source).__name__}")
        view = live
        if features is None and profile is None:
            return ClusterFacts(view, source.report())
        chosen = features or getattr(source, "features", None) or load_features()
    if profile is not None:
        view = attrs.evolve(view, application=profile.application())
    return ClusterFacts(view, view.evaluate(chosen), profile)
