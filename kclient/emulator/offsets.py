"""Committed offsets of the emulated cluster's groups, pure.

Kafka keeps every group's committed offsets in one place whatever the group's
protocol (the group coordinator's ``OffsetMetadataManager``): classic groups,
KIP-848 consumer groups and groups that only store offsets all commit here.
:class:`OffsetStore` holds them by group id, then by ``(topic, partition)``, with
Kafka's one bound on what a client writes: ``offset.metadata.max.bytes`` (4096
characters by default; a longer metadata string is OFFSET_METADATA_TOO_LARGE).
Offsets of a deleted topic are deleted with it, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from kclient.protocol.constants import ErrorCode

__all__ = ["MAX_OFFSET_METADATA", "CommittedOffset", "OffsetStore"]

#: Kafka's ``offset.metadata.max.bytes`` default.
MAX_OFFSET_METADATA = 4096


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
