"""Reading snapshot records (:mod:`kclient.contracts`) into Spark, keeping track of bad input.

Inputs are JSON Lines or Parquet files: one file, a directory (searched
recursively for ``*.jsonl``, ``*.json``, ``*.ndjson`` and ``*.parquet``, gzip
allowed) or a glob.  Every line is parsed once, with an explicit schema, into
a cached frame that every later step reads.  Parquet rows with the snapshot
schema's types are taken as they are (the fast path); other Parquet rows are
turned into the same JSON text as a JSON Lines line, so one set of checks
validates both.

A record that the negotiation core would refuse (malformed JSON, a missing or
mistyped key, an empty range...) is not fatal here: it is set aside in the
``bad`` DataFrame with its file, line and reason, and counted in the report.
Line numbers are computed without collecting anything and without Python
UDFs: a line's position inside its input split (``input_file_block_start``)
plus the number of lines in the earlier splits of the same file.
"""

from __future__ import annotations

import glob
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kclient._inputfile import check_input_file, opened_input_path
from kclient.errors import ConfigError, FleetError
from kclient.fleet.session import spark_failure
from kclient.fleet.signatures import MAX_SIGNATURES, Signatures, too_many
from kclient.fleet.tables import local_table
from kclient.negotiation.releases import FALLBACK_PREFIX, resolve_release
from kclient.negotiation.snapshot import LONG_RECORD, MAX_RECORD_LINE, api_versions_problem
from kclient.options import Text

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["JSON_RECORD_BYTES", "OBSERVED_AT_PROBLEM", "PARQUET_BYTES_PER_PARTITION",
           "SnapshotInput", "find_inputs", "parquet_is_typed", "parquet_partitions",
           "read_records"]

#: File names a directory search picks up.
SNAPSHOT_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz",
                     ".parquet")
#: Why a record whose ``observed_at`` is no time is skipped (the time it gives follows).
OBSERVED_AT_PROBLEM = ("'observed_at' is not an ISO-8601 time such as 2026-11-22T10:00:00Z, "
                       "got ")
_REQUIRED = ("cluster", "broker_id", "host", "port", "observed_at", "source", "api_versions")
_MAX_SOURCES = 10_000


@attrs.frozen
class SnapshotInput:
    """The files behind a ``--snapshots`` argument, split by format."""

    text_files: tuple[str, ...]
    parquet_files: tuple[str, ...]

    @property
    def count(self) -> int:
        """How many files in all."""
        return len(self.text_files) + len(self.parquet_files)

    def work_bytes(self) -> int | None:
        """About how many bytes of JSON Lines the input amounts to; ``None`` when unknown.

        Text files count their size (gzip files theirs compressed).  A Parquet
        file counts :data:`JSON_RECORD_BYTES` per row, read from its footer: its
        own size says little about the work, as dictionary encoding packs a
        fleet's records up to 180 times smaller than their JSON text.  ``None``
        for remote files, unreadable ones, or Parquet without pyarrow.
        """
        total = 0
        for name in (*self.text_files, *self.parquet_files):
            if _is_remote(name):
                return None
            try:
                total += (_parquet_rows(name) * JSON_RECORD_BYTES
                          if name.endswith(".parquet") else os.path.getsize(name))
            except (OSError, ImportError, ValueError):
                return None
        return total

    def splittable_bytes(self) -> int | None:
        """Bytes of the local uncompressed text files, the ones Spark splits (``None``: remote)."""
        total = 0
        for name in self.text_files:
            if _is_remote(name):
                return None
            if name.endswith(".gz"):
                continue
            try:
                total += os.path.getsize(name)
            except OSError:
                return None
        return total


#: The size of a typical snapshot record as a JSON Lines line (a broker with
#: about 60 APIs): 3.1 kB in the synthetic fleets.
JSON_RECORD_BYTES = 3_000


def _parquet_rows(name: str) -> int:
    """Rows in a Parquet file, from its footer (raises ImportError without pyarrow)."""
    import pyarrow.parquet as pq

    try:
        with opened_input_path(name, "the snapshot file", limit=None,
                               error=refused_input) as path:
            return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception as exc:  # pyarrow's own ArrowInvalid for a broken footer; a refusal
        raise ValueError(str(exc)) from None


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file:")


def _picked(name: str) -> bool:
    return not name.startswith((".", "_")) and name.endswith(SNAPSHOT_SUFFIXES)


def refused_input(message: str, path: str) -> FleetError:
    """The :class:`FleetError` for a refused input file (an ``ErrorFactory``)."""
    return FleetError(Text(path, ": ", message))


def find_inputs(path: str) -> SnapshotInput:
    """Resolve a file, directory or glob into readable snapshot files.

    Remote URIs (``hdfs://``, ``s3a://`` ...) are handed to Spark unchanged.
    Raises :class:`~kclient.errors.FleetError` when nothing matches or a
    file cannot be read.
    """
    if not path:
        raise ConfigError("--snapshots needs a file, a directory or a glob")
    if _is_remote(path):
        is_parquet = path.rstrip("/").endswith(".parquet")
        return SnapshotInput(() if is_parquet else (path,), (path,) if is_parquet else ())
    local = path.removeprefix("file://") if path.startswith("file://") else path
    matches = sorted(glob.glob(local, recursive=True)) if glob.has_magic(local) else [local]
    if not matches:
        raise FleetError(f"{path}: no file matches this glob; check the --snapshots path")
    files: list[str] = []
    for match in matches:
        item = Path(match)
        if item.is_dir():
            for root, dirs, names in os.walk(item):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                files.extend(os.path.join(root, n) for n in sorted(names) if _picked(n))
        elif item.exists():
            files.append(str(item))
        else:
            raise FleetError(f"{path}: no such file or directory; check the --snapshots path")
    if not files:
        raise FleetError(f"{path}: no snapshot files found (looked for "
                         f"{', '.join(SNAPSHOT_SUFFIXES)}); check the --snapshots path")
    for name in files:
        # kclient's rule for named input: regular files only (a FIFO would block,
        # /dev/zero never end), checked from stat alone.
        check_input_file(name, "the snapshot file", limit=None, error=refused_input)
        if not os.access(name, os.R_OK):
            raise FleetError(f"{name}: cannot read the snapshot file (permission denied); "
                             "fix its permissions or leave it out")
    absolute = [str(Path(f).resolve()) for f in files]
    text = tuple(f for f in absolute if not f.endswith(".parquet"))
    parquet = tuple(f for f in absolute if f.endswith(".parquet"))
    return SnapshotInput(text, parquet)


def record_schema() -> object:
    """The Spark schema a snapshot line is parsed with (plus a corrupt-record column)."""
    from pyspark.sql import types as T

    api = T.StructType([
        T.StructField("api_key", T.LongType()),
        T.StructField("min_version", T.LongType()),
        T.StructField("max_version", T.LongType()),
    ])
    levels = T.MapType(T.StringType(), T.ArrayType(T.LongType()))
    return T.StructType([
        T.StructField("cluster", T.StringType()),
        T.StructField("broker_id", T.LongType()),
        T.StructField("host", T.StringType()),
        T.StructField("port", T.LongType()),
        T.StructField("observed_at", T.StringType()),
        T.StructField("source", T.StringType()),
        T.StructField("api_versions", T.ArrayType(api)),
        T.StructField("supported_features", levels),
        T.StructField("finalized_features", levels),
        T.StructField("finalized_features_epoch", T.LongType()),
        T.StructField("software", T.StructType([
            T.StructField("name", T.StringType()),
            T.StructField("version", T.StringType()),
        ])),
        T.StructField("error", T.StringType()),
        T.StructField("_corrupt", T.StringType()),
    ])


@attrs.frozen
class Records:
    """Parsed records: ``good`` ones, ``bad`` ones (file, line, reason), the signatures.

    ``lines`` is the parsed input, persisted by :func:`read_records` for its
    first two jobs; ``checked`` is every line's verdict and the good records'
    columns (without the API ranges: their signature id), persisted too, which
    ``good`` and ``bad`` are cut from.  :meth:`drop_parsed` unpersists
    ``lines`` once ``checked`` is filled, :meth:`release` both when the
    caller is done.
    """

    good: DataFrame
    bad: DataFrame
    signatures: Signatures
    lines: DataFrame | None = None
    checked: DataFrame | None = None

    def drop_parsed(self) -> None:
        """Unpersist the parsed lines (the largest cache), once ``checked`` is filled."""
        if self.lines is not None:
            self.lines.unpersist()

    def release(self) -> None:
        """Unpersist the parsed input and the checked lines (this run's own caches only)."""
        self.drop_parsed()
        if self.checked is not None:
            self.checked.unpersist()


_PARSE_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"}


def _record_fields() -> list[Any]:
    """The snapshot fields of :func:`record_schema` (without the corrupt-record column)."""
    from pyspark.sql import types as T

    schema = record_schema()
    assert isinstance(schema, T.StructType)
    return [f for f in schema.fields if f.name != "_corrupt"]


def parquet_is_typed(table: DataFrame) -> bool:
    """True when every snapshot column ``table`` has is of the snapshot schema's type.

    Such a table (as ``fleet synth`` and ``probe --record`` write it) is read
    as it is, the fast path; any other goes through JSON text.
    """
    types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    return all(types.get(f.name, f.dataType.simpleString()) == f.dataType.simpleString()
               for f in _record_fields())


def _parquet_record(table: DataFrame) -> Column:
    """A Parquet row as the ``record_schema`` struct: directly, or through JSON text.

    A table that :func:`parquet_is_typed` is used as it is, with no text in
    between: the fast path.  Any other table goes through the same JSON text
    as a JSON Lines line, so one set of checks judges a mistyped column alike.
    """
    from pyspark.sql import functions as F

    if parquet_is_typed(table):
        names = set(table.columns)
        present = [(F.col(f.name) if f.name in names else F.lit(None).cast(f.dataType))
                   .alias(f.name) for f in _record_fields()]
        return F.struct(*present, F.lit(None).cast("string").alias("_corrupt"))
    text = F.to_json(F.struct(*[F.col(c) for c in table.columns]))
    return F.from_json(text, record_schema(), _PARSE_OPTIONS)  # type: ignore[arg-type]


#: JSON Lines bytes (estimated) per partition of Parquet rows.
PARQUET_BYTES_PER_PARTITION = 32 << 20


def parquet_partitions(inputs: SnapshotInput, cores: int) -> int | None:
    """Partitions for the Parquet rows of ``inputs``: one per :data:`PARQUET_BYTES_PER_PARTITION`
    of their JSON size (at least ``cores``); ``None`` when unknown (remote files)."""
    if not inputs.parquet_files:
        return None
    size = SnapshotInput((), inputs.parquet_files).work_bytes()
    if size is None:
        return None
    return max(cores, math.ceil(size / PARQUET_BYTES_PER_PARTITION))


def _parsed_lines(spark: SparkSession, inputs: SnapshotInput) -> DataFrame:
    """``file, block, seq, blank, long, j``: every input line (or Parquet row), parsed once.

    Blank lines stay (``blank`` true, ``j`` null) so that line numbers can be
    counted from this frame (:func:`read_records` counts them and keeps the
    others); so do lines longer than the core reads (``long`` true, ``j`` null:
    not parsed).
    """
    from pyspark.sql import functions as F

    frames = []
    position = [F.input_file_name().alias("file"), F.input_file_block_start().alias("block"),
                F.monotonically_increasing_id().alias("seq")]
    if inputs.text_files:
        long = F.octet_length("value") > MAX_RECORD_LINE
        blank = ~long & (F.trim(F.col("value")) == "")
        frames.append(spark.read.text(list(inputs.text_files)).select(
            *position, blank.alias("blank"), long.alias("long"),
            F.when(~blank & ~long, F.from_json(
                "value", record_schema(), _PARSE_OPTIONS)).alias("j")))  # type: ignore[arg-type]
    if inputs.parquet_files:
        table = spark.read.parquet(*inputs.parquet_files)
        rows = table.select(*position, F.lit(False).alias("blank"), F.lit(False).alias("long"),
                            _parquet_record(table).alias("j"))
        # Spark splits Parquet by its compressed size, which says little about
        # the records inside (a fleet's history packs a million of them in
        # 20 MB: one task, more than a default driver heap holds once parsed).
        # The rows are spread by their JSON size instead (their file, split
        # and input order taken first), on this query only.
        spread = parquet_partitions(inputs, spark.sparkContext.defaultParallelism)
        frames.append(rows if spread is None else rows.repartition(spread))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _checks(j: Column) -> list[Column]:
    """One reason column per rule of the core's record validation (null when it holds)."""
    from pyspark.sql import functions as F

    missing = F.concat_ws(", ", *[F.when(j[k].isNull(), F.lit(k)) for k in _REQUIRED])
    reasons: list[Column] = [
        F.when(missing != "", F.concat(F.lit("missing key(s) "), missing)),
    ]
    for key in ("cluster", "host", "observed_at", "source"):
        reasons.append(F.when(F.length(j[key]) == 0,
                              F.lit(f"'{key}' must be a non-empty string")))
    for key in ("supported_features", "finalized_features"):
        reasons.append(F.when(
            F.exists(F.map_values(j[key]), lambda v: v.isNull() | (F.size(v) != 2)
                     | v[0].isNull() | v[1].isNull() | (v[0] < 0) | (v[0] > v[1])),
            F.lit(f"'{key}' values must be [min, max] with 0 <= min <= max")))
    reasons.append(F.when((j["source"] == "error") & F.coalesce(F.length(j["error"]) == 0,
                                                                F.lit(True)),
                          F.lit("'source' is 'error' but 'error' gives no message")))
    reasons.append(F.when((j["source"] == "error") & (F.size(j["api_versions"]) > 0),
                          F.lit("'source' is 'error' but 'api_versions' is not empty")))
    return reasons


def _known_fallbacks(spark: SparkSession, parsed: DataFrame) -> DataFrame:
    """The distinct ``fallback:<release>`` sources in the input that name a known release.

    Only the distinct source strings (a handful) reach the driver, where the
    core's :func:`resolve_release` accepts or refuses each.
    """
    from pyspark.sql import functions as F

    rows = (parsed.where(F.col("j.source").startswith(FALLBACK_PREFIX))
            .select(F.col("j.source").alias("source")).distinct().limit(_MAX_SOURCES).collect())
    valid = []
    for row in rows:
        try:
            resolve_release(str(row["source"]).removeprefix(FALLBACK_PREFIX))
        except ConfigError:
            continue
        valid.append((str(row["source"]),))
    return local_table(spark, valid, "source string")


_RAW_API = "array<struct<api_key:bigint,min_version:bigint,max_version:bigint>>"


def _signatures(spark: SparkSession, parsed: DataFrame) -> tuple[DataFrame, Signatures]:
    """Judge and number the distinct ``api_versions`` lists of the input (one small job).

    A fleet repeats a few dozen lists over all its records, so each distinct
    list reaches the driver once, where the core's
    :func:`~kclient.negotiation.snapshot.api_versions_problem` judges it and
    valid ones get a signature id (lists equal but for their order share one).
    The records get ``sig_id`` and ``api_problem`` back through a broadcast
    join on the list itself: no per-record work over the ranges.
    """
    from pyspark.sql import functions as F

    rows = (parsed.select(F.col("j.api_versions").alias("raw")).where(F.col("raw").isNotNull())
            .distinct().limit(MAX_SIGNATURES + 1).collect())
    if len(rows) > MAX_SIGNATURES:
        raise too_many("api_versions lists")
    numbered: dict[tuple[tuple[int, int, int], ...], int] = {}
    table = []
    for row in rows:
        raw = [None if entry is None else entry.asDict() for entry in row["raw"]]
        problem = api_versions_problem(raw)
        sig_id = None
        if problem is None:
            ranges = tuple(sorted((e["api_key"], e["min_version"], e["max_version"])
                                  for e in raw if e is not None))
            sig_id = numbered.setdefault(ranges, len(numbered))
        table.append((raw, sig_id, problem))
    frame = local_table(spark, table, f"raw {_RAW_API}, sig_id int, api_problem string")
    return frame, Signatures(tuple(numbered))


def read_records(spark: SparkSession, inputs: SnapshotInput, *, history: bool = False
                 ) -> Records:
    """Parse every input line; split into good records and bad ones with reasons.

    ``good`` has one row per record: ``file``, ``block``, ``seq`` (input
    order), the snapshot-record fields, except that the API ranges are
    ``sig_id``, their number in ``signatures`` (:mod:`kclient.fleet.signatures`),
    ``ts`` (the parsed ``observed_at``) and ``day`` (its UTC date with
    ``history``, else null).  ``bad`` has ``file``, ``line``, ``reason``.
    """
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    try:
        every_line = _parsed_lines(spark, inputs)
    except Exception as exc:  # AnalysisException and Py4J errors share no kclient base
        first = (inputs.text_files or inputs.parquet_files)[0]
        raise spark_failure(exc, f"reading {first}") from None
    # Blank lines are counted (line numbers, below), never kept: a file of line ends
    # (256 MiB of them in a 254 KiB .gz) would otherwise fill the caches with rows of
    # nothing, its file name in each, until the driver's memory runs out.
    lines = every_line.where(~F.col("blank")).persist(StorageLevel.MEMORY_AND_DISK)
    parsed = lines.select("file", "block", "seq", "j")
    fallbacks = _known_fallbacks(spark, parsed).withColumn("known", F.lit(True))
    j = F.col("j")
    ts = F.try_to_timestamp(j["observed_at"])
    source_ok = (j["source"].isin("api_versions", "error")) | F.col("known").isNotNull()
    checked = lines.join(F.broadcast(fallbacks), j["source"] == fallbacks["source"], "left")
    try:
        judged, signatures = _signatures(spark, parsed)  # runs jobs; may refuse the input
    except BaseException:
        lines.unpersist()  # the run's own cache goes with its error; the caller's stay
        raise
    checked = checked.join(F.broadcast(judged), j["api_versions"] == judged["raw"], "left")
    rules = _checks(j)
    rules.append(F.col("api_problem"))
    rules.append(F.when(j["source"].isNotNull() & (F.length(j["source"]) > 0) & ~source_ok,
                        F.concat(F.lit("'source' must be 'api_versions', 'error' or "
                                       "'fallback:<known release>', got "), j["source"])))
    rules.append(F.when(j["observed_at"].isNotNull() & (F.length(j["observed_at"]) > 0)
                        & ts.isNull(),
                        F.concat(F.lit(OBSERVED_AT_PROBLEM), j["observed_at"])))
    reason = F.when(F.col("long"), F.lit(LONG_RECORD)).when(
        j.isNull() | j["_corrupt"].isNotNull(),
        F.lit("not a valid record: malformed JSON, not an object, or a value of the wrong "
              "type (each line must be one snapshot record: see Reference > Machine-readable "
              "contracts in the documentation)"),
    ).otherwise(F.array_join(F.array_compact(F.array(*rules)), "; "))
    # One pass over the parsed lines judges them all and keeps, in a cache of
    # its own, what the good records and the bad lines need: not the API
    # ranges, which the signature id stands for.
    checked = checked.select(
        "file", "block", "seq",
        F.when(reason != "", reason).alias("reason"),
        j["cluster"].alias("cluster"),
        j["broker_id"].alias("broker_id"),
        j["host"].alias("host"),
        j["port"].alias("port"),
        j["observed_at"].alias("observed_at"),
        ts.alias("ts"),
        (F.to_date(ts) if history else F.lit(None).cast("date")).alias("day"),
        j["source"].alias("source"),
        F.col("sig_id"),
        F.coalesce(j["finalized_features"], F.create_map().cast(
            "map<string,array<bigint>>")).alias("finalized_features"),
        F.coalesce(j["supported_features"], F.create_map().cast(
            "map<string,array<bigint>>")).alias("supported_features"),
        F.coalesce(j["finalized_features_epoch"], F.lit(-1)).alias("finalized_features_epoch"),
        j["software"].alias("software"),
        j["error"].alias("error"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    good = checked.where(F.col("reason").isNull()).drop("reason")
    bad_rows = checked.where(F.col("reason").isNotNull()).select("file", "block", "seq",
                                                                 "reason")
    # Line numbers, for bad rows only: lines of earlier splits of the same file,
    # plus the position inside the split (seq grows by one per line in a split),
    # counted over every line, blank ones too: the input is read again for them
    # (never held), so only when there is a bad row to number.
    line = F.lit(None).cast("long")
    try:
        numbered = not bad_rows.isEmpty()  # a job: fills the cache of checked lines
    except BaseException:
        checked.unpersist()  # the run's own caches go with its error
        lines.unpersist()
        raise
    if numbered:
        blocks = every_line.groupBy("file", "block").agg(F.count(F.lit(1)).alias("lines"),
                                                       F.min("seq").alias("first_seq"))
        earlier = Window.partitionBy("file").orderBy("block").rowsBetween(
            Window.unboundedPreceding, -1)
        blocks = blocks.withColumn("before",
                                   F.coalesce(F.sum("lines").over(earlier), F.lit(0)))
        bad_rows = bad_rows.join(blocks, ["file", "block"])
        line = (F.col("before") + F.col("seq") - F.col("first_seq") + 1).cast("long")
    bad = bad_rows.select(F.regexp_replace("file", "^file:(//)?", "").alias("file"),
                          line.alias("line"), "reason")
    return Records(good, bad, signatures, lines, checked)
