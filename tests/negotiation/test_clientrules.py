"""Client rules: broker-only versions, client field values, versions a release rejects."""

from __future__ import annotations

import uuid

import attrs
import pytest

from kclient.errors import UnsupportedVersionError
from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    Verdict,
    VersionRange,
)
from kclient.negotiation.clientrules import (
    CLIENT_FIELD_VALUES,
    CLIENT_MAX_VERSIONS,
    TOPIC_ID_VERSIONS,
    topic_name_cap,
    with_client_values,
)
from kclient.negotiation.releases import advertised_but_rejected, release_profile
from kclient.protocol import default_catalog, default_registry
from kclient.protocol.catalog import Catalog
from kclient.protocol.constants import ApiKey


def _broker(node_id: int, release: str) -> BrokerVersions:
    return BrokerVersions(node_id, "127.0.0.1", 9000 + node_id, release_profile(release))


def test_broker_only_versions_are_never_a_clients_default() -> None:
    view = ClusterView([_broker(1, "3.9")])
    assert view.broker(1).apis[ApiKey.ADD_PARTITIONS_TO_TXN].max >= 4  # advertised
    assert view.version_for("AddPartitionsToTxn") == 3
    assert view.version_for("AddPartitionsToTxn", broker=1) == 3
    assert ApplicationVersions.from_catalog().apis[ApiKey.ADD_PARTITIONS_TO_TXN].max == 3


def test_a_cap_above_the_client_maximum_does_not_reopen_broker_versions() -> None:
    app = ApplicationVersions.from_catalog(max_versions={"AddPartitionsToTxn": 5})
    assert app.apis[ApiKey.ADD_PARTITIONS_TO_TXN].max == 3


def test_every_rule_names_its_source_and_a_real_field() -> None:
    registry = default_registry()
    for rule in [*CLIENT_MAX_VERSIONS.values(), *CLIENT_FIELD_VALUES.values()]:
        assert len(rule.source) > 40
    for (key, field), _ in CLIENT_FIELD_VALUES.items():
        name = {ApiKey.LIST_OFFSETS: "ListOffsetsRequest",
                ApiKey.OFFSET_FOR_LEADER_EPOCH: "OffsetForLeaderEpochRequest"}[ApiKey(key)]
        fields = {f.name for f in registry.spec(name).root.fields}
        assert "".join(p.capitalize() for p in field.split("_")) in fields


def test_client_values_fill_only_what_the_caller_left_out() -> None:
    body = {"topics": []}
    assert with_client_values(ApiKey.LIST_OFFSETS, body) == {"topics": [], "replica_id": -1}
    assert body == {"topics": []}  # the caller's mapping is left as it was
    assert with_client_values(ApiKey.LIST_OFFSETS, {"replica_id": 3})["replica_id"] == 3
    assert "replica_id" not in with_client_values(ApiKey.LIST_OFFSETS, {"ReplicaId": 3})
    assert with_client_values(ApiKey.METADATA, body) is body
    assert with_client_values(ApiKey.OFFSET_FOR_LEADER_EPOCH, {})["replica_id"] == -1


def test_produce_below_3_is_not_usable_on_a_4x_broker_that_advertises_it() -> None:
    four = _broker(1, "4.0")
    assert four.apis[ApiKey.PRODUCE].min == 0  # advertised for old librdkafka's sake
    assert advertised_but_rejected("4.0") == {ApiKey.PRODUCE: VersionRange(0, 2)}
    assert four.takes(ApiKey.PRODUCE).min == 3
    assert _broker(2, "3.9").takes(ApiKey.PRODUCE) == _broker(2, "3.9").apis[ApiKey.PRODUCE]
    capped = ApplicationVersions.from_catalog(max_versions={"Produce": 2})
    view = ClusterView([four, _broker(2, "3.9")], capped)
    support = view.api_support("Produce")
    assert support.state is Verdict.UNAVAILABLE
    assert support.blocking == (1,)
    assert "Produce v2 removed in Kafka 4.0" in str(support.reason)
    with pytest.raises(UnsupportedVersionError, match="broker 1 offers 3-"):
        view.version_for("Produce", broker=1)
    assert view.version_for("Produce", broker=2) == 2


def test_a_mixed_upgrade_still_negotiates_produce_from_3() -> None:
    view = ClusterView([_broker(1, "4.0"), _broker(2, "2.0")])
    assert view.version_for("Produce") == view.broker(2).apis[ApiKey.PRODUCE].max
    assert view.version_for("Produce") >= 3


def test_unsupported_version_errors_carry_their_facts() -> None:
    capped = ApplicationVersions.from_catalog(max_versions={"Produce": 2})
    view = ClusterView([_broker(1, "4.0"), _broker(2, "3.9")], capped)
    with pytest.raises(UnsupportedVersionError) as info:
        view.version_for("Produce")
    error = info.value
    assert (error.api_key, error.api, error.application) == (0, "Produce", "0-2")
    assert error.blocking == (1,)
    assert error.offers[1] is not None and error.offers[1][0] == 3  # what it takes
    assert error.offers[2] == (0, view.broker(2).apis[ApiKey.PRODUCE].max)
    with pytest.raises(UnsupportedVersionError) as info:
        view.version_for("Produce", broker=1)
    assert info.value.blocking == (1,) and info.value.api == "Produce"


def test_topics_named_without_ids_stay_below_the_topic_id_versions() -> None:
    some_id = uuid.uuid4()
    by_name = {"topic_data": [{"name": "orders", "partition_data": []}]}
    assert topic_name_cap(ApiKey.PRODUCE, by_name) == 12
    assert topic_name_cap(ApiKey.PRODUCE, {"topic_data": [{"topic_id": some_id}]}) is None
    assert topic_name_cap(ApiKey.PRODUCE, {"TopicData": [{"TopicId": str(some_id)}]}) is None
    assert topic_name_cap(ApiKey.PRODUCE, {"topic_data": [{"topic_id": uuid.UUID(int=0)}]}) == 12
    assert topic_name_cap(ApiKey.PRODUCE, {"topic_data": []}) is None
    assert topic_name_cap(ApiKey.FETCH, {"forgotten_topics_data": [{"topic": "t"}]}) == 12
    assert topic_name_cap(ApiKey.OFFSET_COMMIT, {"topics": [{"name": "t"}]}) == 9
    assert topic_name_cap(ApiKey.OFFSET_FETCH,
                          {"groups": [{"group_id": "g", "topics": [{"name": "t"}]}]}) == 9
    assert topic_name_cap(ApiKey.METADATA, {"topics": [{"name": "t"}]}) is None
    # Every rule's first version really drops the name and adds the id.
    registry = default_registry()
    for key, (rule, _) in TOPIC_ID_VERSIONS.items():
        spec = registry.spec(f"{ApiKey(key).name.title().replace('_', '')}Request")
        text = repr(spec.root)
        assert "TopicId" in text, key
        assert rule.value <= spec.valid.hi


def test_the_cluster_wide_version_respects_the_ceiling() -> None:
    view = ClusterView([_broker(1, "4.3"), _broker(2, "4.3")])
    assert view.version_for("Produce") == 13
    assert view.version_for("Produce", ceiling=12) == 12
    assert view.version_for("Produce", broker=1, ceiling=12) == 12
    with pytest.raises(UnsupportedVersionError, match="give every topic its topic_id"):
        view.version_for("Produce", ceiling=2)  # 4.x brokers take Produce from v3


def test_a_librarys_missing_api_is_described_as_the_librarys() -> None:
    from kclient.negotiation.clients import application_for

    aiokafka = application_for("aiokafka==0.14.0")
    assert aiokafka.describe(ApiKey.CONSUMER_GROUP_HEARTBEAT) == (
        "none (aiokafka 0.14.0 does not send this API)")
    # A catalog entry without a stable version (a key newer than kclient's specs).
    catalog = Catalog.from_infos([attrs.evolve(info, sendable=None) if info.key == 88 else info
                                  for info in default_catalog()])
    assert ApplicationVersions.from_catalog(catalog).describe(88) == (
        "none (kclient has no stable version of this API to send)")
    assert ApplicationVersions.from_catalog().describe(88) == "0"  # kclient speaks it
