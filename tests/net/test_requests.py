"""Any API through Client.request / Connection.request: negotiated versions, fields the
version lacks refused before sending, routing helpers; against emulated old releases and
the real tansu broker."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.errors import BrokerConnectionError, FieldVersionError, KafkaResponseError
from kclient.net import Client, Connection
from kclient.protocol import ApiKey, ErrorCode, default_catalog

from .conftest import TansuBroker

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("release", "metadata_max"), [("0.10.2", 2), ("2.0", 6)])
async def test_old_release_refuses_a_newer_field_before_sending(release: str,
                                                                metadata_max: int) -> None:
    async with EmulatedBroker(1, release) as broker, \
            Connection(broker.host, broker.port, node_id=1) as conn:
        assert conn.version_for("Metadata") == metadata_max
        sent = len(broker.received)
        with pytest.raises(FieldVersionError) as raised:
            await conn.request("Metadata", {"topics": None,
                                            "include_topic_authorized_operations": True})
        error = raised.value
        assert (error.version, error.first_version) == (metadata_max, 8)
        assert error.broker == conn.broker_label and conn.broker_label in str(error)
        assert f"up to v{metadata_max}" in str(error)
        assert len(broker.received) == sent  # nothing went out
        answer = await conn.request("Metadata", {"topics": None,
                                                 "include_topic_authorized_operations": True},
                                    drop_unsupported=True)
        assert [d.path for d in answer.dropped_fields] == ["include_topic_authorized_operations"]
        assert broker.received[-1] == (ApiKey.METADATA, metadata_max)


async def test_describe_cluster_fenced_flag_needs_v2() -> None:
    async with EmulatedBroker(1, "3.9") as broker, \
            Connection(broker.host, broker.port, node_id=1) as conn:
        assert conn.version_for("DescribeCluster") == 1
        with pytest.raises(FieldVersionError, match="IncludeFencedBrokers exists from v2"):
            await conn.request("DescribeCluster", {"include_fenced_brokers": True})
        answer = await conn.request("DescribeCluster", {"include_fenced_brokers": True},
                                    drop_unsupported=["include_fenced_brokers"])
        assert answer.controller_id == 1 and len(answer.dropped_fields) == 1
        answer.raise_for_error()


async def test_routing_helpers_on_an_emulated_cluster() -> None:
    async with EmulatedCluster(["3.9", "3.9", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        assert client.controller() == client.controller_id
        assert client.any_broker() == min(b.node_id for b in client.brokers)
        first = client.least_loaded()
        conn = client.connection(first)
        assert conn.in_flight == 0
        pending = asyncio.ensure_future(conn.request("Metadata", {"topics": []}))
        await asyncio.sleep(0)
        assert conn.in_flight == 1
        assert client.least_loaded() != first
        await pending
        assert conn.in_flight == 0
        answer = await client.request("DescribeCluster", {}, broker=client.controller())
        assert answer.controller_id == client.controller_id


async def test_routing_without_brokers_says_what_to_do() -> None:
    client = Client("127.0.0.1:1")
    with pytest.raises(BrokerConnectionError, match="start the client"):
        client.any_broker()
    with pytest.raises(BrokerConnectionError, match="no controller"):
        client.controller()


@pytest.mark.integration
async def test_admin_requests_on_tansu(tansu: TansuBroker) -> None:
    topic = f"kclient-{uuid.uuid4().hex[:8]}"
    async with Client(tansu.bootstrap, metadata_refresh_interval=None) as client:
        node = client.any_broker()
        versions = {api: client.version_for(api, node) for api in
                    ("CreateTopics", "Metadata", "ListOffsets", "DescribeConfigs",
                     "InitProducerId", "FindCoordinator", "DescribeCluster")}
        created = await client.request("CreateTopics", {
            "topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1}],
            "timeout_ms": 5000}, broker=client.controller())
        created.raise_for_error()
        assert [t.name for t in created.topics] == [topic]
        again = await client.request("CreateTopics", {
            "topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1}]})
        with pytest.raises(KafkaResponseError) as raised:
            again.raise_for_error()
        assert raised.value.errors[0][1] is ErrorCode.TOPIC_ALREADY_EXISTS
        metadata = await client.request("Metadata", {"topics": [{"name": topic}]})
        metadata.raise_for_error()
        assert len(metadata.topics[0].partitions) == 2
        offsets = await client.request("ListOffsets", {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        offsets.raise_for_error()
        assert offsets.topics[0].partitions[0].offset == 0
        configs = await client.request("DescribeConfigs", {"resources": [
            {"resource_type": 2, "resource_name": topic}]})
        assert configs.results[0].resource_name == topic
        producer = await client.request("InitProducerId", {"transactional_id": None,
                                                           "transaction_timeout_ms": 60000})
        producer.raise_for_error()
        assert producer.producer_id >= 0
        # v4 (KIP-699) replaced Key with CoordinatorKeys: the body follows the version.
        body: dict[str, object] = ({"coordinator_keys": ["kclient-group"]}
                                   if versions["FindCoordinator"] >= 4 else
                                   {"key": "kclient-group"})
        coordinator = await client.request("FindCoordinator", body, broker=node)
        coordinator.raise_for_error()
        cluster = await client.request("DescribeCluster", {}, broker=client.least_loaded())
        cluster.raise_for_error()
        assert cluster.cluster_id == client.cluster_id
        assert all(v >= 0 for v in versions.values())


async def test_produce_with_acks_0_returns_once_written_and_the_next_answer_still_matches(
        ) -> None:
    """Brokers never answer acks=0: kclient does not wait, and answer order stays right."""
    import time as clock

    from kclient.emulator import EmulatedBroker
    from kclient.net import Connection

    async with EmulatedBroker(1, "3.9") as broker:
        async with Connection("127.0.0.1", broker.port, request_timeout=30) as conn:
            records = {"topic_data": [{"name": "orders", "partition_data": []}], "acks": 0}
            started = clock.monotonic()
            assert await conn.request("Produce", records) is None
            assert clock.monotonic() - started < 5  # not the 30 s request timeout
            assert conn.in_flight == 0
            answer = await conn.request("Metadata", {"topics": []})
            assert [b.node_id for b in answer.brokers] == [1]
        assert (0, conn.request_version("Produce")) in broker.received


# 35 UNSUPPORTED_VERSION: the feature (group.version, share.version) is not finalized on
# a fresh cluster of that release; 42 INVALID_REQUEST: a bare body with no member id.
@pytest.mark.parametrize(("release", "api", "version", "body", "answered"), [
    ("3.9", "ConsumerGroupHeartbeat", 0, {"group_id": "g"}, 35),
    ("4.0", "ConsumerGroupHeartbeat", 1, {"group_id": "g"}, 42),
    ("4.1", "ShareGroupHeartbeat", 1, {"group_id": "g"}, 35),
    ("4.2", "ShareFetch", 2, {"group_id": "g"}, 42),
    ("4.2", "StreamsGroupHeartbeat", 0, {"group_id": "g"}, 42),
    ("4.2", "AddRaftVoter", 1, {"cluster_id": "g"}, None),
])
async def test_kafka_4_group_apis_go_out_at_the_negotiated_version(
        release: str, api: str, version: int, body: dict[str, str],
        answered: int | None) -> None:
    """The KIP-848, share-group and streams-group APIs (and AddRaftVoter 1) are sent at
    the highest version both sides speak. The emulator answers the group APIs (an
    error for this bare body or a feature it has not finalized) and hangs up on
    AddRaftVoter, which it does not serve; its capture shows what went out."""
    async with EmulatedBroker(1, release, capture=True) as broker, \
            Connection(broker.host, broker.port, node_id=1) as conn:
        assert conn.version_for(api) == version
        if answered is not None:
            answer = await conn.request(api, body, timeout=10)
            assert answer.error_code == answered
        else:
            with pytest.raises(BrokerConnectionError):
                await conn.request(api, body, timeout=10)
        assert broker.captured is not None
        key, sent, request = broker.captured[-1]
        assert (key, sent) == (default_catalog().resolve(api).key, version)
        field, value = next(iter(body.items()))
        assert getattr(request, field) == value


async def test_regex_subscription_needs_consumer_group_heartbeat_v1() -> None:
    """SubscribedTopicRegex (KIP-848) exists from v1: a 3.9 broker (v0 only) gets a
    FieldVersionError before anything is sent; a 4.0 broker gets v1 with the regex."""
    body = {"group_id": "g", "member_epoch": 0, "subscribed_topic_regex": "orders-.*"}
    async with EmulatedBroker(1, "3.9", capture=True) as broker, \
            Connection(broker.host, broker.port, node_id=1) as conn:
        sent = len(broker.received)
        with pytest.raises(FieldVersionError, match="SubscribedTopicRegex exists from v1"):
            await conn.request("ConsumerGroupHeartbeat", body)
        assert len(broker.received) == sent
    async with EmulatedBroker(1, "4.0", capture=True) as broker, \
            Connection(broker.host, broker.port, node_id=1) as conn:
        answer = await conn.request("ConsumerGroupHeartbeat", body, timeout=10)
        assert answer.error_code == 42  # INVALID_REQUEST: no member id, as Kafka says
        assert broker.captured is not None
        key, version, request = broker.captured[-1]
        assert (key, version) == (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
        assert request.subscribed_topic_regex == "orders-.*"
