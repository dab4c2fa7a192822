"""Topic configs as Kafka defines them: names, types, defaults and the values it refuses.

Kafka's ``LogConfig`` (``storage/.../log/LogConfig.java`` at 3.8.0) defines every
topic config; a CreateTopics, AlterConfigs or IncrementalAlterConfigs naming another
name, or a value its definition refuses, is INVALID_CONFIG (the ``topic-config`` rule
of :mod:`kclient.emulator.rules`).  :data:`TOPIC_CONFIGS` holds each config's type and
default (what DescribeConfigs shows for a config the topic does not set); the emulator
acts on ``compression.type`` (Fetch of a zstd topic, KIP-110) and ``max.message.bytes``
and stores the rest.  Values are checked by type and, for the configs whose validators
matter to clients, as Kafka's validators check them.  Every name is accepted on every
release (Kafka added a few over time: ``compression.*.level`` in 3.8, the
``remote``/``local`` ones in 3.6).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from kclient.emulator.rules import release_at_least

__all__ = ["TOPIC_CONFIGS", "ConfigDef", "config_problem"]

_LONG_MAX = str(2**63 - 1)


@attrs.frozen
class ConfigDef:
    """One topic config: its type (Kafka's ``ConfigDef.Type``) and default."""

    type: str
    default: str | None
    #: The values it takes, when Kafka's validator is a list of them.
    choices: tuple[str, ...] = ()
    #: The smallest number it takes, when Kafka's validator is ``atLeast``.
    minimum: float | None = None


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: Kafka's topic configs (LogConfig.java at 3.8.0; defaults of a default broker).
TOPIC_CONFIGS: Mapping[str, ConfigDef] = {
    "cleanup.policy": ConfigDef("list", "delete", ("delete", "compact")),
    "compression.gzip.level": ConfigDef("int", "-1"),
    "compression.lz4.level": ConfigDef("int", "9"),
    "compression.type": ConfigDef("string", "producer", _COMPRESSION),
    "compression.zstd.level": ConfigDef("int", "3"),
    "delete.retention.ms": ConfigDef("long", "86400000", minimum=0),
    "file.delete.delay.ms": ConfigDef("long", "60000", minimum=0),
    "flush.messages": ConfigDef("long", _LONG_MAX, minimum=1),
    "flush.ms": ConfigDef("long", _LONG_MAX, minimum=0),
    "follower.replication.throttled.replicas": ConfigDef("list", ""),
    "index.interval.bytes": ConfigDef("int", "4096", minimum=0),
    "leader.replication.throttled.replicas": ConfigDef("list", ""),
    "local.retention.bytes": ConfigDef("long", "-2", minimum=-2),
    "local.retention.ms": ConfigDef("long", "-2", minimum=-2),
    "max.compaction.lag.ms": ConfigDef("long", _LONG_MAX, minimum=1),
    "max.message.bytes": ConfigDef("int", "1048588", minimum=0),
    "message.downconversion.enable": ConfigDef("boolean", "true"),
    "message.format.version": ConfigDef("string", "3.0-IV1"),
    "message.timestamp.after.max.ms": ConfigDef("long", _LONG_MAX, minimum=0),
    "message.timestamp.before.max.ms": ConfigDef("long", _LONG_MAX, minimum=0),
    "message.timestamp.difference.max.ms": ConfigDef("long", _LONG_MAX, minimum=0),
    "message.timestamp.type": ConfigDef("string", "CreateTime", ("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ConfigDef("double", "0.5", minimum=0),
    "min.compaction.lag.ms": ConfigDef("long", "0", minimum=0),
    "min.insync.replicas": ConfigDef("int", "1", minimum=1),
    "preallocate": ConfigDef("boolean", "false"),
    "remote.storage.enable": ConfigDef("boolean", "false"),
    "retention.bytes": ConfigDef("long", "-1"),
    "retention.ms": ConfigDef("long", "604800000", minimum=-1),
    "segment.bytes": ConfigDef("int", "1073741824", minimum=14),
    "segment.index.bytes": ConfigDef("int", "10485760", minimum=4),
    "segment.jitter.ms": ConfigDef("long", "0", minimum=0),
    "segment.ms": ConfigDef("long", "604800000", minimum=1),
    "unclean.leader.election.enable": ConfigDef("boolean", "false"),
}

_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def config_problem(name: str, value: str | None, release: str) -> str | None:
    """Why Kafka ``release`` refuses topic config ``name`` = ``value`` (None: it takes it)."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return None  # null: back to the default
    text = value.strip()
    kind = definition.type
    if kind in _RANGES:
        try:
            number: float = int(text)
        except ValueError:
            return (f"Invalid value {value} for configuration {name}: Not a number of type "
                    f"{kind.upper()}")
        low, high = _RANGES[kind]
        if not low <= number <= high:
            return f"Invalid value {value} for configuration {name}: out of range"
    elif kind == "double":
        try:
            number = float(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
    elif kind == "boolean":
        if text.lower() not in ("true", "false"):
            return f"Invalid value {value} for configuration {name}: Expected value to be " \
                   "either true or false"
        return None
    else:
        number = 0
    if definition.minimum is not None and kind in ("int", "long", "double") and (
            number < definition.minimum):
        return f"Invalid value {value} for configuration {name}: Value must be at least " \
               f"{definition.minimum:g}"
    choices = definition.choices
    if name == "compression.type" and not release_at_least(release, "2.1"):
        choices = tuple(c for c in choices if c != "zstd")
    if choices:
        items = [v.strip() for v in text.split(",")] if kind == "list" else [text]
        bad = [v for v in items if v not in choices]
        if bad:
            return (f"Invalid value {bad[0]} for configuration {name}: String must be one of: "
                    f"{', '.join(choices)}")
    return None
