"""What the emulator's KIP-848-style group coordinators share, pure.

Kafka's consumer, share and streams groups (``group-coordinator/.../modern/``) are
all "modern" groups: members heartbeat with a member epoch, the coordinator keeps a
group epoch and computes assignments itself, and one group id belongs to one group
type.  This module holds the pieces the three coordinators of the emulator share:

* :class:`GroupError`, the refusal a coordinator answers with (Kafka's
  ``ApiException``: an error code and its message);
* :func:`new_member_id`, a member id as Kafka makes one;
* :class:`GroupIds`, what a coordinator asks the cluster about the other group
  types (which type holds an id; may a new group take it), because Kafka keeps
  every type of group in one map;
* subscription helpers: the existing topics a subscription names, their ids and
  partition counts, and an assignment as describe responses list it.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kclient.emulator.log import TopicStore

__all__ = [
    "CLASSIC",
    "CONSUMER",
    "SHARE",
    "STREAMS",
    "GroupError",
    "GroupIds",
    "described_assignment",
    "new_member_id",
    "subscription_metadata",
]

Body = dict[str, Any]

#: Group types, as ListGroups v5 names them.
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"


class GroupError(Exception):
    """A request a coordinator refuses: ``code`` is Kafka's error, the text its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)


class GroupIds(Protocol):
    """What a coordinator asks the cluster about group ids held by the other group types."""

    def holder(self, group_id: str) -> str | None:
        """The type of the group holding ``group_id`` (None: no group holds it)."""
        ...

    def claim(self, group_id: str, kind: str) -> bool:
        """May a new group of type ``kind`` take ``group_id``?  An empty group of another
        type that Kafka would replace is deleted; False when another type keeps it."""
        ...


def new_member_id() -> str:
    """A member id as Kafka makes one (``Uuid.randomUuid().toString()``: 22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def subscription_metadata(topics: TopicStore,
                          names: Iterable[str]) -> dict[str, tuple[uuid.UUID, int]]:
    """The existing topics among ``names``: name -> (topic id, partition count)."""
    out = {}
    for name in sorted(set(names)):
        topic = topics.by_name.get(name)
        if topic is not None:
            out[name] = (topic.topic_id, len(topic.partitions))
    return out


def described_assignment(topics: TopicStore,
                         assignment: Mapping[uuid.UUID, Iterable[int]]) -> Body:
    """An assignment as the describe responses list it (topic id, name, partitions)."""
    names = {t.topic_id: t.name for t in topics.by_name.values()}
    return {"topic_partitions": [
        {"topic_id": topic, "topic_name": names.get(topic, ""), "partitions": sorted(parts)}
        for topic, parts in sorted(assignment.items(), key=lambda item: str(item[0]))]}
