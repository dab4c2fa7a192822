"""Real clients and hostile ones against one emulated cluster at once.

Usage: ``python -m benchmarks hostile [-- --seconds S --messages N]``.

A three-broker emulated Kafka 3.9 cluster serves, in the same process as the
emulator's users do it (a :class:`~kclient.emulator.ThreadedEmulator`):

* real work: confluent-kafka (librdkafka) produces ``--messages`` messages
  idempotently and a consumer group reads them all back, committing offsets, in a
  loop for ``--seconds``; its rounds are counted and timed;
* a probe: a kclient connection asks Metadata every 50 ms; the slowest answer is
  the longest the emulator's loop was kept from answering an innocent client;
* hostile clients, each in its own thread, in a loop: Produce of gzip'd magic 1
  message sets with a negative inner size and of gzip bombs, a Fetch naming one
  partition 200 times with the largest limits, CreateTopics of 2^31-1 partitions,
  connections that send a 48 MiB frame's first bytes and stall or vanish, a
  ListOffsets naming one partition 20,000 times, floods of ApiVersions, JoinGroups
  whose clients leave while they wait.

The report gives the real client's rounds (without and with hostile clients, same
run), the probe's slowest answer, the process's peak memory and the emulator's own
failures (exceptions it logged).  Exit status 1 when the real client failed, the
emulator logged an exception, or the probe waited more than a second.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

TOPIC = "work"


class _Failures(logging.Handler):
    """Counts the exceptions the emulator logs (a request it failed on)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def _records_gzip(inner: bytes) -> bytes:
    body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">ii", -1, len(inner)) + inner
    return struct.pack(">qiI", 0, len(body) + 4, 0) + body


def _hostile_requests() -> dict[str, bytes]:
    """The hostile requests, encoded once (frames ready to send)."""
    from kclient.protocol import encode_request, frame

    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = squeeze.compress(struct.pack(">qiIbb", 0, 1 << 30, 0, 1, 0))
    for _ in range(128):
        bomb += squeeze.compress(bytes(1 << 20))
    bomb += squeeze.flush()

    def produce(records: bytes) -> bytes:
        return frame(encode_request(0, 2, 1, "hostile", {
            "acks": -1, "timeout_ms": 1000, "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}]}))

    partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 2**31 - 1,
                 "current_leader_epoch": -1, "log_start_offset": -1}
    return {
        "negative-size": produce(_records_gzip(_gzip(struct.pack(">qi", 0, -12) + bytes(40)))),
        "gzip-bomb": produce(_records_gzip(bomb)),
        "fetch-200x": frame(encode_request(1, 11, 1, "hostile", {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 2**31 - 1,
            "topics": [{"topic": TOPIC, "partitions": [partition] * 200}]})),
        "create-2^31": frame(encode_request(19, 5, 1, "hostile", {"topics": [
            {"name": "huge", "num_partitions": 2**31 - 1, "replication_factor": 1}],
            "timeout_ms": 1000})),
        "list-offsets-20k": frame(encode_request(2, 5, 1, "hostile", {
            "replica_id": -1, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "timestamp": 1}] * 20_000}]})),
        "api-versions": frame(encode_request(18, 0, 1, "hostile", {})) * 200,
        "join-and-leave": frame(encode_request(11, 3, 1, "hostile", {
            "group_id": "hostile", "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 300_000, "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]})),
    }


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data)


def _hostile_loop(name: str, request: bytes, addresses: list[tuple[str, int]],
                  stop: threading.Event, counts: dict[str, int]) -> None:
    index = 0
    while not stop.is_set():
        host, port = addresses[index % len(addresses)]
        index += 1
        try:
            with socket.create_connection((host, port), timeout=5) as sock:
                if name == "stalled-frame":
                    sock.sendall(struct.pack(">i", 48 << 20) + bytes(1 << 20))
                    stop.wait(0.5)
                else:
                    sock.sendall(request)
                    if name != "join-and-leave":
                        sock.settimeout(10)
                        sock.recv(1 << 16)
                    else:
                        stop.wait(0.05)  # leave while the join waits
        except OSError:
            pass
        counts[name] = counts.get(name, 0) + 1


def _real_round(bootstrap: str, messages: int, round_no: int) -> float:
    import confluent_kafka

    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "log_level": 0}
    started = time.monotonic()
    producer = confluent_kafka.Producer({**common, "enable.idempotence": True,
                                         "linger.ms": 5, "message.timeout.ms": 20000})
    errors: list[Any] = []
    for i in range(messages):
        producer.produce(TOPIC, value=b"m%d-%d" % (round_no, i),
                         on_delivery=lambda err, _m: errors.append(err) if err else None)
        producer.poll(0)
    if producer.flush(30) or errors:
        raise RuntimeError(f"round {round_no}: produce failed: {errors[:2]}")
    consumer = confluent_kafka.Consumer({
        **common, "group.id": f"work-{round_no}", "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe([TOPIC])
    wanted = {b"m%d-%d" % (round_no, i) for i in range(messages)}
    deadline = time.monotonic() + 40
    try:
        while wanted and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, 0.2) if not m.error()]
            if batch:
                wanted -= {m.value() for m in batch}
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    if wanted:
        raise RuntimeError(f"round {round_no}: {len(wanted)} messages never came back")
    return time.monotonic() - started


async def _probe(bootstrap: str, stop: threading.Event, worst: list[float]) -> None:
    from kclient.net import Connection

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    async with Connection(host, int(port)) as conn:
        while not stop.is_set():
            started = time.monotonic()
            await conn.request("Metadata", {"topics": []}, 1)
            worst[0] = max(worst[0], time.monotonic() - started)
            await asyncio.sleep(0.05)


def run(seconds: float, messages: int,
        say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the harness; returns the figures (see the module text)."""
    from kclient.emulator import EmulatedCluster, ThreadedEmulator

    failures = _Failures()
    logging.getLogger("kclient.emulator").addHandler(failures)
    emulator = ThreadedEmulator(EmulatedCluster(["3.9", "3.9", "3.9"])).start()
    try:
        emulator.cluster.state.create_topic(TOPIC, 3)
        bootstrap = emulator.bootstrap_servers
        addresses = [(b.host, b.port) for b in emulator.cluster.brokers]
        quiet = [_real_round(bootstrap, messages, 0)]
        stop = threading.Event()
        counts: dict[str, int] = {}
        requests = _hostile_requests()
        requests["stalled-frame"] = b""
        threads = [threading.Thread(target=_hostile_loop, daemon=True,
                                    args=(name, data, addresses, stop, counts))
                   for name, data in requests.items()]
        worst = [0.0]
        probe = threading.Thread(target=lambda: asyncio.run(_probe(bootstrap, stop, worst)),
                                 daemon=True)
        for thread in [*threads, probe]:
            thread.start()
        busy: list[float] = []
        end = time.monotonic() + seconds
        round_no = 1
        while time.monotonic() < end or not busy:
            busy.append(_real_round(bootstrap, messages, round_no))
            round_no += 1
        stop.set()
        for thread in [*threads, probe]:
            thread.join(15)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        figures = {"quiet_round": quiet[0], "busy_rounds": len(busy),
                   "busy_round_mean": sum(busy) / len(busy), "busy_round_max": max(busy),
                   "probe_worst": worst[0], "peak_rss_mib": peak, "hostile": dict(counts),
                   "emulator_failures": list(failures.records)}
    finally:
        stop_error = None
        try:
            emulator.stop()
        except Exception as exc:  # reported, not raised: the figures matter more
            stop_error = repr(exc)
        logging.getLogger("kclient.emulator").removeHandler(failures)
    figures["stop_error"] = stop_error
    say(f"real client (confluent-kafka, {messages} messages produced idempotently and "
        f"consumed in a group): quiet round {figures['quiet_round']:.2f} s; with hostile "
        f"clients {figures['busy_rounds']} rounds, mean {figures['busy_round_mean']:.2f} s, "
        f"slowest {figures['busy_round_max']:.2f} s")
    say(f"probe (Metadata every 50 ms): slowest answer {figures['probe_worst'] * 1000:.0f} ms")
    say("hostile requests sent: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    say(f"peak memory of the process: {peak} MiB; emulator failures logged: "
        f"{len(failures.records)}; stop: {stop_error or 'clean'}")
    return figures


def main(argv: list[str]) -> int:
    """Command line of the harness (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks hostile --")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--messages", type=int, default=500)
    args = parser.parse_args(argv)
    figures = run(args.seconds, args.messages)
    bad = (figures["emulator_failures"] or figures["probe_worst"] > 1.0
           or figures["stop_error"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
