"""Connection: every step of the handshake ladder against emulated brokers, and requests."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kclient import __version__
from kclient.emulator import EmulatedBroker
from kclient.errors import (
    BrokerConnectionError,
    ConfigError,
    HandshakeError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from kclient.negotiation import ApplicationVersions, release_profile
from kclient.net import Connection, TlsConfig, validate_client_software

pytestmark = pytest.mark.timeout(30)


async def negotiate(release: str, behaviour: str = "", **options: object) -> Connection:
    broker = EmulatedBroker(1, release, behaviour=behaviour)
    await broker.start()
    conn = Connection("127.0.0.1", broker.port, **options)  # type: ignore[arg-type]
    try:
        await conn.connect()
    finally:
        await conn.close()
        await broker.stop()
    conn.test_broker = broker  # type: ignore[attr-defined]
    return conn


async def test_modern_broker_answers_v4_with_our_software(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    caplog.set_level(logging.DEBUG, logger="kclient.net")
    conn = await negotiate("3.9")
    assert conn.versions.handshake == ("send ApiVersions v4", "ApiVersions v4 answered")
    assert conn.versions.source == "api_versions"
    assert dict(conn.versions.apis) == dict(release_profile("3.9"))
    assert conn.test_broker.received[0] == (18, 4)  # type: ignore[attr-defined]
    assert "ApiVersions v4 answered" in caplog.text


async def test_step1_broker_with_range_gets_its_max() -> None:
    conn = await negotiate("2.8")
    assert conn.versions.handshake[1] == ("ApiVersions v4 rejected (UNSUPPORTED_VERSION); "
                                          "broker speaks v0-v3; retry v3")
    assert conn.test_broker.received == [(18, 4), (18, 3)]  # type: ignore[attr-defined]
    assert dict(conn.versions.apis) == dict(release_profile("2.8"))


async def test_step2_pre_2_4_broker_gets_v0() -> None:
    conn = await negotiate("2.0")
    assert conn.test_broker.received == [(18, 4), (18, 0)]  # type: ignore[attr-defined]
    assert "without a range (pre-2.4); retry v0" in conn.versions.handshake[1]
    assert dict(conn.versions.apis) == dict(release_profile("2.0"))


async def test_step3_proxy_closing_on_flexible_gets_v0_on_a_new_connection() -> None:
    conn = await negotiate("3.9", "closes-on-flexible")
    broker = conn.test_broker  # type: ignore[attr-defined]
    assert broker.received == [(18, 4), (18, 0)]
    assert broker.connections_accepted == 2
    assert "reconnect and retry v0" in conn.versions.handshake[1]
    assert dict(conn.versions.apis) == dict(release_profile("3.9"))


async def test_step4_legacy_broker_uses_the_configured_fallback() -> None:
    conn = await negotiate("0.9.0", api_version_fallback="0.9.0")
    assert conn.versions.source == "fallback:0.9.0"
    assert dict(conn.versions.apis) == dict(release_profile("0.9.0"))
    assert "broker predates ApiVersions: assume release 0.9" in conn.versions.handshake[-1]


async def test_step4_legacy_broker_without_fallback_names_the_option() -> None:
    with pytest.raises(HandshakeError, match="api_version_fallback") as info:
        await negotiate("0.9.0")
    assert info.value.broker is not None and "127.0.0.1" in info.value.broker


async def test_fallback_connection_can_send_requests() -> None:
    async with EmulatedBroker(1, "2.8", behaviour="legacy") as broker:
        conn = Connection("127.0.0.1", broker.port, api_version_fallback="2.8")
        async with conn:
            assert conn.versions.source == "fallback:2.8"
            response = await conn.request("Metadata", {"topics": []})
            assert [b.node_id for b in response.brokers] == [1]
            assert broker.received[-1] == (3, conn.version_for("Metadata"))


async def test_several_requests_in_flight_are_matched() -> None:
    async with EmulatedBroker(1, "3.9", behaviour="slow:0.05") as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        loop = asyncio.get_running_loop()
        started = loop.time()
        versions = list(range(1, 13))
        responses = await asyncio.gather(*(conn.request("Metadata", {"topics": []}, v)
                                           for v in versions))
        assert len(responses) == 12
        assert [v for _, v in broker.received[1:]] == versions
        # Pipelined: all were written before the first answer came back.
        assert loop.time() - started < 0.05 * 12 + 1


async def test_version_choice_respects_application_settings() -> None:
    app = ApplicationVersions.from_catalog(max_versions={"Metadata": 7},
                                           avoid_versions={"Metadata": [7]})
    async with EmulatedBroker(1, "3.9") as broker, \
            Connection("127.0.0.1", broker.port, application=app) as conn:
        assert conn.version_for("Metadata") == 6
        await conn.request("Metadata", {"topics": []})
        assert broker.received[-1] == (3, 6)
        with pytest.raises(UnsupportedVersionError, match="broker -1 lacks it"):
            conn.version_for("AddRaftVoter")


async def test_client_software_is_sent_and_validated() -> None:
    assert validate_client_software(None) == ("kclient", __version__)
    assert validate_client_software("my-app") == ("my-app", __version__)
    assert validate_client_software(("my.app", "1.2.3")) == ("my.app", "1.2.3")
    for bad in ("-app", "app-", "my app", "", ("ok", "1.0 beta")):
        with pytest.raises(ConfigError, match="KIP-511"):
            validate_client_software(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="client_software"):
        Connection("127.0.0.1", 9, client_software="bad name!")


@pytest.mark.parametrize(("text", "valid"), [
    ("a", True), ("9", True), ("my-app", True), ("1.0.0-rc1", True), ("A.b-C", True),
    ("", False), ("-a", False), ("a-", False), (".a", False), ("a.", False),
    ("a_b", False), ("a b", False), ("a/b", False), ("caf\u00e9", False),
    ("\u0661", False),  # an Arabic-Indic digit: \d would take it, brokers do not
    ("a\n", False),
])
def test_kip511_rule_for_name_and_version(text: str, valid: bool) -> None:
    from kclient.commands.vocabulary import CLI_VOCABULARY

    for value in (text, ("ok", text)):  # as the name, then as the version
        if valid:
            assert validate_client_software(value)[0 if value == text else 1] == text
            continue
        with pytest.raises(ConfigError) as info:
            validate_client_software(value)
        what = "name" if value == text else "version"
        for shown, option in ((str(info.value), "client_software"),
                              (CLI_VOCABULARY.text(info.value), "--client-software")):
            assert shown == (
                f"client software {what} {text!r} is invalid: brokers accept only letters, "
                "digits, '-' and '.', starting and ending with a letter or digit (KIP-511); "
                f"fix {option}")


async def test_connect_refused_and_timeout() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        port = broker.port
    with pytest.raises(BrokerConnectionError, match="cannot connect"):
        await Connection("127.0.0.1", port).connect()
    # A TCP peer that never answers the TLS handshake: named as such, not as the network.
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection("127.0.0.1", port, connect_timeout=0.2, tls=TlsConfig(verify=False))
    with pytest.raises(BrokerConnectionError, match=r"TLS handshake got no answer within 0\.2s"):
        await conn.connect()
    assert conn.closed
    server.close()
    await server.wait_closed()


async def test_request_timeout_closes_only_that_connection() -> None:
    async with EmulatedBroker(1, "3.9") as fast, EmulatedBroker(2, "3.9") as slow:
        a = Connection("127.0.0.1", fast.port)
        b = Connection("127.0.0.1", slow.port, request_timeout=0.2)
        await a.connect()
        await b.connect()
        slow.behaviour = slow.behaviour.parse("hang")
        with pytest.raises(RequestTimeoutError, match=r"within 0\.2s") as info:
            await b.request("Metadata", {"topics": []})
        # After the handshake, silence is a slow or stuck broker.
        assert str(info.value).endswith("the connection is closed (raise request_timeout "
                                        "for slow brokers)")
        assert b.closed and not a.closed
        await a.request("Metadata", {"topics": []})
        await a.close()
        with pytest.raises(BrokerConnectionError, match="not connected"):
            await a.request("Metadata", {"topics": []})


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
async def test_silence_to_api_versions_names_the_likely_causes_first(
        tls: bool, request: pytest.FixtureRequest) -> None:
    """Brokers answer ApiVersions at once: a listener that says nothing is seldom slow."""
    certificates = request.getfixturevalue("certificates") if tls else None
    async with EmulatedBroker(1, "3.9", behaviour="hang", ssl=certificates.server_context()
                              if certificates else None) as broker:
        conn = Connection("127.0.0.1", broker.port, request_timeout=0.2,
                          tls=TlsConfig(ca_file=certificates.ca_file) if certificates else None)
        with pytest.raises(RequestTimeoutError) as info:
            await conn.connect()
    causes = "a wrong port or a proxy" if tls else (
        "a wrong port, a proxy or a TLS listener (connect with TLS: tls=True)")
    assert str(info.value).endswith(
        "no answer to ApiVersions v4 within 0.2s; the connection is closed. Brokers answer "
        f"ApiVersions at once, before authentication, so this is most often {causes}, seldom "
        "a slow broker (raise request_timeout)")
    assert info.value.options == (("request_timeout",) if tls else ("tls", "request_timeout"))


async def test_versions_belong_to_the_connection() -> None:
    async with EmulatedBroker(1, "2.8") as broker:
        conn = Connection("127.0.0.1", broker.port)
        first = await conn.connect()
        await conn.close()
        await broker.restart("3.9")
        second = await conn.connect()
        await conn.close()
        assert first.apis != second.apis
        assert dict(second.apis) == dict(release_profile("3.9"))


async def test_identical_answers_are_decoded_once_and_stay_per_broker() -> None:
    """Brokers sending the same ApiVersions bytes share one decoded answer; each
    connection still reports its own broker, and a different answer is not confused."""
    from kclient.negotiation.answer import answer_cache_info

    brokers = [EmulatedBroker(n, release, finalized_features=features)
               for n, release, features in [(1, "3.9", {}), (2, "3.9", {}),
                                            (3, "3.9", {"metadata.version": (1, 21)}),
                                            (4, "2.8", {})]]
    for broker in brokers:
        await broker.start()
    try:
        hits = answer_cache_info().hits
        seen = []
        for node_id, broker in enumerate(brokers, start=1):
            async with Connection("127.0.0.1", broker.port, node_id=node_id) as conn:
                seen.append(conn.versions)
        assert answer_cache_info().hits > hits
        assert [(v.node_id, v.port) for v in seen] == [(b.node_id, b.port) for b in brokers]
        assert [dict(v.apis) for v in seen] == [dict(release_profile(r))
                                                for r in ("3.9", "3.9", "3.9", "2.8")]
        assert [v.finalized_level("metadata.version") for v in seen[:3]] == [None, None, 21]
        # The shared answer never leaks: changing one broker's map leaves the others.
        seen[0].apis.pop(0)  # type: ignore[attr-defined]
        assert 0 in seen[1].apis
        async with Connection("127.0.0.1", brokers[0].port, node_id=1) as conn:
            assert dict(conn.versions.apis) == dict(release_profile("3.9"))
    finally:
        for broker in brokers:
            await broker.stop()


# -- the application's limits apply to the ApiVersions request itself ---------------------


def api_versions_sent(broker: EmulatedBroker) -> list[list[int]]:
    """The ApiVersions versions the emulated broker received, one list per connection."""
    return [[v for key, v in log if key == 18] for log in broker.received_by_connection]


@pytest.mark.parametrize(("limits", "sent"), [
    ({"max_versions": {"ApiVersions": 1}}, [[1]]),
    ({"max_versions": {"ApiVersions": 0}}, [[0]]),
    ({"avoid_versions": {"ApiVersions": [4, 3]}}, [[2]]),
    ({}, [[4]]),
])
async def test_connection_sends_apiversions_within_the_application_limits(
        limits: dict[str, object], sent: list[list[int]]) -> None:
    app = ApplicationVersions.from_catalog(**limits)  # type: ignore[arg-type]
    conn = await negotiate("3.9", application=app)
    assert api_versions_sent(conn.test_broker) == sent  # type: ignore[attr-defined]
    assert conn.versions.handshake[-1] == f"ApiVersions v{sent[0][0]} answered"
    assert dict(conn.versions.apis) == dict(release_profile("3.9"))


async def test_limited_ladder_on_an_older_broker_skips_the_avoided_version() -> None:
    # Kafka 2.8 speaks ApiVersions v0-v3: v4 is rejected with its range, v3 is
    # avoided, so the retry is v2 (on the same connection).
    app = ApplicationVersions.from_catalog(avoid_versions={"ApiVersions": [3]})
    conn = await negotiate("2.8", application=app)
    assert api_versions_sent(conn.test_broker) == [[4, 2]]  # type: ignore[attr-defined]
    assert conn.versions.handshake[1].endswith("retry v2")


async def test_minimum_above_v0_is_kept_when_a_proxy_closes_on_flexible() -> None:
    app = ApplicationVersions.from_catalog(min_versions={"ApiVersions": 1})
    conn = await negotiate("3.9", "closes-on-flexible", application=app)
    assert api_versions_sent(conn.test_broker) == [[4], [1]]  # type: ignore[attr-defined]
    assert "reconnect and retry v1" in conn.versions.handshake[1]


async def test_application_allowing_no_apiversions_version_fails_before_connecting() -> None:
    app = ApplicationVersions.from_catalog(max_versions={"ApiVersions": 1},
                                           avoid_versions={"ApiVersions": [0, 1]})
    async with EmulatedBroker(1, "3.9") as broker:
        with pytest.raises(ConfigError, match="allows no ApiVersions version"):
            await Connection("127.0.0.1", broker.port, application=app).connect()
        assert broker.connections_accepted == 0


@pytest.mark.parametrize("cap", [1, 0])
async def test_client_with_a_capped_apiversions_sends_only_that_version(cap: int) -> None:
    from kclient.emulator import EmulatedCluster
    from kclient.net import Client

    async with EmulatedCluster(["3.9", "2.8", "2.0"]) as cluster, \
            Client(cluster.bootstrap_servers, max_versions={"ApiVersions": cap},
                   metadata_refresh_interval=None) as client:
        assert [b.node_id for b in client.view.live_brokers] == [1, 2, 3]
        for broker in cluster.brokers:
            sent = api_versions_sent(broker)
            assert sent and all(s == [cap] for s in sent), (broker.node_id, sent)
