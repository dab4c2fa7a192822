"""The spec loader: the whole shared corpus loads, and every kind of bad spec is refused.

Each rejection must be a SchemaError naming the file, the JSON path inside it
and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kclient.errors import SchemaError
from kclient.protocol import Registry, parse_spec
from kclient.protocol.schema import (
    MAX_VERSION,
    Versions,
    parse_versions,
    snake_case,
    strip_comments,
)
from tests.conftest import skip_without_shared

from .corpus import SPECS_DIR, corpus_registry

SPEC_FILE = "specs/BrokenRequest.json"


def _spec(fields: list[dict[str, Any]], **top: Any) -> str:
    raw: dict[str, Any] = {"apiKey": 99, "type": "request", "name": "BrokenRequest",
                           "validVersions": "0-3", "flexibleVersions": "2+",
                           "fields": fields}
    raw.update(top)
    return "// a licence header, as in Kafka's files\n" + json.dumps(raw, indent=2)


def _reject(text: str) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        parse_spec(text, SPEC_FILE)
    error = info.value
    assert error.path == SPEC_FILE
    assert SPEC_FILE in str(error) and error.reason in str(error)
    return error


# -- the corpus -------------------------------------------------------------------------


def test_loads_every_spec_of_the_corpus(shared_dir: Path) -> None:
    registry = Registry()
    message = registry.load_directory(shared_dir / "kafka-specs" / "message")
    test_message = registry.load_directory(shared_dir / "kafka-specs" / "test-message")
    assert len(message) == 186
    assert len(test_message) == 4
    assert len(registry) == 190
    kinds = {spec.type for spec in message}
    assert {"request", "response", "header", "data"} <= kinds
    metadata = registry.spec("MetadataResponse")
    assert metadata.api_key == 3 and metadata.versions == range(0, 13)
    assert metadata.flexible == Versions(9, MAX_VERSION)


def test_corpus_details_are_understood(shared_dir: Path) -> None:
    registry = Registry()
    registry.load_directory(shared_dir / "kafka-specs" / "test-message")
    example = registry.spec("SimpleExampleMessage")
    by_attr = {f.attr: f for f in example.root.fields}
    assert by_attr["my_tagged_int_array"].kind == "array"
    assert by_attr["my_tagged_int_array"].element == "int32"
    assert by_attr["my_int16"].tag == 2 and by_attr["my_int16"].default == 123
    assert by_attr["tagged_long"].default == 0xCAFCACAFCACAFCA
    assert by_attr["my_float64"].default == pytest.approx(12.34)
    assert by_attr["my_nullable_string"].default is None
    assert str(by_attr["tagged_uuid"].default) == "1f728a3b-8353-44f6-825a-d1269b7bd6ec"
    # a commonStruct used by two fields resolves to one struct
    assert by_attr["my_common_struct"].struct is by_attr["my_other_common_struct"].struct
    assert by_attr["my_common_struct"].struct is not None
    assert [f.attr for f in by_attr["my_common_struct"].struct.fields] == ["foo", "bar"]
    # a tagged-only field (no "versions") exists in its tagged versions
    assert by_attr["my_int16"].versions == Versions(1, MAX_VERSION)


# -- version strings --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("0+", Versions(0, MAX_VERSION)), ("3-7", Versions(3, 7)), ("5", Versions(5, 5)),
    ("none", Versions.none()),
])
def test_version_strings(text: str, expected: Versions) -> None:
    assert parse_versions(text, SPEC_FILE, "validVersions") == expected


@pytest.mark.parametrize("bad", ["1.0", "-1", "3-", "7-3", "+", "all", "0+1", "", "99999"])
def test_bad_version_strings(bad: str) -> None:
    error = _reject(_spec([{"name": "A", "type": "int32", "versions": bad}]))
    assert error.json_path == "fields[0].versions"
    assert repr(bad) in error.reason


def test_bad_valid_versions_names_top_level_key() -> None:
    error = _reject(_spec([], validVersions="0-x"))
    assert error.json_path == "validVersions"
    assert "bad version string" in error.reason


def test_non_string_version_is_refused() -> None:
    error = _reject(_spec([{"name": "A", "type": "int32", "versions": 3}]))
    assert error.json_path == "fields[0].versions"


# -- structural rejections --------------------------------------------------------------


def test_duplicate_tags_in_one_struct() -> None:
    error = _reject(_spec([
        {"name": "A", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0},
        {"name": "B", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0},
    ]))
    assert error.json_path == "fields[1].tag"
    assert "tag 0" in error.reason and "'A'" in error.reason and "'B'" in error.reason


def test_same_tag_in_different_structs_is_fine() -> None:
    spec = parse_spec(_spec([
        {"name": "A", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0},
        {"name": "Inner", "type": "InnerStruct", "versions": "0+", "fields": [
            {"name": "B", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0},
        ]},
    ]), SPEC_FILE)
    assert spec.structs["InnerStruct"].fields[0].tag == 0


def test_duplicate_tags_in_nested_struct_name_the_nested_path() -> None:
    error = _reject(_spec([
        {"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
            {"name": "A", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 4},
            {"name": "B", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 4},
        ]},
    ]))
    assert error.json_path == "fields[0].fields[1].tag"


def test_tagged_versions_outside_versions() -> None:
    error = _reject(_spec([
        {"name": "A", "type": "int32", "versions": "3+", "taggedVersions": "2+", "tag": 0},
    ]))
    assert error.json_path == "fields[0].taggedVersions"
    assert "outside versions" in error.reason


def test_tagged_versions_outside_flexible_versions() -> None:
    error = _reject(_spec([
        {"name": "A", "type": "int32", "versions": "0+", "taggedVersions": "1+", "tag": 0},
    ]))
    assert error.json_path == "fields[0].taggedVersions"
    assert "flexibleVersions" in error.reason


def test_tag_without_tagged_versions_and_the_reverse() -> None:
    assert _reject(_spec([{"name": "A", "type": "int32", "versions": "2+", "tag": 0}])
                   ).json_path == "fields[0].taggedVersions"
    assert _reject(_spec([{"name": "A", "type": "int32", "versions": "2+",
                           "taggedVersions": "2+"}])).json_path == "fields[0].tag"


@pytest.mark.parametrize("kind", ["int32", "int8", "bool", "float64", "uuid", "uint16"])
def test_nullable_on_a_type_that_cannot_be_null(kind: str) -> None:
    error = _reject(_spec([{"name": "A", "type": kind, "versions": "0+",
                            "nullableVersions": "0+"}]))
    assert error.json_path == "fields[0].nullableVersions"
    assert kind in error.reason and "cannot be nullable" in error.reason


@pytest.mark.parametrize("kind", ["string", "bytes", "records", "[]int32"])
def test_nullable_on_types_that_can_be_null(kind: str) -> None:
    spec = parse_spec(_spec([{"name": "A", "type": kind, "versions": "0+",
                              "nullableVersions": "1+"}]), SPEC_FILE)
    assert spec.root.fields[0].is_nullable(1) and not spec.root.fields[0].is_nullable(0)


@pytest.mark.parametrize("kind", ["int42", "String", "[]int42", "map<string,int>"])
def test_unknown_types(kind: str) -> None:
    error = _reject(_spec([{"name": "A", "type": kind, "versions": "0+"}]))
    assert error.json_path == "fields[0].type"
    assert "unknown type" in error.reason


def test_unknown_struct_reference() -> None:
    error = _reject(_spec([
        {"name": "A", "type": "[]Partition", "versions": "0+"},
    ], commonStructs=[{"name": "Topic", "versions": "0+", "fields": []}]))
    assert error.json_path == "fields[0].type"
    assert "'Partition'" in error.reason


def test_common_struct_reference_resolves() -> None:
    spec = parse_spec(_spec([
        {"name": "A", "type": "[]Topic", "versions": "0+"},
    ], commonStructs=[{"name": "Topic", "versions": "0+",
                       "fields": [{"name": "Name", "type": "string", "versions": "0+"}]}]),
        SPEC_FILE)
    field = spec.root.fields[0]
    assert field.element == "struct" and field.struct is not None
    assert field.struct.name == "Topic"


def test_unknown_top_level_key() -> None:
    error = _reject(_spec([], colour="blue"))
    assert error.json_path == "colour"
    assert "unknown top-level key" in error.reason


def test_unknown_field_key() -> None:
    error = _reject(_spec([{"name": "A", "type": "int32", "versions": "0+",
                            "nulableVersions": "0+"}]))
    assert error.json_path == "fields[0].nulableVersions"
    assert "unknown field key" in error.reason


def test_invalid_json_names_line_and_column() -> None:
    error = _reject('{\n  "name": "BrokenRequest",\n  "type": request\n}')
    assert error.json_path == "line 3 column 11"
    assert "invalid JSON" in error.reason


def test_error_message_reads_file_path_reason() -> None:
    error = _reject(_spec([{"name": "A", "type": "int32", "versions": "x"}]))
    assert str(error) == f"{SPEC_FILE}: at fields[0].versions: {error.reason}"


# -- comments ---------------------------------------------------------------------------


def test_comments_stripped_but_slashes_inside_strings_kept() -> None:
    text = """// Licensed to the Apache Software Foundation
    {
      "apiKey": 99, // trailing comment
      "type": "request",
      "name": "BrokenRequest",
      "about": "see https://kafka.apache.org // not a comment",
      "validVersions": "0+", "flexibleVersions": "none",
      // a whole-line comment with "quotes" in it
      "fields": [
        { "name": "A", "type": "string", "versions": "0+",
          "default": "a\\"//b", "about": "escaped quote then //" }
      ]
    }"""
    spec = parse_spec(text, SPEC_FILE)
    assert spec.about == "see https://kafka.apache.org // not a comment"
    assert spec.root.fields[0].default == 'a"//b'
    assert spec.root.fields[0].about == "escaped quote then //"


def test_strip_comments_keeps_line_structure() -> None:
    assert strip_comments('{"a": 1} // x\n{"b": "//"}') == '{"a": 1} \n{"b": "//"}'


def test_load_directory_rejects_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(SchemaError) as info:
        Registry().load_directory(tmp_path / "absent")
    assert info.value.path == str(tmp_path / "absent")


def test_load_directory_names_the_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "BrokenRequest.json"
    bad.write_text(_spec([{"name": "A", "type": "int32", "versions": "0+", "tag": "x"}]))
    with pytest.raises(SchemaError) as info:
        Registry().load_directory(tmp_path)
    assert info.value.path == str(bad)
    assert info.value.json_path == "fields[0].tag"


# -- attribute names --------------------------------------------------------------------


@pytest.mark.parametrize(("name", "attr"), [
    ("ThrottleTimeMs", "throttle_time_ms"),
    ("ApiKeys", "api_keys"),
    ("ClusterId", "cluster_id"),
    ("ClusterID", "cluster_id"),
    ("IsrNodes", "isr_nodes"),
    ("ZkMigrationReady", "zk_migration_ready"),
    ("KRaftVersion", "kraft_version"),
    ("isKRaftController", "is_kraft_controller"),
    ("HTTPServer", "http_server"),
    ("Int64Value", "int64_value"),
])
def test_snake_case_attribute_names(name: str, attr: str) -> None:
    assert snake_case(name) == attr


def test_corpus_attribute_names_are_identifiers_and_unique_per_struct() -> None:
    skip_without_shared(SPECS_DIR, "every Kafka message spec, to check its field names")
    registry = corpus_registry()
    for spec in registry:
        for struct in (spec.root, *spec.structs.values()):
            attrs = [f.attr for f in struct.fields]
            assert all(a.isidentifier() and a == a.lower() for a in attrs), (spec.name, attrs)
            assert len(set(attrs)) == len(attrs), (spec.name, struct.name)


# -- hostile spec files ------------------------------------------------------------------


def _nested(depth: int) -> list[dict[str, Any]]:
    """Fields of a spec whose structs (arrays of structs) nest ``depth`` levels deep."""
    fields: list[dict[str, Any]] = [{"name": "Leaf", "type": "int32", "versions": "0+"}]
    for level in range(depth, 0, -1):
        fields = [{"name": f"Level{level}", "type": f"[]Level{level}", "versions": "0+",
                   "fields": fields}]
    return fields


def test_structs_nested_to_the_limit_load_and_compile() -> None:
    from kclient.protocol.schema import MAX_STRUCT_DEPTH

    registry = Registry()
    registry.add(parse_spec(_spec(_nested(MAX_STRUCT_DEPTH)), SPEC_FILE))
    for version in (0, 3):
        assert registry.codec("BrokenRequest", version) is not None


def test_structs_nested_beyond_the_limit_are_refused() -> None:
    from kclient.protocol.schema import MAX_STRUCT_DEPTH

    error = _reject(_spec(_nested(MAX_STRUCT_DEPTH + 1)))
    assert f"nest more than {MAX_STRUCT_DEPTH} levels" in error.reason
    error = _reject(_spec(_nested(400)))  # once a RecursionError
    assert "nest more than" in error.reason


@pytest.mark.parametrize("common", [
    [{"name": "A", "versions": "0+", "fields": [{"name": "Self", "type": "A",
                                                 "versions": "0+"}]}],
    [{"name": "A", "versions": "0+", "fields": [{"name": "B", "type": "[]B", "versions": "0+"}]},
     {"name": "B", "versions": "0+", "fields": [{"name": "A", "type": "A", "versions": "0+"}]}],
])
def test_common_structs_containing_themselves_are_refused(common: list[dict[str, Any]]) -> None:
    error = _reject(_spec([{"name": "Top", "type": "A", "versions": "0+"}],
                          commonStructs=common))
    assert "contains itself" in error.reason


def test_json_nested_too_deeply_is_a_schema_error() -> None:
    error = _reject("[" * 100_000 + "]" * 100_000)
    assert error.path == SPEC_FILE
    assert "nested too deeply" in error.reason


def test_a_spec_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "Bad.json"
    path.write_bytes(b'{"name": "\xff\xfe"}')
    with pytest.raises(SchemaError) as info:
        Registry().load_file(path)
    assert info.value.path == str(path)
    assert "not UTF-8" in info.value.reason
