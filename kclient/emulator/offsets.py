"""Committed offsets of the emulated cluster's groups, pure.

Kafka keeps every group's committed offsets in one place whatever the group's
protocol (the group coordinator's ``OffsetMetadataManager``): classic groups,
KIP-848 consumer groups and groups that only store offsets all commit here.
:class:`OffsetStore` holds them by group id, then by ``(topic, partition)``, with
Kafka's one bound on what a client writes: ``offset.metadata.max.bytes`` (4096
characters by default; a longer metadata string is OFFSET_METADATA_TOO_LARGE).
Offsets of a deleted topic are deleted with it, as Kafka does.

Offsets committed inside a transaction (TxnOffsetCommit) wait, per group and producer
id, until the transaction's marker reaches the group (Kafka's
``OffsetMetadataManager.replayEndTransactionMarker``): a COMMIT makes them the group's
committed offsets, an ABORT drops them.  Until then OffsetFetch with ``require_stable``
answers UNSTABLE_OFFSET_COMMIT for those partitions (KIP-447).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from kclient.protocol.constants import ErrorCode

__all__ = ["MAX_OFFSET_METADATA", "MAX_PENDING_OFFSETS", "CommittedOffset", "OffsetStore"]

#: Kafka's ``offset.metadata.max.bytes`` default.
MAX_OFFSET_METADATA = 4096
#: The most offsets open transactions may hold at once, cluster-wide (an emulator bound;
#: past it a TxnOffsetCommit partition gets UNKNOWN_SERVER_ERROR).
MAX_PENDING_OFFSETS = 100_000


@attrs.frozen
class CommittedOffset:
    """One committed offset: the offset, its leader epoch (-1: none) and its metadata."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


class OffsetStore:
    """Committed offsets by group id (see the module text)."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # group id -> producer id -> the offsets its open transaction committed
        self._pending: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        self._pending_count = 0

    def commit_pending(self, group_id: str, producer_id: int, topic: str, partition: int,
                       offset: int, leader_epoch: int = -1, metadata: str | None = "") -> int:
        """Store one offset of ``producer_id``'s open transaction; the partition's error."""
        if metadata is not None and len(metadata) > MAX_OFFSET_METADATA:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        held = self._pending.setdefault(group_id, {}).setdefault(producer_id, {})
        if (topic, partition) not in held:
            if self._pending_count >= MAX_PENDING_OFFSETS:
                return ErrorCode.UNKNOWN_SERVER_ERROR
            self._pending_count += 1
        held[(topic, partition)] = CommittedOffset(offset, leader_epoch, metadata)
        return ErrorCode.NONE

    def end_transaction(self, group_id: str, producer_id: int, commit: bool) -> None:
        """The transaction's marker reached the group: commit or drop its offsets."""
        pending = self._pending.get(group_id, {}).pop(producer_id, None)
        if not self._pending.get(group_id, True):
            del self._pending[group_id]
        self._pending_count -= len(pending or ())
        if commit and pending:
            self._groups.setdefault(group_id, {}).update(pending)

    def unstable(self, group_id: str, topic: str, partition: int) -> bool:
        """True while an open transaction holds an offset of ``topic`` / ``partition``."""
        return any((topic, partition) in offsets
                   for offsets in self._pending.get(group_id, {}).values())

    def commit(self, group_id: str, topic: str, partition: int, offset: int,
               leader_epoch: int = -1, metadata: str | None = "") -> int:
        """Store one offset; return the partition's error code (NONE when stored)."""
        if metadata is not None and len(metadata) > MAX_OFFSET_METADATA:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        self._groups.setdefault(group_id, {})[(topic, partition)] = CommittedOffset(
            offset, leader_epoch, metadata)
        return ErrorCode.NONE

    def committed(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """A copy of ``group_id``'s offsets by ``(topic, partition)`` (empty: none)."""
        return dict(self._groups.get(group_id, {}))

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        """The offset ``group_id`` committed for ``topic`` / ``partition`` (None: none)."""
        return self._groups.get(group_id, {}).get((topic, partition))

    def has_offsets(self, group_id: str) -> bool:
        """True when ``group_id`` has committed at least one offset."""
        return bool(self._groups.get(group_id))

    def group_ids(self) -> Iterator[str]:
        """The ids of the groups with committed offsets."""
        return iter(list(self._groups))

    def delete_group(self, group_id: str) -> bool:
        """Forget ``group_id``'s offsets; False when it had none."""
        return self._groups.pop(group_id, None) is not None

    def delete_topic(self, topic: str) -> None:
        """Forget every group's offsets of ``topic`` (the topic was deleted)."""
        for group_id, offsets in list(self._groups.items()):
            for key in [k for k in offsets if k[0] == topic]:
                del offsets[key]
            if not offsets:
                del self._groups[group_id]
        for by_producer in self._pending.values():
            for offsets in by_producer.values():
                for key in [k for k in offsets if k[0] == topic]:
                    del offsets[key]
                    self._pending_count -= 1
