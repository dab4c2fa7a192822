"""The client software of a broker's connections (KIP-511), as a Kafka broker keeps it.

A Kafka broker registers the ``ClientSoftwareName`` / ``ClientSoftwareVersion``
of every connection whose ApiVersions v3+ request is valid (Kafka's
``SocketServer`` intercepts it; ``ApiVersionsRequest.isValid``); a connection that
sent ApiVersions below v3, or none, stays ``unknown`` / ``unknown``.  It counts
connections per client software (``socket-server-metrics`` ``connections``) and
requests per version (``RequestsPerSec``; ``DeprecatedRequestsPerSec`` per client
software).  :class:`SoftwareLog` keeps the same per client software: the
connections that named it (every one since the broker was created, and those open
now) and every request it sent, per API and version, for at most
``ServerLimits.client_software`` distinct client software (the others are
counted in :attr:`SoftwareLog.dropped`), so that tests and demos get a complete
inventory of real libraries (:meth:`kclient.emulator.EmulatedCluster.inventory`).
"""

from __future__ import annotations

from collections import Counter

import attrs

from kclient.negotiation.software import UNKNOWN_SOFTWARE, ClientSoftware

__all__ = ["Connection", "SoftwareLog", "SoftwareSeen"]

_UNKNOWN = ClientSoftware(UNKNOWN_SOFTWARE, UNKNOWN_SOFTWARE)


@attrs.define
class Connection:
    """One client connection: the software it named (``unknown`` until it does)."""

    software: ClientSoftware = _UNKNOWN
    #: The software the connection is counted under (``None``: not yet).
    counted: ClientSoftware | None = None


@attrs.define
class SoftwareSeen:
    """What a broker saw of one client software: connections and requests per version."""

    connections: int = 0
    open: int = 0
    requests: Counter[tuple[int, int]] = attrs.field(factory=Counter)


class SoftwareLog:
    """Per client software, its connections and requests (see the module text)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self.seen: dict[ClientSoftware, SoftwareSeen] = {}
        #: Requests (and connections) of client software past the limit, not kept.
        self.dropped = 0

    def _entry(self, software: ClientSoftware) -> SoftwareSeen | None:
        entry = self.seen.get(software)
        if entry is None:
            if len(self.seen) >= self.limit:
                self.dropped += 1
                return None
            entry = self.seen[software] = SoftwareSeen()
        return entry

    def request(self, connection: Connection, api_key: int, version: int) -> None:
        """Count a request of ``connection`` under the software it named so far."""
        software = connection.software
        if connection.counted != software:
            self.closed(connection)
            entry = self._entry(software)
            if entry is None:
                return
            entry.connections += 1
            entry.open += 1
            connection.counted = software
        entry = self.seen.get(software)
        if entry is not None:
            entry.requests[api_key, version] += 1

    def closed(self, connection: Connection) -> None:
        """The connection is gone (or named another software): no longer open under its own."""
        counted, connection.counted = connection.counted, None
        if counted is not None and counted in self.seen:
            self.seen[counted].open -= 1
