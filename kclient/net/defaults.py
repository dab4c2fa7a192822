"""Default values of the client's options, in one light module.

Client, SyncClient, Connection and the CLI read their defaults from here, so a
signature shows the same number everywhere and importing :class:`SyncClient`
does not load the asyncio machinery just to learn a default.
"""

from __future__ import annotations

__all__ = [
    "CLOSE_WAIT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_BROKERS",
    "DEFAULT_REQUEST_TIMEOUT",
    "METADATA_BYTES_PER_BROKER",
    "metadata_answer_limit",
]

#: Seconds to wait for a TCP (and TLS) connection to a broker.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds to wait for the answer to one request (Kafka's clients use 30 s too).
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Seconds a close waits for one task or socket to finish before it moves on
#: without it (each such wait is bounded, so close() always returns).
CLOSE_WAIT = 5.0
#: The most brokers a Metadata answer may list (one connection and task each).
DEFAULT_MAX_BROKERS = 10_000

#: Room in kclient's own Metadata answer for one broker entry: node id, port, a
#: host name (DNS allows 253 bytes), a rack id and tagged fields fit with margin.
METADATA_BYTES_PER_BROKER = 1024
#: Room for everything else in that answer (cluster id, controller, no topics).
_METADATA_FIXED_BYTES = 64 * 1024


def metadata_answer_limit(max_brokers: int) -> int:
    """The most bytes kclient accepts for its own Metadata request's answer.

    kclient asks Metadata for no topics, so the answer is the broker list plus a
    few fields; sized from ``max_brokers`` it stays a few MiB (10.1 MiB at the
    default 10,000 brokers) where the general frame limit is 100 MiB, and a
    broker announcing more is refused before its bytes are read or decoded.
    """
    return _METADATA_FIXED_BYTES + max_brokers * METADATA_BYTES_PER_BROKER
