"""Judging named features against a cluster view: available, unavailable or unknown.

An API requirement holds when the requirement's range, the application's range
and every counted broker's range share a version (the highest such version,
less the ones the application avoids, is the one to use).  A feature-level
requirement holds when every counted broker reports the feature finalized at a
level within the bounds.  Which brokers count, and when silence makes a verdict
unknown, is the view's rule (:class:`~kclient.negotiation.model.ClusterView`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from kclient.negotiation.features import (
    ApiRequirement,
    Feature,
    FeatureSet,
    LevelRequirement,
    Requirement,
    unknown_feature,
)
from kclient.negotiation.judge import judge_api, removal_note
from kclient.negotiation.verdict import (
    AT_LEVEL,
    BROKER_NAME,
    NO_ALTERNATIVE,
    NO_BROKER,
    NOT_FINALIZED,
    Verdict,
    level_fix_text,
    outside_application,
)

if TYPE_CHECKING:
    from kclient.negotiation.model import BrokerVersions, ClusterView

__all__ = [
    "FeatureReport",
    "FeatureResult",
    "RequirementCheck",
    "check_level",
    "evaluate_features",
    "explain_feature",
    "removal_note",
]


@attrs.frozen
class RequirementCheck:
    """Whether one requirement holds for a set of brokers, and why not."""

    requirement: Requirement
    ok: bool
    version: int | None = None
    blocking: tuple[int, ...] = ()
    reason: str | None = None


@attrs.frozen
class FeatureResult:
    """The verdict on one feature for a cluster view.

    ``state`` is available, unavailable or unknown
    (:class:`~kclient.negotiation.verdict.Verdict`).  ``brokers`` says, per
    broker id, whether the feature is usable with that broker alone (``False``
    for a broker that has never answered); ``versions`` gives, for an available
    feature, the version to use for each of its APIs (the highest in the
    overlap); ``reasons`` explains any other state, ``blocking`` names the
    brokers in the way of an unavailable one, ``unknown`` the brokers whose
    silence makes it unknown, ``stale`` the unreachable brokers counted with
    their last answer and ``ignored`` the silent brokers a lenient view left out.
    """

    name: str
    state: Verdict
    brokers: Mapping[int, bool] = attrs.field(hash=False)
    versions: Mapping[str, int] = attrs.field(hash=False)
    reasons: tuple[str, ...] = ()
    blocking: tuple[int, ...] = ()
    unknown: tuple[int, ...] = ()
    stale: tuple[int, ...] = ()
    ignored: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    feature: Feature | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def available(self) -> bool:
        """True only when the feature is usable on every broker that matters."""
        return self.state is Verdict.AVAILABLE


@attrs.frozen
class FeatureReport:
    """Every feature of a :class:`FeatureSet` evaluated against one cluster view."""

    results: tuple[FeatureResult, ...]
    cluster: str | None = None

    def __iter__(self) -> Iterator[FeatureResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def get(self, name: str) -> FeatureResult | None:
        """The result for ``name`` (any case), or ``None``."""
        wanted = name.lower()
        return next((r for r in self.results if r.name.lower() == wanted), None)

    def __getitem__(self, name: str) -> FeatureResult:
        result = self.get(name)
        if result is None:
            raise unknown_feature(name, [r.name for r in self.results])
        return result

    def is_available(self, name: str) -> bool:
        """True when the feature is usable cluster-wide (unknown counts as no)."""
        return self[name].available

    def available_names(self) -> list[str]:
        """Names of the features usable cluster-wide, in file order."""
        return [r.name for r in self.results if r.available]

    def names_in(self, state: Verdict) -> list[str]:
        """Names of the features in ``state``, in file order."""
        return [r.name for r in self.results if r.state is state]


def explain_feature(result: FeatureResult) -> str:
    """Why a feature is or is not usable, in one paragraph (the wording of ``explain``)."""
    notes = "".join(f" [{note}]" for note in result.notes)
    if result.available:
        uses = ", ".join(f"{api} v{v}" for api, v in result.versions.items())
        return f"{result.name}: available" + (f" (uses {uses})" if uses else "") + notes
    reasons = "; ".join(result.reasons) or "no reason recorded"
    if result.state is Verdict.UNKNOWN:
        return f"{result.name}: unknown: {reasons}{notes}"
    blocking = ""
    if result.blocking:
        blocking = " [blocking broker(s): " + ", ".join(map(str, result.blocking)) + "]"
    return f"{result.name}: not available: {reasons}{blocking}{notes}"


def _check_api(view: ClusterView, brokers: Sequence[BrokerVersions], req: ApiRequirement
               ) -> RequirementCheck:
    app = view.application.apis.get(req.key)
    wanted = None if app is None else req.range.intersection(app)
    if wanted is None:
        app_text = view.application.describe(req.key)
        return RequirementCheck(req, False, reason=outside_application(req.describe(),
                                                                       app_text))
    judged = judge_api(brokers, req.key, req.name, wanted, view.application.avoided(req.key),
                       req.describe)
    return RequirementCheck(req, judged.ok, judged.version, judged.blocking, judged.reason)


def check_level(brokers: Sequence[BrokerVersions], req: LevelRequirement) -> RequirementCheck:
    """Whether every broker finalized KIP-584 feature ``req.feature`` at a level ``req``
    accepts; the reason names each broker below it and how to finalize the level."""
    blocking = [b for b in brokers if not req.accepts(b.finalized_level(req.feature))]
    if not blocking:
        return RequirementCheck(req, True)
    parts = []
    below = False
    for broker in blocking:
        level = broker.finalized_level(req.feature)
        name = BROKER_NAME % broker.node_id
        parts.append(f"{name}{NOT_FINALIZED}" if level is None else f"{name}{AT_LEVEL}{level}")
        below = below or level is None or level < req.min
    if below:
        # A broker that reports supported ranges without the level cannot be raised to it.
        unable = [b.node_id for b in blocking if b.supported_features
                  and req.min not in b.supported_features.get(req.feature, ())]
        parts.append(level_fix_text(req.feature, req.min, unable))
    return RequirementCheck(req, False, blocking=tuple(b.node_id for b in blocking),
                            reason=f"{req.describe()}; {'; '.join(parts)}")


def _check(view: ClusterView, brokers: Sequence[BrokerVersions], req: Requirement
           ) -> RequirementCheck:
    if isinstance(req, ApiRequirement):
        return _check_api(view, brokers, req)
    return check_level(brokers, req)


def _evaluate_on(view: ClusterView, brokers: Sequence[BrokerVersions], feature: Feature
                 ) -> tuple[bool, dict[str, int], list[str], list[int]]:
    # With no brokers only what the application itself rules out fails.
    versions: dict[str, int] = {}
    reasons: list[str] = []
    blocking: set[int] = set()

    def note(check: RequirementCheck) -> None:
        if check.ok:
            if check.version is not None and isinstance(check.requirement, ApiRequirement):
                versions[check.requirement.name] = check.version
        else:
            reasons.append(str(check.reason))
            blocking.update(check.blocking)

    for req in feature.requires:
        note(_check(view, brokers, req))
    if feature.any_of:
        alternatives = [[_check(view, brokers, r) for r in alt] for alt in feature.any_of]
        chosen = next((alt for alt in alternatives if all(c.ok for c in alt)), None)
        if chosen is not None:
            for check in chosen:
                note(check)
        else:
            texts = []
            for alt in alternatives:
                texts.append("(" + "; ".join(str(c.reason) for c in alt if not c.ok) + ")")
                for check in alt:
                    blocking.update(check.blocking)
            reasons.append(NO_ALTERNATIVE + " or ".join(texts))
    available = not reasons
    return available, (versions if available else {}), reasons, sorted(blocking)


def evaluate_features(view: ClusterView, features: FeatureSet | Iterable[Feature],
                      now: datetime | None = None, *,
                      alone: MutableMapping[Hashable, bool] | None = None) -> FeatureReport:
    """Evaluate every feature against ``view``, cluster-wide and per broker.

    Brokers whose answer counts (answered and stale ones) decide between
    available and unavailable; when they allow the feature but a listed broker
    has never answered (strict views), the verdict is unknown.  ``now`` lets the
    notes on stale brokers say how old their last answer is.

    ``alone``: a dict kept by the caller between calls (for example over many
    views that share brokers' answers), where whether a feature is usable with
    one broker alone is remembered by the application, the feature and the
    broker's answer (its ranges and finalized levels), so that each is judged
    once.  The caller bounds its size.
    """
    results: list[FeatureResult] = []
    known = view.known_brokers
    unknown_reason = view.unknown_reason()
    unknown = tuple(b.node_id for b in view.unknown_brokers) if unknown_reason else ()
    stale = tuple(b.node_id for b in view.stale_brokers)
    ignored = tuple(b.node_id for b in view.ignored_brokers)
    notes = view.stale_notes(now)
    if ignored:
        notes = (*notes, "lenient mode: ignored broker(s) that never answered: "
                 + ", ".join(b.label for b in view.ignored_brokers))
    # A broker's own verdict depends only on what it advertises: judge each
    # distinct answer once, however many brokers share it (a cluster's brokers
    # mostly run one or two releases).
    kinds: list[int | None] = []
    alike: dict[tuple[frozenset[Any], frozenset[Any]], int] = {}
    samples: list[BrokerVersions] = []
    answers: list[tuple[frozenset[Any], frozenset[Any]]] = []
    for broker in view.brokers:
        if not broker.known:
            kinds.append(None)
            continue
        answer = (frozenset(broker.apis.items()), frozenset(broker.finalized_features.items()))
        kind = alike.setdefault(answer, len(samples))
        if kind == len(samples):
            samples.append(broker)
            answers.append(answer)
        kinds.append(kind)
    for feature in features:
        if alone is None:
            usable = [_evaluate_on(view, [sample], feature)[0] for sample in samples]
        else:
            usable = []
            for sample, answer in zip(samples, answers, strict=True):
                asked = (view.application, feature, answer)
                found = alone.get(asked)
                if found is None:
                    found = alone[asked] = _evaluate_on(view, [sample], feature)[0]
                usable.append(found)
        per_broker: dict[int, bool] = {
            broker.node_id: kind is not None and usable[kind]
            for broker, kind in zip(view.brokers, kinds, strict=True)}
        ok, versions, reasons_list, blocking = _evaluate_on(view, known, feature)
        # As an API's verdict (ClusterView.api_support): nothing rules it out but
        # silent brokers, or no broker's answer counts at all, is unknown.
        if ok and (unknown or not known):
            state, versions = Verdict.UNKNOWN, {}
            reasons_list = [unknown_reason or NO_BROKER]
        elif ok:
            state = Verdict.AVAILABLE
        else:
            state = Verdict.UNAVAILABLE
        results.append(FeatureResult(
            feature.name, state, per_broker, versions, tuple(reasons_list),
            tuple(blocking) if state is Verdict.UNAVAILABLE else (),
            unknown if state is Verdict.UNKNOWN else (), stale, ignored, notes, feature))
    return FeatureReport(tuple(results), view.name)
