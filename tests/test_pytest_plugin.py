"""The pytest plugin, run the way a user's suite runs it (pytester, entry point)."""

from __future__ import annotations

import pytest

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
