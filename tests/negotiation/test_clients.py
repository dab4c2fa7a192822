"""Client profiles: the shipped data matches its facts, the installed libraries and the verdicts."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import pkgutil
import time
from types import ModuleType
from typing import Any

import pytest

from kclient.errors import ConfigError
from kclient.negotiation import ClusterView, fallback_broker
from kclient.negotiation.clients import (
    COORDINATED,
    PROFILE_CACHE_ENTRIES,
    Compat,
    Strategy,
    UnprofiledRelease,
    _lookup,
    application_for,
    check_feature,
    client_profile,
    depends,
    judge_for_client,
    known_clients,
    parse_client_spec,
)
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.verdict import Verdict
from kclient.protocol.constants import ApiKey
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "kclient" / "negotiation" / "clients.json"
FACTS = REPO_ROOT / "tools" / "facts" / "clients.json"


def _gen_clients() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_clients",
                                                  REPO_ROOT / "tools" / "gen_clients.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def test_regenerated_profiles_match_the_shipped_file() -> None:
    gen = _gen_clients()
    assert gen.render(gen.build_clients()) == DATA.read_text(encoding="utf-8"), (
        "kclient/negotiation/clients.json is stale: run python tools/gen_clients.py")


def test_every_cell_names_its_source_and_every_line_where_it_was_read() -> None:
    data = _shipped()
    assert data["provenance"]["tool"] == "tools/gen_clients.py"
    required = {"librdkafka", "java", "kafka-python", "aiokafka", "kafkajs",
                "@platformatic/kafka", "franz-go", "sarama"}
    assert required <= {c["name"] for c in data["clients"]}
    for client in data["clients"]:
        for line in client["lines"]:
            source = line["source"]
            if "package" in source:  # read from the package a registry publishes
                assert "sha512-" in source["package"] and source["how_read"]
            elif "derived_from_release" not in source:
                assert len(source["commit"]) == 40 and source["tag"] and source["how_read"]
            assert line["strategy"]["source"] and line["handshake"]["source"]
            assert line["apis"], f"{client['name']} {line['line']} has no API"
            for key, cell in line["apis"].items():
                assert cell["source"], f"{client['name']} {line['line']} key {key}"
                assert cell["min"] <= cell["max"]
                assert all(cell["min"] < v < cell["max"] for v in cell["avoid"])


def test_bad_facts_are_refused_with_the_place(tmp_path: Any) -> None:
    gen = _gen_clients()
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    facts["clients"][0]["lines"][0]["apis"]["Produce"]["versions"] = "7-3"
    bad = tmp_path / "clients.json"
    bad.write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(gen.FactsError, match=r"librdkafka 1\.0: Produce: 7-3 is an empty range"):
        gen.build_clients(bad)
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    facts["clients"][0]["lines"][0]["apis"]["Produce"]["source"] = ""
    bad.write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(gen.FactsError, match="Produce has no source"):
        gen.build_clients(bad)


def _observed_line(facts: dict[str, Any]) -> dict[str, Any]:
    """librdkafka 2.16: observed on top of the v2.15.0 reading (no tag of its own)."""
    rdk = next(c for c in facts["clients"] if c["name"] == "librdkafka")
    return next(line for line in rdk["lines"] if "observed" in line and "tag" not in line)


def test_an_observed_line_completes_its_reading(tmp_path: Any) -> None:
    """librdkafka 2.16: what it sent below the emulator's maximum is its ceiling; what
    reached the maximum, or was not seen, keeps the v2.15.0 reading's ceiling."""
    gen = _gen_clients()
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    path = tmp_path / "clients.json"

    def line_216() -> dict[str, Any]:
        path.write_text(json.dumps(facts), encoding="utf-8")
        rdk = next(c for c in gen.build_clients(path)["clients"] if c["name"] == "librdkafka")
        return next(line for line in rdk["lines"] if line["line"] == "2.16")

    line = line_216()
    assert line["first"] == "2.16.0" and line["before"] == "2.17.0"
    assert line["source"]["tag"] == "v2.15.0" and "observed live" in line["source"]["observed"]
    fetch, metadata = line["apis"][str(ApiKey.FETCH)], line["apis"][str(ApiKey.METADATA)]
    assert (fetch["max"], metadata["max"]) == (16, 13)
    assert "observed live: v16 against an emulator offering up to v18" in fetch["source"]
    assert "the emulator's maximum" in metadata["source"]
    assert line["apis"][str(ApiKey.SASL_HANDSHAKE)]["source"].startswith("not observed live")
    observed = _observed_line(facts)["observed"]
    observed["sent"]["Fetch"] = 12  # a release that sent less than the reading: it wins
    assert line_216()["apis"][str(ApiKey.FETCH)]["max"] == 12
    observed["sent"]["DescribeAcls"] = 1  # seen, but never read at the tag: refused
    observed["caps"]["DescribeAcls"] = 3
    reading = next(c for c in facts["clients"] if c["name"] == "librdkafka")["lines"]
    next(r for r in reading if r["line"] == "2.15")["apis"].pop("DescribeAcls")
    with pytest.raises(gen.FactsError, match=r"DescribeAcls was observed but v2\.15\.0 was not"):
        line_216()


@pytest.mark.slow
def test_the_installed_librdkafka_still_sends_what_was_observed() -> None:
    """tools/observe_librdkafka.py run again: the installed librdkafka of the observed
    release sends, per API, the version the facts recorded (a drift guard)."""
    ck = pytest.importorskip("confluent_kafka")
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    recorded = _observed_line(facts)["observed"]
    if str(ck.libversion()[0]) != recorded["release"]:
        pytest.skip(f"librdkafka {recorded['release']} is observed; "
                    f"{ck.libversion()[0]} is installed")
    spec = importlib.util.spec_from_file_location(
        "observe_librdkafka", REPO_ROOT / "tools" / "observe_librdkafka.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    seen = tool.observe()
    assert {"Produce", "Fetch", "Metadata", "JoinGroup", "InitProducerId"} <= set(seen["sent"])
    # The admin calls go one after the other on a connection the emulator closes on an API
    # it does not serve, so a run may send an admin request the recorded runs did not
    # reach (or miss one they did): a drift is a version that differs from the one recorded.
    for name, version in seen["sent"].items():
        assert recorded["sent"].get(name, version) == version, (name, version, seen["failures"])


@pytest.mark.parametrize(("spec", "library", "line"), [
    ("aiokafka==0.14.0", "aiokafka", "0.14"),
    ("aiokafka 0.10.1", "aiokafka", "0.10"),
    ("aiokafka==0.8.1", "aiokafka", "0.8"),
    ("kafka-python==2.2.21", "kafka-python", "2.2"),
    ("kafka-python==2.3.3", "kafka-python", "2.3"),
    ("kafkajs==1.16.0", "kafkajs", "1.16"),
    ("kafkajs==1.15.0", "kafkajs", "1.15"),
    ("confluent-kafka==1.8.2", "librdkafka", "1.8"),
    ("java 0.10.2", "java", "0.10.2"),
    ("java==1.1.1", "java", "1.1"),
    ("confluent-kafka==2.3.0", "librdkafka", "2.3"),
    ("librdkafka@2.4.1", "librdkafka", "2.4"),
    ("java 4.0", "java", "4.0"),
    ("java==3.9.1", "java", "3.9"),
    ("kafka-python==2.0.2", "kafka-python", "2.0"),
    ("kafka-python==3.0.12", "kafka-python", "3.0"),
    ("kafkajs", "kafkajs", "2"),
    ("sarama==1.30.1", "sarama", "1.30"),
    ("sarama==1.45.2", "sarama", "1.45"),
    ("sarama 1.46.0", "sarama", "1.46"),
    ("sarama==1.50.2", "sarama", "1.47"),  # DefaultVersion 2.1.0 from 1.46 to 1.50.2
    ("sarama==1.50.3", "sarama", "1.50.3"),  # 2.6.0 from 1.50.3
    ("sarama==1.60.0", "sarama", "1.50.3"),
    ("sarama==1.60.1", "sarama", "1.60.1"),  # 2.8.0 from 1.60.1
    ("platformatic-kafka==2.12.1", "@platformatic/kafka", "2.12"),
    ("confluent-kafka==2.16.1", "librdkafka", "2.16"),
])
def test_a_release_finds_its_line(spec: str, library: str, line: str) -> None:
    profile = client_profile(spec)
    assert (profile.library, profile.line) == (library, line)


@pytest.mark.parametrize(("spec", "message"), [
    ("nosuchlib==1.0", "no profile for the client library 'nosuchlib'"),
    ("aiokafka==", "a client is a library and an optional version"),
    ("aiokafka==0." + "9" * 5000, "a client spec is at most 200 characters"),
    ("aiokafka==0.1234567890", "each at most 9 digits"),
])
def test_bad_client_specs_are_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        client_profile(spec)
    assert not isinstance(caught.value, UnprofiledRelease)


@pytest.mark.parametrize(("spec", "nearest"), [
    ("confluent-kafka==0.11.6", "librdkafka 1.0.x"),
    ("librdkafka==2.17.0", "librdkafka 2.16.x"),   # newer than the newest line
    ("franz-go==1.10.0", "franz-go 1.21.x"),
    ("java==0.9.0", "java 0.10.0.x"),
    ("aiokafka==9.9", "aiokafka 0.14.x"),
    ("kafkajs==3.0.0", "kafkajs 2.x"),
    ("sarama==1.61.0", "sarama 1.60.1.x"),  # no v1.61 tag in the source read
])
def test_a_release_no_line_covers_is_unprofiled_and_names_the_nearest(spec: str,
                                                                       nearest: str) -> None:
    with pytest.raises(UnprofiledRelease, match="is not profiled, so nothing can be promised"
                       ) as caught:
        client_profile(spec)
    assert caught.value.nearest == nearest
    assert f"the nearest line is {nearest}, which is not used to judge it" in str(caught.value)


def test_client_specs_parse_in_linear_time_and_the_cache_is_bounded() -> None:
    # A run of 40,000 blanks took 30 s (quadratic); the refusal is now immediate.
    started = time.perf_counter()
    with pytest.raises(ConfigError):
        parse_client_spec("aiokafka" + " " * 40_000 + "x")
    for n in range(50):  # inside the length bound, blank runs parse once
        with pytest.raises(ConfigError):
            parse_client_spec("aiokafka" + " " * 190 + "x" * (1 + n % 3))
    assert time.perf_counter() - started < 1.0
    for patch in range(PROFILE_CACHE_ENTRIES + 50):
        client_profile(f"aiokafka==0.14.{patch}")
    assert _lookup.cache_info().currsize <= PROFILE_CACHE_ENTRIES


def test_java_lines_follow_the_release_specs() -> None:
    java40, java39 = client_profile("java 4.0"), client_profile("java 3.9")
    # Kafka 4.0 brokers advertise Produce v0-v2 and reject them: not in the 4.0 client's specs.
    assert java40.apis[ApiKey.PRODUCE].range.min == 3
    assert java39.apis[ApiKey.PRODUCE].range.min == 0
    # Versions reserved for brokers are not the client's (KIP-890).
    assert java40.apis[ApiKey.ADD_PARTITIONS_TO_TXN].range.max == 3
    assert java39.uses("kip848") and ApiKey.CONSUMER_GROUP_HEARTBEAT in java39.apis
    assert not client_profile("java 3.6").uses("kip848")


@pytest.mark.parametrize(("spec", "parsed", "line"), [
    ("confluent-kafka==2.16.1", ("librdkafka", "2.16.0"), "2.16"),
    ("confluent_kafka 2.7.0", ("librdkafka", "2.6.1"), "2.6"),  # crosses a line
    ("confluent-kafka==2.12.2", ("librdkafka", "2.12.1"), "2.12"),
    ("confluent-kafka==2.15.1", ("librdkafka", "2.15.1"), "2.15"),  # the same number
    ("librdkafka==2.16.1", ("librdkafka", "2.16.1"), "2.16"),  # the library itself
])
def test_a_package_is_judged_as_the_release_it_bundles(spec: str, parsed: tuple[str, str],
                                                       line: str) -> None:
    assert parse_client_spec(spec) == parsed
    profile = client_profile(spec)
    assert (profile.label, profile.line) == (f"librdkafka {parsed[1]}", line)


def test_librdkafka_1_x_lines_follow_each_tag_and_their_observation() -> None:
    old, new = client_profile("confluent-kafka==1.0.1"), client_profile("librdkafka==1.7.0")
    assert old.source["tag"] == "v1.0.1" and "observed live" in old.source["checked_live"]
    assert old.read_at.startswith("confluentinc/librdkafka v1.0.1 (8681f88), checked live: "
                                  "confluent-kafka 1.0.1 (librdkafka 1.0.1) observed live")
    fetch = old.apis[ApiKey.FETCH]  # chosen by feature flags: never v3
    assert (fetch.range.min, fetch.range.max, fetch.avoid) == (0, 4, frozenset({3}))
    assert new.apis[ApiKey.FETCH].range.max == 11
    assert not old.uses("transactions") and new.uses("transactions")
    assert old.handshake.api_versions == "0 only"
    # The consumer resets its offsets with ListOffsets v0 (offsets_for_times sends v1),
    # and the 1.0-1.2 group commits with OffsetCommit v1: Kafka 4.0 refuses both.
    consumer = old.cells(("consumer",))
    assert consumer[ApiKey.LIST_OFFSETS].range.max == 0
    assert old.apis[ApiKey.LIST_OFFSETS].range.max == 1
    four = _brokers("4.0")
    for spec in ("confluent-kafka==1.0.1", "confluent-kafka==1.7.0"):
        verdict = check_feature(client_profile(spec), four, "consume_group")
        assert verdict.state is Compat.BREAKS and "ListOffsets" in (verdict.reason or "")
    assert check_feature(client_profile("confluent-kafka==1.8.2"), four,
                         "consume_group").state is Compat.WORKS


def test_sarama_lines_follow_the_default_config_version() -> None:
    """restrictApiVersion caps each request at the version the default Config.Version
    sets: 2.1.0 up to 1.50.2 (Produce v7), 2.6.0 from 1.50.3 (v8), 2.8.0 from 1.60.1 (v9)."""
    produce = [client_profile(f"sarama=={v}").apis[ApiKey.PRODUCE].range.max
               for v in ("1.49.0", "1.50.3", "1.60.1")]
    assert produce == [7, 8, 9]
    newest = client_profile("sarama==1.60.1")
    assert newest.strategy is Strategy.PER_BROKER
    assert newest.apis[ApiKey.ADD_PARTITIONS_TO_TXN].range.max == 3  # 2.7+: v2, 2.8+: v3
    assert newest.apis[ApiKey.API_VERSIONS].range.max == 3  # the handshake's v3
    assert ApiKey.DESCRIBE_CLUSTER not in client_profile("sarama==1.50.2").apis  # needs 2.8
    assert ApiKey.DESCRIBE_CLUSTER in newest.apis
    four = _brokers("4.0")
    for feature in ("produce", "consume_group", "transactions", "zstd"):
        assert check_feature(newest, four, feature).state is Compat.WORKS, feature


def test_a_line_read_from_its_published_package_names_it() -> None:
    """@platformatic/kafka 2.12: no tag after v2.9.0 in the source read, so the npm
    package (its integrity hash) is where it was read; 2.12 added the old versions."""
    profile = client_profile("@platformatic/kafka==2.12.1")
    assert profile.read_at.startswith("platformatic/kafka: the published package, npm "
                                      "@platformatic/kafka@2.12.1 (sha512-")
    assert profile.covers == "2.12.0 to before 2.13.0"
    assert profile.apis[ApiKey.PRODUCE].range.min == 3  # 2.9: 7
    assert profile.apis[ApiKey.API_VERSIONS].avoid == frozenset({2})  # v3, then v1
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    line = next(c for c in facts["clients"] if c["name"] == "@platformatic/kafka")["lines"][-1]
    line["package"]["integrity"] = "sha1-abc"
    gen = _gen_clients()
    with pytest.raises(gen.FactsError, match="package needs registry, name, version and its "
                                             "sha512 integrity"):
        gen._check_reading(line, "@platformatic/kafka 2.12")


def test_a_coordinator_request_depends_on_which_broker_coordinates() -> None:
    """kafkajs 1.5 takes JoinGroup v0 from a 2.0 bootstrap broker: only the group's
    coordinator gets it, and 4.0 refuses it, so a 2.0+4.0 cluster may or may not work
    (the matrix: it worked, the 2.0 broker coordinated). A request every broker gets
    that breaks (kafkajs 1.0's Fetch v3 on 4.0) makes the feature break whatever
    broker coordinates."""
    mixed = _brokers("2.0", "4.0")
    verdict = check_feature(client_profile("kafkajs==1.5.1"), mixed, "consume_group")
    assert verdict.state is Compat.BREAKS and depends(verdict.reason)
    assert (verdict.reason or "").startswith(COORDINATED + ": JoinGroup: ")
    definite = check_feature(client_profile("kafkajs==1.0.1"), mixed, "consume_group")
    assert definite.state is Compat.BREAKS and not depends(definite.reason)
    assert "Fetch" in (definite.reason or "")
    # Refused by every broker that may coordinate: breaks, nothing depends.
    assert not depends(check_feature(client_profile("kafkajs==1.5.1"),
                                     _brokers("4.0", "4.0"), "consume_group").reason)


def test_a_random_broker_that_always_breaks_is_no_depends() -> None:
    """aiokafka 0.8 asks any broker: on 2.0+4.0 its Produce depends on which; on 2.0+2.0
    zstd breaks whichever it asks (Produce v7 is above both brokers)."""
    aiokafka = client_profile("aiokafka==0.8.1")
    assert depends(check_feature(aiokafka, _brokers("2.0", "4.0"), "produce").reason)
    always = check_feature(aiokafka, _brokers("2.0", "2.0"), "zstd")
    assert always.state is Compat.BREAKS and not depends(always.reason)


def test_an_observation_above_its_own_reading_is_refused(tmp_path: Any) -> None:
    gen = _gen_clients()
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    rdk = next(c for c in facts["clients"] if c["name"] == "librdkafka")
    line = next(r for r in rdk["lines"] if r["line"] == "1.0")
    line["observed"]["sent"]["Metadata"] = 4  # read 0-2 at v1.0.1
    path = tmp_path / "clients.json"
    path.write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(gen.FactsError, match=r"librdkafka 1\.0: Metadata was observed at v4, "
                                             r"above the v2 read at v1\.0\.1"):
        gen.build_clients(path)
    rdk["packages"][0]["differs"]["2.16.1"]["release"] = "two"
    line["observed"]["sent"]["Metadata"] = 2
    path.write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(gen.FactsError, match=r"2\.16\.1 needs the bundled release and a source"):
        gen.build_clients(path)


def _brokers(*releases: str) -> list[BrokerVersions]:
    return [fallback_broker(r, node, f"b{node}", 9092) for node, r in enumerate(releases, 1)]


def test_aiokafka_idempotence_is_judged_with_initproducerid_v0_only() -> None:
    aiokafka = application_for("aiokafka==0.14.0")
    assert aiokafka.apis[ApiKey.INIT_PRODUCER_ID].max == 0
    features = load_features()
    base = _brokers("4.0")[0]
    # A broker that takes InitProducerId v1-v5 only (what kclient's own range would accept).
    newer = BrokerVersions(2, "b2", 9092, {**base.apis, ApiKey.INIT_PRODUCER_ID: (1, 5)})
    for_kclient = ClusterView([newer]).evaluate(features)["IdempotentProducer"]
    for_aiokafka = ClusterView([newer], aiokafka).evaluate(features)["IdempotentProducer"]
    assert for_kclient.state is Verdict.AVAILABLE
    assert for_aiokafka.state is Verdict.UNAVAILABLE
    # On a real 4.0 broker aiokafka's v0 is taken.
    view = ClusterView([base], aiokafka)
    assert view.version_for("InitProducerId") == 0
    assert view.evaluate(features)["IdempotentProducer"].state is Verdict.AVAILABLE


def test_aiokafka_avoids_the_versions_it_lacks() -> None:
    view = ClusterView(_brokers("3.9"), application_for("aiokafka==0.14.0"))
    assert view.version_for("JoinGroup") == 5  # it has v0, v1, v2, v5
    broker = BrokerVersions(1, "b", 9092, {ApiKey.JOIN_GROUP: (3, 4)})
    assert ClusterView([broker], application_for("aiokafka==0.14.0")).api_support(
        "JoinGroup").state is Verdict.UNAVAILABLE


def test_strategies_decide_mixed_clusters() -> None:
    brokers = _brokers("4.0", "2.0")  # Produce 3-12 taken by the first, 0-6 by the second
    librdkafka = judge_for_client(client_profile("librdkafka==2.15.0"), brokers, ApiKey.PRODUCE)
    kafkajs = judge_for_client(client_profile("kafkajs==2.2.4"), brokers, ApiKey.PRODUCE)
    assert librdkafka.ok  # per broker: v10 to the first, v6 to the second
    assert not kafkajs.ok and kafkajs.blocking == (2,)
    assert kafkajs.reason is not None and "picks v7 from broker 1" in kafkajs.reason
    sarama = client_profile("sarama==1.45.2")
    assert sarama.strategy is Strategy.PINNED
    assert judge_for_client(sarama, _brokers("2.0"), ApiKey.PRODUCE).version is None
    assert judge_for_client(sarama, _brokers("2.1"), ApiKey.PRODUCE).version == 7


def test_kafka_4_removals_name_the_kip() -> None:
    # kafka-python 2.0's everyday versions survive KIP-896 (Fetch v4, OffsetCommit v2...).
    old = client_profile("kafka-python==2.0.2")
    assert all(judge_for_client(old, _brokers("4.0"), key).ok for key in old.apis)
    # sarama 1.45 pins DescribeLogDirs v0 at its default Config.Version: gone in 4.0.
    judged = judge_for_client(client_profile("sarama==1.45.2"), _brokers("4.0"),
                              ApiKey.DESCRIBE_LOG_DIRS)
    assert not judged.ok
    assert judged.reason is not None and "removed in Kafka 4.0 (KIP-896)" in judged.reason


def test_sarama_1_30_at_its_default_config_version_loses_groups_on_kafka_4() -> None:
    """KIP-896's oldest sarama: its default Config.Version (1.0.0) pins JoinGroup v1 and
    OffsetCommit v1, which 4.0 removed; producing (Produce v3, Metadata v5) still works;
    its admin client's ListTopics pins Metadata v0 and ListConsumerGroupOffsets
    OffsetFetch v2, not the consumer's v1."""
    sarama = client_profile("sarama==1.30.1")
    assert (sarama.line, sarama.strategy) == ("1.30", Strategy.PINNED)
    assert ApiKey.API_VERSIONS not in sarama.apis  # no handshake at the default version
    for key in (ApiKey.PRODUCE, ApiKey.METADATA):
        assert judge_for_client(sarama, _brokers("4.0"), key).ok
    for key in (ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT):
        judged = judge_for_client(sarama, _brokers("4.0"), key)
        assert not judged.ok and "removed in Kafka 4.0 (KIP-896)" in str(judged.reason)
        assert judge_for_client(sarama, _brokers("3.9"), key).ok
    assert sarama.sends(ApiKey.OFFSET_FETCH, ("admin",)) == (
        "sends OffsetFetch v2 (pinned) (its admin client)")
    assert sarama.sends(ApiKey.OFFSET_FETCH) == "sends OffsetFetch v1 (pinned)"
    assert not sarama.uses("transactions") and not sarama.uses("zstd")
    assert "default Config.Version is 1.0.0" in sarama.features["zstd"].source


def test_every_client_parses_by_its_own_name() -> None:
    for name in known_clients():
        assert parse_client_spec(name) == (name, None)
        assert client_profile(name).application().apis


# -- the installed libraries against their profiles ------------------------------------

def _aiokafka_requests() -> dict[int, set[int]]:
    protocol = pytest.importorskip("aiokafka.protocol")
    api = importlib.import_module("aiokafka.protocol.api")
    found: dict[int, set[int]] = {}
    for info in pkgutil.iter_modules(protocol.__path__):
        module = importlib.import_module(f"aiokafka.protocol.{info.name}")
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, api.Request)
                    and value is not api.Request and hasattr(value, "_CLASSES")):
                classes = value._CLASSES
                # Sent before any broker table is known: prepare() takes the first struct.
                if value.ALLOW_UNKNOWN_API_VERSION:
                    classes = classes[:1]
                found[value.API_KEY] = {c.API_VERSION for c in classes}
    return found


def test_installed_aiokafka_sends_exactly_its_profile() -> None:
    version = importlib.metadata.version("aiokafka") if importlib.util.find_spec(
        "aiokafka") else pytest.skip("aiokafka is not installed")
    profile = client_profile(f"aiokafka=={version}")
    installed = _aiokafka_requests()
    assert installed, "no aiokafka request classes found"
    for key, cell in profile.apis.items():
        assert set(cell.versions) == installed[key], (key, cell.versions, installed[key])
    assert set(installed) == set(profile.apis)


def test_installed_kafka_python_stays_within_its_classes() -> None:
    if importlib.util.find_spec("kafka") is None:
        pytest.skip("kafka-python is not installed")
    version = importlib.metadata.version("kafka-python")
    profile = client_profile(f"kafka-python=={version}")
    if profile.line != "3.0":
        pytest.skip(f"kafka-python {version}: the check reads 3.x request classes")
    api_message = importlib.import_module("kafka.protocol.api_message")
    classes: dict[int, Any] = {}
    protocol = importlib.import_module("kafka.protocol")
    for info in pkgutil.walk_packages(protocol.__path__, "kafka.protocol."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, api_message.ApiMessage)
                    and name.endswith("Request") and value is not api_message.ApiMessage):
                try:
                    classes[int(value.API_KEY)] = value
                except (KeyError, AttributeError, TypeError):
                    continue
    for key, cell in profile.apis.items():
        request = classes[key]
        assert cell.range.min >= request.min_version
        assert cell.range.max <= request.max_version, (key, cell.range, request.max_version)
        if "without a cap" in cell.source:  # the profile says: the class's own maximum
            assert cell.range.max == request.max_version, (key, cell.range, request.max_version)


def test_installed_confluent_kafka_is_profiled_or_unknown() -> None:
    ck = pytest.importorskip("confluent_kafka")
    version = str(ck.libversion()[0])
    try:
        profile = client_profile(f"librdkafka=={version}")
    except UnprofiledRelease as exc:  # newer than the newest tag read: no promise
        assert exc.nearest == f"librdkafka {client_profile('librdkafka').line}.x"
        return
    assert profile.library == "librdkafka"
    if "observed" in profile.source:  # observed live (no tag of that release was read)
        assert f"librdkafka {version}" in profile.source["observed"]
    else:
        assert profile.source["tag"].lstrip("v").split(".")[:2] == version.split(".")[:2]
