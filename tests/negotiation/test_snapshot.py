"""Snapshot records (DESIGN.md §5): round trip, validation with file:line, grouping."""

from __future__ import annotations

import io
import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import SnapshotError
from kclient.negotiation import (
    BrokerState,
    BrokerVersions,
    ClusterView,
    SnapshotRecord,
    VersionRange,
    append_snapshots,
    brokers_by_cluster,
    iter_snapshots,
    read_snapshots,
    record_from_json,
    record_to_json,
    write_snapshots,
)
from kclient.negotiation.snapshot import (
    LONG_RECORD,
    MAX_RECORD_LINE,
    bounded_lines,
    parse_snapshots,
)

DESIGN_EXAMPLE = {
    "cluster": "prod-eu-1", "broker_id": 1, "host": "10.0.0.5", "port": 9092,
    "observed_at": "2026-11-22T10:00:00Z", "source": "api_versions",
    "api_versions": [{"api_key": 0, "min_version": 0, "max_version": 11}],
    "supported_features": {"group.version": [0, 1]},
    "finalized_features": {"metadata.version": [1, 21]},
    "finalized_features_epoch": 42,
    "software": {"name": "apache-kafka", "version": "3.9.0"},
    "error": None,
}


def test_design_example_round_trips_exactly() -> None:
    record = record_from_json(DESIGN_EXAMPLE)
    assert record.api_versions == {0: VersionRange(0, 11)}
    assert record.software == ("apache-kafka", "3.9.0")
    out = record_to_json(record)
    assert out == DESIGN_EXAMPLE
    assert list(out) == list(DESIGN_EXAMPLE)


def test_unknown_keys_ignored_and_optional_defaults() -> None:
    minimal = {k: DESIGN_EXAMPLE[k] for k in
               ("cluster", "broker_id", "host", "port", "observed_at", "source", "api_versions")}
    record = record_from_json({**minimal, "future_key": {"x": 1}})
    assert record.finalized_features_epoch == -1
    assert record.software is None and record.error is None
    assert record.supported_features == {}


def _bad(**changes: object) -> dict[str, object]:
    obj = dict(DESIGN_EXAMPLE)
    for key, value in changes.items():
        if value is KeyError:
            del obj[key]
        else:
            obj[key] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ([1, 2], "a record is a JSON object"),
        (_bad(cluster=KeyError), "missing key(s) cluster"),
        (_bad(broker_id="1"), "'broker_id' must be an integer"),
        (_bad(port=True), "'port' must be an integer"),
        (_bad(host=""), "'host' must be a non-empty string"),
        (_bad(source="guess"), "'source' must be 'api_versions'"),
        (_bad(source="fallback:7.7"), "names an unknown release"),
        (_bad(api_versions={}), "'api_versions' must be a list"),
        (_bad(api_versions=[{"api_key": 0, "min_version": 3, "max_version": 1}]),
         "empty version range"),
        (_bad(api_versions=[{"api_key": 0, "min_version": 0}]),
         "api_versions[0].'max_version' must be an integer"),
        (_bad(api_versions=[{"api_key": 0, "min_version": 0, "max_version": 1}] * 2),
         "lists api_key 0 twice"),
        (_bad(api_versions=[7]), "api_versions[0] must be an object"),
        (_bad(supported_features={"group.version": [1]}), "supported_features.group.version"),
        (_bad(finalized_features=[1]), "'finalized_features' must be an object"),
        (_bad(finalized_features_epoch="x"), "'finalized_features_epoch' must be an integer"),
        (_bad(software="kafka"), "'software' must be an object"),
        (_bad(error=5), "'error' must be a string or null"),
        (_bad(source="error", api_versions=[]), "'error' gives no message"),
        (_bad(source="error", error="boom"), "'api_versions' is not empty"),
    ],
)
def test_invalid_records(obj: object, fragment: str) -> None:
    with pytest.raises(SnapshotError) as info:
        record_from_json(obj, "snap.jsonl", 4)
    assert str(info.value).startswith("snap.jsonl:4: invalid snapshot record: ")
    assert fragment in str(info.value)
    assert info.value.line == 4


def test_read_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(DESIGN_EXAMPLE) + "\n\n{not json}\n", encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"s\.jsonl:3: not valid JSON"):
        read_snapshots(path)
    with pytest.raises(SnapshotError, match="the snapshot file does not exist"):
        read_snapshots(tmp_path / "missing.jsonl")


def test_write_append_read(tmp_path: Path) -> None:
    broker = BrokerVersions(2, "h", 9093, {0: (0, 9), 18: (0, 3)}, software=("k", "1"),
                            finalized_features={"group.version": (1, 1)},
                            finalized_features_epoch=3)
    failed = BrokerVersions(3, "h", 9094, {0: (0, 1)}, error="timed out")
    fallback = BrokerVersions(4, "h", 9095, {0: (0, 1)}, source="fallback:0.9")
    first = SnapshotRecord.from_broker("c1", broker, "2026-01-01T00:00:00Z")
    path = tmp_path / "out.jsonl"
    write_snapshots(path, [first])
    append_snapshots(path, [SnapshotRecord.from_broker("c1", failed),
                            SnapshotRecord.from_broker("c2", fallback)])
    records = read_snapshots(path)
    assert records[0] == first
    assert records[0].to_broker() == broker
    assert records[1].source == "error" and records[1].api_versions == {}
    assert records[1].to_broker().error == "timed out"
    assert records[2].source == "fallback:0.9.0"  # the release as Kafka names it
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3


def test_brokers_by_cluster_keeps_latest() -> None:
    def rec(cluster: str, broker: int, when: str, top: int) -> SnapshotRecord:
        return SnapshotRecord(cluster, broker, "h", 9092, when, "api_versions",
                              {0: VersionRange(0, top)})

    grouped = brokers_by_cluster([
        rec("b", 2, "2026-01-02T00:00:00Z", 9),
        rec("b", 2, "2026-01-01T00:00:00Z", 5),   # older: ignored
        rec("a", 1, "2026-01-01T00:00:00Z", 3),
        rec("b", 1, "2026-01-01T00:00:00+00:00", 7),
        rec("b", 1, "2026-01-01T00:00:00Z", 8),   # same instant, later line wins
    ])
    assert list(grouped) == ["b", "a"]
    assert [b.node_id for b in grouped["b"]] == [1, 2]
    assert grouped["b"][0].apis[0] == VersionRange(0, 8)
    assert grouped["b"][1].apis[0] == VersionRange(0, 9)


def test_failed_probe_after_an_answer_is_stale_not_a_wider_cluster() -> None:
    def good(broker: int, when: str, top: int) -> SnapshotRecord:
        return SnapshotRecord("c", broker, "h", 9092, when, "api_versions",
                              {0: VersionRange(0, top)})

    def failed(broker: int, when: str) -> SnapshotRecord:
        return SnapshotRecord("c", broker, "h", 9092, when, "error", {}, error="refused")

    grouped = brokers_by_cluster([
        good(1, "2026-01-01T00:00:00Z", 11),
        good(2, "2026-01-01T00:00:00Z", 6),
        failed(2, "2026-01-02T00:00:00Z"),       # broker 2 was down at the next probe
        failed(3, "2026-01-02T00:00:00Z"),       # broker 3 never answered
    ])
    one, two, three = grouped["c"]
    assert one.state is BrokerState.ANSWERED
    assert two.state is BrokerState.STALE and two.apis[0] == VersionRange(0, 6)
    assert two.error == "refused"
    assert two.answered_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert three.state is BrokerState.UNKNOWN and three.apis == {}
    view = ClusterView(grouped["c"], name="c")
    assert view.api_support("Produce").cluster == VersionRange(0, 6)  # not 0-11
    assert view.api_support("Produce").unknown == (3,)
    # A later answer wins over an earlier failure.
    again = brokers_by_cluster([failed(2, "2026-01-01T00:00:00Z"),
                                good(2, "2026-01-02T00:00:00Z", 9)])["c"][0]
    assert again.state is BrokerState.ANSWERED and again.apis[0] == VersionRange(0, 9)


# -- hostile records -------------------------------------------------------------------


@pytest.mark.parametrize(("change", "expected"), [
    ({"port": 0}, "'port' must be 1-65535, got 0"),
    ({"port": 65536}, "'port' must be 1-65535, got 65536"),
    ({"port": -1}, "'port' must be 1-65535"),
    ({"broker_id": 2**31}, "'broker_id' must be -2147483648-2147483647"),
    ({"api_versions": [{"api_key": 0, "min_version": 0, "max_version": 32768}]},
     "versions are 0-32767, got [0, 32768]"),
    ({"api_versions": [{"api_key": 0, "min_version": -1, "max_version": 3}]},
     "versions are 0-32767, got [-1, 3]"),
    ({"api_versions": [{"api_key": 0, "min_version": 5, "max_version": 3}]},
     "min must not exceed max"),
    ({"api_versions": [{"api_key": 40000, "min_version": 0, "max_version": 3}]},
     "'api_key' must be 0-32767"),
    ({"supported_features": {"group.version": [0, 99999]}}, "versions are 0-32767"),
    ({"finalized_features_epoch": 2**63}, "'finalized_features_epoch' must be"),
    ({"finalized_features_epoch": -1.0}, "'finalized_features_epoch' must be an integer"),
    ({"host": "b\ud800"}, "'host' holds an invalid \\u escape (a lone surrogate)"),
    ({"cluster": "\udfff"}, "'cluster' holds an invalid \\u escape"),
    ({"source": "error", "api_versions": [], "error": "x\ud800"}, "'error' holds an invalid"),
    ({"software": {"name": "\ud800", "version": "1"}}, "'software.name' holds an invalid"),
    ({"finalized_features": {"a\ud800": [1, 2]}}, "a feature name in 'finalized_features'"),
])
def test_out_of_range_and_invalid_text_are_bad_records(
        change: dict[str, object], expected: str, tmp_path: Path) -> None:
    path = tmp_path / "snap.jsonl"
    # json.dumps writes a lone surrogate as the \ud800 escape, as a hostile file would.
    path.write_text(json.dumps(DESIGN_EXAMPLE) + "\n" + json.dumps({**DESIGN_EXAMPLE, **change})
                    + "\n", encoding="utf-8")
    with pytest.raises(SnapshotError) as info:
        read_snapshots(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: invalid snapshot record: ")
    assert expected in str(info.value)


def test_range_edges_are_accepted() -> None:
    record = record_from_json({
        **DESIGN_EXAMPLE, "port": 65535, "broker_id": -(2**31),
        "api_versions": [{"api_key": 32767, "min_version": 0, "max_version": 32767}]})
    assert record.port == 65535
    assert record.api_versions[32767] == VersionRange(0, 32767)


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_deeply_nested_json_is_a_snapshot_error(depth: int, tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(DESIGN_EXAMPLE) + "\n" + "[" * depth + "]" * depth + "\n",
                    encoding="utf-8")
    with pytest.raises(SnapshotError) as info:
        read_snapshots(path)
    assert info.value.line == 2
    assert "nested too deeply" in str(info.value)


def test_a_huge_integer_is_a_snapshot_error(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"port": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(SnapshotError) as info:
        read_snapshots(path)
    assert info.value.line == 1


def test_unreachable_records_one_per_bootstrap_address() -> None:
    from kclient.negotiation.snapshot import unreachable_records

    records = unreachable_records("down", "h1:9093,[::1],h1:9093", "refused",
                                  "2026-11-22T10:00:00Z")
    assert [(r.host, r.port) for r in records] == [("h1", 9093), ("::1", 9092)]
    for record in records:
        assert (record.cluster, record.broker_id, record.source, record.error) == (
            "down", -1, "error", "refused")
        assert record.observed_at == "2026-11-22T10:00:00Z"
        assert record.api_versions == {} and record.software is None
        # What it writes is a valid §5 error record: it reads back the same.
        assert record_from_json(json.loads(json.dumps(record_to_json(record)))) == record
    assert unreachable_records("down", ["h1:1", "h2:2"], "x", "t")[1].host == "h2"


def test_unreachable_records_keep_an_unparsable_address_as_written() -> None:
    from kclient.negotiation.snapshot import unreachable_records

    (record,) = unreachable_records("odd", "h:70000", "bad port", "2026-11-22T10:00:00Z")
    assert (record.host, record.port, record.error) == ("h:70000", 0, "bad port")
    (empty,) = unreachable_records("odd", "", "no address", "2026-11-22T10:00:00Z")
    assert empty.host == "unknown"
    assert unreachable_records("now", "h:1", "x")[0].observed_at.endswith("Z")


# -- the live client's bound on brokers per cluster holds for snapshots (issue 36) ------


def _fleet_lines(cluster: str, ids: list[int]) -> str:
    return "".join(json.dumps({**DESIGN_EXAMPLE, "cluster": cluster, "broker_id": i}) + "\n"
                   for i in ids)


def test_more_brokers_than_max_brokers_in_a_cluster_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    # Three brokers of 'a' recorded twice each (a history), three of 'b': all within 3.
    path.write_text(_fleet_lines("a", [1, 2, 3, 1, 2, 3]) + _fleet_lines("b", [7, 8, 9])
                    + _fleet_lines("a", [4]), encoding="utf-8")
    assert len(parse_snapshots(path.read_text(encoding="utf-8"), max_brokers=4)) == 10
    with pytest.raises(SnapshotError) as info:
        read_snapshots(path, max_brokers=3)
    assert (info.value.path, info.value.line) == (str(path), 10)
    assert str(info.value) == (
        f"{path}:10: cluster 'a' lists more than 3 brokers, the most kclient takes per "
        "cluster (as from a live cluster's Metadata); if the cluster really is that large, "
        'raise max_brokers (e.g. max_brokers="6")')
    with pytest.raises(SnapshotError, match=r"fuzz\.jsonl:10: cluster 'a' lists more than 3"):
        parse_snapshots(path.read_text(encoding="utf-8"), "fuzz.jsonl", max_brokers=3)
    assert len(read_snapshots(path)) == 10  # no bound unless asked: the library's default


def test_records_are_read_line_by_line_with_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(_fleet_lines("a", [1]) + " " * (MAX_RECORD_LINE + 1) + "\n",
                    encoding="utf-8")
    records = iter_snapshots(path)
    assert next(records).broker_id == 1  # read as it goes: the first record comes first
    with pytest.raises(SnapshotError, match=r"long\.jsonl:2: a record longer than 1,048,576"):
        next(records)
    # As long as a record may be (the line end not counted): read.
    line = _fleet_lines("a", [2]).rstrip("\n")
    padded = line.replace('"host": "', '"host": "' + "h" * (MAX_RECORD_LINE - len(line)))
    path.write_text(padded + "\r\n", encoding="utf-8")
    assert read_snapshots(path)[0].host.startswith("hhh")
    path.write_bytes(_fleet_lines("a", [1]).encode() + b'{"cluster": "\xff"}\n')
    with pytest.raises(SnapshotError, match=r"long\.jsonl:2: the snapshot file is not UTF-8 "
                                            r"text \(byte 13 of this line\)"):
        read_snapshots(path)


def _lines(data: bytes, buffer: int = io.DEFAULT_BUFFER_SIZE) -> list[tuple[int, bytes | None]]:
    return list(bounded_lines(io.BufferedReader(io.BytesIO(data), buffer_size=buffer)))


def test_bounded_lines_tell_a_line_too_long_and_go_on_after_it() -> None:
    most = MAX_RECORD_LINE
    data = (b"a\r\n" + b"x" * most + b"\n" + b"y" * (most + 1) + b"\n\n"
            + b"w" * most + b"\r\n" + b"v" * (most + 1) + b"\r\n" + b"after\n"
            + b"z" * (3 * most))  # the last line has no line end
    got = _lines(data)
    assert [(n, None if g is None else (g[:1], len(g))) for n, g in got] == [
        (1, (b"a", 1)), (2, (b"x", most)), (3, None), (5, (b"w", most)), (6, None),
        (7, (b"a", 5)), (8, None)]  # line 4 is blank: counted, not given
    # A byte order mark starting the file is not part of the first line (only there).
    bom = b"\xef\xbb\xbf"
    assert _lines(bom + b"w" * most + b"\r\n" + bom + b"\n") == [(1, b"w" * most), (2, bom)]
    assert _lines(bom + b"v" * (most + 1)) == [(1, None)]
    assert LONG_RECORD == "a record longer than 1,048,576 bytes; each line must be one " \
        "snapshot record"


def _numbered_naively(data: bytes) -> list[tuple[int, bytes]]:
    """What bounded_lines gives for short lines, a line at a time (the reference)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    found = []
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line.strip(b" \t\r\n"):
            found.append((number, line))
    return found


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from([b"\n", b"\r\n", b" \n", b"\t \r\n", b" ", b"\r",
                                        b"{}", b"x", b"\x0c", b" x "]), max_size=60),
       buffer=st.integers(min_value=1, max_value=64))
def test_blank_lines_are_counted_in_bulk_as_a_line_at_a_time(pieces: list[bytes],
                                                               buffer: int) -> None:
    """Runs of blank lines are passed a buffer at a time; the numbers and lines given
    are those of reading a line at a time, whatever the buffer's size."""
    data = b"".join(pieces)
    assert _lines(data, buffer) == _numbered_naively(data)


class _CountingReader(io.BufferedReader):
    """A buffered file that counts the lines asked of it."""

    readlines_asked = 0

    def readline(self, size: int | None = -1, /) -> bytes:
        type(self).readlines_asked += 1
        return super().readline(size)


def test_a_million_blank_lines_are_read_a_buffer_at_a_time(tmp_path: Path) -> None:
    """256 MiB of line ends (254 KiB gzipped) were read a line at a time: about three
    minutes of CPU for 268 million blank lines."""
    data = b"\n" * 1_000_000 + b"last\n" + b" \r\n" * 1_000_000
    _CountingReader.readlines_asked = 0
    buffer = 1 << 16  # as kclient opens snapshot files
    assert list(bounded_lines(_CountingReader(io.BytesIO(data), buffer_size=buffer))) == [
        (1_000_001, b"last")]
    # At most one line is read whole per buffer (a run's last, cut by the buffer's end).
    assert _CountingReader.readlines_asked <= len(data) // buffer + 3
    # The core's reader numbers lines the same way: an error after the run names its line.
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * 1_000_000 + b"not json\n")
    with pytest.raises(SnapshotError, match=r"blank\.jsonl:1000001: not valid JSON"):
        read_snapshots(path)


def test_a_line_too_long_is_never_held_whole(tmp_path: Path) -> None:
    path = tmp_path / "one-line.jsonl"
    with path.open("wb") as out:
        for _ in range(64):
            out.write(b"q" * MAX_RECORD_LINE)
        out.write(b"\nlast\n")
    tracemalloc.start()
    try:
        with path.open("rb") as handle:
            assert list(bounded_lines(handle)) == [(1, None), (2, b"last")]
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_RECORD_LINE  # of a 64 MiB line
