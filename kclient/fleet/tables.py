"""Small tables built on the driver and broadcast to every task.

The pipeline never re-states a rule of the core: what the core says about a
fleet's distinct inputs (API verdicts per signature set,
:mod:`kclient.fleet.signatures`; feature verdicts per set of answering
brokers, :mod:`kclient.fleet.shapes`; release guesses per signature,
:mod:`kclient.fleet.releases`) is computed on the driver and travels to Spark
as a small table made here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["local_table"]


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
