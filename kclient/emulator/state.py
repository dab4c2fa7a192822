"""What an emulated cluster remembers: topics with in-memory partition logs, classic
consumer groups with their committed offsets, and producer ids.

One :class:`ClusterState` is shared by every broker of an
:class:`~kclient.emulator.EmulatedCluster` (a lone
:class:`~kclient.emulator.EmulatedBroker` has its own), so a client that
produces through one broker fetches through another and commits through the
group's coordinator as against a real cluster.  The semantics are kept small on
purpose (no replication, retention, transactions or quotas); the wire side is in
:mod:`kclient.emulator.apis`.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gzip
import struct
import time
import uuid
import zlib
from collections.abc import Sequence

import attrs

from kclient.protocol.constants import ErrorCode

__all__ = ["ClusterState", "Group", "Member", "PartitionLog", "RecordsError", "Topic"]

#: The leader epoch of every emulated partition (no leader ever changes).
LEADER_EPOCH = 0
#: How long a group that was empty waits for more members before its first
#: generation (Kafka's group.initial.rebalance.delay.ms, 3 s by default, shortened).
INITIAL_REBALANCE_DELAY = 0.1
#: Kafka's default num.partitions for a topic created without a count.
DEFAULT_PARTITIONS = 1
_V2_HEADER = 61  # bytes of a v2 record batch header (through the record count)
_LEGACY_MIN = 26  # offset, size, crc, magic, attributes, key and value lengths (magic 0)


class RecordsError(Exception):
    """Produced records the emulator cannot append (the message says why)."""


@attrs.define
class _Stored:
    base: int
    last: int
    max_timestamp: int
    data: bytes


def _legacy_inner_count(value: bytes, codec: int) -> int:
    """How many messages a compressed magic 0/1 wrapper holds (gzip only)."""
    if codec != 1:
        raise RecordsError("compressed message sets (magic 0/1) other than gzip are not "
                           "emulated; send record batches (magic 2) or gzip")
    try:
        inner = gzip.decompress(value)
    except (OSError, EOFError, zlib.error) as exc:
        raise RecordsError(f"gzip message set does not decompress: {exc}") from None
    count, pos = 0, 0
    while pos + 12 <= len(inner):
        size = struct.unpack_from(">i", inner, pos + 8)[0]
        pos += 12 + size
        count += 1
    if count == 0 or pos != len(inner):
        raise RecordsError("gzip message set holds no whole message")
    return count


def assign_offsets(records: bytes, base: int) -> list[_Stored]:
    """Split produced ``records`` into batches and give them offsets from ``base``, as a
    broker does: a v2 batch gets its baseOffset (and partition leader epoch) patched,
    which the CRC does not cover; a magic 0/1 message gets its offset (a compressed
    magic 1 wrapper the offset of its last inner message)."""
    buf = bytearray(records)
    out: list[_Stored] = []
    pos, offset = 0, base
    while pos < len(buf):
        if len(buf) - pos < 17:
            raise RecordsError(f"{len(buf) - pos} bytes left at byte {pos}, less than a "
                               "batch header")
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + size
        magic = buf[pos + 16]
        if size < 0 or end > len(buf):
            raise RecordsError(f"batch at byte {pos} claims {size} bytes, {len(buf) - pos - 12} "
                               "are left")
        if magic == 2:
            if end - pos < _V2_HEADER:
                raise RecordsError(f"record batch at byte {pos} is shorter than its header")
            last_delta = struct.unpack_from(">i", buf, pos + 23)[0]
            max_ts = struct.unpack_from(">q", buf, pos + 35)[0]
            if last_delta < 0:
                raise RecordsError(f"record batch at byte {pos} has lastOffsetDelta "
                                   f"{last_delta}")
            struct.pack_into(">qii", buf, pos, offset, size, LEADER_EPOCH)
            count = last_delta + 1
        elif magic in (0, 1):
            if end - pos < _LEGACY_MIN:
                raise RecordsError(f"message at byte {pos} is shorter than its header")
            codec = buf[pos + 17] & 0x07
            max_ts = struct.unpack_from(">q", buf, pos + 18)[0] if magic == 1 else -1
            count = 1
            if codec:
                key_at = pos + (26 if magic == 1 else 18)
                key_len = struct.unpack_from(">i", buf, key_at)[0]
                value_at = key_at + 4 + max(key_len, 0)
                value_len = struct.unpack_from(">i", buf, value_at)[0]
                value = bytes(buf[value_at + 4:value_at + 4 + max(value_len, 0)])
                count = _legacy_inner_count(value, codec)
                if magic == 0:
                    raise RecordsError("compressed magic 0 message sets are not emulated")
            struct.pack_into(">q", buf, pos, offset + count - 1)
        else:
            raise RecordsError(f"unknown record magic {magic} at byte {pos}")
        out.append(_Stored(offset, offset + count - 1, max_ts, bytes(buf[pos:end])))
        offset += count
        pos = end
    return out


class PartitionLog:
    """One partition: its stored batches, log start offset and high watermark."""

    def __init__(self) -> None:
        self._batches: list[_Stored] = []
        self._lasts: list[int] = []
        self.log_start_offset = 0
        self.high_watermark = 0

    def append(self, records: bytes) -> int:
        """Append ``records`` (raw produced bytes); return the base offset given to them."""
        base = self.high_watermark
        stored = assign_offsets(records, base)
        self._batches.extend(stored)
        self._lasts.extend(s.last for s in stored)
        if stored:
            self.high_watermark = stored[-1].last + 1
        return base

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Batches from the one holding ``offset`` on, up to about ``max_bytes`` (always at
        least one batch when there is one, as Kafka does since KIP-74)."""
        index = bisect.bisect_left(self._lasts, offset)
        out = bytearray()
        for stored in self._batches[index:]:
            if out and len(out) + len(stored.data) > max_bytes:
                break
            out += stored.data
        return bytes(out)

    def offset_for_timestamp(self, timestamp: int) -> int:
        """The first offset of the first batch with a timestamp at or after ``timestamp``
        (the high watermark when none)."""
        for stored in self._batches:
            if stored.max_timestamp >= timestamp:
                return stored.base
        return self.high_watermark

    def max_timestamp(self) -> tuple[int, int]:
        """``(timestamp, offset)`` of the batch with the highest timestamp (-1, -1 if empty)."""
        best = (-1, -1)
        for stored in self._batches:
            if stored.max_timestamp > best[0]:
                best = (stored.max_timestamp, stored.last)
        return best


@attrs.define
class Topic:
    """A topic: its name, id, creation index (spreads leaders) and partition logs."""

    name: str
    topic_id: uuid.UUID
    index: int
    partitions: list[PartitionLog]
    replication_factor: int = 1
    configs: dict[str, str | None] = attrs.Factory(dict)


@attrs.define(eq=False)
class Member:
    """A member of a classic group."""

    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_seen: float
    assignment: bytes = b""
    joining: asyncio.Future[dict[str, object]] | None = None
    syncing: asyncio.Future[tuple[int, bytes]] | None = None


@attrs.define(eq=False)
class Group:
    """A classic consumer group and its committed offsets."""

    group_id: str
    state: str = "Empty"  # Empty, PreparingRebalance, CompletingRebalance, Stable
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = attrs.Factory(dict)
    #: Member ids handed out with MEMBER_ID_REQUIRED, not yet joined.
    pending: set[str] = attrs.Factory(set)
    #: (topic name, partition) -> (offset, leader epoch, metadata)
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = attrs.Factory(dict)
    rebalance: asyncio.Task[None] | None = None
    changed: asyncio.Event = attrs.Factory(asyncio.Event)


class ClusterState:
    """Topics, groups and producer ids of one emulated cluster (see the module text).

    ``auto_create_topics`` is Kafka's ``auto.create.topics.enable`` (on by
    default, as in Kafka): Metadata for an unknown topic creates it with
    ``default_partitions`` partitions when the client allows it.
    """

    def __init__(self, *, auto_create_topics: bool = True,
                 default_partitions: int = DEFAULT_PARTITIONS) -> None:
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.groups: dict[str, Group] = {}
        self._next_producer_id = 1000
        self._transactional: dict[str, tuple[int, int]] = {}
        self._appended = asyncio.Event()

    # -- topics ---------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int | None = None,
                     replication_factor: int = 1,
                     configs: dict[str, str | None] | None = None) -> Topic:
        """Create topic ``name`` (``partitions`` None: the default count); return it."""
        count = self.default_partitions if partitions is None or partitions < 1 else partitions
        topic = Topic(name, uuid.uuid4(), len(self.topics), [PartitionLog() for _ in range(count)],
                      replication_factor, dict(configs or {}))
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        return topic

    def delete_topic(self, name: str) -> bool:
        """Delete topic ``name``; False when there is none."""
        topic = self.topics.pop(name, None)
        if topic is None:
            return False
        del self.topics_by_id[topic.topic_id]
        return True

    def appended(self) -> asyncio.Event:
        """An event set by the next append (fetches waiting for data wait on it)."""
        return self._appended

    def notify_appended(self) -> None:
        """Wake fetches waiting for data."""
        self._appended.set()
        self._appended = asyncio.Event()

    @staticmethod
    def leader(topic: Topic, partition: int, node_ids: Sequence[int]) -> int:
        """The node leading ``partition`` of ``topic``: spread over ``node_ids`` (sorted)."""
        if not node_ids:
            return -1
        ids = sorted(node_ids)
        return ids[(topic.index + partition) % len(ids)]

    # -- producers ------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str | None, producer_id: int = -1,
                         epoch: int = -1) -> tuple[int, int]:
        """A producer id and epoch: a new id for an idempotent producer (or the same id with
        the next epoch when it gives its current one), a stable id with a bumped epoch
        for a transactional id."""
        if transactional_id:
            known = self._transactional.get(transactional_id)
            pid, next_epoch = (known[0], known[1] + 1) if known else (self._new_pid(), 0)
            self._transactional[transactional_id] = (pid, next_epoch)
            return pid, next_epoch
        if producer_id >= 0 and epoch >= 0:
            return producer_id, epoch + 1
        return self._new_pid(), 0

    def _new_pid(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # -- groups ---------------------------------------------------------------------------
    def group(self, group_id: str) -> Group:
        """The group ``group_id`` (created empty on first use)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        return group

    def expire(self, group: Group) -> None:
        """Drop members silent for longer than their session timeout (a rebalance follows)."""
        now = time.monotonic()
        dead = [m for m in group.members.values() if m.joining is None
                and now - m.last_seen > m.session_timeout_ms / 1000]
        if dead:
            for member in dead:
                self._remove(group, member)
            self._members_changed(group)

    def _remove(self, group: Group, member: Member) -> None:
        del group.members[member.member_id]
        if member.joining is not None and not member.joining.done():
            member.joining.set_result({"error_code": ErrorCode.UNKNOWN_MEMBER_ID})
        if member.syncing is not None and not member.syncing.done():
            member.syncing.set_result((ErrorCode.UNKNOWN_MEMBER_ID, b""))

    def _members_changed(self, group: Group) -> None:
        if not group.members:
            self._cancel_rebalance(group)
            group.state, group.leader, group.protocol = "Empty", None, None
            group.generation += 1
        elif group.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance(group, delay=0.0)
        group.changed.set()

    def _cancel_rebalance(self, group: Group) -> None:
        if group.rebalance is not None and not group.rebalance.done():
            group.rebalance.cancel()
        group.rebalance = None

    def _prepare_rebalance(self, group: Group, delay: float) -> None:
        group.state = "PreparingRebalance"
        for member in group.members.values():
            if member.syncing is not None and not member.syncing.done():
                member.syncing.set_result((ErrorCode.REBALANCE_IN_PROGRESS, b""))
        if group.rebalance is None or group.rebalance.done():
            group.rebalance = asyncio.get_running_loop().create_task(
                self._run_rebalance(group, delay))

    async def _run_rebalance(self, group: Group, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        deadline = time.monotonic() + timeout / 1000
        while any(m.joining is None for m in group.members.values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for member in [m for m in group.members.values() if m.joining is None]:
                    self._remove(group, member)
                break
            group.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await group.changed.wait()
        group.rebalance = None
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if not group.members:
            group.state, group.leader, group.protocol = "Empty", None, None
            return
        group.generation += 1
        members = list(group.members.values())
        if group.leader not in group.members:
            group.leader = members[0].member_id
        leader = group.members[str(group.leader)]
        common = [name for name, _ in leader.protocols
                  if all(any(name == n for n, _ in m.protocols) for m in members)]
        group.protocol = common[0] if common else None
        group.state = "CompletingRebalance"
        for member in members:
            member.assignment = b""
            listed = []
            if member.member_id == group.leader:
                listed = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                           "metadata": dict(m.protocols).get(group.protocol or "", b"")}
                          for m in members]
            answer: dict[str, object] = {
                "error_code": ErrorCode.NONE, "generation_id": group.generation,
                "protocol_type": group.protocol_type, "protocol_name": group.protocol,
                "leader": group.leader, "member_id": member.member_id, "members": listed}
            if member.joining is not None and not member.joining.done():
                member.joining.set_result(answer)
            member.joining = None

    async def join(self, group_id: str, member_id: str, instance_id: str | None,
                   client_id: str, protocol_type: str, protocols: list[tuple[str, bytes]],
                   session_timeout_ms: int, rebalance_timeout_ms: int,
                   require_known_member: bool) -> dict[str, object]:
        """JoinGroup: the response fields (waits for the rebalance to complete)."""
        if not group_id:
            return {"error_code": ErrorCode.INVALID_GROUP_ID, "member_id": member_id}
        group = self.group(group_id)
        self.expire(group)
        if group.members and (protocol_type != group.protocol_type or not any(
                all(any(name == n for n, _ in m.protocols) for m in group.members.values())
                for name, _ in protocols)):
            return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "member_id": member_id}
        if not member_id:
            member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
            if require_known_member:
                group.pending.add(member_id)
                return {"error_code": ErrorCode.MEMBER_ID_REQUIRED, "member_id": member_id,
                        "generation_id": -1}
        elif member_id not in group.members and member_id not in group.pending:
            return {"error_code": ErrorCode.UNKNOWN_MEMBER_ID, "member_id": member_id}
        group.pending.discard(member_id)
        now = time.monotonic()
        member = group.members.get(member_id)
        if member is None:
            member = Member(member_id, instance_id, client_id, session_timeout_ms,
                            rebalance_timeout_ms, protocol_type, protocols, now)
            group.members[member_id] = member
        member.protocols, member.last_seen = protocols, now
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        if member.joining is not None and not member.joining.done():
            member.joining.set_result({"error_code": ErrorCode.UNKNOWN_MEMBER_ID})
        future: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()
        member.joining = future
        group.protocol_type = protocol_type
        if group.state != "PreparingRebalance":
            was_empty = group.state == "Empty"
            self._prepare_rebalance(group, INITIAL_REBALANCE_DELAY if was_empty else 0.0)
        group.changed.set()
        return await future

    async def sync(self, group_id: str, member_id: str, generation: int,
                   assignments: dict[str, bytes]) -> tuple[int, bytes]:
        """SyncGroup: ``(error code, this member's assignment)`` (waits for the leader's)."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, b""
        member.last_seen = time.monotonic()
        if group.state == "PreparingRebalance":
            return ErrorCode.REBALANCE_IN_PROGRESS, b""
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION, b""
        if group.state == "Stable":
            return ErrorCode.NONE, member.assignment
        if member_id == group.leader:
            for other in group.members.values():
                other.assignment = assignments.get(other.member_id, b"")
            group.state = "Stable"
            for other in group.members.values():
                if other.syncing is not None and not other.syncing.done():
                    other.syncing.set_result((ErrorCode.NONE, other.assignment))
                other.syncing = None
            return ErrorCode.NONE, member.assignment
        future: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        member.syncing = future
        try:
            async with asyncio.timeout(max(member.rebalance_timeout_ms, 1000) / 1000):
                return await future
        except TimeoutError:
            return ErrorCode.REBALANCE_IN_PROGRESS, b""

    def heartbeat(self, group_id: str, member_id: str, generation: int) -> int:
        """Heartbeat: the error code."""
        group = self.groups.get(group_id)
        if group is not None:
            self.expire(group)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self._in_generation(group, member, generation)

    @staticmethod
    def _in_generation(group: Group, member: Member, generation: int) -> int:
        """A live member's request at ``generation``: seen now; the group's error, if any."""
        member.last_seen = time.monotonic()
        if group.state == "PreparingRebalance":
            return ErrorCode.REBALANCE_IN_PROGRESS
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def leave(self, group_id: str, member_ids: Sequence[str]) -> list[int]:
        """LeaveGroup: one error code per member id."""
        group = self.groups.get(group_id)
        codes: list[int] = []
        for member_id in member_ids:
            member = None if group is None else group.members.get(member_id)
            if group is None or member is None:
                codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            self._remove(group, member)
            codes.append(ErrorCode.NONE)
        if group is not None and any(code == ErrorCode.NONE for code in codes):
            self._members_changed(group)
        return codes

    def check_commit(self, group_id: str, member_id: str, generation: int) -> int:
        """The error code of an OffsetCommit by ``member_id`` at ``generation`` (-1: a
        commit from outside any generation, accepted)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.group(group_id)
        if generation < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self._in_generation(group, member, generation)
