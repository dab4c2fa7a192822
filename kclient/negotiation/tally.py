"""A cluster view's brokers, counted so that one broker's change costs little (pure).

Every verdict of a view depends on its *known* brokers (answered or stale) only
through their distinct answers (API table, finalized and supported feature
levels: a cluster's brokers mostly send one or two) and, in the texts, through
the ids of the brokers sharing each answer.  :class:`ViewTally` keeps:

* every broker by node id, with its place in the view's order, and the stale
  and unknown ones apart (:class:`~kclient.negotiation.persistent.PMap` values,
  so a changed copy shares everything else);
* the known brokers grouped by answer (:class:`Cohort`), one broker judged for
  all of them;
* per API key, how many cohorts advertise / take each range (:class:`ApiTally`);
  per finalized feature, how many finalized each level: the KIP-35 intersection
  and a feature's requirement need only the distinct ranges and levels and
  whether some cohort lacks them (made at the view's first change: a view
  judged once, like each of the fleet's, reads its cohorts' brokers instead);
* the verdict of every API (:class:`ApiVerdict`: cluster range, version, state,
  worked out when asked) and of every feature of the feature sets asked about.

:meth:`ViewTally.changed` applies one broker's new entry (an answer, a loss, a
stale or never-answered state, a removal): the cohorts change only when the
broker's answer differs from its last one, the tallies only when a cohort
appears or goes, and only then are the APIs and features that depend on them
judged again (all of them when the number of cohorts changes or the last silent
broker answers, which a rolling restart does a few times, not once per broker);
the new tally records which API verdicts may differ, so a diff looks at those.
So one answer costs ``O(log n)`` in the number of brokers (the path copies of the
maps) and the verdicts it touches, not a judgement of every API over every
broker.  The rules themselves are not restated here:
:func:`~kclient.negotiation.judge.usable_version`,
:func:`~kclient.negotiation.ranges.intersect_all`,
:meth:`~kclient.negotiation.features.LevelRequirement.accepts` and
:func:`~kclient.negotiation.evaluation.combine_checks` are called on the tallies.
"""

from __future__ import annotations

from collections.abc import (
    Collection,
    Hashable,
    Iterable,
    Mapping,
    MutableMapping,
    Sequence,
)
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

from kclient.negotiation.deferred import BrokerTable
from kclient.negotiation.evaluation import (
    RequirementCheck,
    cluster_state,
    combine_checks,
    usable_alone,
)
from kclient.negotiation.features import ApiRequirement, Feature, FeatureSet, Requirement
from kclient.negotiation.judge import usable_version
from kclient.negotiation.persistent import PMap
from kclient.negotiation.ranges import VersionRange, intersect_all
from kclient.negotiation.verdict import BrokerState, Verdict

if TYPE_CHECKING:
    from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView

__all__ = ["Answer", "ApiTally", "ApiVerdict", "Cohort", "ViewTally", "answer_of"]

#: Feature sets whose verdicts a view keeps up to date (the client's own, and a few
#: more a caller asks about); older ones are judged afresh when asked again.
FEATURE_SETS_KEPT = 4
#: Remembered "usable with one broker alone" verdicts (feature x distinct answer)
#: per line of views; the cache starts afresh when it holds more.
ALONE_KEPT = 4096


class Answer:
    """What a known broker's verdicts depend on: its API table, its finalized feature
    levels and the levels it supports (they decide what a reason says can be done).

    Equal for brokers that answered alike; hashed once.
    """

    __slots__ = ("_hash", "levels", "supported", "table")

    def __init__(self, broker: BrokerVersions) -> None:
        self.table = tuple((key, rng.min, rng.max) for key, rng in broker.apis.items())
        self.levels = tuple((name, rng.min, rng.max)
                            for name, rng in broker.finalized_features.items())
        self.supported = tuple((name, rng.min, rng.max)
                               for name, rng in broker.supported_features.items())
        self._hash = hash((self.table, self.levels, self.supported))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Answer) and self._hash == other._hash
                                 and self.table == other.table and self.levels == other.levels
                                 and self.supported == other.supported)


def answer_of(broker: BrokerVersions) -> Answer:
    """The broker's :class:`Answer`, made once per broker entry."""
    found: Answer | None = broker._answer
    if found is None:
        found = Answer(broker)
        object.__setattr__(broker, "_answer", found)
    return found


def _share_answer(broker: BrokerVersions, rep: BrokerVersions) -> None:
    """Give ``broker`` its cohort's very :class:`Answer` (equal to its own): looking
    the cohort up by it then compares nothing."""
    object.__setattr__(broker, "_answer", rep._answer)


class Cohort(NamedTuple):
    """Known brokers that answered alike: one of them, and every member's place in the view."""

    rep: BrokerVersions
    ids: PMap[int, int]


def _count(table: dict[Any, int], item: Any, step: int) -> None:
    left = table.get(item, 0) + step
    if left:
        table[item] = left
    else:
        del table[item]


#: Ranges counted by ``(min, max)`` (a tuple hashes at C speed): the range, and its count.
_Counted = dict[tuple[int, int], tuple[VersionRange, int]]


def _count_range(table: _Counted, rng: VersionRange, step: int) -> None:
    bounds = (rng.min, rng.max)
    entry = table.get(bounds)
    left = (0 if entry is None else entry[1]) + step
    if left:
        table[bounds] = (rng if entry is None else entry[0], left)
    else:
        del table[bounds]


class ApiTally(NamedTuple):
    """How many cohorts advertise each range of one API, and how many take each."""

    advertised: _Counted
    takes: _Counted
    advertised_count: int
    takes_count: int

    def counted(self, rep: BrokerVersions, key: int, step: int) -> ApiTally | None:
        """This tally with ``rep``'s cohort added (``step`` 1) or taken out (-1)."""
        advertised, takes = dict(self.advertised), dict(self.takes)
        _count_range(advertised, rep.apis[key], step)
        taken = rep.takes(key)
        if taken is not None:
            _count_range(takes, taken, step)
        count = self.advertised_count + step
        if not count:
            return None
        return ApiTally(advertised, takes, count, self.takes_count + (taken is not None) * step)


_NO_API = ApiTally({}, {}, 0, 0)


class ApiVerdict(NamedTuple):
    """What an API's verdict says on the hot path: the cluster range, what is usable,
    the version to send and the state (the texts come with :class:`ApiSupport`)."""

    cluster: VersionRange | None
    usable: VersionRange | None
    version: int | None
    state: Verdict


class _Judged(NamedTuple):
    """One feature set's verdicts in a view, and which features each input feeds."""

    features: FeatureSet
    by_key: Mapping[int, tuple[int, ...]]
    by_level: Mapping[str, tuple[int, ...]]
    states: tuple[Verdict, ...]


def _index(features: FeatureSet) -> tuple[dict[int, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    by_key: dict[int, list[int]] = {}
    by_level: dict[str, list[int]] = {}
    for index, feature in enumerate(features):
        for req in (*feature.requires, *(r for alt in feature.any_of for r in alt)):
            if isinstance(req, ApiRequirement):
                by_key.setdefault(req.key, []).append(index)
            else:
                by_level.setdefault(req.feature, []).append(index)
    return ({k: tuple(v) for k, v in by_key.items()},
            {k: tuple(v) for k, v in by_level.items()})


class ViewTally:
    """The counted brokers of one view (immutable; :meth:`changed` makes the next one)."""

    __slots__ = ("_alone", "_apis", "_judged", "_keys", "_levels", "_orders", "_reps",
                 "_verdicts", "application", "cohorts", "groups", "members", "ordered",
                 "silence", "since", "stale", "strict", "unknown")

    application: ApplicationVersions
    strict: bool
    #: node id -> (place in the view's order, broker).
    members: PMap[int, tuple[int, BrokerVersions]]
    #: True when the view's order is by node id (a view the client keeps).
    ordered: bool
    stale: PMap[int, int]
    unknown: PMap[int, int]
    #: Strict, and some broker never answered: what holds is unknown, not available.
    silence: bool
    cohorts: PMap[Answer, Cohort]
    #: How many cohorts there are (distinct answers among the known brokers).
    groups: int
    # Per API key and per finalized feature (level -> cohorts), the counts: made for
    # the first change (a view judged once reads its cohorts' brokers instead).
    _apis: Mapping[int, ApiTally] | None
    _levels: Mapping[str, Mapping[int, int]] | None
    _reps: tuple[BrokerVersions, ...] | None
    #: What this tally was made from by :meth:`changed`: the verdicts of the tally it
    #: changed (their cache, by identity) and the API keys whose verdicts may differ
    #: (``None``: any); ``None`` for a tally built from scratch.
    since: tuple[dict[int, ApiVerdict], frozenset[int] | None] | None
    # API verdicts worked out so far (shared with the tally this one changed when no
    # verdict can differ), and the keys judged, once listed.
    _verdicts: dict[int, ApiVerdict]
    _keys: list[int] | None
    _judged: dict[int, _Judged]
    _alone: dict[Hashable, bool]
    #: Per cohort, its members as (place, node id) in the view's order, once named.
    _orders: dict[Answer, tuple[tuple[int, int], ...]]

    @classmethod
    def build(cls, brokers: Sequence[BrokerVersions], application: ApplicationVersions,
              strict: bool) -> ViewTally:
        """The tally of ``brokers`` (in view order; node ids already checked unique)."""
        ordered = all(a.node_id < b.node_id for a, b in pairwise(brokers))
        places = [(b.node_id if ordered else index, b) for index, b in enumerate(brokers)]
        grouped: dict[Answer, tuple[BrokerVersions, list[tuple[int, int]]]] = {}
        for place, broker in places:
            if broker.known:
                rep, ids = grouped.setdefault(answer_of(broker), (broker, []))
                _share_answer(broker, rep)
                ids.append((broker.node_id, place))
        tally = object.__new__(cls)
        tally.application, tally.strict, tally.ordered = application, strict, ordered
        tally.members = PMap((b.node_id, (place, b)) for place, b in places)
        tally.stale = PMap((b.node_id, place) for place, b in places
                           if b.state is BrokerState.STALE)
        tally.unknown = PMap((b.node_id, place) for place, b in places
                             if b.state is BrokerState.UNKNOWN)
        tally.silence = strict and bool(tally.unknown)
        tally.cohorts = PMap((answer, Cohort(rep, PMap(ids)))
                             for answer, (rep, ids) in grouped.items())
        tally.groups = len(tally.cohorts)
        tally._apis = tally._levels = tally._reps = None
        tally._judged, tally._alone, tally._orders = {}, {}, {}
        tally._verdicts, tally._keys, tally.since = {}, None, None
        return tally

    # -- one broker's change ----------------------------------------------------------------
    def changed(self, node_id: int, broker: BrokerVersions | None) -> ViewTally:
        """The tally with ``node_id``'s entry replaced by ``broker`` (added when new, which
        needs an :attr:`ordered` view) or removed (``None``)."""
        entry = self.members.get(node_id)
        before = None if entry is None else entry[1]
        if before is broker:
            return self
        place = node_id if entry is None else entry[0]
        tally = object.__new__(ViewTally)
        tally.application, tally.strict, tally.ordered = self.application, self.strict, self.ordered
        tally._alone = self._alone
        tally.members = (self.members.delete(node_id) if broker is None
                         else self.members.set(node_id, (place, broker)))
        state = None if broker is None else broker.state
        tally.stale = _placed(self.stale, node_id, place, state is BrokerState.STALE)
        tally.unknown = _placed(self.unknown, node_id, place, state is BrokerState.UNKNOWN)
        tally.silence = self.strict and bool(tally.unknown)
        old = answer_of(before) if before is not None and before.known else None
        new = answer_of(broker) if broker is not None and broker.known else None
        cohorts = self.cohorts
        apis, levels = self._tallies()
        keys: set[int] = set()
        names: set[str] = set()
        if old != new:
            if old is not None:
                cohort = cohorts[old]
                ids = cohort.ids.delete(node_id)
                if ids:
                    cohorts = cohorts.set(old, Cohort(cohort.rep, ids))
                else:
                    cohorts = cohorts.delete(old)
                    apis, levels = _tallied(apis, levels, cohort.rep, -1)
                    keys.update(cohort.rep.apis)
                    names.update(cohort.rep.finalized_features)
            if new is not None:
                assert broker is not None
                joined = cohorts.get(new)
                if joined is not None:
                    _share_answer(broker, joined.rep)
                    cohorts = cohorts.set(new, Cohort(joined.rep, joined.ids.set(node_id, place)))
                else:
                    cohorts = cohorts.set(new, Cohort(broker, PMap({node_id: place})))
                    apis, levels = _tallied(apis, levels, broker, 1)
                    keys.update(broker.apis)
                    names.update(broker.finalized_features)
        tally.cohorts, tally._apis, tally._levels = cohorts, apis, levels
        tally.groups = len(cohorts)
        tally._reps = None if cohorts is not self.cohorts else self._reps
        # What every verdict depends on: whether any cohort lacks an API (their number),
        # whether any broker's answer counts, whether silence makes verdicts unknown.
        everything = tally.groups != self.groups or tally._silent() != self._silent()
        if everything or keys:
            tally._verdicts = {} if everything else {
                key: verdict for key, verdict in self._verdicts.items() if key not in keys}
            tally._keys = None
            tally.since = (self._verdicts, None if everything else frozenset(keys))
        else:
            tally._verdicts, tally._keys = self._verdicts, self._keys
            tally.since = (self._verdicts, frozenset())
        tally._orders = {answer: order for answer, order in self._orders.items()
                         if answer != old and answer != new}
        tally._judged = {}
        for slot, judged in self._judged.items():
            tally._judged[slot] = tally._rejudged(judged, None if everything else (keys, names))
        return tally

    # -- verdicts ---------------------------------------------------------------------------
    @property
    def known(self) -> bool:
        """True when some broker's answer counts (answered or stale)."""
        return self.groups > 0

    def _silent(self) -> bool:
        """True when silence makes every verdict that holds unknown (strict, some broker
        never answered) or no broker's answer counts."""
        return self.silence or not self.groups

    def _tallies(self) -> tuple[Mapping[int, ApiTally], Mapping[str, Mapping[int, int]]]:
        """The counts per API key and per finalized feature, made once."""
        apis, levels = self._apis, self._levels
        if apis is None or levels is None:
            apis, levels = self._apis, self._levels = _tallies(self.judged())
        return apis, levels

    def keys(self) -> list[int]:
        """Every API key the application or a known broker knows, ascending."""
        found = self._keys
        if found is None:
            keys = set(self.application.apis)
            if self._apis is not None:
                keys.update(self._apis)
            else:
                for rep in self.judged():
                    keys.update(rep.apis)
            found = self._keys = sorted(keys)
        return found

    def knows(self, key: int) -> bool:
        """True when the application or a known broker knows API ``key``."""
        if key in self.application.apis:
            return True
        if self._apis is not None:
            return key in self._apis
        return any(key in rep.apis for rep in self.judged())

    def _ranges(self, key: int, taken: bool) -> list[VersionRange | None]:
        """The ranges of ``key`` the known brokers take (``taken``) or advertise, each
        distinct one at least once; ``None`` among them when some lack it."""
        if self._apis is None:
            if taken:
                return [rep.takes(key) for rep in self.judged()]
            return [rep.apis.get(key) for rep in self.judged()]
        tally = self._apis.get(key, _NO_API)
        counted, count = ((tally.takes, tally.takes_count) if taken
                          else (tally.advertised, tally.advertised_count))
        ranges: list[VersionRange | None] = [rng for rng, _ in counted.values()]
        if count < self.groups:
            ranges.append(None)
        return ranges

    def _verdict(self, key: int) -> ApiVerdict:
        cluster = intersect_all(self._ranges(key, taken=False)) if self.groups else None
        app = self.application.apis.get(key)
        if app is None:
            return ApiVerdict(cluster, None, None, Verdict.UNAVAILABLE)
        overlap, version = usable_version(app, self._ranges(key, taken=True),
                                          self.application.avoided(key))
        state = cluster_state(version is not None, self.silence, self.known)
        if state is not Verdict.AVAILABLE:
            return ApiVerdict(cluster, None, None, state)
        return ApiVerdict(cluster, overlap, version, state)

    def verdict(self, key: int) -> ApiVerdict:
        """The verdict of API ``key`` (also for a key neither side knows), worked out
        once."""
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = self._verdict(key)
        return found

    def changed_keys(self, before: ViewTally) -> list[int]:
        """The API keys whose verdicts may differ between ``before`` and this tally:
        those :meth:`changed` touched when it made this one from ``before``, else all."""
        since = self.since
        if since is not None and since[0] is before._verdicts:
            touched = since[1]
            if touched is not None:
                return sorted(touched)
        return sorted(set(before.keys()) | set(self.keys()))

    def check(self, req: Requirement) -> RequirementCheck:
        """Whether ``req`` holds for the known brokers (the version, no reason)."""
        if isinstance(req, ApiRequirement):
            app = self.application.apis.get(req.key)
            wanted = None if app is None else req.range.intersection(app)
            if wanted is None:
                return RequirementCheck(req, False)
            _, version = usable_version(wanted, self._ranges(req.key, taken=True),
                                        self.application.avoided(req.key))
            return RequirementCheck(req, version is not None, version)
        if self._levels is None:
            levels = [rep.finalized_level(req.feature) for rep in self.judged()]
        else:
            counted = self._levels.get(req.feature, {})
            levels = list(counted)
            if sum(counted.values()) < self.groups:
                levels.append(None)
        return RequirementCheck(req, all(req.accepts(level) for level in levels))

    def feature_states(self, features: FeatureSet | Iterable[Feature]) -> tuple[Verdict, ...]:
        """The state of each feature of ``features`` (in order); kept up to date through
        :meth:`changed` for a :class:`FeatureSet`."""
        if not isinstance(features, FeatureSet):
            return tuple(self._state_of(feature) for feature in features)
        slot = id(features)
        judged: _Judged | None = self._judged.get(slot)
        if judged is None or judged.features is not features:
            by_key, by_level = _index(features)
            judged = self._rejudged(_Judged(features, by_key, by_level, ()), None)
            if len(self._judged) >= FEATURE_SETS_KEPT:
                del self._judged[next(iter(self._judged))]
            self._judged[slot] = judged
        return judged.states

    def _state_of(self, feature: Feature) -> Verdict:
        usable = combine_checks(feature, self.check)[0]
        return cluster_state(usable, self.silence, self.known)

    def _rejudged(self, judged: _Judged, touched: tuple[set[int], set[str]] | None
                  ) -> _Judged:
        features = judged.features.features
        if touched is None:
            states = tuple(self._state_of(f) for f in features)
            return judged._replace(states=states)
        keys, names = touched
        again = {i for key in keys for i in judged.by_key.get(key, ())}
        again.update(i for name in names for i in judged.by_level.get(name, ()))
        if not again:
            return judged
        changed = list(judged.states)
        for index in again:
            changed[index] = self._state_of(features[index])
        return judged._replace(states=tuple(changed))

    # -- brokers, in the view's order ---------------------------------------------------------
    def brokers(self) -> tuple[BrokerVersions, ...]:
        """Every broker, in the view's order."""
        return tuple(entry[1] for entry in sorted(
            (entry for _, entry in self.members.pairs()), key=_place))

    def in_order(self, ids: PMap[int, int]) -> tuple[BrokerVersions, ...]:
        """The brokers of ``ids`` (node id -> place), in the view's order."""
        return tuple(self.members[node][1] for node, _ in sorted(ids.pairs(), key=_second))

    def judged(self) -> tuple[BrokerVersions, ...]:
        """One known broker per distinct answer: the brokers a verdict is worked out on."""
        found = self._reps
        if found is None:
            found = self._reps = tuple(cohort.rep for cohort in self.cohorts.values())
        return found

    def named(self, judged: Collection[BrokerVersions]) -> list[tuple[int, BrokerVersions]]:
        """Every known broker that the judged ones (see :meth:`judged`) stand for, as
        ``(node id, judged broker)`` in the view's order: who a reason names."""
        found: list[tuple[int, int, BrokerVersions]] = []
        for rep in judged:
            answer = answer_of(rep)
            order = self._orders.get(answer)
            if order is None:
                order = self._orders[answer] = tuple(sorted(
                    (place, node) for node, place in self.cohorts[answer].ids.pairs()))
            found.extend((place, node, rep) for place, node in order)
        if len(judged) > 1:
            found.sort(key=_first)
        return [(node, rep) for _, node, rep in found]

    def per_broker(self, view: ClusterView, feature: Feature,
                   alone: MutableMapping[Hashable, bool] | None = None) -> BrokerTable[bool]:
        """Per broker of ``view``: is ``feature`` usable with that broker alone?

        Judged once per distinct answer; remembered in ``alone`` (keyed by the
        application, the feature and the answer) when given, else along the
        view's line of changes.
        """
        application = self.application

        def build() -> dict[int, bool]:
            usable: dict[Answer, bool] = {}
            for answer, cohort in self.cohorts.pairs():
                asked: Hashable
                if alone is None:
                    remembered: MutableMapping[Hashable, bool] = self._alone
                    asked = (feature, answer)
                    if len(remembered) > ALONE_KEPT:
                        remembered.clear()
                else:
                    remembered, asked = alone, (application, feature, answer)
                found = remembered.get(asked)
                if found is None:
                    found = remembered[asked] = usable_alone(application, cohort.rep, feature)
                usable[answer] = found
            return {broker.node_id: broker.known and usable[answer_of(broker)]
                    for broker in view.brokers}

        return BrokerTable(build)


def _place(entry: tuple[int, Any]) -> int:
    return entry[0]


def _first(item: tuple[int, int, Any]) -> int:
    return item[0]


def _second(item: tuple[int, int]) -> int:
    return item[1]


def _placed(table: PMap[int, int], node_id: int, place: int, member: bool) -> PMap[int, int]:
    if member:
        return table if table.get(node_id) == place else table.set(node_id, place)
    return table.delete(node_id)


def _tallied(apis: Mapping[int, ApiTally], levels: Mapping[str, Mapping[int, int]],
             rep: BrokerVersions, step: int
             ) -> tuple[dict[int, ApiTally], dict[str, dict[int, int]]]:
    """Copies of the tallies with ``rep``'s cohort counted in (``step`` 1) or out (-1)."""
    counted = dict(apis)
    for key in rep.apis:
        tally = counted.get(key, _NO_API).counted(rep, key, step)
        if tally is None:
            del counted[key]
        else:
            counted[key] = tally
    counted_levels = {name: dict(table) for name, table in levels.items()}
    _count_levels(counted_levels, rep, step)
    return counted, counted_levels


def _tallies(reps: Sequence[BrokerVersions]
             ) -> tuple[dict[int, ApiTally], dict[str, dict[int, int]]]:
    """The tallies of these cohorts, counted in place (a tally being built)."""
    advertised: dict[int, _Counted] = {}
    takes: dict[int, _Counted] = {}
    levels: dict[str, dict[int, int]] = {}
    for rep in reps:
        for key, rng in rep.apis.items():
            _count_range(advertised.setdefault(key, {}), rng, 1)
            taken = rep.takes(key)
            if taken is not None:
                _count_range(takes.setdefault(key, {}), taken, 1)
        _count_levels(levels, rep, 1)
    apis = {}
    for key, counted in advertised.items():
        taken_counted = takes.get(key, {})
        apis[key] = ApiTally(counted, taken_counted, _total(counted), _total(taken_counted))
    return apis, levels


def _total(counted: _Counted) -> int:
    total = 0
    for _, count in counted.values():
        total += count
    return total


def _count_levels(levels: dict[str, dict[int, int]], rep: BrokerVersions, step: int) -> None:
    """Count ``rep``'s finalized levels in (``step`` 1) or out (-1), in place."""
    for name in rep.finalized_features:
        level = rep.finalized_level(name)
        assert level is not None
        table = levels.setdefault(name, {})
        _count(table, level, step)
        if not table:
            del levels[name]
