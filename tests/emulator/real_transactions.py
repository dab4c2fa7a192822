"""Real transactional producers at work against the emulator: read-process-write.

Each ``rpw_*`` function makes one library run the same scenario against a running
:class:`~kclient.emulator.ThreadedEmulator` whose topics ``in`` (seeded with
:data:`COUNT` records) and ``out`` exist:

1. a transactional producer writes ``aborted-N`` records to ``out`` and aborts;
2. a consumer of group ``rpw`` reads every record of ``in``; the producer writes
   ``out-<value>`` for each, sends the consumed offsets to the transaction and commits;
3. it writes ``late-N`` records and aborts again;
4. a read_committed consumer reads ``out``'s two partitions from the start.

It returns what that last consumer saw; the caller checks it is exactly the committed
records (the aborted ones are in the log, hidden by the client through the Fetch's
aborted transactions) and that the group's offsets were committed with the
transaction.  Every client timeout is short and every loop has a deadline.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from kclient.emulator import ThreadedEmulator
from kclient.emulator.records import read_record_set

from .real_clients import node_json

SOURCE, SINK, GROUP = "in", "out", "rpw"
COUNT = 10
ABORTED = 3
DEADLINE = 20.0


def seed(emulator: ThreadedEmulator, release: str) -> None:
    """Create ``in`` (1 partition, :data:`COUNT` records) and ``out`` (2 partitions)."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    state = emulator.cluster.state
    source = state.create_topic(SOURCE, 1)
    state.create_topic(SINK, 2)
    # Kafka 0.11+ brokers store record batches (magic 2); kafka-python builds them.
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(COUNT):
        builder.append(timestamp=1_700_000_000_000 + i, key=None,
                       value=f"v{i}".encode(), headers=[])
    builder.close()
    source.partitions[0].append(read_record_set(bytes(builder.buffer())))


def expected() -> list[str]:
    """What the read_committed consumer must see, sorted."""
    return sorted(f"out-v{i}" for i in range(COUNT))


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------
def rpw_confluent_kafka(emulator: ThreadedEmulator) -> list[str]:
    import confluent_kafka

    common = {"bootstrap.servers": emulator.bootstrap_servers, "socket.timeout.ms": 5000,
              "log_level": 0, "reconnect.backoff.max.ms": 500}
    producer = confluent_kafka.Producer({**common, "transactional.id": "rpw-librdkafka",
                                         "linger.ms": 5, "transaction.timeout.ms": 20000})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(ABORTED):
        producer.produce(SINK, key=str(i), value=f"aborted-{i}")
    producer.flush(10)
    producer.abort_transaction(10)

    consumer = confluent_kafka.Consumer({
        **common, "group.id": GROUP, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "isolation.level": "read_committed",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer.subscribe([SOURCE])
    read: list[Any] = []
    until = time.monotonic() + DEADLINE
    while len(read) < COUNT and time.monotonic() < until:
        read.extend(m for m in consumer.consume(100, 0.2) if not m.error())
    producer.begin_transaction()
    for message in read:
        producer.produce(SINK, key=message.value(), value=b"out-" + message.value())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 10)
    producer.commit_transaction(10)
    consumer.close()

    producer.begin_transaction()
    for i in range(ABORTED):
        producer.produce(SINK, key=str(i), value=f"late-{i}")
    producer.flush(10)
    producer.abort_transaction(10)

    reader = confluent_kafka.Consumer({**common, "group.id": "reader",
                                       "isolation.level": "read_committed"})
    reader.assign([confluent_kafka.TopicPartition(SINK, p, confluent_kafka.OFFSET_BEGINNING)
                   for p in range(2)])
    got: list[str] = []
    until = time.monotonic() + DEADLINE
    while len(got) < COUNT and time.monotonic() < until:
        got.extend(m.value().decode() for m in reader.consume(100, 0.2) if not m.error())
    got.extend(m.value().decode() for m in reader.consume(100, 0.2) if not m.error())
    reader.close()
    return got


# -- kafka-python ---------------------------------------------------------------------------------
def rpw_kafka_python(emulator: ThreadedEmulator) -> list[str]:
    import kafka
    from kafka.structs import OffsetAndMetadata

    bootstrap = emulator.bootstrap_servers
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000,
                                   transactional_id="rpw-kafka-python", linger_ms=5)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(ABORTED):
            producer.send(SINK, key=str(i).encode(), value=f"aborted-{i}".encode())
        producer.flush(10)
        producer.abort_transaction()

        consumer = kafka.KafkaConsumer(
            SOURCE, bootstrap_servers=bootstrap, group_id=GROUP,
            auto_offset_reset="earliest", enable_auto_commit=False,
            isolation_level="read_committed", request_timeout_ms=10000,
            session_timeout_ms=6000, heartbeat_interval_ms=1000)
        read: list[Any] = []
        until = time.monotonic() + DEADLINE
        while len(read) < COUNT and time.monotonic() < until:
            for records in consumer.poll(200).values():
                read.extend(records)
        producer.begin_transaction()
        for record in read:
            producer.send(SINK, key=record.value, value=b"out-" + record.value)
        offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1)
                   for tp in consumer.assignment()}
        producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
        producer.commit_transaction()
        consumer.close()

        producer.begin_transaction()
        for i in range(ABORTED):
            producer.send(SINK, key=str(i).encode(), value=f"late-{i}".encode())
        producer.flush(10)
        producer.abort_transaction()
    finally:
        producer.close(5)
    reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                 isolation_level="read_committed", request_timeout_ms=10000)
    reader.assign([kafka.TopicPartition(SINK, p) for p in range(2)])
    got: list[str] = []
    try:
        until = time.monotonic() + DEADLINE
        while len(got) < COUNT and time.monotonic() < until:
            for records in reader.poll(200).values():
                got.extend(r.value.decode() for r in records)
        for records in reader.poll(200).values():
            got.extend(r.value.decode() for r in records)
    finally:
        reader.close()
    return got


# -- aiokafka -------------------------------------------------------------------------------------
async def _aiokafka(bootstrap: str) -> list[str]:
    import aiokafka

    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000,
                                         transactional_id="rpw-aiokafka")
    await producer.start()
    try:
        await producer.begin_transaction()
        for i in range(ABORTED):
            await producer.send(SINK, key=str(i).encode(), value=f"aborted-{i}".encode())
        await producer.abort_transaction()

        consumer = aiokafka.AIOKafkaConsumer(
            SOURCE, bootstrap_servers=bootstrap, group_id=GROUP,
            auto_offset_reset="earliest", enable_auto_commit=False,
            isolation_level="read_committed", request_timeout_ms=10000)
        await consumer.start()
        try:
            read: list[Any] = []
            async with asyncio.timeout(DEADLINE):
                while len(read) < COUNT:
                    for records in (await consumer.getmany(timeout_ms=200)).values():
                        read.extend(records)
            async with producer.transaction():
                for record in read:
                    await producer.send(SINK, key=record.value, value=b"out-" + record.value)
                offsets = {tp: await consumer.position(tp) for tp in consumer.assignment()}
                await producer.send_offsets_to_transaction(offsets, GROUP)
        finally:
            await consumer.stop()

        await producer.begin_transaction()
        for i in range(ABORTED):
            await producer.send(SINK, key=str(i).encode(), value=f"late-{i}".encode())
        await producer.abort_transaction()
    finally:
        await producer.stop()
    reader = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                       isolation_level="read_committed")
    reader.assign([aiokafka.TopicPartition(SINK, p) for p in range(2)])
    await reader.start()
    got: list[str] = []
    try:
        until = time.monotonic() + DEADLINE
        while len(got) < COUNT and time.monotonic() < until:
            for records in (await reader.getmany(timeout_ms=200)).values():
                got.extend(r.value.decode() for r in records)
        for records in (await reader.getmany(timeout_ms=200)).values():
            got.extend(r.value.decode() for r in records)
    finally:
        await reader.stop()
    return got


def rpw_aiokafka(emulator: ThreadedEmulator) -> list[str]:
    return asyncio.run(_aiokafka(emulator.bootstrap_servers))


# -- kafkajs --------------------------------------------------------------------------------------
KAFKAJS = r"""
const { Kafka, logLevel } = require('kafkajs');
const [brokers, count, aborted] = [process.argv[2].split(','), +process.argv[3], +process.argv[4]];
(async () => {
  const kafka = new Kafka({ clientId: 'kafkajs-rpw', brokers, logLevel: logLevel.NOTHING,
                            connectionTimeout: 3000, requestTimeout: 10000,
                            retry: { retries: 5, maxRetryTime: 2000 } });
  const producer = kafka.producer({ transactionalId: 'rpw-kafkajs', idempotent: true,
                                    maxInFlightRequests: 1 });
  await producer.connect();
  const values = (prefix) => [...Array(aborted).keys()].map((i) => ({ key: String(i),
                                                                       value: prefix + i }));
  let txn = await producer.transaction();
  await txn.send({ topic: 'out', messages: values('aborted-') });
  await txn.abort();

  const consumer = kafka.consumer({ groupId: 'rpw', sessionTimeout: 6000,
                                    heartbeatInterval: 500, maxWaitTimeInMs: 200,
                                    readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic: 'in', fromBeginning: true });
  const read = [];
  await new Promise((resolve) => {
    consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
      read.push({ partition, offset: message.offset, value: message.value.toString() });
      if (read.length >= count) resolve();
    } });
  });
  await consumer.stop();
  txn = await producer.transaction();
  await txn.send({ topic: 'out', messages: read.map((r) => ({ key: r.value,
                                                                 value: 'out-' + r.value })) });
  const last = read[read.length - 1];
  await txn.sendOffsets({ consumerGroupId: 'rpw', topics: [{ topic: 'in', partitions: [
    { partition: last.partition, offset: String(+last.offset + 1) }] }] });
  await txn.commit();
  await consumer.disconnect();

  txn = await producer.transaction();
  await txn.send({ topic: 'out', messages: values('late-') });
  await txn.abort();
  await producer.disconnect();

  const reader = kafka.consumer({ groupId: 'reader', maxWaitTimeInMs: 200,
                                  readUncommitted: false });
  await reader.connect();
  await reader.subscribe({ topic: 'out', fromBeginning: true });
  const got = [];
  await new Promise((resolve) => {
    reader.run({ eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length >= count) setTimeout(resolve, 200);
    } });
  });
  await reader.disconnect();
  console.log(JSON.stringify(got));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"""


def rpw_kafkajs(emulator: ThreadedEmulator, directory: Path) -> list[str]:
    got: list[str] = node_json(directory, "kafkajs-rpw.js", KAFKAJS,
                               emulator.bootstrap_servers, str(COUNT), str(ABORTED))
    return got
