"""Real transactional producers commit on emulated 0.11, 2.0, 3.9 and 4.0 clusters.

confluent-kafka (librdkafka), kafka-python, aiokafka and kafkajs each run a
read-process-write transaction between two aborted ones (:mod:`.real_transactions`);
a read_committed consumer then sees exactly the committed records: the aborted ones
are stored, with their ABORT markers, and the consumer hides them through the Fetch's
aborted transactions.  The group's offsets become visible with the commit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.protocol.constants import ApiKey

from .real_clients import install_node_packages
from .real_transactions import (
    ABORTED,
    COUNT,
    GROUP,
    SINK,
    SOURCE,
    expected,
    rpw_aiokafka,
    rpw_confluent_kafka,
    rpw_kafka_python,
    rpw_kafkajs,
    seed,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

RELEASES = ["0.11", "2.0", "3.9", "4.0"]
LIBRARIES: dict[str, tuple[str, Callable[..., list[str]]]] = {
    "confluent-kafka": ("confluent_kafka", rpw_confluent_kafka),
    "kafka-python": ("kafka", rpw_kafka_python),
    "aiokafka": ("aiokafka", rpw_aiokafka),
    "kafkajs": ("", rpw_kafkajs),
}


@pytest.fixture(scope="module")
def kafkajs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kafkajs-txn")
    reason = install_node_packages(directory, ["kafkajs@2"])
    if reason is not None:
        pytest.skip(reason)
    return directory


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("library", list(LIBRARIES))
def test_read_process_write_commits_and_read_committed_hides_aborts(
        library: str, release: str, request: pytest.FixtureRequest) -> None:
    module, run = LIBRARIES[library]
    if module:
        pytest.importorskip(module)
    pytest.importorskip("kafka")  # builds the seed records
    extra = [request.getfixturevalue("kafkajs_dir")] if library == "kafkajs" else []
    with ThreadedEmulator(EmulatedCluster([release, release])) as emulator:
        seed(emulator, release)
        got = run(emulator, *extra)
        assert sorted(got) == expected(), (library, release, got)
        state = emulator.cluster.state
        # The group's offsets came with the commit, through TxnOffsetCommit.
        assert state.offsets.committed(GROUP)[(SOURCE, 0)].offset == COUNT
        # The aborted records are in the log, behind ABORT markers: hidden by the client.
        sink = state.topics[SINK].partitions
        aborted = [t for log in sink for t in log.producers.aborted_between(0, 1 << 62)]
        assert len(aborted) >= 2, aborted
        stored = sum(log.high_watermark for log in sink)
        assert stored >= COUNT + 2 * ABORTED + 3, stored  # records and markers
        assert all(log.last_stable_offset == log.high_watermark for log in sink)
        sent = {key for broker in emulator.cluster.brokers for key, _ in broker.received}
        assert {ApiKey.INIT_PRODUCER_ID, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT} <= sent


@pytest.mark.parametrize("release", ["2.0", "3.9"])
def test_librdkafka_zombie_producer_is_fenced(release: str) -> None:
    """A second producer with the same transactional.id fences the first: its open
    transaction is aborted and its commit fails, fatally (librdkafka sends EndTxn v1, so
    the broker answers INVALID_PRODUCER_EPOCH on both releases; librdkafka reports
    _FENCED; test_transactions_api checks the errors of each version)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with ThreadedEmulator(EmulatedCluster([release])) as emulator:
        emulator.cluster.state.create_topic(SINK, 1)
        common = {"bootstrap.servers": emulator.bootstrap_servers, "log_level": 0,
                  "transactional.id": "zombie", "socket.timeout.ms": 5000}
        zombie = confluent_kafka.Producer(common)
        zombie.init_transactions(10)
        zombie.begin_transaction()
        zombie.produce(SINK, value=b"from the zombie")
        zombie.flush(10)
        successor = confluent_kafka.Producer(common)
        successor.init_transactions(10)  # aborts the zombie's transaction
        successor.begin_transaction()
        successor.produce(SINK, value=b"from the successor")
        successor.commit_transaction(10)
        with pytest.raises(confluent_kafka.KafkaException) as raised:
            zombie.commit_transaction(10)
        error = raised.value.args[0]
        assert error.fatal() and error.code() == confluent_kafka.KafkaError._FENCED
        log = emulator.cluster.state.topics[SINK].partitions[0]
        assert [(t.first_offset, t.last_offset) for t in log.producers.aborted_between(
            0, log.high_watermark)] == [(0, 1)]
