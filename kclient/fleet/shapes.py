"""The distinct *shapes* of a fleet's views, and the core's feature verdicts per shape.

A view's shape is all that a feature check looks at among its brokers whose
ranges count (answered and stale ones): their ids, signatures
(:mod:`kclient.fleet.signatures`) and finalized feature levels.  Views of one
shape get the same verdicts from those brokers, and a fleet has far fewer
shapes than views (the synthetic 100,000-broker fleet: 20,000 views, about a
thousand shapes), so:

* :func:`collect_shapes` brings the distinct shapes to the driver (one small
  job; their signature sets are what :func:`kclient.fleet.signatures.api_table`
  needs too);
* :func:`judge_shapes` runs the core's
  :func:`~kclient.negotiation.evaluate_features` once per shape, over stand-in
  brokers with the real ids, the signature's ranges and the levels (plain
  Python: the pipeline runs it while Spark writes another table);
* :func:`verdict_tables` makes two small tables of that: each shape's result
  for each feature, and the distinct results;
* :func:`kclient.fleet.negotiate.feature_availability` joins them back to the
  views and applies the views' brokers that never answered.

The feature rules keep one home, the core; Spark only moves their results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kclient.fleet.signatures import MAX_SIGNATURES, Signatures, too_many
from kclient.fleet.tables import local_table
from kclient.negotiation.evaluation import evaluate_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.verdict import Verdict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Shape", "ShapeVerdicts", "collect_shapes", "judge_shapes", "known_table",
           "signature_sets", "verdict_tables"]


@attrs.frozen
class Shape:
    """The brokers of a view whose ranges count, as a feature check sees them.

    ``text`` is the view's ``shape`` column as Spark wrote it (JSON: the join
    key back to the views); ``brokers`` holds ``(broker id, signature id)`` by
    broker id and ``levels`` each broker's finalized feature levels.
    """

    text: str
    brokers: tuple[tuple[int, int], ...]
    levels: Mapping[int, Mapping[str, VersionRange]] = attrs.field(hash=False)

    @classmethod
    def from_text(cls, text: str) -> Shape:
        """Read the JSON of :func:`kclient.fleet.negotiate.views_of`'s ``shape`` column."""
        value = json.loads(text)
        brokers = tuple((int(k["broker_id"]), int(k["sig_id"])) for k in value["known"])
        levels = {int(entry["broker_id"]): {level["key"]: VersionRange(*level["value"])
                                            for level in entry["levels"]}
                  for entry in value["levels"]}
        return cls(text, brokers, levels)

    @property
    def sigset(self) -> tuple[int, ...]:
        """The distinct signatures of the brokers, sorted (a view's ``sigset``)."""
        return tuple(sorted({sig for _broker, sig in self.brokers}))


def collect_shapes(views: DataFrame) -> list[Shape]:
    """The distinct shapes of ``views`` (one small job), in a stable order."""
    rows = views.select("shape").distinct().limit(MAX_SIGNATURES + 1).collect()
    if len(rows) > MAX_SIGNATURES:
        raise too_many("sets of answering brokers (ids, signatures and feature levels)",
                       MAX_SIGNATURES)
    return sorted((Shape.from_text(row["shape"]) for row in rows), key=lambda s: s.text)


def signature_sets(shapes: list[Shape]) -> list[tuple[int, ...]]:
    """The distinct signature sets of ``shapes``, sorted."""
    return sorted({shape.sigset for shape in shapes})


def known_table(spark: SparkSession, shapes: list[Shape]) -> DataFrame:
    """``known, sigset``: the distinct lists of brokers whose ranges count, in ``shapes``.

    ``known`` is as :func:`kclient.fleet.negotiate.views_of` builds it (the
    join key back to the views); ``sigset`` its sorted distinct signatures.
    """
    lists = sorted({shape.brokers for shape in shapes})
    rows = [([{"broker_id": broker, "sig_id": sig} for broker, sig in brokers],
             sorted({sig for _broker, sig in brokers})) for brokers in lists]
    return local_table(spark, rows,
                       "known array<struct<broker_id:bigint,sig_id:int>>, sigset array<int>")


_RESULT_COLUMNS = (
    "result_id int, feature_index int, feature string, holds boolean, "
    "versions map<string,int>, blocking array<bigint>, reasons array<string>, "
    "usable_on array<bigint>"
)


@attrs.frozen
class ShapeVerdicts:
    """The core's feature verdicts for every shape, as rows for :func:`verdict_tables`.

    ``per_shape`` holds ``(shape text, result id of each feature)``; ``results``
    the distinct results (the columns of ``_RESULT_COLUMNS``).
    """

    per_shape: tuple[tuple[str, list[int]], ...]
    results: tuple[tuple[Any, ...], ...]


class _StandIns:
    """Stand-in brokers, one per distinct (id, signature, levels): most shapes share them."""

    def __init__(self, signatures: Signatures) -> None:
        self._signatures = signatures
        self._apis: dict[int, dict[int, VersionRange]] = {}
        self._brokers: dict[tuple[Any, ...], BrokerVersions] = {}

    def broker(self, broker: int, sig: int, levels: Mapping[str, VersionRange]) -> BrokerVersions:
        key = (broker, sig, tuple(sorted(levels.items())))
        found = self._brokers.get(key)
        if found is None:
            apis = self._apis.get(sig)
            if apis is None:
                apis = self._apis[sig] = self._signatures.apis(sig)
            found = self._brokers[key] = BrokerVersions(
                node_id=broker, host="shape", port=1, apis=apis, finalized_features=levels)
        return found


def judge_shapes(shapes: list[Shape], features: FeatureSet, signatures: Signatures,
                 application: ApplicationVersions) -> ShapeVerdicts:
    """Run the core's :func:`~kclient.negotiation.evaluate_features` once per shape.

    Each shape becomes a view of stand-in brokers (the real ids, their
    signature's ranges and their levels, all answered); a result is what
    :class:`~kclient.negotiation.FeatureResult` says there: ``holds`` (available),
    versions, blocking brokers, reasons and the brokers with which the feature
    works alone.  Equal results are kept once.
    """
    stand_ins = _StandIns(signatures)
    ids: dict[tuple[Any, ...], int] = {}
    results: list[tuple[Any, ...]] = []
    per_shape: list[tuple[str, list[int]]] = []
    for shape in shapes:
        view = ClusterView([stand_ins.broker(broker, sig, shape.levels.get(broker, {}))
                            for broker, sig in shape.brokers], application=application)
        chosen: list[int] = []
        for index, result in enumerate(evaluate_features(view, features)):
            row = (index, result.name, result.state is Verdict.AVAILABLE,
                   tuple(sorted(result.versions.items())), result.blocking, result.reasons,
                   tuple(broker for broker, ok in result.brokers.items() if ok))
            found = ids.setdefault(row, len(ids))
            if found == len(results):
                results.append((found, index, result.name, row[2], dict(row[3]),
                                list(row[4]), list(row[5]), list(row[6])))
            chosen.append(found)
        per_shape.append((shape.text, chosen))
    return ShapeVerdicts(tuple(per_shape), tuple(results))


def verdict_tables(spark: SparkSession, verdicts: ShapeVerdicts) -> tuple[DataFrame, DataFrame]:
    """``verdicts`` as two small tables for :func:`kclient.fleet.negotiate.feature_availability`.

    ``shape, results``: per shape, the id of its result for each feature, in
    feature order.  ``result_id, feature_index, feature, holds, versions,
    blocking, reasons, usable_on``: the distinct results.
    """
    return (local_table(spark, verdicts.per_shape, "shape string, results array<int>"),
            local_table(spark, verdicts.results, _RESULT_COLUMNS))
