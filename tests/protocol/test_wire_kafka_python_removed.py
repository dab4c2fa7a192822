"""The versions Kafka 4.0 removed, against kafka-python's hand-written structs.

kclient's specs of these versions come from the 2024 spec corpus only (the newer
corpora, Kafka 4.2.0's and 4.3.0's included, no longer have them, KIP-896), so no
spec of a current Kafka can vouch for them.  kafka-python 3 keeps hand-written
structs for old versions (``kafka.protocol.old``: one class per message and
version, with positional schemas written by hand, sharing no code with any spec
loader).  For every
removed version that has one, values drawn from kclient's spec encode to bytes
kafka-python's struct reads back completely, to the same values field by field
(compared by position: the hand-written field names differ from Kafka's), and
re-encodes to the same bytes.
"""

from __future__ import annotations

import importlib
import io
import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.protocol import decode, default_registry, encode
from kclient.protocol.schema import StructSpec, parse_versions

from .strategies import message_values

kp_old = pytest.importorskip("kafka.protocol.old")

pytestmark = pytest.mark.integration

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def _old_classes() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for module_info in pkgutil.iter_modules(kp_old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{module_info.name}")
        for attr in dir(module):
            if "_v" in attr and hasattr(getattr(module, attr), "SCHEMA"):
                found[attr] = getattr(module, attr)
    return found


OLD = _old_classes()


def _removed_versions() -> list[tuple[str, int]]:
    """(message, version) of the shipped stable versions only the 2024 corpus has, where
    the message itself is in a newer corpus too (so Kafka removed the version)."""
    out = []
    for path in sorted(SCHEMAS.glob("*.json")):
        if path.name == "api_catalog.json":
            continue
        shipped = json.loads(path.read_text())
        layout = shipped["provenance"]["layout"]
        if "message" in layout and len(layout) > 1:
            versions = parse_versions(layout["message"], path.name, "provenance")
            unstable = parse_versions(shipped["provenance"].get("unstable", "none"),
                                      path.name, "provenance")
            out += [(shipped["name"], v) for v in range(versions.lo, versions.hi + 1)
                    if v not in unstable]
    return out


# Hand-written structs that depart from Kafka's spec, and how.
KAFKA_PYTHON_WRONG = {
    ("DescribeLogDirsRequest", 0): "its struct gives each topic one int32 partition; the "
    "spec (both corpora, and v1 in kafka-python's own generated class) has an int32 array",
}

REMOVED = _removed_versions()
CASES = [pytest.param(n, v, id=f"{n}-v{v}") for n, v in REMOVED
         if f"{n}_v{v}" in OLD and (n, v) not in KAFKA_PYTHON_WRONG]


def test_the_comparison_covers_the_removed_versions() -> None:
    # E.g. Produce v0-v2, Fetch v0-v3, ListOffsets v0; the release corpora (4.2.0,
    # 4.3.0) carry the delegation-token and AlterPartition specs too, which show the
    # v0 of the former and v0-v1 of the latter removed.
    assert len(REMOVED) == 59
    # All but AlterReplicaLogDirs v0, WriteTxnMarkers v0, RequestHeader v0, the
    # delegation-token APIs' v0 and AlterPartition v0-v1 (no hand-written struct)
    # and the one kafka-python has wrong.
    assert len(CASES) == 41


def test_kafka_pythons_describe_log_dirs_v0_struct_is_the_departure_listed() -> None:
    """The exclusion above stays true: kafka-python's struct reads one int32 where
    the spec has an array, so a request with two partitions does not read back."""
    ours = encode("DescribeLogDirsRequest", 0, {"topics": [{"topic": "t",
                                                             "partitions": [1, 2]}]})
    stream = io.BytesIO(ours)
    theirs = OLD["DescribeLogDirsRequest_v0"].SCHEMA.decode(stream)
    assert stream.tell() < len(ours) and theirs == ([("t", 2)],)


def _positional(struct: StructSpec, version: int, value: Any) -> tuple[Any, ...]:
    """A decoded kclient struct as kafka-python's tuples: the fields present at
    ``version``, in spec order."""
    out: list[Any] = []
    for field in struct.fields_in(version):
        item = getattr(value, field.attr)
        if field.struct is not None and item is not None:
            if field.kind == "array":
                item = [_positional(field.struct, version, x) for x in item]
            else:
                item = _positional(field.struct, version, item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            item = bytes(item)
        out.append(item)
    return tuple(out)


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_removed_versions_match_kafka_pythons_hand_written_structs(
        name: str, version: int, data: st.DataObject) -> None:
    spec = default_registry().spec(name)
    values = data.draw(message_values(spec, version))
    ours = encode(name, version, values)
    schema = OLD[f"{name}_v{version}"].SCHEMA
    stream = io.BytesIO(ours)
    theirs = schema.decode(stream)
    assert stream.tell() == len(ours), f"{name} v{version}: kafka-python left bytes unread"
    assert schema.encode(theirs) == ours
    assert _positional(spec.root, version, decode(name, version, ours)) == tuple(theirs)
