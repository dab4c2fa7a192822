"""Default values of the client's options, in one light module.

Client, SyncClient, Connection and the CLI read their defaults from here, so a
signature shows the same number everywhere and importing :class:`SyncClient`
does not load the asyncio machinery just to learn a default.
"""

from __future__ import annotations

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_BROKERS", "DEFAULT_REQUEST_TIMEOUT"]

#: Seconds to wait for a TCP (and TLS) connection to a broker.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds to wait for the answer to one request (Kafka's clients use 30 s too).
DEFAULT_REQUEST_TIMEOUT = 30.0
#: The most brokers a Metadata answer may list (one connection and task each).
DEFAULT_MAX_BROKERS = 10_000
