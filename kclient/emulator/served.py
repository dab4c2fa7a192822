"""What a request handler sees of the broker it runs on, and the helpers every handler
module shares (:mod:`kclient.emulator.apis`, :mod:`kclient.emulator.txn_apis`, ...).

A handler takes the broker that received the request (as :class:`Served`: its node
id, the cluster state, whether it runs, its finalized feature levels, its release and
the brokers Metadata lists), the request version and the decoded header and body, and
returns the response body (:data:`Body`) or None for a request Kafka does not answer.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kclient.emulator.rules import release_at_least

if TYPE_CHECKING:
    from kclient.emulator.state import ClusterState

__all__ = ["Body", "BrokerEntry", "Handler", "Served", "coordinator_for", "fences_on_timeout",
           "node_ids"]

#: A response body: snake_case field names to values.
Body = dict[str, Any]


class BrokerEntry(Protocol):
    """A broker as Metadata lists it."""

    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class Served(Protocol):
    """What a request handler sees of the broker that received the request."""

    @property
    def node_id(self) -> int: ...
    @property
    def state(self) -> ClusterState: ...
    @property
    def running(self) -> bool: ...
    @property
    def finalized_features(self) -> Mapping[str, tuple[int, int]]: ...
    @property
    def release(self) -> str: ...
    def listed(self) -> Sequence[BrokerEntry]: ...


def fences_on_timeout(broker: Served) -> bool:
    """Whether this broker's transaction coordinator fences the producer of a timed-out
    transaction (an epoch bump with the abort: Kafka 1.0+, ``abortTimedOutTransactions``)."""
    return release_at_least(broker.release, "1.0")


#: A request handler: ``(broker, version, header, request) -> body``.
Handler = Callable[[Served, int, Any, Any], Awaitable[Body | None]]


def node_ids(broker: Served) -> list[int]:
    """The listed brokers' node ids, in ascending order."""
    return sorted(b.node_id for b in broker.listed())


def coordinator_for(broker: Served, key: str) -> BrokerEntry | None:
    """The broker (as listed) that coordinates group or transactional id ``key``."""
    listed = sorted(broker.listed(), key=lambda b: b.node_id)
    return listed[zlib.crc32(key.encode()) % len(listed)] if listed else None
