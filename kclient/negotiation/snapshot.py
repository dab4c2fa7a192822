"""Snapshot records: one broker connection's negotiation, as a JSON Lines record.

The format is the snapshot-record contract (:mod:`kclient.contracts`);
``kclient probe --record`` writes it, ``kclient features --snapshot`` and the
fleet pipeline read it.  Keys this version does not
know are ignored on read, so newer writers stay readable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import attrs

from kclient._inputfile import check_input_file, open_input
from kclient._json import loads as json_loads
from kclient.address import parse_bootstrap
from kclient.errors import ConfigError, SnapshotError
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.ranges import MAX_VERSION, VersionRange
from kclient.negotiation.releases import fallback_release, fallback_source, resolve_release
from kclient.options import Example, Text

__all__ = [
    "LONG_RECORD",
    "MAX_RECORD_LINE",
    "ByteLines",
    "SnapshotRecord",
    "api_versions_problem",
    "append_snapshots",
    "bounded_lines",
    "brokers_by_cluster",
    "dumps_snapshots",
    "iter_snapshots",
    "observed_instant",
    "parse_snapshots",
    "read_snapshots",
    "record_from_json",
    "record_to_json",
    "unreachable_records",
    "utc_now",
    "write_snapshots",
]

_REQUIRED = ("cluster", "broker_id", "host", "port", "observed_at", "source", "api_versions")


def utc_now() -> str:
    """The current time as ``2026-11-22T10:00:00Z`` (the snapshot timestamp format)."""
    return datetime.now(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _apis(value: Mapping[int, VersionRange]) -> dict[int, VersionRange]:
    return dict(sorted(value.items()))


def _features(value: Mapping[str, VersionRange]) -> dict[str, VersionRange]:
    return dict(sorted(value.items()))


@attrs.frozen
class SnapshotRecord:
    """One snapshot record (schema: ``kclient/contracts/snapshot-record.schema.json``).

    ``source`` is ``api_versions``, ``fallback:<release>`` or ``error``; on
    ``error`` the record has no API versions and ``error`` holds the message.
    """

    cluster: str
    broker_id: int
    host: str
    port: int
    observed_at: str
    source: str
    api_versions: Mapping[int, VersionRange] = attrs.field(
        factory=dict, converter=_apis, hash=False)
    supported_features: Mapping[str, VersionRange] = attrs.field(
        factory=dict, converter=_features, hash=False)
    finalized_features: Mapping[str, VersionRange] = attrs.field(
        factory=dict, converter=_features, hash=False)
    finalized_features_epoch: int = -1
    software: tuple[str, str] | None = None
    error: str | None = None

    @classmethod
    def from_broker(cls, cluster: str, broker: BrokerVersions,
                    observed_at: str | None = None) -> SnapshotRecord:
        """The record for what ``broker`` told us (``observed_at`` defaults to now)."""
        failed = broker.error is not None
        assumed = fallback_release(broker.source)
        source = "error" if failed else (
            fallback_source(assumed) if assumed is not None else "api_versions")
        return cls(
            cluster=cluster,
            broker_id=broker.node_id,
            host=broker.host,
            port=broker.port,
            observed_at=observed_at or utc_now(),
            source=source,
            api_versions={} if failed else broker.apis,
            supported_features=broker.supported_features,
            finalized_features=broker.finalized_features,
            finalized_features_epoch=broker.finalized_features_epoch,
            software=broker.software,
            error=broker.error,
        )

    def to_broker(self) -> BrokerVersions:
        """The :class:`BrokerVersions` this record describes."""
        return BrokerVersions(
            self.broker_id,
            self.host,
            self.port,
            self.api_versions,
            supported_features=self.supported_features,
            finalized_features=self.finalized_features,
            finalized_features_epoch=self.finalized_features_epoch,
            software=self.software,
            source=self.source,
            error=self.error,
            answered_at=None if self.error is not None else observed_instant(self.observed_at),
        )


def unreachable_records(cluster: str, bootstrap_servers: str | Iterable[str], error: str,
                        observed_at: str | None = None) -> list[SnapshotRecord]:
    """The ``error`` records of a cluster none of whose bootstrap servers could be probed.

    One record per bootstrap address (broker id -1, ``source`` ``error``, no API
    versions, ``error`` the message), so the fleet sees which addresses were
    tried.  Addresses that do not parse are kept as written (port 0), because
    the record must still say what was tried; ``observed_at`` defaults to now.
    """
    try:
        addresses = parse_bootstrap(bootstrap_servers)
    except ConfigError:
        raw = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(
            str(s) for s in bootstrap_servers)
        addresses = [(raw, 0)]
    when = observed_at or utc_now()
    return [SnapshotRecord(cluster=cluster, broker_id=-1, host=host or "unknown", port=port,
                           observed_at=when, source="error", error=error)
            for host, port in addresses]


def record_to_json(record: SnapshotRecord) -> dict[str, Any]:
    """The record as a JSON-ready dict, keys in the documented order."""
    return {
        "cluster": record.cluster,
        "broker_id": record.broker_id,
        "host": record.host,
        "port": record.port,
        "observed_at": record.observed_at,
        "source": record.source,
        "api_versions": [
            {"api_key": key, "min_version": rng.min, "max_version": rng.max}
            for key, rng in record.api_versions.items()
        ],
        "supported_features": {k: v.to_list() for k, v in record.supported_features.items()},
        "finalized_features": {k: v.to_list() for k, v in record.finalized_features.items()},
        "finalized_features_epoch": record.finalized_features_epoch,
        "software": None if record.software is None else {
            "name": record.software[0], "version": record.software[1]},
        "error": record.error,
    }


class _Bad(Exception):
    pass


# Inclusive bounds of the integer keys (the wire types: node ids int32, ports 1-65535,
# API keys and versions int16, the finalized-features epoch int64).
_INT32 = (-(2**31), 2**31 - 1)
_PORT = (1, 65535)
_API_KEY = (0, MAX_VERSION)
_EPOCH = (-(2**63), 2**63 - 1)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _int(obj: Mapping[str, Any], key: str, where: str = "",
         bounds: tuple[int, int] = _INT32) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{where}{key!r} must be an integer, got {_short(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise _Bad(f"{where}{key!r} must be {bounds[0]}-{bounds[1]}, got {value}")
    return value


def _valid_text(value: str, what: str) -> str:
    # JSON may spell a lone surrogate (\ud800): not text, and unprintable.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(f"{what} holds an invalid \\u escape (a lone surrogate): "
                   f"{_short(value)}") from None
    return value


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise _Bad(f"{key!r} must be a non-empty string, got {_short(value)}")
    return _valid_text(value, repr(key))


def _range(value: Any, what: str) -> VersionRange:
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise _Bad(f"{what} must be [min, max], got {_short(value)}")
    if not all(0 <= v <= MAX_VERSION for v in value):
        raise _Bad(f"{what}: versions are 0-{MAX_VERSION}, got {value}")
    try:
        return VersionRange(value[0], value[1])
    except ValueError as exc:
        raise _Bad(f"{what}: {exc}") from None


def _feature_levels(obj: Mapping[str, Any], key: str) -> dict[str, VersionRange]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"{key!r} must be an object of name: [min, max], got {_short(value)}")
    return {_valid_text(str(name), f"a feature name in {key!r}"): _range(rng, f"{key}.{name}")
            for name, rng in value.items()}


def _source(value: str) -> str:
    if value in ("api_versions", "error"):
        return value
    assumed = fallback_release(value)
    if assumed is not None:
        try:
            resolve_release(assumed)
        except ConfigError:
            raise _Bad(f"'source' {value!r} names an unknown release") from None
        return value
    raise _Bad(f"'source' must be 'api_versions', 'fallback:<release>' or 'error', "
               f"got {_short(value)}")


def _api_versions(raw_apis: Any) -> dict[int, VersionRange]:
    if not isinstance(raw_apis, list):
        raise _Bad(f"'api_versions' must be a list, got {_short(raw_apis)}")
    apis: dict[int, VersionRange] = {}
    for index, item in enumerate(raw_apis):
        where = f"api_versions[{index}]."
        if not isinstance(item, dict):
            raise _Bad(f"api_versions[{index}] must be an object, got {_short(item)}")
        key = _int(item, "api_key", where, _API_KEY)
        if key in apis:
            raise _Bad(f"api_versions lists api_key {key} twice")
        apis[key] = _range([_int(item, "min_version", where),
                            _int(item, "max_version", where)], f"api_versions[{index}]")
    return apis


def api_versions_problem(raw: Any) -> str | None:
    """Why a decoded ``api_versions`` value is not valid in a snapshot record, or ``None``.

    The same rule and words as :func:`record_from_json`, for callers that judge
    the ranges apart from the rest of a record (the fleet pipeline judges each
    distinct list once).
    """
    try:
        _api_versions(raw)
    except _Bad as exc:
        return str(exc)
    return None


def record_from_json(obj: Any, path: str | None = None, line: int | None = None
                     ) -> SnapshotRecord:
    """Validate a decoded JSON object as a snapshot record.

    Raises :class:`SnapshotError` naming ``path:line`` and the faulty key.
    """
    try:
        if not isinstance(obj, dict):
            raise _Bad(f"a record is a JSON object, got {type(obj).__name__}")
        missing = [k for k in _REQUIRED if k not in obj]
        if missing:
            raise _Bad(f"missing key(s) {', '.join(missing)}")
        source = _source(_str(obj, "source"))
        apis = _api_versions(obj["api_versions"])
        error = obj.get("error")
        if error is not None and not isinstance(error, str):
            raise _Bad(f"'error' must be a string or null, got {_short(error)}")
        if error is not None:
            _valid_text(error, "'error'")
        if source == "error" and not error:
            raise _Bad("'source' is 'error' but 'error' gives no message")
        if source == "error" and apis:
            raise _Bad("'source' is 'error' but 'api_versions' is not empty")
        software_raw = obj.get("software")
        software: tuple[str, str] | None = None
        if software_raw is not None:
            if not isinstance(software_raw, dict):
                raise _Bad(f"'software' must be an object with name and version, "
                           f"got {_short(software_raw)}")
            software = (_valid_text(str(software_raw.get("name", "")), "'software.name'"),
                        _valid_text(str(software_raw.get("version", "")), "'software.version'"))
        epoch = (_int(obj, "finalized_features_epoch", bounds=_EPOCH)
                 if "finalized_features_epoch" in obj else -1)
        return SnapshotRecord(
            cluster=_str(obj, "cluster"),
            broker_id=_int(obj, "broker_id"),
            host=_str(obj, "host"),
            port=_int(obj, "port", bounds=_PORT),
            observed_at=_str(obj, "observed_at"),
            source=source,
            api_versions=apis,
            supported_features=_feature_levels(obj, "supported_features"),
            finalized_features=_feature_levels(obj, "finalized_features"),
            finalized_features_epoch=epoch,
            software=software,
            error=error,
        )
    except _Bad as exc:
        raise SnapshotError(f"invalid snapshot record: {exc}; fix or remove this line",
                            path, line) from None


#: The longest snapshot record line read, in bytes, its line end not counted: a
#: record of every API with features and an error message is a few KiB.
MAX_RECORD_LINE = 1024 * 1024
#: What is wrong with a longer line (the core refuses the file with it; the
#: fleet's engines count the line as a bad record).
LONG_RECORD = (f"a record longer than {MAX_RECORD_LINE:,} bytes; each line must be one "
               "snapshot record")
#: How much of a line too long to keep is read at a time, to skip it.
_SKIP_PIECE = 1 << 16
_BOM = b"\xef\xbb\xbf"
#: JSON's whitespace: a line of these alone is blank (every reader skips it).
_BLANK = b" \t\r\n"
#: How far ahead a run of blank lines is first looked at (most runs are short).
_GLANCE = 256


class ByteLines(Protocol):
    """What :func:`bounded_lines` reads from: a buffered binary file, plain or
    decompressing (``open(..., "rb")``, :class:`gzip.GzipFile`)."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most ``size`` bytes of it."""

    def peek(self, size: int, /) -> bytes:
        """Bytes ahead, not consumed (at least one unless at the end)."""

    def read(self, size: int = -1, /) -> bytes:
        """The next ``size`` bytes."""


def bounded_lines(handle: ByteLines) -> Iterator[tuple[int, bytes | None]]:
    """``(number, line)`` for each line of ``handle`` that is not blank, without its line
    end; the line is ``None`` when it is too long.

    Numbers count every line from 1, blank ones included.  At most
    :data:`MAX_RECORD_LINE` bytes of a line (plus ``\\r\\n``) are held at once:
    of a longer line, only that it is too long is told, and, if the caller asks
    for the next line, the rest of it is read past a piece at a time.

    Blank lines (JSON whitespace alone, which every reader skips) cost what
    their bytes cost: a run of them is counted and passed a buffer at a time,
    never a line at a time, so a file of 256 MiB of line ends (254 KiB
    gzipped) is read as fast as its bytes, not as 268 million lines.  A UTF-8
    byte order mark starting the file (some Windows tools write one) is
    dropped, as Spark's text reader drops it.
    """
    limit = MAX_RECORD_LINE + 2
    number = 0
    raw = handle.readline(limit)
    if raw.startswith(_BOM):  # the mark's bytes do not count against the line
        raw = raw[len(_BOM):] + (b"" if raw.endswith(b"\n") else handle.readline(len(_BOM)))
    while raw:
        number += 1
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > MAX_RECORD_LINE:
            yield number, None
            while not raw.endswith(b"\n"):
                raw = handle.readline(_SKIP_PIECE)
                if not raw:
                    return
        elif line.strip(_BLANK):
            yield number, line
        elif raw.endswith(b"\n"):
            number += _skip_blank_lines(handle)
        raw = handle.readline(limit)


def _skip_blank_lines(handle: ByteLines) -> int:
    """Consume the blank lines ahead in ``handle`` a buffer at a time; how many.

    Stops before the first line that holds anything but whitespace, and before
    whitespace that is not yet followed by its line end (that line is read whole).
    Each turn consumes at least one buffered line end or returns, so the work is
    linear in the bytes passed.
    """
    skipped = 0
    while True:
        ahead = handle.peek(_SKIP_PIECE)[:_SKIP_PIECE]
        # Where the run of whitespace ends: a long run is recognised by deleting its
        # bytes (several times faster than stripping them); lstrip costs the run alone.
        if ahead[:_GLANCE].translate(None, _BLANK) or ahead.translate(None, _BLANK):
            run = len(ahead) - len(ahead.lstrip(_BLANK))
        else:
            run = len(ahead)
        end = ahead.rfind(b"\n", 0, run) + 1  # through the last line end of the run
        if end == 0:
            return skipped
        skipped += ahead.count(b"\n", 0, end)
        handle.read(end)
        if run < len(ahead):
            return skipped  # something else follows: the next line is read as a line


def iter_snapshots(path: str | Path, *, max_brokers: int | None = None
                   ) -> Iterator[SnapshotRecord]:
    """The records of a JSON Lines file, one by one, as it is read; blank lines are skipped.

    The file must be a regular file (:mod:`kclient._inputfile`; checked at the
    call, so a missing file or a FIFO fails here); it is read line by line,
    each line at most :data:`MAX_RECORD_LINE` bytes of UTF-8.  With
    ``max_brokers``, a cluster listing more distinct brokers is refused (as the
    live client refuses such a Metadata answer).  Errors are
    :class:`SnapshotError` naming ``file:line``.
    """
    where = check_input_file(path, "the snapshot file", limit=None, error=SnapshotError)
    return _records(_file_lines(path, where), where, max_brokers)


def _file_lines(path: str | Path, where: str) -> Iterator[tuple[int, str]]:
    with open_input(path, "the snapshot file", limit=None, error=SnapshotError) as handle:
        lines = bounded_lines(handle)
        number = 0
        while True:
            try:
                number, raw = next(lines)
            except StopIteration:
                return
            except OSError as exc:
                raise SnapshotError(f"cannot read the snapshot file: {exc.strerror or exc}",
                                    where, number + 1) from None
            if raw is None:
                raise SnapshotError(LONG_RECORD, where, number)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SnapshotError(f"the snapshot file is not UTF-8 text (byte {exc.start} "
                                    "of this line); save it as UTF-8", where, number) from None
            yield number, text


def parse_snapshots(text: str, source: str = "<string>", *, max_brokers: int | None = None
                    ) -> list[SnapshotRecord]:
    """The records of JSON Lines ``text``; errors name ``source:line``.

    ``max_brokers`` bounds the brokers of each cluster, as for :func:`iter_snapshots`.
    """
    return list(_records(enumerate(text.split("\n"), start=1), source, max_brokers))


def _records(lines: Iterator[tuple[int, str]], where: str, max_brokers: int | None
             ) -> Iterator[SnapshotRecord]:
    """The records of numbered lines (blank ones skipped)."""
    seen: dict[str, set[int]] = {}
    for number, text in lines:
        if not text.strip():
            continue
        try:
            obj = json_loads(text)
        except ValueError as exc:
            raise SnapshotError(f"not valid JSON ({exc}); each line must be one JSON "
                                "object", where, number) from None
        record = record_from_json(obj, where, number)
        if max_brokers is not None:
            brokers = seen.setdefault(record.cluster, set())
            if record.broker_id not in brokers:
                if len(brokers) >= max_brokers:
                    raise SnapshotError(Text(
                        f"cluster {_short(record.cluster)} lists more than {max_brokers:,} "
                        f"brokers, the most kclient takes per cluster (as from a live "
                        f"cluster's Metadata); if the cluster really is that large, raise ",
                        Example("max_brokers", str(max_brokers * 2))), where, number)
                brokers.add(record.broker_id)
        yield record


def read_snapshots(path: str | Path, *, max_brokers: int | None = None
                   ) -> list[SnapshotRecord]:
    """Every record of a JSON Lines snapshot file, in file order (see :func:`iter_snapshots`)."""
    return list(iter_snapshots(path, max_brokers=max_brokers))


def dumps_snapshots(records: Iterable[SnapshotRecord]) -> str:
    """``records`` as JSON Lines text, one object per line, as the files hold them."""
    return "".join(json.dumps(record_to_json(r), separators=(", ", ": ")) + "\n"
                   for r in records)


def write_snapshots(path: str | Path, records: Iterable[SnapshotRecord]) -> None:
    """Write ``records`` to ``path`` (replacing it), one JSON object per line."""
    try:
        Path(path).write_text(dumps_snapshots(records), encoding="utf-8")
    except OSError as exc:
        raise SnapshotError(f"cannot write the snapshot file: {exc.strerror or exc}",
                            str(path)) from None


def append_snapshots(path: str | Path, records: Iterable[SnapshotRecord]) -> None:
    """Append ``records`` to ``path`` (created when missing)."""
    try:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(dumps_snapshots(records))
    except OSError as exc:
        raise SnapshotError(f"cannot append to the snapshot file: {exc.strerror or exc}",
                            str(path)) from None


def observed_instant(text: str) -> datetime | None:
    """``observed_at`` as an instant (UTC when no offset is given), ``None`` if it is not one.

    How every reader of snapshot records orders them: :func:`brokers_by_cluster`
    and the fleet report alike.
    """
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def brokers_by_cluster(records: Iterable[SnapshotRecord]) -> dict[str, list[BrokerVersions]]:
    """Group records by cluster, keeping the latest record of each broker.

    "Latest" is the greatest ``observed_at``; on a tie (or an unparsable time)
    the record that comes later in the input wins.  When a broker's latest
    record is an error but an earlier record of it holds an answer, the broker
    is *stale*: it keeps that answer (``answered_at`` is its time) with the
    latest error, so a failed probe never widens the cluster's ranges.  A
    broker with only error records is unknown.  Clusters appear in order of
    first appearance, brokers sorted by id.
    """
    latest: dict[str, dict[int, tuple[datetime | None, SnapshotRecord]]] = {}
    answered: dict[str, dict[int, tuple[datetime | None, SnapshotRecord]]] = {}
    for record in records:
        moment = observed_instant(record.observed_at)
        _keep_latest(latest.setdefault(record.cluster, {}), record, moment)
        if record.error is None:
            _keep_latest(answered.setdefault(record.cluster, {}), record, moment)
    result: dict[str, list[BrokerVersions]] = {}
    for cluster, brokers in latest.items():
        good = answered.get(cluster, {})
        views: list[BrokerVersions] = []
        for broker_id, (_, record) in sorted(brokers.items()):
            previous = good.get(broker_id)
            if record.error is not None and previous is not None:
                views.append(previous[1].to_broker().went_stale(record.error))
            else:
                views.append(record.to_broker())
        result[cluster] = views
    return result


def _keep_latest(best: dict[int, tuple[datetime | None, SnapshotRecord]],
                 record: SnapshotRecord, moment: datetime | None) -> None:
    current = best.get(record.broker_id)
    if current is not None and current[0] is not None and moment is not None and (
            moment < current[0]):
        return
    best[record.broker_id] = (moment, record)
