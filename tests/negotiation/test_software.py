"""The client software names table: generated from facts, and how it reads names and versions."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kclient.errors import ConfigError
from kclient.negotiation.clients import client_profile, known_clients
from kclient.negotiation.software import (
    SOFTWARE_PATTERN,
    ClientSoftware,
    identify,
    nameless_libraries,
    software_names,
)
from kclient.net.connection import validate_client_software
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "kclient" / "negotiation" / "software.json"
FACTS = REPO_ROOT / "tools" / "facts" / "software.json"


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_software",
                                                  REPO_ROOT / "tools" / "gen_software.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regenerated_table_matches_the_shipped_file() -> None:
    gen = _gen()
    assert gen.render(gen.build_software()) == DATA.read_text(encoding="utf-8"), (
        "kclient/negotiation/software.json is stale: run python tools/gen_software.py")


def test_every_row_names_a_profiled_library_and_where_it_was_read() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert data["provenance"]["tool"] == "tools/gen_software.py"
    names = {row["name"] for row in data["names"]}
    assert {"librdkafka", "confluent-kafka-python", "confluent-kafka-go",
            "confluent-kafka-dotnet", "confluent-kafka-javascript", "apache-kafka-java",
            "kafka-python", "platformatic-kafka", "kgo", "sarama"} <= names
    for row in [*data["names"], *data["nameless"]]:
        assert row["library"] in known_clients()
        assert len(row["source"]["commit"]) == 40 and row["source"]["tag"]
    for row in software_names():
        assert SOFTWARE_PATTERN.fullmatch(row.name), row.name
    assert {n.library for n in nameless_libraries()} >= {"kafkajs", "aiokafka", "kafka-python"}


@pytest.mark.parametrize("mutation, message", [
    (lambda f: f["names"][0].update(library="nope"), r"library 'nope' has no profile"),
    (lambda f: f["names"][1].update(name="bad name!"), "the name must be one Kafka accepts"),
    (lambda f: f["names"][2]["source"].update(commit="abc"), "commit must be 40 hex digits"),
    (lambda f: f["names"][1]["version"].update(marker="rdkafka"), "names its marker"),
    (lambda f: f["names"].append(dict(f["names"][0])), "the name is listed twice"),
    (lambda f: f["confluent_platform"]["lines"][1].update(**{"from": "5.5", "to": "5.9"}),
     "overlaps"),
])
def test_bad_facts_are_refused_with_the_place(tmp_path: Path, mutation: Any,
                                              message: str) -> None:
    gen = _gen()
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    mutation(facts)
    bad = tmp_path / "software.json"
    bad.write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(gen.FactsError, match=message):
        gen.build_software(bad)


@pytest.mark.parametrize("name, version, spec, binding", [
    ("librdkafka", "2.6.1", "librdkafka==2.6.1", None),
    ("librdkafka", "2.6.1-RC2", "librdkafka==2.6.1", None),
    ("librdkafka", "v2.6.1-12-gabcdef0", "librdkafka==2.6.1", None),
    ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1", "librdkafka==2.6.1",
     "confluent-kafka-python 2.6.1"),
    ("confluent-kafka-go", "2.8.0", "librdkafka==2.8.0", None),
    ("confluent-kafka-dotnet", "2.3.0", "librdkafka==2.3.0", None),
    ("confluent-kafka-javascript", "1.10.0-librdkafka-2.13.0", "librdkafka==2.13.0",
     "confluent-kafka-javascript 1.10.0"),
    ("apache-kafka-java", "3.9.0", "java==3.9.0", None),
    ("apache-kafka-java", "7.7.1-ccs", "java==3.7.1", None),
    ("apache-kafka-java", "6.2.0-ce", "java==2.8.0", None),
    ("apache-kafka-java", "8.1.2-ccs", "java==4.1.2", None),
    ("Apache-Kafka-Java", "3.9.0", "java==3.9.0", None),  # names are matched in any case
    ("kafka-python", "3.0.12", "kafka-python==3.0.12", None),
    ("platformatic-kafka", "2.9.0", "@platformatic/kafka==2.9.0", None),
    ("kgo", "v1.21.5", "franz-go==1.21.5", None),
    ("sarama", "v1.47.0", "sarama==1.47.0", None),
])
def test_names_and_versions_read_as_library_releases(name: str, version: str, spec: str,
                                                     binding: str | None) -> None:
    found = identify(ClientSoftware(name, version))
    assert (found.spec, found.binding) == (spec, binding)
    assert found.source and "(" in found.source  # repository tag (commit), file


@pytest.mark.parametrize("name, version, library, why", [
    ("unknown", "unknown", None, "no software name was sent"),
    ("my-app", "1.0", None, "no library in kclient's table sends the name 'my-app'"),
    ("sarama", "dev", "sarama", "sarama sends 'dev'"),
    ("sarama", "v1.45.0", "sarama", "before 1.47.0 it sends the application's module version"),
    ("kgo", "0.1.0", "franz-go", "franz-go before 1.2.0 sent the fixed version 0.1.0"),
    ("kgo", "unknown", "franz-go", "names no franz-go module version"),
    ("apache-kafka-java", "unknown", "java", "'unknown' names no java release"),
    ("apache-kafka-java", "9.0.0-ccs", "java", "no Confluent Platform line"),
    ("confluent-kafka-python", "2.6.1", "librdkafka", "names no librdkafka release after"),
])
def test_what_names_no_release_says_why(name: str, version: str, library: str | None,
                                        why: str) -> None:
    found = identify(ClientSoftware(name, version))
    assert found.spec is None and found.library == library
    assert why in found.how


def test_an_identified_release_has_a_profile_or_says_it_is_not_profiled() -> None:
    profiled = identify(ClientSoftware("confluent-kafka-python", "2.6.1-rdkafka-2.6.1"))
    assert profiled.spec is not None
    assert client_profile(profiled.spec).line == "2.6"
    newer = identify(ClientSoftware("librdkafka", "99.0.0"))
    assert newer.spec is not None
    with pytest.raises(ConfigError, match="is not profiled"):
        client_profile(newer.spec)


@pytest.mark.parametrize("text", ["a", "kclient", "1.2.3-rc.1", "x" * 300])
def test_the_pattern_is_the_one_the_client_sends_by(text: str) -> None:
    validate_client_software((text, "1.0"))
    assert SOFTWARE_PATTERN.fullmatch(text)


@pytest.mark.parametrize("text", ["", "-a", "a-", "a b", 'a"b', "a\nb", "ä"])
def test_the_pattern_refuses_what_the_client_refuses(text: str) -> None:
    assert SOFTWARE_PATTERN.fullmatch(text) is None
    with pytest.raises(ConfigError, match="KIP-511"):
        validate_client_software((text, "1.0"))
