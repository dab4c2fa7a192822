"""The in-process engine: the fleet report without Spark, for what one machine holds.

It writes the same four tables as the Spark pipeline (:mod:`kclient.fleet.pipeline`,
same columns and values; ``bad_records`` reasons are the core's own, more
specific, texts) and the same report, from the same core rules:

* the input is streamed, line by line (JSON Lines, gzip allowed) or batch by
  batch (Parquet, with pyarrow); each record is checked by the core's
  :func:`~kclient.negotiation.record_from_json`, its ``api_versions`` list
  once per distinct list (:func:`~kclient.negotiation.snapshot.api_versions_problem`);
* for each view (cluster, plus the UTC day with history) and broker only the
  latest record and the latest answer are kept, as
  :func:`~kclient.negotiation.brokers_by_cluster` keeps them;
* the core (:meth:`~kclient.negotiation.ClusterView.api_ranges`,
  :func:`~kclient.negotiation.evaluate_features`,
  :func:`~kclient.negotiation.guess_release`) judges each distinct view
  *shape* once (:func:`kclient.fleet.judge.judge_shape`), and the verdicts are
  spread over the views with Arrow.

Memory grows with the number of brokers, views and distinct answers, not with
the size of the input (history records of a broker replace each other).
"""

from __future__ import annotations

import contextlib
import gzip
import math
import re
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, date, datetime
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from kclient._inputfile import open_input, opened_input_path
from kclient._json import loads as json_loads
from kclient._outputfile import fresh_folder, remove_entry
from kclient.errors import FleetError, SnapshotError
from kclient.fleet.engine import require_engine
from kclient.fleet.judge import (
    Shape,
    ShapeVerdicts,
    StandIns,
    judge_shape,
    unknown_sentence,
)
from kclient.fleet.reader import (
    OBSERVED_AT_PROBLEM,
    SnapshotInput,
    find_inputs,
    refused_input,
)
from kclient.fleet.readiness import READINESS_TABLE, JudgedInventory, local_readiness
from kclient.fleet.report import (
    TABLES,
    BadLine,
    ReportData,
    prepare_out,
    publish_report,
    visible,
    window_text,
)
from kclient.fleet.rows import int64_array, table_from_rows
from kclient.fleet.signatures import MAX_SIGNATURES, too_many
from kclient.fleet.summary import REPORT_LIMIT, ShapeGroup, summarise
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import ReleaseGuess, fallback_release, guess_release
from kclient.negotiation.snapshot import (
    LONG_RECORD,
    SnapshotRecord,
    api_versions_problem,
    bounded_lines,
    observed_instant,
    parse_snapshots,
    record_from_json,
)
from kclient.negotiation.verdict import BrokerState
from kclient.net.defaults import DEFAULT_MAX_BROKERS
from kclient.protocol.constants import ApiKey

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["LOCAL_LIMIT_BYTES", "LocalTables", "compute_local", "run_local_report"]

#: ``--engine auto`` runs in-process up to this much input (as JSON Lines,
#: :meth:`~kclient.fleet.reader.SnapshotInput.work_bytes`), on Spark beyond:
#: about 340,000 broker records of 3 kB, which the local engine reads in well
#: under a minute with a few hundred MB of memory.
LOCAL_LIMIT_BYTES = 1 << 30

_T = TypeVar("_T")

_BAD_BATCH = 10_000
#: Distinct feature objects whose judgement is remembered (a fleet has a few dozen).
_LEVELS_KEPT = 10_000
#: Distinct ``api_versions`` texts (or objects) whose judgement is remembered, each
#: a few KiB (a fleet has a few dozen to a few hundred).
_LISTS_KEPT = 20_000
#: Views whose table rows are made (and, with ``out``, written) together: about
#: 21,000 API rows, so memory does not grow with the number of clusters (at
#: 10,000 brokers: 250 views a batch peaked at 160 MiB, 500 at 169, 1,000 at 190).
_VIEWS_PER_BATCH = 250
_ANSWERED = BrokerState.ANSWERED.value
_STALE = BrokerState.STALE.value
_UNKNOWN = BrokerState.UNKNOWN.value


def _remember(memo: dict[Any, _T], key: Any, judged: _T, bound: int) -> _T:
    """``judged``, kept in ``memo`` under ``key`` while it holds fewer than ``bound``.

    Past the bound, an input of ever new values is judged afresh: memory
    follows the distinct answers a fleet has, not the input's size.
    """
    if len(memo) < bound:
        memo[key] = judged
    return judged


@attrs.frozen
class _Kept:
    """What the engine keeps of one record of a broker (the ranges are its signature)."""

    moment: datetime
    host: str
    port: int
    observed_at: str
    source: str
    sig: int
    levels: tuple[tuple[str, tuple[int, int]], ...]
    error: str | None
    software: tuple[str, str] | None


class _Signatures:
    """The distinct ``api_versions`` lists of the input, each judged by the core once.

    Lists are keyed by their JSON text (:meth:`judge_text`) or, when a record
    came as an object, by their entries (:meth:`judge`).
    """

    def __init__(self) -> None:
        self.by_raw: dict[Any, tuple[str | None, int]] = {}
        self.by_ranges: dict[tuple[tuple[int, int, int], ...], int] = {}
        self.ranges: list[dict[int, VersionRange]] = []
        self.guesses: list[ReleaseGuess] = []
        self.texts: list[str] = []  # each guess as the tables print it (made once: not cheap)

    def judge(self, raw: Any) -> tuple[str | None, int] | None:
        """``(problem, signature id)`` of a list; ``None`` when it cannot be keyed cheaply."""
        try:
            key = tuple(tuple(entry.items()) for entry in raw)
        except (AttributeError, TypeError):
            return None
        found = self.by_raw.get(key)
        if found is None:
            found = _remember(self.by_raw, key, self._judged(raw), _LISTS_KEPT)
        return found

    def judge_text(self, text: str) -> tuple[str | None, int] | None:
        """``(problem, signature id)`` of a list given as JSON text; ``None``: not a JSON list."""
        found = self.by_raw.get(text)
        if found is None:
            try:
                raw = json_loads(text)
            except ValueError:
                return None
            if not isinstance(raw, list):
                return None
            found = _remember(self.by_raw, text, self._judged(raw), _LISTS_KEPT)
        return found

    def _judged(self, raw: Any) -> tuple[str | None, int]:
        problem = api_versions_problem(raw)
        if problem is not None:
            return problem, -1
        ranges = tuple(sorted((e["api_key"], e["min_version"], e["max_version"]) for e in raw))
        sig = self.by_ranges.get(ranges, -1)
        if sig < 0:
            if len(self.ranges) >= MAX_SIGNATURES:
                raise too_many("api_versions lists")
            sig = self.by_ranges[ranges] = len(self.ranges)
            self.ranges.append({k: VersionRange(lo, hi) for k, lo, hi in ranges})
            self.guesses.append(guess_release(self.ranges[sig]))
            self.texts.append(self.guesses[sig].text)
        return None, sig


#: What stands for a valid, non-empty ``api_versions`` list judged apart.
_ONE_ENTRY = [{"api_key": int(ApiKey.API_VERSIONS), "min_version": 0, "max_version": 0}]
#: A valid record but for the feature object put in, to have the core judge that alone.
_LEVELS_PROBE = {"cluster": "c", "broker_id": 0, "host": "h", "port": 1, "observed_at": "t",
                 "source": "api_versions", "api_versions": [], "error": None}
#: Where a line's ``api_versions`` list starts (the key, then the bracket).
_API_START = re.compile(r'"api_versions"\s*:\s*\[')


def _cut_api_versions(text: str) -> tuple[str, str] | None:
    """``(line with [] for the list, the list's JSON text)``, or ``None`` to parse it all.

    A fleet repeats a few dozen lists in every record: parsed once each
    (:meth:`_Signatures.judge_text`), the rest of a line is a sixth of it.  The
    cut is taken only when the key occurs once and the list holds no nested
    list (its first ``]`` closes it); a wrong cut never parses (an unbalanced
    text), and the caller checks that the ``[]`` stands at the top level.
    """
    found = list(_API_START.finditer(text))
    if len(found) != 1:
        return None
    start = found[0].end() - 1
    end = text.find("]", start)
    if end < 0:
        return None
    return text[:start] + "[]" + text[end + 1:], text[start:end + 1]


def _reason(error: SnapshotError) -> str:
    """The core's reason without its ``file:line:`` prefix."""
    text = str(error)
    if error.path is not None:
        where = f"{error.path}:{error.line}: " if error.line is not None else f"{error.path}: "
        text = text.removeprefix(where)
    return text


def _levels(value: Mapping[str, VersionRange]) -> tuple[tuple[str, tuple[int, int]], ...]:
    return tuple((name, (rng.min, rng.max)) for name, rng in value.items())


class _Reader:
    """Checks records and keeps, per view and broker, the latest record and the latest answer."""

    def __init__(self, history: bool, bad: _BadWriter, max_brokers: int) -> None:
        self.history = history
        self.signatures = _Signatures()
        self.views: dict[tuple[str, date | None], dict[int, list[_Kept | None]]] = {}
        self.bad = bad
        self.max_brokers = max_brokers
        # Feature objects judged so far: their levels, or None when not valid.
        self.levels: dict[tuple[Any, ...], tuple[tuple[str, tuple[int, int]], ...] | None] = {}
        # With history, the distinct brokers of each cluster over every day.
        self.members: dict[str, set[int]] = {}

    def line(self, file: str, number: int, text: str | None) -> None:
        if text is None:
            self.bad.add(file, number, LONG_RECORD)
            return
        if not text.strip():
            return
        cut = _cut_api_versions(text)
        if cut is not None:
            judged = self.signatures.judge_text(cut[1])
            if judged is not None and judged[0] is None:
                try:
                    obj = json_loads(cut[0])
                except ValueError:
                    obj = None
                if isinstance(obj, dict) and obj.get("api_versions") == []:
                    self._keep(file, number, obj, judged[1])
                    return
        try:
            obj = json_loads(text)
        except ValueError:
            try:
                parse_snapshots(text)
            except SnapshotError as exc:
                self.bad.add(file, number, _reason(exc))
            return
        self.record(file, number, obj)

    def record(self, file: str, number: int, obj: Any) -> None:
        """Check a record given as an object (a Parquet row, or a line parsed whole)."""
        try:
            record = record_from_json(obj)  # the core's whole check, its own words
        except SnapshotError as exc:
            self.bad.add(file, number, _reason(exc))
            return
        judged = self.signatures.judge([
            {"api_key": k, "min_version": r.min, "max_version": r.max}
            for k, r in record.api_versions.items()])
        assert judged is not None and judged[0] is None
        self._kept(file, number, record, judged[1])

    def _keep(self, file: str, number: int, obj: dict[str, Any], sig: int) -> None:
        """A record whose list (signature ``sig``) was judged apart: the rest by the core.

        Its feature objects, the same few in every record, are judged apart too
        (:meth:`_levels_of`); when one is not valid the core judges the record
        whole, for its first reason.
        """
        # One entry stands for the list (the core checks that an error record has none).
        rest = {**obj, "api_versions": _ONE_ENTRY if self.signatures.ranges[sig] else []}
        finalized = self._levels_of("finalized_features", obj.get("finalized_features"))
        if finalized is not None and self._levels_of(
                "supported_features", obj.get("supported_features")) is not None:
            # Checked last by the core: left out, no other reason can change.
            rest["finalized_features"] = rest["supported_features"] = None
        else:
            finalized = None
        try:
            record = record_from_json(rest)
        except SnapshotError as exc:
            self.bad.add(file, number, _reason(exc))
            return
        self._kept(file, number, record, sig,
                   _levels(record.finalized_features) if finalized is None else finalized)

    def _levels_of(self, key: str, value: Any) -> tuple[tuple[str, tuple[int, int]], ...] | None:
        """A valid feature object's levels, judged by the core once per distinct object.

        ``None`` when it is not valid, or not one that can be keyed exactly
        (only names with two plain integers are: ``True`` and ``1.0`` equal ``1``).
        """
        if value is None:
            return ()
        try:
            key_value = (key, *((name, *rng) for name, rng in value.items()
                               if type(rng) is list and len(rng) == 2
                               and type(rng[0]) is int and type(rng[1]) is int))
        except (AttributeError, TypeError):
            return None
        if len(key_value) != len(value) + 1:
            return None
        if key_value in self.levels:
            return self.levels[key_value]
        try:
            parsed = record_from_json({**_LEVELS_PROBE, key: value})
        except SnapshotError:
            return _remember(self.levels, key_value, None, _LEVELS_KEPT)
        return _remember(self.levels, key_value, _levels(getattr(parsed, key)), _LEVELS_KEPT)

    def _kept(self, file: str, number: int, record: SnapshotRecord, sig: int,
              levels: tuple[tuple[str, tuple[int, int]], ...] | None = None) -> None:
        moment = observed_instant(record.observed_at)
        if moment is None:
            self.bad.add(file, number, OBSERVED_AT_PROBLEM + record.observed_at)
            return
        kept = _Kept(moment, record.host, record.port, record.observed_at, record.source, sig,
                     _levels(record.finalized_features) if levels is None else levels,
                     record.error, record.software)
        # With history, a view is a cluster and a UTC day.
        view = (record.cluster, moment.astimezone(UTC).date() if self.history else None)
        brokers = self.views.get(view)
        if brokers is None:
            brokers = self.views[view] = {}
        slots = brokers.get(record.broker_id)
        if slots is None:
            self._count(file, number, record, brokers)
            slots = brokers[record.broker_id] = [None, None]
        # The latest record, and the latest answer: a later or equal time wins
        # (the later line on a tie), as brokers_by_cluster keeps them.
        latest = slots[0]
        if latest is None or kept.moment >= latest.moment:
            slots[0] = kept
        if kept.error is None:
            answer = slots[1]
            if answer is None or kept.moment >= answer.moment:
                slots[1] = kept


    def _count(self, file: str, number: int, record: SnapshotRecord,
               brokers: dict[int, list[_Kept | None]]) -> None:
        """Before a broker joins a view: refuse a cluster of more than :attr:`max_brokers`.

        The core's bound (``kclient features --snapshot``, a live cluster's
        Metadata), counted over every day with history.
        """
        if self.history:
            members = self.members.setdefault(record.cluster, set())
            members.add(record.broker_id)
            count = len(members)
        else:
            count = len(brokers) + 1
        if count > self.max_brokers:
            raise FleetError(
                f"{file}:{number}: cluster {visible(record.cluster[:80])} lists more than "
                f"{self.max_brokers:,} brokers, the most kclient takes per cluster (as "
                "'kclient features --snapshot' and a live cluster's Metadata); check the "
                "input's cluster names, or raise max_brokers of run_local_report if the "
                "cluster really is that large")


class _Sink:
    """One table's batches, appended to ``folder``'s Parquet file as they come.

    Without a folder they are kept and joined into one table by :meth:`close`.
    The file is written even when no batch comes (the table's columns, no rows).
    """

    def __init__(self, schema: pa.Schema, folder: Path | None) -> None:
        self._schema = schema
        self._folder = folder
        self._writer: Any = None
        self._batches: list[Any] = []

    def add(self, table: Any) -> None:
        if self._folder is None:
            self._batches.append(table)
            return
        import pyarrow.parquet as pq

        try:
            if self._writer is None:
                self._writer = pq.ParquetWriter(str(_table_file(self._folder)), self._schema)
            if len(table):
                self._writer.write_table(table)
        except OSError as exc:
            raise FleetError(f"cannot write {self._folder}: {exc}; choose another --out"
                             ) from None

    def abort(self) -> None:
        """Give up: close the file and remove it (its footer was never written)."""
        self._batches.clear()
        if self._writer is None or self._folder is None:
            return
        with contextlib.suppress(Exception):
            self._writer.close()
        self._writer = None
        with contextlib.suppress(OSError):
            _table_file(self._folder).unlink()

    def close(self) -> Any:
        """The whole table when kept in memory; ``None`` when written to the folder."""
        import pyarrow as pa

        if self._folder is None:
            return pa.concat_tables(self._batches) if self._batches else (
                table_from_rows([], self._schema))
        if self._writer is None:
            self.add(table_from_rows([], self._schema))
        try:
            self._writer.close()
        except OSError as exc:
            raise FleetError(f"cannot write {self._folder}: {exc}; choose another --out"
                             ) from None
        return None


class _BadWriter:
    """Bad records streamed to the ``bad_records`` table; the first ones kept for the report.

    Without a ``target`` folder the table is kept in memory instead (:attr:`table`).
    """

    def __init__(self, target: Path | None) -> None:
        self.count = 0
        self.first: list[BadLine] = []
        self._rows: list[tuple[str, int, str]] = []
        self._target = target
        self._sink: _Sink | None = None
        self.table: Any = None

    def add(self, file: str, line: int, reason: str) -> None:
        self.count += 1
        self._rows.append((file, line, reason))
        if len(self._rows) >= _BAD_BATCH:
            self.flush()

    def flush(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        self.first = sorted([*self.first, *(BadLine(*r) for r in rows)],
                            key=lambda b: (b.file, b.line))[:REPORT_LIMIT]
        if self._sink is None:
            self._sink = _Sink(_bad_schema(), self._target)
        self._sink.add(table_from_rows(rows, _bad_schema()))

    def close(self) -> None:
        self.flush()
        if self._sink is None:
            self._sink = _Sink(_bad_schema(), self._target)
        self.table = self._sink.close()


def _table_file(folder: Path) -> Path:
    return folder / "part-00000.parquet"


def _bad_schema() -> pa.Schema:
    """The ``bad_records`` table's columns."""
    import pyarrow as pa

    return pa.schema([("file", pa.string()), ("line", pa.int64()), ("reason", pa.string())])


def _text_lines(name: str) -> Iterator[tuple[int, str | None]]:
    """Each line of a JSON Lines file, numbered; ``None`` for one too long to be a record."""
    try:
        # Opened as kclient opens named input: a regular file, never blocking.
        with open_input(name, "the snapshot file", limit=None, error=refused_input) as raw_file, \
                (gzip.GzipFile(fileobj=raw_file) if name.endswith(".gz")
                 else contextlib.nullcontext(raw_file)) as handle:
            for number, raw in bounded_lines(handle):
                yield number, None if raw is None else raw.decode("utf-8", "replace")
    except (OSError, EOFError, zlib.error) as exc:
        raise FleetError(f"{name}: cannot read the snapshot file ({exc}); check "
                         "--snapshots") from None


def _map(value: Any) -> Any:
    """A Parquet map (a list of key/value pairs) as the JSON object it stands for."""
    if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return dict(value)
    return value


def _parquet_rows(name: str) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq  # compute_local required it

    try:
        # kclient's input rule (a regular file), and pyarrow reads that very file.
        with opened_input_path(name, "the snapshot file", limit=None,
                               error=refused_input) as path:
            handle = pq.ParquetFile(path)
            number = 0
            for batch in handle.iter_batches(batch_size=2_000):
                for row in batch.to_pylist():
                    number += 1
                    for key in ("finalized_features", "supported_features"):
                        if key in row:
                            row[key] = _map(row[key])
                    yield number, row
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise FleetError(f"{name}: cannot read the Parquet file ({exc}); check "
                         "--snapshots") from None


def _read(inputs: SnapshotInput, reader: _Reader) -> None:
    for name in sorted((*inputs.text_files, *inputs.parquet_files)):
        if "://" in name and not name.startswith("file:"):
            raise FleetError(f"{name}: the local engine reads local files only; use "
                             "--engine spark for remote input")
        if name.endswith(".parquet"):
            for number, row in _parquet_rows(name):
                reader.record(name, number, row)
        else:
            for number, text in _text_lines(name):
                reader.line(name, number, text)


@attrs.frozen
class _View:
    cluster: str
    day: date | None
    shape: Shape
    kept: tuple[tuple[int, str, _Kept, _Kept], ...]  # id, state, record used, latest record


def _views(reader: _Reader) -> list[_View]:
    views = []
    for (cluster, day), brokers in reader.views.items():
        kept = []
        for broker_id in sorted(brokers):
            latest, answer = brokers[broker_id]
            assert latest is not None
            if latest.error is None:
                kept.append((broker_id, _ANSWERED, latest, latest))
            elif answer is not None:
                kept.append((broker_id, _STALE, answer, latest))
            else:
                kept.append((broker_id, _UNKNOWN, latest, latest))
        shape = Shape(
            known=tuple((i, used.sig, used.levels, state == _STALE)
                        for i, state, used, _ in kept if state != _UNKNOWN),
            unknown=tuple(i for i, state, _, _ in kept if state == _UNKNOWN))
        views.append(_View(cluster, day, shape, tuple(kept)))
    views.sort(key=lambda v: (v.cluster, v.day or date.min))
    return views


@attrs.frozen
class LocalTables:
    """The four tables of a local run, as Arrow tables.

    Each is ``None`` when it was written to a folder instead
    (:func:`compute_local` with ``out``).
    """

    cluster_api_versions: Any
    feature_availability: Any
    broker_releases: Any
    bad_records: Any
    #: With a client inventory: its verdicts per cluster and client software.
    upgrade_readiness: Any = None

    def table(self, name: str) -> Any:
        """One table by its directory name (one of :data:`~kclient.fleet.report.TABLES`, or
        ``upgrade_readiness``)."""
        if name not in (*TABLES, READINESS_TABLE):
            raise KeyError(name)
        return getattr(self, name)


def _api_schema() -> pa.Schema:
    import pyarrow as pa

    ints = pa.list_(pa.int64())
    return pa.schema([
        ("cluster", pa.string()), ("day", pa.date32()), ("api_key", pa.int32()),
        ("api_name", pa.string()), ("state", pa.string()), ("app_min", pa.int32()),
        ("app_max", pa.int32()), ("cluster_min", pa.int32()), ("cluster_max", pa.int32()),
        ("usable_min", pa.int32()), ("usable_max", pa.int32()), ("version", pa.int32()),
        ("brokers", pa.int64()), ("brokers_with_api", pa.int32()), ("blocking", ints),
        ("unknown_brokers", ints), ("stale_brokers", ints), ("reason", pa.string())])


def _feature_schema() -> pa.Schema:
    import pyarrow as pa

    ints = pa.list_(pa.int64())
    return pa.schema([
        ("cluster", pa.string()), ("day", pa.date32()), ("feature_index", pa.int32()),
        ("feature", pa.string()), ("state", pa.string()), ("available", pa.bool_()),
        ("versions", pa.map_(pa.string(), pa.int32())), ("blocking", ints),
        ("unknown_brokers", ints), ("stale_brokers", ints),
        ("reasons", pa.list_(pa.string())), ("reason", pa.string()), ("brokers", pa.int64()),
        ("live_brokers", pa.int64()), ("known_brokers", pa.int64()), ("usable_on", ints)])


def _release_schema() -> pa.Schema:
    import pyarrow as pa

    text = pa.string()
    return pa.schema([
        ("cluster", text), ("day", pa.date32()), ("broker_id", pa.int64()), ("host", text),
        ("port", pa.int64()), ("observed_at", text), ("state", text), ("answered_at", text),
        ("source", text), ("fallback_release", text), ("error", text),
        ("api_count", pa.int32()), ("software_name", text), ("software_version", text),
        ("release_guess", text), ("guess_kind", text), ("guess_low", text),
        ("guess_high", text), ("guess_mode", text)])


class _Templates:
    """The distinct template rows of a table (rows without ``cluster`` and ``day``, a flag last).

    Shapes share most of their rows (an API every broker of both offers
    alike), so each distinct row is kept, and converted to Arrow, once.
    """

    def __init__(self) -> None:
        self._number: dict[tuple[Any, ...], int] = {}
        self._rows: list[tuple[Any, ...]] = []

    def numbers(self, rows: Iterable[tuple[Any, ...]]) -> array[int]:
        """The numbers of ``rows`` among the distinct rows (new ones are added)."""
        found = array("q")
        for row in rows:
            number = self._number.get(row)
            if number is None:
                number = self._number[row] = len(self._rows)
                self._rows.append(row)
            found.append(number)
        return found

    def table(self, schema: pa.Schema) -> Any:
        """The distinct rows as one Arrow table (``schema``'s columns after ``cluster, day``)."""
        import pyarrow as pa

        return table_from_rows(self._rows, pa.schema([*list(schema)[2:],
                                                      ("flag", pa.bool_())]))


def _spread(schema: pa.Schema, template: Any, numbers: list[array[int]],
            clusters: list[str], days: list[date | None], sentences: list[str | None],
            swaps: Mapping[str, Callable[[str], Any]]) -> Any:
    """Rows of every view from its shape's template rows, with Arrow (no per-row Python).

    ``template`` holds the distinct rows without ``cluster`` and ``day`` (the
    schema's other columns, in order) plus one last flag: the row's reason is
    the sentence about the view's brokers that never answered
    (:meth:`_Templates.table`).  View ``v`` takes the template rows
    ``numbers[v]``, in order; the columns in ``swaps`` take, in flagged rows,
    ``swaps[column](sentence of the view)`` instead of the template's.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = schema.names[2:]
    rows = array("q")
    owner = array("q")
    for view, found in enumerate(numbers):
        rows.extend(found)
        owner.extend(repeat(view, len(found)))
    row_index = int64_array(rows)
    view_index = int64_array(owner)
    where = table_from_rows(list(zip(clusters, days, strict=True)), pa.schema(list(schema)[:2]))
    out: list[Any] = [where.column(0).take(view_index), where.column(1).take(view_index)]
    flagged = template.column("flag").take(row_index)
    for name in names:
        kind = schema.field(name).type
        column = template.column(name).combine_chunks()
        if name in swaps:
            # One pool: the template values, then one value per view; each row
            # picks its template's value, or its view's when flagged.
            own = table_from_rows([(None if s is None else swaps[name](s),) for s in sentences],
                                  pa.schema([(name, kind)]))
            pool = pa.concat_arrays([column, own.column(0).combine_chunks()])
            # (The offset as an Arrow scalar: a Python int would make pyarrow import pandas.)
            shift = int64_array([len(template)])[0]
            pick = pc.if_else(flagged, pc.add(view_index, shift), row_index)
            out.append(pool.take(pick))
        else:
            out.append(column.take(row_index))
    return pa.Table.from_arrays(out, schema=schema)


def _release_rows(views: list[_View], signatures: _Signatures) -> Any:
    schema = _release_schema()
    rows = []
    for view in views:
        for broker_id, state, used, latest in view.kept:
            guess = signatures.guesses[used.sig]
            software = used.software or (None, None)
            rows.append((view.cluster, view.day, broker_id, used.host, used.port,
                         latest.observed_at, state,
                         None if state == _UNKNOWN else used.observed_at, used.source,
                         fallback_release(used.source),
                         latest.error, len(signatures.ranges[used.sig]), software[0],
                         software[1], signatures.texts[used.sig], guess.kind, guess.low,
                         guess.high, guess.mode))
    return table_from_rows(rows, schema)


@attrs.define
class _Summary:
    """What the report needs, gathered while the views are spread."""

    bad: _BadWriter
    features: FeatureSet
    history: bool
    snapshots: str
    verdicts: dict[Shape, ShapeVerdicts] = attrs.Factory(dict)
    now: list[_View] = attrs.Factory(list)
    days: Counter[tuple[str, Shape]] = attrs.Factory(Counter)
    window: tuple[str, str] = ("", "")

    def report(self, signatures: _Signatures, elapsed: float) -> ReportData:
        by_shape: dict[Shape, list[_View]] = {}
        for view in sorted(self.now, key=lambda v: v.cluster):
            by_shape.setdefault(view.shape, []).append(view)
        groups = (
            ShapeGroup(shape, self.verdicts[shape], len(views),
                       tuple((v.cluster, view_sentence(v)) for v in views[:REPORT_LIMIT]),
                       sum(1 for v in views for _b, _s, used, _l in v.kept
                           if fallback_release(used.source) is not None))
            for shape, views in by_shape.items())
        return summarise(
            groups, self.features, signatures.guesses, snapshots=self.snapshots,
            history=self.history, window=self.window, bad_records=self.bad.count,
            bad_lines=self.bad.first, elapsed=elapsed,
            days=((day, self.verdicts[shape], n) for (day, shape), n in self.days.items()))


def view_sentence(view: _View) -> str | None:
    """The core's sentence about the view's brokers that never answered (``None``: none)."""
    return unknown_sentence([(i, latest.host, latest.port, latest.error)
                             for i, state, _used, latest in view.kept if state == _UNKNOWN])


def compute_local(snapshots: str, *, features: FeatureSet | None = None,
                  history: bool = False, application: ApplicationVersions | None = None,
                  out: Path | None = None, max_brokers: int = DEFAULT_MAX_BROKERS,
                  readiness: JudgedInventory | None = None) -> tuple[LocalTables, ReportData]:
    """Read ``snapshots`` and build every table in this process; also the report's data.

    With ``out``, every table is written to its folder under ``out`` as it
    is made (``bad_records`` while reading, the others a batch of views at a
    time), and :class:`LocalTables` holds ``None`` for it; without, the
    tables are returned whole.  A cluster of more than ``max_brokers``
    distinct brokers is a :class:`FleetError`.  ``readiness`` (a judged client
    inventory) adds the ``upgrade_readiness`` table and the report's section
    (:mod:`kclient.fleet.readiness`).
    """
    require_engine("local", "the fleet's in-process engine")
    import pyarrow as pa  # present: require_engine checked it

    started = time.perf_counter()
    app = application or ApplicationVersions.from_catalog()
    if app.avoid:
        raise FleetError("the fleet pipeline evaluates the application's version ranges "
                         "without avoided versions; drop avoid_versions")
    feature_set = features if features is not None else load_features()
    inputs = find_inputs(snapshots)
    bad_folder = None
    if out is not None:
        bad_folder = _fresh(out / "bad_records")
    bad = _BadWriter(bad_folder)
    reader = _Reader(history, bad, max_brokers)
    try:
        _read(inputs, reader)
    finally:
        bad.close()
    views = _views(reader)
    reader.views.clear()
    summary = _Summary(bad, feature_set, history, snapshots)
    stand_ins = StandIns(reader.signatures.ranges)
    canonical: dict[Shape, ShapeVerdicts] = {}  # the core's answers, per canonical shape
    # The distinct template rows (shapes share most of theirs), and each shape's.
    api_templates = _Templates()
    feature_templates = _Templates()
    api_rows: dict[Shape, array[int]] = {}
    feature_rows: dict[Shape, array[int]] = {}
    for view in views:
        if view.shape in summary.verdicts:
            continue
        if len(summary.verdicts) >= MAX_SIGNATURES:
            raise too_many("sets of answering brokers (ids, signatures and feature levels)")
        verdicts = judge_shape(view.shape, feature_set, stand_ins, app, canonical)
        summary.verdicts[view.shape] = verdicts
        api_rows[view.shape] = api_templates.numbers(verdicts.apis)
        feature_rows[view.shape] = feature_templates.numbers(
            row.template for row in verdicts.features)
    last_day: dict[str, _View] = {}
    for view in views:
        last_day[view.cluster] = view  # sorted by cluster, then day
        if history:
            summary.days[str(view.day), view.shape] += 1
    summary.now = list(last_day.values())
    summary.window = _window(views)
    # The tables, a batch of views at a time: appended to out's files, or joined.
    folders = {name: None if out is None else _fresh(out / name)
               for name in TABLES if name != "bad_records"}  # that one is written while reading
    api_sink = _Sink(_api_schema(), folders["cluster_api_versions"])
    feature_sink = _Sink(_feature_schema(), folders["feature_availability"])
    release_sink = _Sink(_release_schema(), folders["broker_releases"])
    api_template = api_templates.table(_api_schema())
    feature_template = feature_templates.table(_feature_schema())
    del api_templates, feature_templates
    sinks = (api_sink, feature_sink, release_sink)
    try:
        for first in range(0, len(views), _VIEWS_PER_BATCH):
            batch = views[first:first + _VIEWS_PER_BATCH]
            clusters = [v.cluster for v in batch]
            days = [v.day for v in batch]
            sentences = [view_sentence(v) for v in batch]
            api_sink.add(_spread(_api_schema(), api_template, [api_rows[v.shape] for v in batch],
                                 clusters, days, sentences, {"reason": lambda s: s}))
            feature_sink.add(_spread(_feature_schema(), feature_template,
                                     [feature_rows[v.shape] for v in batch], clusters, days,
                                     sentences, {"reasons": lambda s: [s], "reason": lambda s: s}))
            release_sink.add(_release_rows(batch, reader.signatures))
            if out is not None:
                # The batch is written: hand its memory back (Arrow's pool keeps it otherwise).
                pa.default_memory_pool().release_unused()
        tables = LocalTables(api_sink.close(), feature_sink.close(), release_sink.close(),
                             bad.table)
    except BaseException:
        for sink in sinks:  # no half-written table stays behind, no file left open
            sink.abort()
        raise
    report = summary.report(reader.signatures, time.perf_counter() - started)
    if readiness is not None:
        table, section = local_readiness(readiness, {view.cluster for view in views})
        sink = _Sink(table.schema, None if out is None else _fresh(out / READINESS_TABLE))
        sink.add(table)
        tables = attrs.evolve(tables, upgrade_readiness=sink.close())
        report = attrs.evolve(report, readiness=section)
    return tables, report


def _window(views: list[_View]) -> tuple[str, str]:
    """The earliest and latest time of the records the views use (report text)."""
    times = [math.floor(record.moment.timestamp()) for view in views
             for _broker, state, used, latest in view.kept
             for record in ((latest, used) if state == _STALE else (latest,))]
    if not times:
        return "", ""
    return window_text(min(times)), window_text(max(times))


def _fresh(folder: Path) -> Path:
    """``folder``, emptied (as Spark's overwrite mode leaves a table's directory); a link
    there is removed, not followed (:func:`~kclient._outputfile.fresh_folder`)."""
    try:
        fresh_folder(folder)
    except OSError as exc:
        raise FleetError(f"cannot write {folder}: {exc.strerror or exc}; choose another --out"
                         ) from None
    return folder


def run_local_report(snapshots: str, out: str, *, features: FeatureSet | None = None,
                     history: bool = False, log: Callable[[str], None] | None = None,
                     max_brokers: int = DEFAULT_MAX_BROKERS,
                     readiness: JudgedInventory | None = None) -> ReportData:
    """The whole report in this process: the tables (Parquet) and ``report.md``/``.html``.

    The same outputs as :func:`kclient.fleet.pipeline.run_report`, without Spark;
    ``readiness`` adds the upgrade readiness table and section.
    """
    say = log or (lambda _text: None)
    started = time.perf_counter()
    target = prepare_out(out)
    say(f"reading snapshot records from {snapshots}; the tables go to {target}")
    if readiness is None:  # a previous run's readiness table is not this run's
        remove_entry(target / READINESS_TABLE)
    _tables, data = compute_local(snapshots, features=features, history=history, out=target,
                                  max_brokers=max_brokers, readiness=readiness)
    data = attrs.evolve(data, elapsed=time.perf_counter() - started)
    publish_report(data, target, snapshots, say)
    return data
