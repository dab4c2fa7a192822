"""Small lookup tables built inside the JVM (kclient.fleet.tables.local_table)."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.fleet.tables import local_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]

_SCHEMA = ("name string, n bigint, ids array<int>, "
           "offers array<struct<key:int,value:struct<bmin:int,bmax:int>>>, "
           "levels map<string,array<bigint>>")


def test_rows_come_back_typed_and_text_unchanged(spark: Any) -> None:
    # Quotes, backslashes, a Spark variable reference and non-ASCII text stay as given.
    names = ["plain", "it's", "back\\slash \"quoted\"", "${spark.app.name}", "été ✓", ""]
    rows = [(name, 2**40 + i, [i, i + 1], [{"key": i, "value": {"bmin": 0, "bmax": i}}],
             {"group.version": [0, i]}) for i, name in enumerate(names)]
    table = local_table(spark, rows, _SCHEMA)
    assert [f.simpleString() for f in table.schema.fields] == [
        "name:string", "n:bigint", "ids:array<int>",
        "offers:array<struct<key:int,value:struct<bmin:int,bmax:int>>>",
        "levels:map<string,array<bigint>>"]
    got = [(r["name"], r["n"], list(r["ids"]),
            [{"key": o["key"], "value": o["value"].asDict()} for o in r["offers"]],
            {k: list(v) for k, v in r["levels"].items()}) for r in table.collect()]
    assert got == rows


def test_no_rows_is_an_empty_table_with_the_schema(spark: Any) -> None:
    table = local_table(spark, [], "source string, known boolean")
    assert table.count() == 0
    assert table.columns == ["source", "known"]


def test_a_value_that_does_not_fit_is_an_error_not_a_null(spark: Any) -> None:
    with pytest.raises(Exception, match=r"(?i)malformed|FAILFAST|parse"):
        local_table(spark, [("x", "not a number")], "name string, n int").collect()
