"""The pytest plugin, run the way a user's suite runs it (pytester, entry point)."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.errors import ConfigError

pytest_plugins = ["pytester"]


def test_plugin_parametrizes_releases_and_cleans_up(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_app="""
        import pytest
        from kclient.net import SyncClient

        SEEN = []

        @pytest.mark.kafka_releases("0.10.2", "2.0", "3.9")
        def test_produce_version(kafka_cluster, kafka_release):
            emulator = kafka_cluster(kafka_release, kafka_release)
            with SyncClient(emulator.bootstrap_servers,
                            metadata_refresh_interval=None) as client:
                SEEN.append((kafka_release, client.version_for("Produce")))
                assert len(client.view.brokers) == 2

        def test_one_legacy_broker(kafka_cluster):
            emulator = kafka_cluster("0.9.0", behaviour="legacy")
            assert emulator.cluster.brokers[0].behaviour

        def test_versions_grow_with_releases():
            versions = dict(SEEN)
            assert versions["0.10.2"] < versions["2.0"] < versions["3.9"]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--strict-markers")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*5 passed*"])


def test_marker_without_the_argument_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="""
        import pytest

        @pytest.mark.kafka_releases("3.9")
        def test_forgot_the_argument(kafka_cluster):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*kafka_releases needs a 'kafka_release' argument*"])


@pytest.mark.parametrize(("releases", "options", "message"), [
    ((3.9,), {}, 'kafka_cluster(): a release is text such as "3.9", got 3.9 (float); quote it'),
    ((None,), {}, 'kafka_cluster(): a release is text such as "3.9", got None (NoneType)'),
    (("3.9",), {"behaviour": 5}, "kafka_cluster(): behaviour= is a behaviour name such as "
     '"legacy" or a list of names, got 5 (int)'),
    (("3.9",), {"behaviour": ["legacy", 5]}, "behaviour= is a behaviour name"),
    (("3.9",), {"behavior": "legacy"}, "kafka_cluster(): unknown keyword argument 'behavior'; "
     "did you mean 'behaviour'? it takes releases and behaviour=, topics=, "
     "auto_create_topics=, finalized_features="),
    (("4.0",), {"finalized_features": {"group.version": -1}}, "kafka_cluster(): "
     "finalized_features= maps feature names to levels (0-32767), e.g. "
     '{"group.version": 0}, got {\'group.version\': -1}'),
    (("4.0",), {"finalized_features": ["group.version"]}, "finalized_features= maps"),
    (("4.0",), {"finalized_feature": {}}, "did you mean 'finalized_features'?"),
    (("3.9",), {"topics": {"orders": 0}}, "kafka_cluster(): topics= is a mapping of topic "
     'names to partition counts (1-10000), e.g. {"orders": 3}, or to {"partitions": 3, '
     '"configs": {...}}, or a list of names, got '
     "{'orders': 0}"),
    (("3.9",), {"topics": 5}, "topics= is a mapping"),
    (("3.9",), {"auto_create_topics": "no"},
     "kafka_cluster(): auto_create_topics= is True or False, got 'no'"),
    (("3.9",), {"brokers": 3}, "unknown keyword argument 'brokers'"),
    ((), {}, "kafka_cluster() needs at least one release"),
    (("3.9",), {"behaviour": "wobble"}, "unknown emulator behaviour 'wobble'"),
    (("3.9",), {"topics": [""]}, "kafka_cluster(): topic '' is not a name Kafka accepts: the "
     "empty string is not allowed"),
    (("3.9",), {"topics": ["."]}, "'.' is not allowed"),
    (("3.9",), {"topics": ["__consumer_offsets"]}, "one of Kafka's internal topics"),
    (("3.9",), {"topics": {"a\x00b": 1}}, "it contains '\\x00'"),
    (("3.9",), {"topics": ["a\nb"]}, "it contains '\\n'"),
    (("3.9",), {"topics": ["x" * 100_000]}, "... (100002 characters) is not a name Kafka "
     "accepts: the name is 100000 characters long, more than 249"),
])
def test_wrong_arguments_are_typed_errors_at_the_front(
        kafka_cluster: Any, releases: tuple[Any, ...], options: dict[str, Any], message: str
) -> None:
    """The installed plugin's fixture refuses them before any emulator starts."""
    with pytest.raises(ConfigError) as caught:
        kafka_cluster(*releases, **options)
    assert message in str(caught.value)
    assert caught.value.__traceback__ is not None
    assert caught.value.__traceback__.tb_next is not None
    innermost = caught.value.__traceback__
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    assert innermost.tb_frame.f_code.co_filename.endswith(
        ("pytest_plugin.py", "cluster.py", "behaviour.py"))


def test_finalized_features_make_an_upgraded_cluster(kafka_cluster: Any) -> None:
    """A 4.0 cluster starts at a fresh 4.0 cluster's levels; finalized_features= keeps
    an upgraded cluster's old ones (group.version 0: not finalized)."""
    from kclient.net import SyncClient

    fresh = kafka_cluster("4.0")
    upgraded = kafka_cluster("4.0", "4.0", finalized_features={"group.version": 0})
    for emulator, level in ((fresh, 1), (upgraded, None)):
        with SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as client:
            assert {b.finalized_level("group.version") for b in client.view.brokers} == {level}
            assert client.supports("ConsumerGroupProtocol") is (level == 1)


def test_behaviour_list_applies_to_every_broker(kafka_cluster: Any) -> None:
    emulator = kafka_cluster("0.9.0", "0.9.0", behaviour=["legacy"])
    assert all(b.behaviour for b in emulator.cluster.brokers)


def test_an_apps_own_producer_and_consumer_run_against_old_and_new_releases(
        pytester: pytest.Pytester) -> None:
    """What the plugin is for: the application's real client library (here kafka-python)
    produces and consumes in a group against emulated 0.10.2, 2.0 and 4.0 clusters."""
    pytest.importorskip("kafka")
    pytester.makepyfile(test_app="""
        import logging
        import time

        import kafka
        import pytest

        logging.getLogger("kafka").setLevel(logging.CRITICAL)

        @pytest.mark.timeout(60)
        @pytest.mark.kafka_releases("0.10.2", "2.0", "4.0")
        def test_round_trip(kafka_cluster, kafka_release):
            emulator = kafka_cluster(kafka_release, kafka_release, topics={"orders": 2})
            producer = kafka.KafkaProducer(bootstrap_servers=emulator.bootstrap_servers,
                                           request_timeout_ms=5000)
            for i in range(50):
                producer.send("orders", f"m{i}".encode())
            producer.flush(10)
            producer.close(5)
            consumer = kafka.KafkaConsumer(
                "orders", bootstrap_servers=emulator.bootstrap_servers, group_id="app",
                auto_offset_reset="earliest", request_timeout_ms=10000)
            got = []
            deadline = time.monotonic() + 20
            while len(got) < 50 and time.monotonic() < deadline:
                for records in consumer.poll(500).values():
                    got.extend(r.value for r in records)
            consumer.commit()
            consumer.close()
            assert sorted(got) == sorted(f"m{i}".encode() for i in range(50))
            assert emulator.cluster.state.offsets.committed("app")

        def test_no_auto_creation(kafka_cluster):
            emulator = kafka_cluster("3.9", auto_create_topics=False)
            assert not emulator.cluster.state.auto_create_topics
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--strict-markers")
    result.assert_outcomes(passed=4)
