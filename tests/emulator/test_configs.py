"""Topic configs: checked as Kafka checks them, set by CreateTopics, AlterConfigs,
IncrementalAlterConfigs and the pytest plugin, shown by DescribeConfigs; with
confluent-kafka's admin client."""

from __future__ import annotations

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster, ThreadedEmulator
from kclient.emulator.configs import TOPIC_CONFIGS, config_problem
from kclient.errors import ConfigError
from kclient.net import Connection
from kclient.protocol.constants import ErrorCode as E
from kclient.pytest_plugin import ClusterFactory, cluster_topic_configs, cluster_topics

pytestmark = pytest.mark.timeout(30)


def test_config_problems_as_kafka_says_them() -> None:
    assert config_problem("compression.type", "zstd", "3.9") is None
    assert "one of" in (config_problem("compression.type", "zstd", "2.0") or "")
    assert "one of" in (config_problem("compression.type", "brotli", "3.9") or "")
    assert config_problem("compresion.type", "gzip", "3.9") == (
        "Unknown topic config name: compresion.type")
    assert "Not a number" in (config_problem("max.message.bytes", "lots", "3.9") or "")
    assert "at least" in (config_problem("min.insync.replicas", "0", "3.9") or "")
    assert "true or false" in (config_problem("preallocate", "yes", "3.9") or "")
    assert config_problem("cleanup.policy", "compact,delete", "3.9") is None
    assert config_problem("cleanup.policy", "compact,forever", "3.9") is not None
    assert config_problem("retention.ms", None, "3.9") is None  # null: the default


async def test_unknown_and_bad_topic_configs() -> None:
    async with EmulatedBroker(1, "2.0") as broker, Connection("127.0.0.1", broker.port) as conn:
        def topic(name: str, **configs: str) -> dict[str, object]:
            return {"name": name, "num_partitions": 1, "replication_factor": 1,
                    "configs": [{"name": k.replace("_", "."), "value": v}
                                for k, v in configs.items()]}

        answer = await conn.request("CreateTopics", {"timeout_ms": 1000, "topics": [
            topic("a", compression_type="zstd"), topic("b", no_such_config="1"),
            topic("c", max_message_bytes="-5"), topic("d", compression_type="gzip")]}, 2)
        codes = {t.name: t.error_code for t in answer.topics}
        assert codes == {"a": E.INVALID_CONFIG, "b": E.INVALID_CONFIG, "c": E.INVALID_CONFIG,
                         "d": E.NONE}
        assert "Unknown topic config name: no.such.config" in next(
            t.error_message for t in answer.topics if t.name == "b")
        assert sorted(broker.state.topics) == ["d"]
        assert broker.state.topics["d"].compression_type == "gzip"


async def test_describe_and_alter_topic_configs_on_the_wire() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1, configs={"retention.ms": "1000"})

        async def describe(*keys: str) -> dict[str, tuple[str | None, int]]:
            answer = await conn.request("DescribeConfigs", {"resources": [
                {"resource_type": 2, "resource_name": "t",
                 "configuration_keys": list(keys) or None}]}, 4)
            [result] = answer.results
            assert result.error_code == E.NONE
            return {c.name: (c.value, c.config_source) for c in result.configs}

        everything = await describe()
        assert set(everything) == set(TOPIC_CONFIGS)
        assert everything["retention.ms"] == ("1000", 1)  # TOPIC_CONFIG
        assert everything["compression.type"] == ("producer", 5)  # DEFAULT_CONFIG
        answer = await conn.request("IncrementalAlterConfigs", {"validate_only": False,
                                                                "resources": [
            {"resource_type": 2, "resource_name": "t", "configs": [
                {"name": "compression.type", "config_operation": 0, "value": "zstd"},
                {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
                {"name": "retention.ms", "config_operation": 1, "value": None}]}]}, 1)
        assert answer.responses[0].error_code == E.NONE
        assert await describe("compression.type", "cleanup.policy", "retention.ms") == {
            "compression.type": ("zstd", 1), "cleanup.policy": ("compact", 1),
            "retention.ms": ("604800000", 5)}
        bad = await conn.request("IncrementalAlterConfigs", {"validate_only": False,
                                                             "resources": [
            {"resource_type": 2, "resource_name": "t", "configs": [
                {"name": "retention.ms", "config_operation": 2, "value": "5"}]}]}, 1)
        assert bad.responses[0].error_code == E.INVALID_CONFIG  # append to a non-list
        # AlterConfigs replaces the whole set.
        await conn.request("AlterConfigs", {"validate_only": False, "resources": [
            {"resource_type": 2, "resource_name": "t", "configs": [
                {"name": "segment.ms", "value": "60000"}]}]}, 1)
        assert broker.state.topics["t"].configs == {"segment.ms": "60000"}
        # Other resources: refused as Kafka refuses a resource type it does not serve.
        broker_configs = await conn.request("DescribeConfigs", {"resources": [
            {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]}, 4)
        assert broker_configs.results[0].error_code == E.INVALID_REQUEST
        missing = await conn.request("DescribeConfigs", {"resources": [
            {"resource_type": 2, "resource_name": "nope", "configuration_keys": None}]}, 4)
        assert missing.results[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_confluent_kafka_admin_sets_and_reads_topic_configs() -> None:
    admin_module = pytest.importorskip("confluent_kafka.admin")
    with ThreadedEmulator(EmulatedCluster(["3.9", "3.9"])) as emulator:
        admin = admin_module.AdminClient({"bootstrap.servers": emulator.bootstrap_servers,
                                          "log_level": 0})
        futures = admin.create_topics([admin_module.NewTopic(
            "z", 1, 1, config={"compression.type": "zstd"})])
        futures["z"].result(10)
        resource = admin_module.ConfigResource(admin_module.ResourceType.TOPIC, "z")
        described = admin.describe_configs([resource])[resource].result(10)
        assert described["compression.type"].value == "zstd"
        assert described["compression.type"].source == 1  # DYNAMIC_TOPIC_CONFIG
        change = admin_module.ConfigResource(
            admin_module.ResourceType.TOPIC, "z", incremental_configs=[
                admin_module.ConfigEntry("compression.type", "lz4",
                                         incremental_operation=admin_module.AlterConfigOpType.SET)])
        admin.incremental_alter_configs([change])[change].result(10)
        assert emulator.cluster.state.topics["z"].compression_type == "lz4"
        bad = admin.create_topics([admin_module.NewTopic("y", 1, 1, config={"bogus": "1"})])
        with pytest.raises(Exception, match="bogus"):
            bad["y"].result(10)


def test_pytest_plugin_topics_with_configs(kafka_cluster: ClusterFactory) -> None:
    options = {"topics": {"z": {"partitions": 2, "configs": {"compression.type": "zstd"}},
                          "plain": 1}}
    assert cluster_topics(options) == {"z": 2, "plain": 1}
    assert cluster_topic_configs(options, ["3.9"]) == {"z": {"compression.type": "zstd"}}
    with pytest.raises(ConfigError, match=r"Kafka 2\.0 refuses it"):
        cluster_topic_configs(options, ["2.0", "3.9"])
    with pytest.raises(ConfigError, match="configs= is a mapping"):
        cluster_topic_configs({"topics": {"z": {"configs": {"retention.ms": 5}}}})
    emulator = kafka_cluster("3.9", **options)
    topic = emulator.cluster.state.topics["z"]
    assert (len(topic.partitions), topic.compression_type) == (2, "zstd")
