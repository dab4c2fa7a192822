"""Observe, live, the request versions the installed librdkafka sends.

A librdkafka release newer than the newest tag of its repository that we can read
(confluent-kafka 2.16.1 bundles librdkafka 2.16.0; the newest tag read is v2.15.0)
cannot be profiled from its source.  This tool runs it instead: a producer (plain,
idempotent, zstd, transactional with offsets), a classic and a KIP-848 group
consumer and the admin client, through confluent-kafka, against two emulated
brokers whose ``apis=`` advertise every version kclient can decode.  A library picks
the highest version it and the broker share, so what it sends is its own ceiling --
unless that equals the emulator's (kclient's decodable maximum), where the true
ceiling may be higher and the reading of the source must say.

It prints JSON: the librdkafka and confluent-kafka versions, ``sent`` (the highest
version seen per API) and ``caps`` (the emulator's maximum for each of those APIs),
which ``tools/facts/clients.json`` records under a line's ``observed`` key
(``tools/gen_clients.py`` combines it with the source reading the line names).

Run from the repository root:  python tools/observe_librdkafka.py
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.protocol import default_catalog, default_registry

#: Seconds any one client call may take.
CALL_TIMEOUT = 15
#: Records each producer sends: compressible, so a zstd batch is really zstd.
VALUES = [(f"m{i}-" + "kclient " * 256).encode() for i in range(5)]


def decodable() -> dict[int, tuple[int, int]]:
    """Every API kclient can decode, with the highest version it decodes."""
    registry = default_registry()
    return {info.key: (0, registry.spec(f"{info.name}Request").valid.hi)
            for info in default_catalog() if f"{info.name}Request" in registry}


def _attempt(failures: list[str], label: str, call: Callable[[], Any]) -> None:
    """Run one client step; a failure (an API the emulator does not serve) is noted."""
    try:
        result = call()
        for future in result.values() if isinstance(result, dict) else ():
            future.result(CALL_TIMEOUT)
        if hasattr(result, "result"):
            result.result(CALL_TIMEOUT)
    except Exception as exc:  # the library's own failure: noted, the next step runs
        failures.append(f"{label}: {str(exc)[:120]}")


def _consume(ck: Any, base: dict[str, Any], group: str, extra: dict[str, Any]) -> Any:
    consumer = ck.Consumer({**base, "group.id": group, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False, **extra})
    consumer.subscribe(["plain"])
    got = 0
    deadline = time.monotonic() + CALL_TIMEOUT
    while got < len(VALUES) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        got += message is not None and not message.error()
    return consumer


def _produce(ck: Any, base: dict[str, Any], topic: str, extra: dict[str, Any]) -> None:
    producer = ck.Producer({**base, **extra})
    if "transactional.id" in extra:
        producer.init_transactions(CALL_TIMEOUT)
        producer.begin_transaction()
    for value in VALUES:
        producer.produce(topic, value)
    if "transactional.id" in extra:
        producer.commit_transaction(CALL_TIMEOUT)
    producer.flush(CALL_TIMEOUT)


def observe() -> dict[str, Any]:
    """Run the installed librdkafka against the emulator; what it sent, per API."""
    import confluent_kafka as ck
    from confluent_kafka import admin

    apis = decodable()
    cluster = EmulatedCluster([BrokerSpec("4.3", apis=apis, capture=True) for _ in range(2)],
                              cluster_id="observe-librdkafka", default_partitions=2)
    failures: list[str] = []
    with ThreadedEmulator(cluster) as emulator:
        base = {"bootstrap.servers": emulator.bootstrap_servers, "log_level": 0}
        for topic, extra in (("plain", {}), ("idempotent", {"enable.idempotence": True}),
                             ("zstd", {"compression.type": "zstd"}),
                             ("txn", {"transactional.id": "observe-1"})):
            _attempt(failures, f"produce {topic}",
                     lambda t=topic, e=extra: _produce(ck, base, t, e))  # type: ignore[misc]
        consumer = _consume(ck, base, "observe-classic", {"session.timeout.ms": 6000})
        consumer.commit(asynchronous=False)

        def offsets_in_transaction() -> None:
            producer = ck.Producer({**base, "transactional.id": "observe-2"})
            producer.init_transactions(CALL_TIMEOUT)
            producer.begin_transaction()
            producer.produce("txn", b"x")
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
                CALL_TIMEOUT)
            producer.commit_transaction(CALL_TIMEOUT)

        _attempt(failures, "send_offsets_to_transaction", offsets_in_transaction)
        consumer.close()
        _consume(ck, base, "observe-848", {"group.protocol": "consumer"}).close()
        client = admin.AdminClient(base)
        topic = admin.ConfigResource("topic", "observed")
        partition = ck.TopicPartition("plain", 0)
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("create_topics", lambda: client.create_topics([admin.NewTopic("observed", 2, 1)])),
            ("create_partitions",
             lambda: client.create_partitions([admin.NewPartitions("observed", 3)])),
            ("describe_configs", lambda: client.describe_configs([topic])),
            ("incremental_alter_configs", lambda: client.incremental_alter_configs([
                admin.ConfigResource("topic", "observed", incremental_configs=[
                    admin.ConfigEntry("retention.ms", "1000",
                                      incremental_operation=admin.AlterConfigOpType.SET)])])),
            ("list_consumer_groups", client.list_consumer_groups),
            ("describe_consumer_groups",
             lambda: client.describe_consumer_groups(["observe-classic"])),
            ("list_offsets",
             lambda: client.list_offsets({partition: admin.OffsetSpec.latest()})),
            ("delete_records",
             lambda: client.delete_records([ck.TopicPartition("plain", 0, 1)])),
            ("describe_cluster", client.describe_cluster),
            ("describe_topics",
             lambda: client.describe_topics(ck.TopicCollection(["plain"]))),
            ("delete_topics", lambda: client.delete_topics(["observed"])),
            ("delete_consumer_groups", lambda: client.delete_consumer_groups(["observe-848"])),
        ]
        for label, step in steps:
            _attempt(failures, label, step)
    catalog = default_catalog()
    sent: dict[str, int] = {}
    for broker in cluster.brokers:
        for key, version in broker.received:
            name = catalog.name_of(key)
            sent[name] = max(version, sent.get(name, -1))
    return {"librdkafka": ck.libversion()[0],
            "confluent_kafka": importlib.metadata.version("confluent-kafka"),
            "sent": dict(sorted(sent.items())),
            "caps": {catalog.name_of(k): hi for k, (_, hi) in sorted(apis.items())
                     if catalog.name_of(k) in sent},
            "failures": failures}


def main() -> None:
    print(json.dumps(observe(), indent=1))


if __name__ == "__main__":
    main()
