"""One emulated Kafka broker: an asyncio server on loopback speaking real Kafka.

It answers ApiVersions (every version, with the error behaviour of its era),
Metadata (every version kclient ships, with the cluster's topics) and
DescribeCluster, advertising the API ranges of a Kafka release
(:func:`kclient.negotiation.release_profile`), and with small in-memory
semantics the APIs clients use for everyday work (:mod:`kclient.emulator.apis`:
Produce, Fetch, ListOffsets, the classic group APIs, OffsetCommit/OffsetFetch,
InitProducerId, CreateTopics, ...).  A request for an API or version the release
lacks closes the connection, as a broker of that release does (or gets a
zero-length frame with the ``zero-length-for-unknown`` behaviour); a version it
advertises but rejects (Produce v0-v2 on 4.x) gets UNSUPPORTED_VERSION, as Kafka
answers.  A request the emulator does not emulate closes the connection with
one warning on the ``kclient.emulator`` logger.  See
:class:`~kclient.emulator.behaviour.Behaviour` for the odd behaviours it can put on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kclient.emulator.apis import (
    HANDLERS,
    NO_OPERATIONS,
    UNSUPPORTED_VERSION_ANSWERS,
    WAITING_APIS,
    metadata_topics,
)
from kclient.emulator.behaviour import Behaviour
from kclient.emulator.group_apis import GROUP_HANDLERS
from kclient.emulator.inbound import ClientGone, Inbound, QueuedBytes, RequestLog, ServerLimits
from kclient.emulator.sasl import SaslServerConfig, SaslServerSession
from kclient.emulator.software import Connection, SoftwareLog
from kclient.emulator.state import ClusterState
from kclient.errors import ConfigError, KClientError
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import (
    advertised_but_rejected,
    release_feature_levels,
    release_profile,
    resolve_release,
)
from kclient.negotiation.software import SOFTWARE_PATTERN, ClientSoftware
from kclient.protocol import decode_request, encode_response, frame
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import ApiKey, ErrorCode

__all__ = ["BrokerInfo", "EmulatedBroker"]

log = logging.getLogger("kclient.emulator")

#: Requests larger than this are decoded and answered in a worker thread.
_WORK_IN_THREAD = 64 * 1024
# Kafka 2.4 (KIP-511) is the first release whose ApiVersions error lists key 18.
_KIP511_API_VERSIONS_MAX = 3


@attrs.frozen
class BrokerInfo:
    """A broker as Metadata and DescribeCluster list it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class _Close(Exception):
    """Internal: close this client connection now."""


class EmulatedBroker:
    """An emulated broker of Kafka ``release`` listening on ``host:port`` (0: a free port).

    ``apis`` replaces the release's API table with another one (key to
    ``(min, max)``; a table from another tool or a capture): the broker then
    advertises exactly that, whatever ``release`` says.  ``capture`` keeps every
    decodable request as ``(api_key, version, decoded body)`` in :attr:`captured`,
    for tests that check what a client put on the wire.

    ``peers`` is a callable returning the brokers Metadata lists (the cluster
    sets it; a lone broker lists itself).  The KIP-584 feature levels sent in
    ApiVersions v3+ start as a cluster freshly formatted with ``formatted_with``
    (default: ``release``) finalizes them, and the supported ranges as brokers
    of ``release`` report them (:func:`~kclient.negotiation.releases.release_feature_levels`;
    nothing before 4.0); ``finalized_features`` / ``supported_features`` override
    them feature by feature (``{"group.version": (0, 0)}``: an upgraded cluster
    that kept level 0; level 0 is left out of ApiVersions, as Kafka does).  A
    finalized level outside the supported range is a :class:`ConfigError`.
    ``finalized_features_epoch`` -1 (the default) means 1 when any feature is
    finalized.  A restart on another release keeps the finalized levels (an
    upgrade does not change them) and takes the new release's supported ranges.  ``ssl``
    makes it a TLS listener; ``sasl`` requires SASL authentication before any
    request other than ApiVersions, SaslHandshake and SaslAuthenticate.
    ``state`` holds the topics, groups and producer ids (the cluster shares one
    between its brokers; a lone broker makes its own).
    """

    def __init__(
        self,
        node_id: int = 1,
        release: str = "3.9",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        behaviour: Behaviour | str | Sequence[str] | None = None,
        rack: str | None = None,
        cluster_id: str = "kclient-emulated",
        controller_id: int | None = None,
        peers: Callable[[], Sequence[BrokerInfo]] | None = None,
        supported_features: Mapping[str, tuple[int, int]] | None = None,
        finalized_features: Mapping[str, tuple[int, int]] | None = None,
        finalized_features_epoch: int = -1,
        ssl: ssl.SSLContext | None = None,
        sasl: SaslServerConfig | None = None,
        apis: Mapping[int, tuple[int, int]] | None = None,
        capture: bool = False,
        state: ClusterState | None = None,
        limits: ServerLimits | None = None,
        pool: QueuedBytes | None = None,
        formatted_with: str | None = None,
    ) -> None:
        self.node_id = node_id
        #: The socket server's bounds (request size, queued bytes, request logs).
        self.limits = limits or ServerLimits()
        #: The queued-request-bytes pool (the cluster shares one between its brokers).
        self.pool = pool if pool is not None else QueuedBytes(self.limits.queued_request_bytes)
        #: Topics, groups and producer ids (shared by the brokers of a cluster).
        self.state = state if state is not None else ClusterState()
        self._apis = None if apis is None else {
            int(k): VersionRange(int(v[0]), int(v[1])) for k, v in apis.items()}
        #: Decoded requests (api_key, version, body), when created with ``capture=True``
        #: (the newest ``limits.captured_requests``).
        self.captured: list[tuple[int, int, Any]] | None = (
            RequestLog(self.limits.captured_requests) if capture else None)
        self.host = host
        self._requested_port = port
        self.rack = rack
        self.cluster_id = cluster_id
        self.controller_id = node_id if controller_id is None else controller_id
        self.peers = peers
        self.ssl = ssl
        self.sasl = sasl
        self.release = resolve_release(release)
        self._supported_overrides = dict(supported_features or {})
        defaults = release_feature_levels(formatted_with or self.release).finalized
        finalized = {name: (level, level) for name, level in defaults.items()}
        finalized.update(finalized_features or {})
        #: KIP-584 levels every ApiVersions v3+ answer reports as finalized (level 0 left out).
        self.finalized_features = {n: r for n, r in finalized.items() if r != (0, 0)}
        self.finalized_features_epoch = (finalized_features_epoch
                                         if finalized_features_epoch >= 0 or not
                                         self.finalized_features else 1)
        self.supported_features = self._supported()
        self.behaviour = Behaviour.parse(behaviour)
        self._profile = self._make_profile()
        self._rejected = self._make_rejected()
        # Encoded ApiVersions bodies by (version, features): the answer only changes
        # with the profile (cleared with it) or the feature levels (in the key).
        self._api_versions_bodies: dict[tuple[Any, ...], bytes] = {}
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()
        self.port = port
        #: Every request received, as (api_key, api_version), across connections (the
        #: newest ``limits.request_log``).
        self.received: list[tuple[int, int]] = RequestLog(self.limits.request_log)
        #: The same, one list per accepted connection, in arrival order (the newest
        #: ``limits.logged_connections`` connections, ``limits.requests_per_connection``
        #: requests each).
        self.received_by_connection: list[list[tuple[int, int]]] = RequestLog(
            self.limits.logged_connections)
        #: How many connections were accepted since the broker was created.
        self.connections_accepted = 0
        #: The client software of its connections (KIP-511) and what each sent, as Kafka's
        #: socket server keeps it (at most ``limits.client_software`` distinct ones).
        self.software = SoftwareLog(self.limits.client_software)

    # -- profile -----------------------------------------------------------------
    def _make_profile(self) -> dict[int, VersionRange]:
        profile = dict(release_profile(self.release) if self._apis is None else self._apis)
        if self.sasl is not None:
            limited = self.sasl.restrict({k: (r.min, r.max) for k, r in profile.items()})
            profile = {k: VersionRange(low, high) for k, (low, high) in limited.items()}
        return dict(sorted(profile.items()))

    def _make_rejected(self) -> dict[int, VersionRange]:
        return dict(advertised_but_rejected(self.release)) if self._apis is None else {}

    @property
    def profile(self) -> Mapping[int, VersionRange]:
        """The API ranges this broker advertises: its release's (narrowed by ``sasl``'s
        restrictions when it has them)."""
        return dict(self._profile)

    @property
    def info(self) -> BrokerInfo:
        """This broker as Metadata lists it."""
        return BrokerInfo(self.node_id, self.host, self.port, self.rack)

    @property
    def address(self) -> str:
        """``host:port`` (after :meth:`start`)."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the listener accepts connections."""
        return self._server is not None

    @property
    def open_connections(self) -> int:
        """Client connections being served now."""
        return sum(1 for task in self._clients if not task.done())

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return (f"<EmulatedBroker {self.node_id} Kafka {self.release} "
                f"[{self.behaviour}] {self.address} {state}>")

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Start listening (on the same port again after a stop, once it has one)."""
        if self._server is not None:
            return
        port = self.port or self._requested_port
        try:
            self._server = await asyncio.start_server(
                self._accept, self.host, port, ssl=self.ssl, reuse_address=True)
        except OSError as exc:
            raise ConfigError(f"emulated broker {self.node_id}: cannot listen on "
                              f"{self.host}:{port}: {exc.strerror or exc}; pick another "
                              "port") from None
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.debug("emulated broker %d (Kafka %s, %s) listening on %s", self.node_id,
                  self.release, self.behaviour, self.address)

    async def stop(self) -> None:
        """Stop listening and close every client connection."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        clients = list(self._clients)
        for task in clients:
            task.cancel()
        if clients:
            await asyncio.gather(*clients, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    def set_release(self, release: str) -> None:
        """Advertise ``release`` from the next request on, without dropping connections."""
        self.release = resolve_release(release)
        self._profile = self._make_profile()
        self._rejected = self._make_rejected()
        self._api_versions_bodies.clear()

    def _supported(self) -> dict[str, tuple[int, int]]:
        """The supported ranges: the release's, the overrides, and each finalized feature
        the release does not know supported from 0 to its level."""
        supported = {n: (r.min, r.max)
                     for n, r in release_feature_levels(self.release).supported.items()}
        supported.update(self._supported_overrides)
        for name, (low, high) in self.finalized_features.items():
            lo, hi = supported.setdefault(name, (0, high))
            if not lo <= low <= high <= hi:
                raise ConfigError(
                    f"emulated broker {self.node_id} (Kafka {self.release}): {name} "
                    f"finalized at {high} is outside the range {lo}-{hi} brokers of that "
                    "release support; give the supported range too (--supported-feature, "
                    "or supported_features in Python)")
        return dict(sorted(supported.items()))

    async def restart(self, release: str | None = None,
                      behaviour: Behaviour | str | Sequence[str] | None = None) -> None:
        """Stop, switch to ``release`` / ``behaviour`` (when given), start on the same port.

        The finalized feature levels stay (upgrading brokers does not change them);
        the supported ranges become the new release's."""
        await self.stop()
        if release is not None:
            self.release = resolve_release(release)
            self.supported_features = self._supported()
        if behaviour is not None:
            self.behaviour = Behaviour.parse(behaviour)
        self._profile = self._make_profile()
        self._rejected = self._make_rejected()
        self._api_versions_bodies.clear()
        await self.start()

    async def __aenter__(self) -> EmulatedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- serving -----------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        self.connections_accepted += 1
        try:
            await self._serve(reader, writer)
        except (_Close, ClientGone, OSError, ssl.SSLError, TimeoutError):
            pass
        except KClientError as exc:
            log.warning("emulated broker %d (Kafka %s) closes a connection: %s", self.node_id,
                        self.release, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("emulated broker %d (Kafka %s) failed on a request and closes the "
                          "connection", self.node_id, self.release)
        finally:
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(OSError, TimeoutError, ssl.SSLError,
                                     asyncio.CancelledError):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        inbound = Inbound(reader, self.limits, self.pool)
        session = None
        if self.sasl is not None:
            session = SaslServerSession(self.sasl)
        answered = 0
        connection = Connection()
        seen: list[tuple[int, int]] = RequestLog(self.limits.requests_per_connection)
        self.received_by_connection.append(seen)
        reading = asyncio.ensure_future(inbound.run())
        try:
            while True:
                request = await inbound.next_frame(reading)
                if request is None:
                    return
                try:
                    if len(request) >= 4 and not (session is not None
                                                  and session.awaiting_raw_tokens):
                        seen.append(struct.unpack_from(">hh", request))
                    if self.behaviour.hang:
                        continue
                    if session is not None and session.awaiting_raw_tokens:
                        token = session.raw_token(request)
                        if token is None:
                            raise _Close
                        writer.write(frame(token))
                        await writer.drain()
                        continue
                    answering = self._answer(request, session, connection)
                    waits = len(request) >= 2 and struct.unpack_from(">h", request)[0] in (
                        WAITING_APIS)
                    reply = await (inbound.unless_gone(answering) if waits else answering)
                    if self.behaviour.delay:
                        await inbound.unless_gone(asyncio.sleep(self.behaviour.delay))
                    if reply is not None:  # None: Produce with acks=0, never answered
                        writer.write(frame(reply))
                        async with asyncio.timeout(self.limits.stall_timeout):
                            await writer.drain()
                finally:
                    inbound.release(request)
                if session is not None and session.failed:
                    raise _Close
                answered += 1
                if self.behaviour.drop_after is not None and answered >= self.behaviour.drop_after:
                    raise _Close
        finally:
            self.software.closed(connection)
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reading
            inbound.close()

    def _hang_up(self, api_key: int, version: int, why: str) -> _Close:
        info = default_catalog().by_key(api_key)
        name = info.name if info is not None else "unknown API"
        log.warning("emulated broker %d (Kafka %s) closes the connection on %s (key %d) v%d: "
                    "%s", self.node_id, self.release, name, api_key, version, why)
        return _Close()

    async def _answer(self, data: bytes, session: Any,
                      connection: Connection | None = None) -> bytes | None:
        """The response payload for one request (None: no answer), or raise :class:`_Close`.

        ``connection`` (the client's) is where the software it names is kept; every
        request is counted under it in :attr:`software`.
        """
        if len(data) < 8:
            raise _Close
        api_key, version, cid = struct.unpack_from(">hhi", data)
        self.received.append((api_key, version))
        connection = connection if connection is not None else Connection()
        info = default_catalog().by_key(api_key)
        flexible = (info is not None and info.flexible_from is not None
                    and version >= info.flexible_from)
        if self.behaviour.closes_on_flexible and flexible:
            raise _Close
        if api_key == ApiKey.API_VERSIONS:
            return self._api_versions(version, cid, data, connection)
        self.software.request(connection, api_key, version)
        if session is not None and not session.allows(api_key):
            raise _Close
        rng = self._profile.get(api_key)
        if rng is None:
            if self.behaviour.zero_length_for_unknown:
                return b""
            raise _Close
        if version not in rng or info is None or version > info.max_version:
            raise _Close
        large = len(data) > _WORK_IN_THREAD
        # A large request is decoded (and its answer encoded) in a worker thread, so
        # that one client's thousands of partitions do not hold up the other clients.
        header, request = (await asyncio.to_thread(decode_request, data) if large
                           else decode_request(data))
        if self.captured is not None:
            self.captured.append((api_key, version, request))
        body: Mapping[str, Any] | None
        rejected = self._rejected.get(api_key)
        if rejected is not None and version in rejected:
            answer = UNSUPPORTED_VERSION_ANSWERS.get(api_key)
            if answer is None or getattr(request, "acks", None) == 0:
                raise self._hang_up(api_key, version, "a version this release advertises "
                                    "but rejects")
            body = answer(request, ErrorCode.UNSUPPORTED_VERSION)
        elif api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) and session is not None:
            body = session.handle(api_key, version, request)
        elif api_key == ApiKey.METADATA:
            body = self._metadata(version, request)
        elif api_key == ApiKey.DESCRIBE_CLUSTER:
            body = self._describe_cluster()
        elif api_key in HANDLERS or api_key in GROUP_HANDLERS:
            handler = HANDLERS.get(api_key) or GROUP_HANDLERS[api_key]
            body = await handler(self, version, header, request)
            if body is None:
                return None
        elif self.behaviour.zero_length_for_unknown:
            return b""
        else:
            raise self._hang_up(api_key, version, "the emulator does not emulate this API")
        if large:
            return bytes(await asyncio.to_thread(encode_response, api_key, version, cid, body))
        return bytes(encode_response(api_key, version, cid, body))

    def _api_versions(self, version: int, cid: int, data: bytes,
                      connection: Connection) -> bytes:
        own = self._profile.get(ApiKey.API_VERSIONS)
        if own is None or self.behaviour.legacy:
            raise _Close  # Kafka < 0.10 does not know ApiVersions at all
        codec_max = default_catalog().resolve("ApiVersions").max_version
        named = 3 <= version <= min(own.max, codec_max)
        valid = not named or self._names_itself(data, connection)
        self.software.request(connection, int(ApiKey.API_VERSIONS), version)
        if not valid:
            # Kafka's ApiVersionsRequest.isValid: the name and version must match KIP-511's
            # pattern, else INVALID_REQUEST (KafkaApis.handleApiVersionsRequest).
            return bytes(encode_response(ApiKey.API_VERSIONS, version, cid, {
                "error_code": ErrorCode.INVALID_REQUEST, "api_keys": [],
                "throttle_time_ms": 0}))
        if version > own.max or version > codec_max:
            listed: list[dict[str, int]] = []
            if own.max >= _KIP511_API_VERSIONS_MAX and not self.behaviour.pre_kip511:
                listed = [{"api_key": ApiKey.API_VERSIONS, "min_version": own.min,
                           "max_version": own.max}]
            error = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": listed}
            # encode_response writes error 35 in the v0 layout, as Kafka does.
            return bytes(encode_response(ApiKey.API_VERSIONS, version, cid, error))
        key = (version, tuple(sorted(self.supported_features.items())),
               tuple(sorted(self.finalized_features.items())), self.finalized_features_epoch)
        encoded = self._api_versions_bodies.get(key)
        if encoded is None:
            # The ApiVersions response header is always v0: the correlation id alone.
            encoded = bytes(encode_response(ApiKey.API_VERSIONS, version, 0,
                                            self._api_versions_body(version)))[4:]
            self._api_versions_bodies[key] = encoded
        return cid.to_bytes(4, "big", signed=True) + encoded

    @staticmethod
    def _names_itself(data: bytes, connection: Connection) -> bool:
        """Read the client software of an ApiVersions v3+ request into ``connection``;
        False when Kafka would refuse it (a name or version outside KIP-511's pattern)."""
        _header, request = decode_request(data)
        name = getattr(request, "client_software_name", None)
        version = getattr(request, "client_software_version", None)
        if not (isinstance(name, str) and isinstance(version, str)
                and SOFTWARE_PATTERN.fullmatch(name) and SOFTWARE_PATTERN.fullmatch(version)):
            return False
        connection.software = ClientSoftware(name, version)
        return True

    def _api_versions_body(self, version: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "api_keys": [{"api_key": k, "min_version": r.min, "max_version": r.max}
                         for k, r in self._profile.items()],
            "throttle_time_ms": 0,
        }
        if version >= 3:
            body["supported_features"] = [
                {"name": n, "min_version": lo, "max_version": hi}
                for n, (lo, hi) in sorted(self.supported_features.items())]
            body["finalized_features_epoch"] = self.finalized_features_epoch
            body["finalized_features"] = [
                {"name": n, "min_version_level": lo, "max_version_level": hi}
                for n, (lo, hi) in sorted(self.finalized_features.items())]
            body["zk_migration_ready"] = False
        return body

    def listed(self) -> list[BrokerInfo]:
        """The brokers Metadata lists: the cluster's running brokers (a lone broker: itself)."""
        return list(self.peers()) if self.peers is not None else [self.info]

    def _metadata(self, version: int, request: Any) -> dict[str, Any]:
        topics = metadata_topics(self, version, request)
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in self.listed()],
            "cluster_id": self.cluster_id,
            "controller_id": self.controller_id,
            "topics": topics,
            "cluster_authorized_operations": NO_OPERATIONS,
        }

    def _describe_cluster(self) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": self.cluster_id,
            "controller_id": self.controller_id,
            "brokers": [{"broker_id": b.node_id, "host": b.host, "port": b.port,
                         "rack": b.rack} for b in self.listed()],
            "cluster_authorized_operations": NO_OPERATIONS,
        }
