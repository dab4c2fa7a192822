"""Default values of the client's options, in one light module.

Client, SyncClient, Connection and the CLI read their defaults from here, so a
signature shows the same number everywhere and importing :class:`SyncClient`
does not load the asyncio machinery just to learn a default.
"""

from __future__ import annotations

__all__ = [
    "CLOSE_WAIT",
    "DEFAULT_AUTH_RETRY_BACKOFF",
    "DEFAULT_CLIENT_ID",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_BROKERS",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RESPONSE_SIZE",
    "DEFAULT_METADATA_REFRESH_INTERVAL",
    "DEFAULT_RECONNECT_BACKOFF",
    "DEFAULT_RECONNECT_BACKOFF_MAX",
    "DEFAULT_REQUEST_TIMEOUT",
    "METADATA_BYTES_PER_BROKER",
    "MIN_AUTH_RETRY_BACKOFF",
    "MIN_METADATA_REFRESH_INTERVAL",
    "metadata_answer_limit",
]

#: Seconds to wait for a TCP (and TLS) connection to a broker.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds to wait for the answer to one request (Kafka's clients use 30 s too).
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Seconds between periodic Metadata requests (``None`` turns them off).
DEFAULT_METADATA_REFRESH_INTERVAL = 300.0
#: Connections negotiating at once while a client starts or refreshes.
DEFAULT_MAX_CONCURRENCY = 64
#: The client id in every request header.
DEFAULT_CLIENT_ID = "kclient"
#: What the application speaks when ``application=`` is not given: kclient's own
#: ranges (see :mod:`kclient.installed` for the other choices).
DEFAULT_APPLICATION = None
#: Seconds before the first reconnect to a broker; doubles per failure up to the max.
DEFAULT_RECONNECT_BACKOFF = 0.05
DEFAULT_RECONNECT_BACKOFF_MAX = 1.0
#: Seconds before trying credentials a broker refused again.
DEFAULT_AUTH_RETRY_BACKOFF = 30.0
#: The shortest Metadata interval and credential retry accepted: below these a dead
#: broker or a refused password turns into a storm of requests.
MIN_METADATA_REFRESH_INTERVAL = 0.05
MIN_AUTH_RETRY_BACKOFF = 0.05
#: The largest answer Client.request accepts (bytes), checked on the size prefix
#: before the answer is read.  Decoding multiplies the bytes (an answer of empty
#: entries about 66-fold: 15 MB grew a client by 996 MB), so 4 MiB bounds what a
#: strange broker can cost at about 270 MB; raise it for large Fetch or Metadata
#: answers (per client, or per call).
DEFAULT_MAX_RESPONSE_SIZE = 4 * 1024 * 1024
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
