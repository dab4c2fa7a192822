"""The distinct *shapes* of a fleet's views on Spark, and the core's verdicts per shape.

A view's shape (:class:`kclient.fleet.judge.Shape`) is all its verdicts depend
on but the words naming its brokers that never answered: the brokers whose
ranges count (ids, signatures from :mod:`kclient.fleet.signatures`, finalized
feature levels, stale or not) and the ids of the silent ones.  A fleet has
far fewer shapes than views (the synthetic 100,000-broker fleet: 20,000 views,
about 1,300 shapes), so the Spark engine:

* brings the distinct shapes to the driver (:func:`collect_shapes`, one small job);
* asks the core once per shape (:func:`kclient.fleet.judge.judge_shape`, the
  same function as the in-process engine);
* makes small tables of the verdicts (:func:`verdict_tables`): each shape's
  rows by id, and the distinct rows;
* joins them back to the views, where a flagged row takes the view's own
  sentence about its silent brokers
  (:func:`kclient.fleet.negotiate.cluster_api_versions`,
  :func:`kclient.fleet.negotiate.feature_availability`).

The rules keep one home, the core; Spark only moves their results.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kclient.fleet.judge import Shape, ShapeVerdicts, StandIns, judge_shape
from kclient.fleet.signatures import MAX_SIGNATURES, Signatures, too_many
from kclient.fleet.tables import local_table
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["API_COLUMNS", "FEATURE_COLUMNS", "collect_shapes", "shape_from_text",
           "verdict_tables"]


def shape_from_text(text: str) -> Shape:
    """Read the JSON of :func:`kclient.fleet.negotiate.views_of`'s ``shape`` column."""
    value = json.loads(text)
    known = tuple(
        (int(k["broker_id"]), int(k["sig_id"]),
         tuple((str(level["key"]), (int(level["value"][0]), int(level["value"][1])))
               for level in k["levels"]),
         bool(k["stale"]))
        for k in value["known"])
    return Shape(known, tuple(int(b) for b in value["unknown_brokers"]))


def collect_shapes(views: DataFrame) -> list[tuple[str, Shape]]:
    """The distinct shapes of ``views`` (one small job): their text (the join key) and value."""
    rows = views.select("shape").distinct().limit(MAX_SIGNATURES + 1).collect()
    if len(rows) > MAX_SIGNATURES:
        raise too_many("sets of brokers (ids, signatures, feature levels and states)",
                       MAX_SIGNATURES)
    return sorted((str(row["shape"]), shape_from_text(str(row["shape"]))) for row in rows)


_INTS = "array<bigint>"
#: The columns of the distinct API verdict rows (after ``api_row``), as
#: :func:`~kclient.fleet.judge.judge_shape` gives them; ``flagged`` last.
API_COLUMNS = (
    ("api_key", "int"), ("api_name", "string"), ("state", "string"), ("app_min", "int"),
    ("app_max", "int"), ("cluster_min", "int"), ("cluster_max", "int"),
    ("usable_min", "int"), ("usable_max", "int"), ("version", "int"), ("brokers", "bigint"),
    ("brokers_with_api", "int"), ("blocking", _INTS), ("unknown_brokers", _INTS),
    ("stale_brokers", _INTS), ("reason", "string"), ("flagged", "boolean"))
#: The columns of the distinct feature verdict rows (after ``feature_row``).
FEATURE_COLUMNS = (
    ("feature_index", "int"), ("feature", "string"), ("state", "string"),
    ("available", "boolean"), ("versions", "map<string,int>"), ("blocking", _INTS),
    ("unknown_brokers", _INTS), ("stale_brokers", _INTS), ("reasons", "array<string>"),
    ("reason", "string"), ("brokers", "bigint"), ("live_brokers", "bigint"),
    ("known_brokers", "bigint"), ("usable_on", _INTS), ("flagged", "boolean"))


def _schema(key: str, columns: tuple[tuple[str, str], ...]) -> str:
    return ", ".join([f"{key} int", *(f"{name} {kind}" for name, kind in columns)])


def verdict_tables(spark: SparkSession, found: list[tuple[str, Shape]], features: FeatureSet,
                   signatures: Signatures, application: ApplicationVersions
                   ) -> tuple[DataFrame, DataFrame, DataFrame,
                              dict[str, tuple[Shape, ShapeVerdicts]]]:
    """The core's verdicts on every shape, as three small tables, and each shape's verdicts.

    ``shape, shape_id, api_rows, feature_rows``: per shape, its number (its
    place in ``found`` and in the mapping) and the ids of its rows;
    ``api_row, ...`` (:data:`API_COLUMNS`) and ``feature_row, ...``
    (:data:`FEATURE_COLUMNS`): the distinct rows, each kept once.  The
    mapping gives each shape's text its value and verdicts, for the report's
    summaries on the driver (:func:`kclient.fleet.summary.summarise`).
    """
    stand_ins = StandIns([signatures.apis(sig) for sig in range(len(signatures.ranges))])
    api_ids: dict[str, int] = {}
    api_rows: list[tuple[Any, ...]] = []
    feature_ids: dict[str, int] = {}
    feature_rows: list[tuple[Any, ...]] = []
    per_shape: list[tuple[str, int, list[int], list[int]]] = []
    by_shape: dict[str, tuple[Shape, ShapeVerdicts]] = {}
    canonical: dict[Shape, ShapeVerdicts] = {}  # the core's answers, per canonical shape
    # The row ids of each verdicts object met (most shapes share theirs with
    # others, see judge_shape), kept with the object so that its id stays its own.
    numbered: dict[int, tuple[ShapeVerdicts, list[int], list[int]]] = {}

    def row_id(row: tuple[Any, ...], ids: dict[str, int], rows: list[tuple[Any, ...]]) -> int:
        # Rows hold ints, strings, booleans, None, lists and dicts: equal texts
        # are equal rows (equal rows with dicts in another order stay two rows).
        key = repr(row)
        found_id = ids.get(key)
        if found_id is None:
            found_id = ids[key] = len(rows)
            rows.append((found_id, *row))
        return found_id

    for text, shape in found:
        verdicts = judge_shape(shape, features, stand_ins, application, canonical)
        seen = numbered.get(id(verdicts))
        if seen is None:
            apis = [row_id(row, api_ids, api_rows) for row in verdicts.apis]
            feats = []
            for feature in verdicts.features:
                template = list(feature.template)
                template[4] = dict(template[4])  # versions: a map
                feats.append(row_id(tuple(template), feature_ids, feature_rows))
            seen = numbered[id(verdicts)] = (verdicts, apis, feats)
        per_shape.append((text, len(per_shape), seen[1], seen[2]))
        by_shape[text] = (shape, verdicts)
    return (local_table(spark, per_shape, "shape string, shape_id int, api_rows array<int>, "
                        "feature_rows array<int>"),
            local_table(spark, api_rows, _schema("api_row", API_COLUMNS)),
            local_table(spark, feature_rows, _schema("feature_row", FEATURE_COLUMNS)),
            by_shape)
