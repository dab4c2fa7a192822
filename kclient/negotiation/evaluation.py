"""Judging named features against a cluster view: available, unavailable or unknown.

An API requirement holds when the requirement's range, the application's range
and every counted broker's range share a version (the highest such version,
less the ones the application avoids, is the one to use).  A feature-level
requirement holds when every counted broker reports the feature finalized at a
level within the bounds.  Which brokers count, and when silence makes a verdict
unknown, is the view's rule (:class:`~kclient.negotiation.model.ClusterView`).
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from kclient.negotiation.deferred import fill_when_read
from kclient.negotiation.features import (
    ApiRequirement,
    Feature,
    FeatureSet,
    LevelRequirement,
    Requirement,
    unknown_feature,
)
from kclient.negotiation.judge import Named, judge_api, named_in_order, removal_note
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
    from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView

__all__ = [
    "Check",
    "FeatureReport",
    "FeatureResult",
    "RequirementCheck",
    "check_level",
    "cluster_state",
    "combine_checks",
    "evaluate_features",
    "explain_feature",
    "removal_note",
    "requirement_checks",
    "usable_alone",
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


class _Pending:
    """A report's results before they are made: the features, how to know the state of
    each cheaply, and how to make a result (reasons and all) when one is read."""

    __slots__ = ("_made", "_make", "_states", "features")

    def __init__(self, features: Sequence[Feature], states: Callable[[], Sequence[Verdict]],
                 make: Callable[[Feature], FeatureResult]) -> None:
        self.features = features
        self._states = states
        self._make = make
        self._made: list[FeatureResult | None] = [None] * len(features)

    def result(self, index: int) -> FeatureResult:
        made = self._made[index]
        if made is None:
            made = self._made[index] = self._make(self.features[index])
        return made

    def every(self) -> tuple[FeatureResult, ...]:
        return tuple(self.result(index) for index in range(len(self.features)))

    def states(self) -> Sequence[Verdict]:
        """Each feature's state: from its result once made, else without making it."""
        made = self._made
        if all(result is not None for result in made):
            return [result.state for result in made if result is not None]
        return self._states()


@attrs.frozen
class FeatureReport:
    """Every feature of a :class:`FeatureSet` evaluated against one cluster view.

    A report of :func:`evaluate_features` makes each result when it is first read
    (the reasons of an unavailable feature name every broker in the way, so they
    are as long as the cluster is large); the names by state come without making
    any.
    """

    results: tuple[FeatureResult, ...]
    cluster: str | None = None
    _pending: _Pending | None = attrs.field(init=False, default=None, eq=False, repr=False)

    @classmethod
    def _deferred(cls, pending: _Pending, cluster: str | None) -> FeatureReport:
        report = object.__new__(cls)
        object.__setattr__(report, "cluster", cluster)
        object.__setattr__(report, "_pending", pending)
        return report

    def __iter__(self) -> Iterator[FeatureResult]:
        return iter(self.results)

    def __len__(self) -> int:
        pending = self._pending
        return len(self.results) if pending is None else len(pending.features)

    def get(self, name: str) -> FeatureResult | None:
        """The result for ``name`` (any case), or ``None`` (also when it is not text)."""
        if not isinstance(name, str):
            return None
        wanted = name.lower()
        pending = self._pending
        if pending is not None:
            return next((pending.result(index) for index, feature in enumerate(pending.features)
                         if feature.name.lower() == wanted), None)
        return next((r for r in self.results if r.name.lower() == wanted), None)

    def __getitem__(self, name: str) -> FeatureResult:
        result = self.get(name)
        if result is None:
            raise unknown_feature(name, self._names())
        return result

    def is_available(self, name: str) -> bool:
        """True when the feature is usable cluster-wide (unknown counts as no)."""
        return self[name].available

    def available_names(self) -> list[str]:
        """Names of the features usable cluster-wide, in file order."""
        return self.names_in(Verdict.AVAILABLE)

    def names_in(self, state: Verdict) -> list[str]:
        """Names of the features in ``state``, in file order."""
        pending = self._pending
        if pending is not None:
            return [feature.name for feature, now in zip(pending.features, pending.states(),
                                                          strict=True) if now is state]
        return [r.name for r in self.results if r.state is state]

    def _names(self) -> list[str]:
        pending = self._pending
        if pending is not None:
            return [feature.name for feature in pending.features]
        return [r.name for r in self.results]


def _every_result(report: FeatureReport) -> tuple[FeatureResult, ...]:
    pending = report._pending
    assert pending is not None
    return pending.every()


# A report of evaluate_features makes its results when first read.
fill_when_read(FeatureReport, "results", _every_result)


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


#: How a requirement is checked against some brokers (see :func:`requirement_checks`).
Check = Callable[[Requirement], RequirementCheck]


def _check_api(application: ApplicationVersions, brokers: Sequence[BrokerVersions],
               req: ApiRequirement, named: Named | None) -> RequirementCheck:
    app = application.apis.get(req.key)
    wanted = None if app is None else req.range.intersection(app)
    if wanted is None:
        app_text = application.describe(req.key)
        return RequirementCheck(req, False, reason=outside_application(req.describe(),
                                                                       app_text))
    judged = judge_api(brokers, req.key, req.name, wanted, application.avoided(req.key),
                       req.describe, named)
    return RequirementCheck(req, judged.ok, judged.version, judged.blocking, judged.reason)


def check_level(brokers: Sequence[BrokerVersions], req: LevelRequirement,
                named: Named | None = None) -> RequirementCheck:
    """Whether every broker finalized KIP-584 feature ``req.feature`` at a level ``req``
    accepts; the reason names each broker below it and how to finalize the level
    (``named`` as for :func:`requirement_checks`)."""
    in_the_way = [b for b in brokers if not req.accepts(b.finalized_level(req.feature))]
    if not in_the_way:
        return RequirementCheck(req, True)
    parts = []
    below = False
    each = (named or named_in_order(brokers))(in_the_way)
    for node, broker in each:
        level = broker.finalized_level(req.feature)
        name = BROKER_NAME % node
        parts.append(f"{name}{NOT_FINALIZED}" if level is None else f"{name}{AT_LEVEL}{level}")
        below = below or level is None or level < req.min
    if below:
        # A broker that reports supported ranges without the level cannot be raised to it.
        unable = [node for node, b in each if b.supported_features
                  and req.min not in b.supported_features.get(req.feature, ())]
        parts.append(level_fix_text(req.feature, req.min, unable))
    return RequirementCheck(req, False, blocking=tuple(node for node, _ in each),
                            reason=f"{req.describe()}; {'; '.join(parts)}")


def requirement_checks(application: ApplicationVersions, brokers: Sequence[BrokerVersions],
                       named: Named | None = None) -> Check:
    """Checking requirements against ``brokers`` for ``application``, with the reasons.

    ``named`` says which brokers each one judged stands for (see
    :data:`~kclient.negotiation.judge.Named`; default: itself).
    """
    def check(req: Requirement) -> RequirementCheck:
        if isinstance(req, ApiRequirement):
            return _check_api(application, brokers, req, named)
        return check_level(brokers, req, named)
    return check


def combine_checks(feature: Feature, check: Check
                   ) -> tuple[bool, dict[str, int], list[str], list[int]]:
    """A feature's verdict from its requirements' checks: usable, versions, reasons, blocking.

    Every requirement must hold and, when the feature lists alternatives, one
    alternative entirely (the first that does gives the versions).  With no
    brokers only what the application itself rules out fails.
    """
    versions: dict[str, int] = {}
    reasons: list[str] = []
    blocking: set[int] = set()

    def note(done: RequirementCheck) -> None:
        if done.ok:
            if done.version is not None and isinstance(done.requirement, ApiRequirement):
                versions[done.requirement.name] = done.version
        else:
            reasons.append(str(done.reason))
            blocking.update(done.blocking)

    for req in feature.requires:
        note(check(req))
    if feature.any_of:
        alternatives = [[check(r) for r in alt] for alt in feature.any_of]
        chosen = next((alt for alt in alternatives if all(c.ok for c in alt)), None)
        if chosen is not None:
            for done in chosen:
                note(done)
        else:
            texts = []
            for alt in alternatives:
                texts.append("(" + "; ".join(str(c.reason) for c in alt if not c.ok) + ")")
                for done in alt:
                    blocking.update(done.blocking)
            reasons.append(NO_ALTERNATIVE + " or ".join(texts))
    available = not reasons
    return available, (versions if available else {}), reasons, sorted(blocking)


def cluster_state(usable: bool, unknown: bool, known: bool) -> Verdict:
    """The verdict of an API or a feature: nothing rules it out but silent brokers
    (``unknown``: a strict view has some), or no broker's answer counts, is unknown."""
    if not usable:
        return Verdict.UNAVAILABLE
    return Verdict.UNKNOWN if unknown or not known else Verdict.AVAILABLE


def evaluate_features(view: ClusterView, features: FeatureSet | Iterable[Feature],
                      now: datetime | None = None, *,
                      alone: MutableMapping[Hashable, bool] | None = None) -> FeatureReport:
    """Evaluate every feature against ``view``, cluster-wide and per broker.

    Brokers whose answer counts (answered and stale ones) decide between
    available and unavailable; when they allow the feature but a listed broker
    has never answered (strict views), the verdict is unknown.  ``now`` lets the
    notes on stale brokers say how old their last answer is.

    The brokers are judged one per distinct answer (a cluster's brokers mostly
    run one or two releases) and the reasons name every broker sharing an answer
    in the way.  Whether a feature is usable with one broker alone
    (:attr:`FeatureResult.brokers`) is worked out when first read.

    ``alone``: a dict kept by the caller between calls (for example over many
    views that share brokers' answers), where whether a feature is usable with
    one broker alone is remembered by the application, the feature and the
    broker's answer (its ranges and finalized levels), so that each is judged
    once.  The caller bounds its size.
    """
    tally = view._state()
    application = view.application
    check = requirement_checks(application, tally.judged(), tally.named)
    unknown_reason = view.unknown_reason()
    unknown = tuple(b.node_id for b in view.unknown_brokers) if unknown_reason else ()
    stale = tuple(b.node_id for b in view.stale_brokers)
    ignored = tuple(b.node_id for b in view.ignored_brokers)
    notes = view.stale_notes(now)
    if ignored:
        notes = (*notes, "lenient mode: ignored broker(s) that never answered: "
                 + ", ".join(b.label for b in view.ignored_brokers))
    known = tally.known

    def make(feature: Feature) -> FeatureResult:
        ok, versions, reasons_list, blocking = combine_checks(feature, check)
        state = cluster_state(ok, bool(unknown), known)
        if state is Verdict.UNKNOWN:
            versions, reasons_list = {}, [unknown_reason or NO_BROKER]
        return FeatureResult(
            feature.name, state, tally.per_broker(view, feature, alone), versions,
            tuple(reasons_list), tuple(blocking) if state is Verdict.UNAVAILABLE else (),
            unknown if state is Verdict.UNKNOWN else (), stale, ignored, notes, feature)

    listed = features.features if isinstance(features, FeatureSet) else tuple(features)
    pending = _Pending(listed, lambda: tally.feature_states(features), make)
    return FeatureReport._deferred(pending, view.name)


def usable_alone(application: ApplicationVersions, broker: BrokerVersions,
                 feature: Feature) -> bool:
    """Whether ``feature`` is usable with ``broker`` alone (its own answer only)."""
    return combine_checks(feature, requirement_checks(application, (broker,)))[0]
