"""Small lookup tables derived from the negotiation core, broadcast to every task.

The pipeline never re-states a rule of the core as data of its own: the API
catalog, the application's ranges and the flattened requirements of a
:class:`~kclient.negotiation.FeatureSet` come from :mod:`kclient.negotiation`
here, on the driver, as plain rows (a few hundred).  Release guesses come
from the core too (:mod:`kclient.fleet.releases`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kclient.negotiation.evaluation import removal_note
from kclient.negotiation.features import ApiRequirement, FeatureSet, LevelRequirement
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.verdict import outside_application

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "RequirementRow",
    "local_table",
    "requirement_rows",
]

#: ``grp`` of a requirement under ``requires`` (alternatives are numbered from 0).
REQUIRED = -1


def _fields(schema: str) -> list[tuple[str, str]]:
    """``(name, type)`` of each column of a DDL schema, split at its top-level commas."""
    fields, depth, start = [], 0, 0
    for index, char in enumerate(schema + ","):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "," and depth == 0:
            name, kind = schema[start:index].split(None, 1)
            fields.append((name, kind.strip()))
            start = index + 1
    return fields


def local_table(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: str) -> DataFrame:
    """A small table built inside the JVM from one JSON text (no Python workers).

    ``schema`` is a DDL schema, ``"name type, name type, ..."``, nested types
    allowed (a map's keys must be strings, as JSON has it); a row gives its
    values in that order, a struct value as a dict.  The rows travel as one
    SQL string literal that ``from_json`` turns into typed rows: unlike
    ``createDataFrame`` over Python objects, nothing starts a Python worker,
    which on a small machine costs a second or more per table.
    """
    parts = _fields(schema)
    names = [name for name, _kind in parts]
    text = json.dumps([dict(zip(names, row, strict=True)) for row in rows],
                      separators=(",", ":"))
    # "$" as a JSON escape: Spark substitutes ${...} variables in SQL text.
    literal = text.replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\\\u0024")
    kind = "array<struct<" + ", ".join(f"{name}:{kind}" for name, kind in parts) + ">>"
    # FAILFAST: a value that does not fit its type is an error, never a null.
    return spark.sql(f"SELECT inline(from_json(col1, '{kind}', map('mode', 'FAILFAST'))) "
                     f"FROM VALUES ('{literal}')")


@attrs.frozen
class RequirementRow:
    """One requirement of one feature, flattened for a join.

    ``grp`` is :data:`REQUIRED` for ``requires`` and the alternative's index for
    ``any_of``; ``ordinal`` orders the requirements of a feature as the core
    checks them.  For an API requirement, ``want_min``/``want_max`` is the
    requirement's range narrowed to the application's (``None`` when they do not
    overlap, and ``static_reason`` then says why, for every cluster alike).
    """

    feature_index: int
    feature: str
    ordinal: int
    grp: int
    kind: str
    describe: str
    api_key: int | None = None
    api_name: str | None = None
    want_min: int | None = None
    want_max: int | None = None
    static_reason: str | None = None
    level_feature: str | None = None
    level_min: int | None = None
    level_max: int | None = None
    removal_note: str | None = None


def requirement_rows(features: FeatureSet, app: ApplicationVersions) -> list[RequirementRow]:
    """Every requirement of every feature, in the order the core evaluates them."""
    rows: list[RequirementRow] = []
    for index, feature in enumerate(features):
        groups = [(REQUIRED, req) for req in feature.requires]
        groups += [(alt_index, req) for alt_index, alt in enumerate(feature.any_of)
                   for req in alt]
        for ordinal, (grp, req) in enumerate(groups):
            head = (index, feature.name, ordinal, grp)
            if isinstance(req, LevelRequirement):
                rows.append(RequirementRow(*head, "level", req.describe(),
                                           level_feature=req.feature, level_min=req.min,
                                           level_max=req.max))
                continue
            assert isinstance(req, ApiRequirement)
            own = app.apis.get(req.key)
            wanted = req.range if own is None else req.range.intersection(own)
            if wanted is None:
                reason = outside_application(req.describe(), app.describe(req.key))
                rows.append(RequirementRow(*head, "api", req.describe(), api_key=req.key,
                                           api_name=req.name, static_reason=reason))
            else:
                rows.append(RequirementRow(*head, "api", req.describe(), api_key=req.key,
                                           api_name=req.name, want_min=wanted.min,
                                           want_max=wanted.max,
                                           removal_note=removal_note(req.key, req.name,
                                                                     wanted.max)))
    return rows
