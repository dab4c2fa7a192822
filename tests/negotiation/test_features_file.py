"""Loading features files: the format, every error path, merging over the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from kclient.errors import FeatureFileError
from kclient.negotiation import (
    ApiRequirement,
    LevelRequirement,
    default_features,
    load_features,
    parse_features,
)


def _error(text: str) -> FeatureFileError:
    with pytest.raises(FeatureFileError) as info:
        parse_features(text, "f.yaml")
    return info.value


GOOD = """\
version: 1
features:
  - name: Zstd
    description: zstd compression
    reference: KIP-110
    requires:
      - {api: Produce, min: 7}
      - {api: 1, min: 10, max: 12}
  - name: NewGroups
    requires:
      - {feature: group.version, min: 1}
    any_of:
      - {api: ConsumerGroupHeartbeat}
      - - {api: JoinGroup, min: 0}
        - {api: SyncGroup}
"""


def test_parses_every_key() -> None:
    features = parse_features(GOOD, "good.yaml")
    assert features.names() == ["Zstd", "NewGroups"]
    zstd = features["zstd"]
    assert zstd.description == "zstd compression"
    assert zstd.reference == "KIP-110"
    assert zstd.requires == (ApiRequirement(0, "Produce", 7, None),
                             ApiRequirement(1, "Fetch", 10, 12))
    assert zstd.requires[0].line == 7
    assert zstd.where == "good.yaml:3"
    groups = features["NewGroups"]
    assert groups.requires == (LevelRequirement("group.version", 1, None),)
    assert len(groups.any_of) == 2
    assert groups.any_of[1][1] == ApiRequirement(14, "SyncGroup", 0, None)
    assert groups.api_keys() == [68, 11, 14]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("version: 1\nfeatures: [\n", 3, "invalid YAML"),
        ("version: 1\nfeatures:\n  - name: a\n   bad: indent\n", 4, "invalid YAML"),
        ("", 1, "the file is empty"),
        ("- 1\n- 2\n", 1, "the top level must be a mapping"),
        ("features: []\n", 1, "missing 'version'"),
        ("version: 2\nfeatures: []\n", 1, "format version 2 is not supported"),
        ("version: one\nfeatures: []\n", 1, "version must be a whole number"),
        ("version: 1\n", 1, "missing 'features'"),
        ("version: 1\nfeatures: []\nextra: 1\n", 3, "unknown key 'extra' in the top level"),
        ("version: 1\nversion: 1\nfeatures: []\n", 2, "key 'version' appears twice"),
        ("version: 1\nfeatures: {a: 1}\n", 2, "'features' must be a list"),
        ("version: 1\nfeatures:\n  - 3\n", 3, "a feature must be a mapping"),
        ("version: 1\nfeatures:\n  - requires: [{api: Produce}]\n", 3, "needs a 'name'"),
        ("version: 1\nfeatures:\n  - name: 'bad name'\n    requires: [{api: 0}]\n", 3,
         "may use letters"),
        ("version: 1\nfeatures:\n  - name: A\n    requirs: []\n", 4,
         "unknown key 'requirs' in a feature; did you mean 'requires'?"),
        ("version: 1\nfeatures:\n  - name: A\n", 3, "has no requirements"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: Prodce}]\n", 4,
         "unknown API 'Prodce'; did you mean 'Produce'?"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: 4242}]\n", 4,
         "API key 4242 is not known"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: true}]\n", 4,
         "api must be a name"),
        ("version: 1\nfeatures:\n  - name: A\n    requires:\n      - {api: Produce, min: 5,"
         " max: 3}\n", 5, "min 5 is greater than max 3"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: Produce, min: -1}]\n", 4,
         "must be 0 or more"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: Produce, min: 1.5}]\n", 4,
         "must be a whole number"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: Produce, mni: 1}]\n", 4,
         "unknown key 'mni' in an API requirement; did you mean 'min'?"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: 0, feature: x.version}]\n",
         4, "either an 'api' or a 'feature'"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{min: 1}]\n", 4,
         "needs 'api: <name or key>'"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [Produce]\n", 4,
         "a requirement is a mapping"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{feature: group.version}]\n", 4,
         "needs a 'min' level"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{feature: 'a b', min: 1}]\n", 4,
         "is not a feature name"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: {api: 0}\n", 4,
         "'requires' of A must be a list"),
        ("version: 1\nfeatures:\n  - name: A\n    any_of: [{api: 0}]\n", 4,
         "give two or more"),
        ("version: 1\nfeatures:\n  - name: A\n    any_of: [[], {api: 0}]\n", 4,
         "is an empty list"),
        ("version: 1\nfeatures:\n  - name: A\n    requires: [{api: 0}]\n"
         "  - name: a\n    requires: [{api: 1}]\n", 5, "feature 'a' is defined twice (first "
         "at line 3)"),
        ("version: 1\nfeatures:\n  - name: [x]\n    requires: [{api: 0}]\n", 3,
         "expected a single value"),
    ],
)
def test_errors_name_file_line_and_fix(text: str, line: int, fragment: str) -> None:
    error = _error(text)
    assert error.path == "f.yaml"
    assert error.line == line, str(error)
    assert fragment in str(error)
    assert str(error).startswith(f"f.yaml:{line}: ")


def test_empty_feature_list_is_allowed() -> None:
    assert len(parse_features("version: 1\nfeatures:\n", "f.yaml")) == 0


def test_load_own_file_and_merge_over_default(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "version: 1\nfeatures:\n"
        "  - name: zstd\n    description: stricter\n    requires: [{api: Produce, min: 9}]\n"
        "  - name: MyThing\n    requires: [{api: DescribeCluster, min: 1}]\n",
        encoding="utf-8",
    )
    own = load_features(path)
    assert own.names() == ["zstd", "MyThing"]
    merged = load_features(path, merge_default=True)
    default = default_features()
    assert len(merged) == len(default) + 1
    assert merged["ZSTD"].description == "stricter"
    assert merged.names().index("zstd") == default.names().index("ZSTD")
    assert merged.names()[-1] == "MyThing"
    assert merged.sources[-1] == str(path)
    assert load_features() is default


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(FeatureFileError, match="the features file does not exist"):
        load_features(tmp_path / "nope.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FeatureFileError, match="not UTF-8"):
        load_features(binary)


def test_unknown_feature_lookup_suggests() -> None:
    with pytest.raises(KeyError, match="did you mean 'ZSTD'"):
        default_features()["ZSTDD"]


_API = "version: 1\nfeatures:\n  - name: A\n    requires:\n      - {api: Produce, %s}\n"


@pytest.mark.parametrize(("text", "line", "expected"), [
    ("version: !foo 1\nfeatures:\n", 1, "could not determine a constructor for the tag '!foo'"),
    ("version: !!int abc\nfeatures:\n", 1, "cannot read 'abc' as int"),
    (_API % "min: !!float abc", 5, "cannot read 'abc' as float"),
    ("version: !!timestamp 2020-13-45\nfeatures:\n", 1, "cannot read '2020-13-45' as timestamp"),
    ("version: !!binary 'a'\nfeatures:\n", 1, "cannot read this value: failed to decode base64"),
    (_API % "min: 40000", 5, "min of Produce is 40000, above 32767"),
    (_API % "min: 1, max: 32768", 5, "max of Produce is 32768, above 32767"),
    ("version: 1\nfeatures:\n  - name: A\n    requires: [{feature: group.version, min: 99999}]\n",
     4, "min of group.version is 99999, above 32767"),
    (_API % ("min: " + ":".join(["1"] * 30)), 5, "a number 59 characters long"),
    (_API % ("min: 0b" + "1" * 100), 5, "a number 102 characters long"),
    ("version: 1\nfeatures: " + "[" * 3000 + "]" * 3000 + "\n", 2, "nested more than 64 levels"),
    ("version: 1\nfeatures: &a [*a]\n", 2, "alias *a refers to no anchor defined before it"),
    ("version: 1\nfeatures: *nowhere\n", 2, "alias *nowhere refers to no anchor"),
    ("version: 1\n---\nversion: 1\n", 2, "more than one YAML document"),
    ("version: 1\nfeatures: \ud800\n", 2, "lone surrogate"),
])
def test_hostile_documents_are_feature_file_errors(text: str, line: int, expected: str) -> None:
    error = _error(text)
    assert error.line == line
    assert expected in str(error)
    assert str(error).startswith(f"f.yaml:{line}: ")


def test_exactly_32767_is_allowed() -> None:
    features = parse_features(_API % "min: 32767, max: 32767")
    assert features["A"].requires[0].min == 32767


def test_alias_amplification_is_bounded() -> None:
    # Each level multiplies by 100: without a budget this stands for 10**8 nodes.
    text = ("a: &a [" + ", ".join(["x"] * 100) + "]\n"
            + "".join(f"{n}: &{n} [" + ", ".join([f"*{p}"] * 100) + "]\n"
                      for p, n in zip("abcdef", "bcdefg", strict=True)))
    error = _error(text)
    assert "aliases expand to more than 10000 nodes" in str(error)
    assert error.line == 2


def test_aliases_within_the_budget_still_work() -> None:
    text = ("version: 1\nfeatures:\n  - name: A\n    requires: &req\n"
            "      - {api: Produce, min: 3}\n  - name: B\n    requires: *req\n")
    features = parse_features(text)
    assert features["B"].requires == features["A"].requires


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_deep_nesting_is_refused_fast(depth: int) -> None:
    import time

    started = time.perf_counter()
    for opener, closer in (("[", "]"), ("{a: ", "}"), ("- ", "")):
        text = "version: 1\nfeatures: " + opener * depth + "x" + closer * depth + "\n"
        if opener == "- ":
            text = "version: 1\nfeatures:\n" + "".join(
                "  " * i + "-\n" for i in range(min(depth, 200))) + "  " * 200 + "x\n"
        with pytest.raises(FeatureFileError, match="nested more than 64 levels"):
            parse_features(text, "f.yaml")
    assert time.perf_counter() - started < 2.0


def test_libyaml_is_used_when_present() -> None:
    import yaml

    from kclient.negotiation.yamlnodes import yaml_loader_class

    expected = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    assert yaml_loader_class() is expected


@pytest.mark.parametrize(("spelling", "reading"), [
    ("1:30", "90"), ("0x10", "16"), ("010", "8"), ("1_0", "10"), ("+3", "3"), ("0b11", "3"),
])
def test_versions_and_keys_are_plain_whole_numbers(spelling: str, reading: str) -> None:
    """YAML 1.1 reads ``min: 1:30`` as 90: a version must be written as decimal digits."""
    for text, line, what in (
            (_API % f"min: {spelling}", 5, "min of Produce"),
            (_API % f"min: 1, max: {spelling}", 5, "max of Produce"),
            (f"version: {spelling}\nfeatures: []\n", 1, "version"),
            ("version: 1\nfeatures:\n  - name: A\n    requires:\n"
             f"      - {{api: {spelling}}}\n", 5, "an API key"),
            ("version: 1\nfeatures:\n  - name: A\n    requires:\n"
             f"      - {{feature: group.version, min: {spelling}}}\n", 5,
             "min of group.version")):
        error = _error(text)
        assert error.line == line, text
        assert str(error) == (f"f.yaml:{line}: {what} must be a plain whole number (decimal "
                              f"digits), got {spelling!r}, which YAML 1.1 reads as {reading}; "
                              "write the number itself")


def test_plain_numbers_still_read() -> None:
    features = parse_features(_API % "min: 0, max: 10")
    assert (features["A"].requires[0].min, features["A"].requires[0].max) == (0, 10)
