"""kafka-python 3 objects from kclient's plain values, for byte-exact comparisons.

kclient and kafka-python use the same snake_case field names with two
exceptions kafka-python has: it calls the ``*_authorized_operations`` fields of
Metadata and DescribeCluster ``authorized_operations`` and holds them as a set of
bit positions (its DescribeTopicPartitions keeps the integer), and it writes the
all-zero UUID from ``None``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["kp_build"]

# Kafka's "no authorized operations requested" value.
_NO_OPERATIONS = -(2**31)


def _bits(value: int) -> set[int] | None:
    if value == _NO_OPERATIONS:
        return None
    return {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}


def kp_build(cls: Any, version: int, values: Mapping[str, Any]) -> Any:
    """The kafka-python object of class ``cls`` holding ``values`` (kclient's names)."""
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        if name not in cls.fields and name.endswith("authorized_operations"):
            name = "authorized_operations"
        if name == "authorized_operations":  # kafka-python holds a set of bit positions
            value = _bits(value)
        field = cls.fields[name]
        if value is not None and field.is_struct():
            value = kp_build(field.data_class, version, value)
        elif value is not None and field.is_struct_array():
            value = [kp_build(field.data_class, version, item) for item in value]
        elif isinstance(value, uuid.UUID) and value.int == 0:
            value = None
        kwargs[name] = value
    return cls(version=version, **kwargs)
