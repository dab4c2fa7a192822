"""Kafka 4's group protocols per client library: which libraries speak them (their
profiles) and the feature levels a cluster must have finalized (``kclient compat``)."""

from __future__ import annotations

import json

import pytest

from kclient.negotiation.clients import Compat, check_feature, client_profile
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import release_profile
from tests.cli.conftest import run_kclient

LIBRDKAFKA = client_profile("librdkafka==2.15.0")


def fresh(release: str) -> list[BrokerVersions]:
    return [BrokerVersions.of_release(release)]


@pytest.mark.parametrize(("profile", "feature", "release", "state", "sent"), [
    ("librdkafka==2.15.0", "kip848", "4.0", Compat.WORKS, "ConsumerGroupHeartbeat v1"),
    ("librdkafka==2.15.0", "share_groups", "4.2", Compat.WORKS, "ShareFetch v1"),
    ("java==4.1", "share_groups", "4.2", Compat.WORKS, "ShareFetch v1"),
    ("java==4.2", "share_groups", "4.2", Compat.WORKS, "ShareFetch v2"),
    ("java==4.2", "streams_groups", "4.2", Compat.WORKS, "StreamsGroupHeartbeat v0"),
    ("franz-go==1.21.0", "share_groups", "4.3", Compat.WORKS, "ShareAcknowledge v2"),
])
def test_the_libraries_that_speak_them_work_on_a_fresh_cluster(
        profile: str, feature: str, release: str, state: Compat, sent: str) -> None:
    result = check_feature(client_profile(profile), fresh(release), feature)
    assert result.state is state, result.reason
    assert sent in result.versions_text


def test_share_groups_wait_for_share_version_on_4_1() -> None:
    """4.1 brokers advertise the share-group APIs, but a fresh 4.1 cluster has share.version
    0 (a preview): the verdict breaks on the level and names the fix."""
    result = check_feature(LIBRDKAFKA, fresh("4.1"), "share_groups")
    assert result.state is Compat.BREAKS
    assert result.reason == (
        "share.version needs 1+; broker 1 has not finalized it; to finalize it: "
        "kafka-features.sh upgrade --feature share.version=1 (an emulated cluster: kclient "
        "emulate --finalized-feature share.version=1)")
    assert "ShareFetch v1" in result.versions_text  # the versions would do


def test_an_upgraded_4_0_cluster_without_group_version_breaks_kip848() -> None:
    upgraded = [BrokerVersions(1, "broker", 9092, release_profile("4.0"))]  # nothing finalized
    result = check_feature(LIBRDKAFKA, upgraded, "kip848")
    assert result.state is Compat.BREAKS and result.reason is not None
    assert result.reason.startswith("group.version needs 1+; broker 1 has not finalized it")
    at_zero = [BrokerVersions(1, "broker", 9092, release_profile("4.0"),
                              finalized_features={"group.version": (0, 0)})]
    assert "broker 1 has it at level 0" in str(check_feature(LIBRDKAFKA, at_zero,
                                                             "kip848").reason)


@pytest.mark.parametrize(("profile", "feature", "source"), [
    ("librdkafka==2.15.0", "streams_groups", "no StreamsGroupHeartbeat request in src/"),
    ("librdkafka==2.14.0", "share_groups", "(from 2.15)"),
    ("kafka-python==3.0.12", "share_groups", "no ShareFetch request in kafka/protocol"),
    ("aiokafka==0.14.0", "share_groups", "no ShareFetch request in aiokafka/protocol"),
    ("java==4.0", "share_groups", "(from 4.1)"),
])
def test_libraries_that_do_not_speak_them_say_where_that_was_read(
        profile: str, feature: str, source: str) -> None:
    result = check_feature(client_profile(profile), fresh("4.3"), feature)
    assert result.state is Compat.BREAKS and source in str(result.reason)


def test_kclient_compat_judges_them_with_the_release_levels() -> None:
    run = run_kclient("compat", "--release", "4.1", "--release", "4.2", "--client",
                      "librdkafka==2.15.0", "--feature", "share_groups", "--format", "json")
    assert run.returncode == 1, run.stderr  # breaks on 4.1
    states = {cluster["cluster"]: cluster["clients"][0]["features"][0]["state"]
              for cluster in json.loads(run.stdout)["clusters"]}
    assert states == {"Kafka 4.1": "breaks", "Kafka 4.2": "works"}
