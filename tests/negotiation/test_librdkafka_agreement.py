"""librdkafka and kclient enable the same librdkafka features on the same broker.

The first group of the shipped features.yaml mirrors the features librdkafka
derives from a broker's ApiVersions answer.  For each release below, a real
librdkafka (confluent-kafka's Producer, with ``debug=broker,feature``) and a live
kclient client both connect to kclient's emulator running that release on
loopback.  librdkafka logs, per broker connection, one "Enabling feature X" or
"Disabling feature X" line per entry of its feature map, then "Updated enabled
protocol features to A,B,...".  The set it enabled must equal the set of the 13
mirrored features kclient reports available for the same broker.

Kafka 4.0 removed old request versions (KIP-896) and 4.1 brought some back, so
the releases span the old (0.10.2, 2.0), the last before the removal (3.9) and
the new (4.0, 4.1, 4.3).  The semantics mirrored are librdkafka 2.11.1's and
later (open-ended ranges, alternatives); an older librdkafka is skipped.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.negotiation import FeatureSet, default_features
from kclient.net import SyncClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

RELEASES = ("0.10.2", "2.0", "3.9", "4.0", "4.1", "4.3")

# librdkafka's feature names (as its debug log prints them) -> kclient's feature names.
FEATURE_NAMES: dict[str, str] = {
    "MsgVer1": "MsgVer1",
    "MsgVer2": "MsgVer2",
    "ApiVersion": "ApiVersion",
    "BrokerGroupCoordinator": "BrokerGroupCoordinator",
    "BrokerBalancedConsumer": "BrokerBalancedConsumer",
    "ThrottleTime": "ThrottleTime",
    "Sasl": "Sasl",
    "SaslHandshake": "SaslHandshake",
    "LZ4": "LZ4",
    "OffsetTime": "OffsetTime",
    "IdempotentProducer": "IdempotentProducer",
    "ZSTD": "ZSTD",
    "SaslAuthReq": "SaslAuthReq",
}

# librdkafka 2.11.1 (0x020b01ff): the first release with open-ended feature ranges.
FIRST_OPEN_ENDED = 0x020B0100
# How long librdkafka gets to connect to both its bootstrap and its node connection.
DEADLINE_SECONDS = 10.0

_DECISION = re.compile(r"\]: (?P<broker>\S+): (?P<verb>Enabling|Disabling) feature (?P<name>\w+)$")
_UPDATED = re.compile(
    r"\]: (?P<broker>\S+): Updated enabled protocol features (?:[+-]\S+ )?to (?P<names>\S*)$")


class _Lines(logging.Handler):
    """Keeps every formatted log line librdkafka hands to its logger (any thread)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            self.lines.append(record.getMessage())

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)


def _checks(lines: list[str]) -> dict[str, list[tuple[frozenset[str], frozenset[str]]]]:
    """Per broker connection name: every complete feature check librdkafka logged.

    A check is a run of Enabling/Disabling lines naming all 13 features, followed by
    the "Updated enabled protocol features to ..." line it caused.  Returns, per
    check, (features enabled by the decision lines, features in the Updated line).
    """
    pending: dict[str, list[tuple[str, bool]]] = {}
    done: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
    for line in lines:
        if (decision := _DECISION.search(line)) is not None:
            name = decision["name"]
            assert name in FEATURE_NAMES, f"librdkafka decided on an unmapped feature: {line}"
            pending.setdefault(decision["broker"], []).append(
                (name, decision["verb"] == "Enabling"))
        elif (updated := _UPDATED.search(line)) is not None:
            broker = updated["broker"]
            run = pending.pop(broker, [])
            if {name for name, _ in run} != set(FEATURE_NAMES):
                continue  # not the end of a feature check (e.g. "+ApiVersion" before one)
            names = frozenset(n for n in updated["names"].split(",") if n)
            unknown = names - set(FEATURE_NAMES)
            assert not unknown, f"librdkafka enabled unmapped features {unknown}: {line}"
            decided = frozenset(name for name, enabled in run if enabled)
            done.setdefault(broker, []).append((decided, names))
    return done


def librdkafka_verdicts(bootstrap: str, node_id: int) -> dict[str, frozenset[str]]:
    """The kclient names of the features librdkafka enabled, per broker connection.

    Waits (at most ``DEADLINE_SECONDS``) until the connection to broker ``node_id``
    (librdkafka calls it ``host:port/<id>``) has completed a feature check.
    """
    confluent_kafka = pytest.importorskip("confluent_kafka")
    handler = _Lines()
    logger = logging.getLogger(f"{__name__}.librdkafka.{bootstrap}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap,
        "debug": "broker,feature",
        "logger": logger,
        "socket.timeout.ms": 5000,
    })
    suffix = f"/{node_id}"
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        checks = _checks(handler.snapshot())
        while time.monotonic() < deadline and not any(b.endswith(suffix) for b in checks):
            producer.poll(0.1)
            checks = _checks(handler.snapshot())
    finally:
        producer.flush(1.0)
        logger.removeHandler(handler)
    seen = sorted(checks)
    assert any(b.endswith(suffix) for b in seen), (
        f"librdkafka logged no complete feature check for broker {node_id} at {bootstrap} "
        f"within {DEADLINE_SECONDS} s (complete checks for: {seen}; "
        f"{len(handler.lines)} log lines)")
    result: dict[str, frozenset[str]] = {}
    for broker, runs in checks.items():
        decided, updated = runs[-1]
        assert decided == updated, (
            f"{broker}: librdkafka's decision lines enable {sorted(decided)} but its "
            f"feature set says {sorted(updated)}")
        result[broker] = frozenset(FEATURE_NAMES[n] for n in updated)
    return result


def kclient_verdicts(bootstrap: str, node_id: int,
                     features: FeatureSet | None = None) -> frozenset[str]:
    """The mirrored features a live kclient client finds available on broker ``node_id``."""
    features = default_features() if features is None else features
    with SyncClient(bootstrap, features=features, metadata_refresh_interval=None,
                    connect_timeout=5.0, request_timeout=5.0) as client:
        report = client.report()
        answered = {b.node_id for b in client.brokers if b.error is None}
    assert answered == {node_id}, f"kclient negotiated with brokers {answered}, not {node_id}"
    mirrored = set(FEATURE_NAMES.values())
    return frozenset(r.name for r in report
                     if r.name in mirrored and r.brokers.get(node_id, False) and r.available)


@pytest.fixture(params=RELEASES)
def emulated(request: pytest.FixtureRequest) -> Iterator[ThreadedEmulator]:
    release = str(request.param)
    emulator = ThreadedEmulator(EmulatedCluster([release], cluster_id=f"agree-{release}"))
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def test_every_mirrored_feature_is_in_the_default_file() -> None:
    names = set(default_features().names())
    assert set(FEATURE_NAMES.values()) <= names


def test_librdkafka_and_kclient_enable_the_same_features(emulated: ThreadedEmulator) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    version, number = confluent_kafka.libversion()
    if number < FIRST_OPEN_ENDED:
        pytest.skip(f"librdkafka {version} predates the 2.11.1 feature semantics "
                    "features.yaml mirrors")
    broker = emulated.cluster.brokers[0]
    ours = kclient_verdicts(emulated.bootstrap_servers, broker.node_id)
    theirs = librdkafka_verdicts(emulated.bootstrap_servers, broker.node_id)
    release = broker.release
    for connection, enabled in sorted(theirs.items()):
        assert enabled == ours, (
            f"Kafka {release} ({connection}): librdkafka {version} enables "
            f"{sorted(enabled)}; kclient: {sorted(ours)}; only librdkafka: "
            f"{sorted(enabled - ours)}, only kclient: {sorted(ours - enabled)}")
