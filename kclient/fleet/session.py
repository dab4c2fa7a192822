"""Starting Spark for the fleet pipeline: local by default, any master on request."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Literal

from kclient.errors import ConfigError, FleetError
from kclient.fleet.classarchive import (
    ClassArchive,
    java_binary,
    jvm_arg,
    spark_home,
    usable_archive,
)
from kclient.fleet.jvmstderr import forward

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["AUTO_ARCHIVE", "DEFAULT_MASTER", "GC_OPTION", "SESSION_CONF", "SparkLog",
           "build_session", "driver_jvm_options", "sized_driver_memory", "submitted"]

DEFAULT_MASTER = "local[*]"

#: Settings every fleet session uses: UTC times (observation days are UTC days),
#: no web UI, adaptive execution so that small fleets get few partitions, and
#: no whole-stage code generation.  The parse and the steps up to the cluster
#: views are nested higher-order functions; fused into one generated method
#: per stage they make methods above HotSpot's 8,000-byte limit for JIT
#: compilation, which then run interpreted (at 1,000,000 history records
#: those steps took 32.9 s with it against 28.7 s without).  The writes and
#: the summary that follow gain from it, and :func:`~kclient.fleet.pipeline.run_report`
#: turns it on for them.
SESSION_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.codegen.wholeStage": "false",
}


#: The code cache a small-input driver reserves, in bytes (see below).
CODE_CACHE_BYTES = 240 << 20

#: Options for a driver JVM that kclient starts for a small input (see
#: :func:`driver_jvm_options`).  A small fleet's run is short and the driver
#: compiles a new plan per job, so the optimising JIT (C2) costs more than it
#: returns: on 2 cores, C1 alone cut the JVM's CPU time for a 10,000-broker
#: report (40 MB) from 89 s to 47 s and its wall time from 50 s to 38 s.  On
#: 400 MB, C1 alone made the JSON parse twice as slow, so large inputs keep C2.
#: The size is :meth:`kclient.fleet.reader.SnapshotInput.work_bytes`.  C1
#: alone shrinks the JVM's default code cache to 48 MB; every Spark query adds
#: generated classes, and a long-lived session (a notebook, a test run) filled
#: it and the JVM died ("Out of space in CodeCache").  The tiered default,
#: 240 MB, is kept; it is reserved address space, committed only as used.
SMALL_INPUT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",
                           f"-XX:ReservedCodeCacheSize={CODE_CACHE_BYTES >> 20}m")
#: Inputs up to this many bytes count as small.
SMALL_INPUT_BYTES = 128 << 20
#: The garbage collector of every driver JVM kclient starts.  The pipeline is
#: a batch job and the driver is its only executor: the throughput collector
#: stops the world more often than G1, HotSpot's default, but leaves both
#: cores to the tasks between pauses.  On 2 cores, three interleaved runs at
#: 10,000 brokers took 14.0-14.5 s against 14.3-15.3 s, two at 100,000
#: 30.6-30.8 s against 31.5-31.8 s with a lower peak (1.2-1.3 GiB against
#: 1.35-1.4 GiB), and a 1,000,000-record history 80.5 and 88.2 s against
#: 99.3 and 97.7 s.
GC_OPTION = "-XX:+UseParallelGC"
#: An option that chooses HotSpot's garbage collector.  With one among the
#: options the driver JVM gets elsewhere (:func:`_collector_chosen_elsewhere`),
#: :data:`GC_OPTION` is left out: HotSpot refuses to start with two.
_GC_CHOICE = re.compile(
    r"-XX:\+Use(?:Serial|Parallel|ParallelOld|G1|ConcMarkSweep|Shenandoah|Z|Epsilon)GC(?!\w)")
#: Environment variables whose options reach the driver JVM besides
#: ``spark.driver.extraJavaOptions``: the ``java`` launcher's own, the one
#: Spark's launcher adds for a driver, and PySpark's arguments to spark-submit.
_JVM_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS",
                         "SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS")
_EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def driver_jvm_options(input_bytes: int | None) -> list[str]:
    """JVM options for the driver, given the input's size when known.

    The throughput collector (:data:`GC_OPTION`) always; C1 alone when the
    input is small.
    """
    if input_bytes is not None and input_bytes <= SMALL_INPUT_BYTES:
        return [GC_OPTION, *SMALL_INPUT_JVM_OPTIONS]
    return [GC_OPTION]


#: Spark's driver heap when nobody sets one.
SPARK_DEFAULT_HEAP = 1 << 30
#: Driver heap per byte of input (:meth:`~kclient.fleet.reader.SnapshotInput.work_bytes`)
#: that kclient gives a local driver nobody sized.  A 1,000,000-record history
#: (3 GB as JSON Lines) ran out of heap within 10 s with Spark's 1 GiB while
#: caching the parsed records, and completed with 1.5 GiB and with 2 GiB.
HEAP_PER_INPUT_BYTE = 2 / 3
#: At most this share of the machine's memory is given to the driver heap unasked.
HEAP_SHARE_OF_MACHINE = 1 / 4


def _machine_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system that says
        return None


def sized_driver_memory(input_bytes: int | None, machine_bytes: int | None = None) -> str | None:
    """The driver heap a local session gets for an input of ``input_bytes``, if not Spark's own.

    ``None`` (Spark's 1 GiB stands) for an unknown or small input; else
    :data:`HEAP_PER_INPUT_BYTE` of the input, in steps of 256 MiB, but no more
    than :data:`HEAP_SHARE_OF_MACHINE` of ``machine_bytes`` (this machine's
    memory when not given).
    """
    if input_bytes is None:
        return None
    step = 256 << 20
    wanted = -(-int(input_bytes * HEAP_PER_INPUT_BYTE) // step) * step
    machine = _machine_bytes() if machine_bytes is None else machine_bytes
    if machine:
        wanted = min(wanted, int(machine * HEAP_SHARE_OF_MACHINE) // step * step)
    return f"{wanted >> 20}m" if wanted > SPARK_DEFAULT_HEAP else None


#: Where a ``spark-defaults.conf`` line (a Java properties line) ends its key.
_PROPERTY_KEY_END = re.compile(r"\s*[=:]\s*|\s+")


def _spark_defaults() -> dict[str, str]:
    """The settings in the ``spark-defaults.conf`` that Spark's launcher reads.

    That file is in ``SPARK_CONF_DIR``, else in the ``conf`` folder of
    :func:`~kclient.fleet.classarchive.spark_home`; without a readable one,
    no settings.
    """
    folder = os.environ.get("SPARK_CONF_DIR")
    if not folder:
        home = spark_home()
        if home is None:
            return {}
        folder = str(home / "conf")
    try:
        with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as lines:
            text = lines.read()
    except (OSError, UnicodeDecodeError):
        return {}
    settings: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            parts = _PROPERTY_KEY_END.split(line, 1)
            key, value = parts[0], (parts[1] if len(parts) > 1 else "")
            settings[key] = value.strip()
    return settings


def _heap_set_elsewhere(defaults: dict[str, str]) -> bool:
    """True when the driver heap is set where Spark's launcher looks for it.

    That is its environment variables, ``PYSPARK_SUBMIT_ARGS`` and the
    settings of ``spark-defaults.conf`` (``defaults``, see
    :func:`_spark_defaults`): a heap chosen there is left alone.
    """
    if os.environ.get("SPARK_DRIVER_MEMORY") or os.environ.get("SPARK_MEM"):
        return True
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "--driver-memory" in submit_args or "spark.driver.memory" in submit_args:
        return True
    return "spark.driver.memory" in defaults


def _collector_chosen_elsewhere(settings: dict[str, str], jvm_options: Sequence[str]) -> bool:
    """True when the driver JVM gets a garbage collector from options not kclient's.

    Those are ``jvm_options``, the JVM options in ``settings`` (Spark's, from
    ``spark-defaults.conf`` and the caller) and in the environment
    (:data:`_JVM_OPTION_VARIABLES`).
    """
    texts = [*jvm_options, settings.get(_EXTRA_JAVA_OPTIONS, ""),
             settings.get(_DEFAULT_JAVA_OPTIONS, ""),
             *(os.environ.get(name, "") for name in _JVM_OPTION_VARIABLES)]
    return any(_GC_CHOICE.search(text) for text in texts)


#: The levels of Spark's own log that :func:`build_session` offers (``spark_log``).
SparkLog = Literal["error", "off"]

# Spark's own loggers at one level; written once per process and level to a
# temp file and handed to the driver JVM, so even start-up chatter stays off
# the terminal.  Spark treats a Python driver as a shell: it gives the root
# logger the level of the logger of its Python gateway (WARN unless that one
# is configured) and says so on stderr when the two differ; both are set alike.
_QUIET_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = {level}
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""


@cache
def _quiet_log_config(level: SparkLog = "error") -> str:
    handle, name = tempfile.mkstemp(prefix="kclient-log4j2-", suffix=".properties")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(_QUIET_LOG4J.format(level=level))
    # The JVM reads it once, at start-up; it goes when this process ends.
    atexit.register(_forget, name)
    return name


def _forget(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def submitted() -> bool:
    """True in a driver started by ``spark-submit`` (its JVM is already running).

    spark-submit hands the Python driver the address of that JVM in
    ``PYSPARK_GATEWAY_PORT``; nothing else sets it.
    """
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _submitted_session(app_name: str, progress: bool,
                       extra_conf: dict[str, str] | None) -> SparkSession:
    """The session of a spark-submit driver: its master and settings, ours where unset."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    conf = SparkConf()  # what spark-submit was given (--master, --conf, defaults file)
    conf.setIfMissing("spark.app.name", app_name)
    for key, value in SESSION_CONF.items():
        conf.setIfMissing(key, value)
    if progress:
        conf.setIfMissing("spark.ui.showConsoleProgress", "true")
    for key, value in (extra_conf or {}).items():
        conf.set(key, value)
    return SparkSession.builder.config(conf=conf).getOrCreate()


#: A JVM heap size as Spark reads ``spark.driver.memory``: a count and a unit.
_MEMORY = re.compile(r"^([1-9][0-9]*)([kmgt]?)$", re.IGNORECASE)
#: The smallest driver heap Spark starts with: one and a half times the 300 MiB
#: it keeps for itself (a smaller one stops the session before it starts).
SMALLEST_DRIVER_MEMORY = 450 << 20


def check_driver_memory(size: str) -> str:
    """``size`` if it is a driver heap size Spark accepts (``2g``); else a :class:`ConfigError`."""
    match = _MEMORY.match(size)
    if not match:
        raise ConfigError(f"--driver-memory: {size!r} is not a memory size; give a count "
                          "with k, m, g or t, e.g. 2g")
    count, unit = match.groups()
    # Without a unit the JVM (-Xmx) reads bytes.
    if int(count) << (10 * " kmgt".index(unit.lower() or " ")) < SMALLEST_DRIVER_MEMORY:
        raise ConfigError(f"--driver-memory: {size!r} is less than the "
                          f"{SMALLEST_DRIVER_MEMORY >> 20}m Spark needs at the least; "
                          "give 1g or more, e.g. 2g")
    return size


#: Modules PySpark imports on the driver while it builds the first session
#: (its type converters load ``pyspark.testing.utils``, which imports both):
#: about 0.5-0.8 s on this machine, spent after the JVM is up.
_SESSION_IMPORTS = ("pandas", "pyarrow")


def _import_ahead(names: Sequence[str]) -> threading.Thread:
    """Import ``names`` in a daemon thread, to be done while the driver JVM starts.

    The thread imports leaf libraries only (none of them imports PySpark), so
    it never waits on a module the calling thread is importing; the calling
    thread, when it gets to the same import, waits for the module or finds it
    done.  A library that is missing or fails to import is left to fail, if at
    all, where PySpark imports it.
    """
    def run() -> None:
        for name in names:
            if name in sys.modules or importlib.util.find_spec(name) is None:
                continue
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=run, name="kclient-import-ahead", daemon=True)
    thread.start()
    return thread


def _first_line(exc: BaseException) -> str:
    """The first non-blank line of what ``exc`` says went wrong.

    A Py4J error from the JVM starts with a line naming the Java call
    ("An error occurred while calling ..."); the Java exception (its class
    and message), which says what went wrong, is used instead.  Either may be
    followed by a dozen lines of JVM trace.
    """
    text = ""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):  # Py4J asks the JVM, which may be gone
            text = str(java.toString())
    if not text.strip():
        try:
            text = str(exc)
        except Exception:  # Py4J's str() asks the JVM too
            text = ""
    return next((line.strip() for line in text.splitlines() if line.strip()),
                type(exc).__name__)


def _jvm_gone(exc: BaseException) -> bool:
    """True when ``exc`` (or what it was raised from) says the driver JVM stopped answering."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes and contexts, bounded
        if seen is None:
            return False
        if isinstance(seen, ConnectionError) or type(seen).__name__ == "Py4JNetworkError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def spark_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a Spark call raises for Spark's own failures (not kclient's bugs)."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    return (Py4JError, PySparkException, ConnectionError)


def spark_failure(exc: BaseException, doing: str) -> FleetError:
    """The :class:`~kclient.errors.FleetError` for a Spark failure while ``doing`` something.

    A driver JVM that died mid-run (most often out of heap; Spark's own log,
    when shown, says ``java.lang.OutOfMemoryError``) gets the fix named: more
    driver memory.  Any other failure gets the first line of Spark's message.
    """
    if _jvm_gone(exc) or "OutOfMemoryError" in _first_line(exc):
        return FleetError(f"Spark's driver JVM stopped while {doing}, most likely out of "
                          "memory; give it more with --driver-memory "
                          "(spark.driver.memory, e.g. 4g), or split the input")
    return FleetError(f"Spark failed while {doing}: {_first_line(exc)}")


#: How long :func:`stop_session` waits for a failing driver JVM to exit.
_EXIT_WAIT = 15.0


def _jvm_exits(wait: float) -> bool:
    """True when the driver JVM this process started exits within ``wait`` seconds.

    A JVM out of heap answers Py4J with odd errors (a class "does not exist")
    while Spark's handler for the error shuts it down; only its process tells.
    False when PySpark did not start the JVM here (spark-submit started it).
    """
    from pyspark import SparkContext

    process: subprocess.Popen[bytes] | None = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return False
    try:
        process.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return False
    return True


def stop_session(spark: SparkSession) -> None:
    """Stop ``spark``; a driver JVM that is gone or going is not a second error."""
    try:
        spark.stop()
    except Exception as exc:  # Py4J errors have no common base
        if not (_jvm_gone(exc) or _jvm_exits(_EXIT_WAIT)):
            raise


#: ``build_session(class_archive=AUTO_ARCHIVE)``: the usable class archive, if any.
AUTO_ARCHIVE: Literal["auto"] = "auto"


def build_session(master: str | None = None, app_name: str = "kclient-fleet", *,
                  progress: bool = False, spark_log: SparkLog | None = "error",
                  extra_conf: dict[str, str] | None = None,
                  input_bytes: int | None = None,
                  driver_memory: str | None = None,
                  class_archive: ClassArchive | Literal["auto"] | None = AUTO_ARCHIVE,
                  jvm_options: Sequence[str] = ()) -> SparkSession:
    """A SparkSession for ``master`` (``local[*]`` when None), with quiet logs.

    ``progress=True`` turns on Spark's console progress bar (stage counts on
    stderr).  ``spark_log`` is how much of Spark's own log reaches stderr:
    ``"error"`` its errors (with their Java stack traces), ``"off"`` nothing
    (the errors that matter come back as exceptions anyway), ``None`` what
    Spark's own configuration says.  The driver JVM's notice that it uses an
    incubator module is dropped (:mod:`kclient.fleet.jvmstderr`).
    ``input_bytes``, the size of the input when known, tunes the driver JVM
    (:func:`driver_jvm_options`).  A ``local`` master binds to
    127.0.0.1.  In a driver started by ``spark-submit`` (see :func:`submitted`)
    with no ``master`` given, the session is spark-submit's: its master and
    ``--conf`` settings win, and :data:`SESSION_CONF` fills in only what they
    leave unset.  ``driver_memory`` (``2g``, ``512m``) is the heap of the
    driver JVM kclient starts; in a spark-submit driver the JVM already runs,
    so it is an error there.  Without it, a ``local`` driver gets
    :func:`sized_driver_memory` for ``input_bytes`` unless the heap is set
    where Spark looks (its environment variables, ``PYSPARK_SUBMIT_ARGS``,
    ``spark-defaults.conf``, or ``spark.driver.memory`` in ``extra_conf``);
    else Spark's 1 GiB.  ``class_archive`` is the
    :class:`~kclient.fleet.classarchive.ClassArchive` the driver JVM maps
    (``kclient fleet prepare`` builds it): by default the usable one for this
    Java and PySpark, if any; ``None`` for none.  ``jvm_options`` are added
    to the driver JVM's options, after those of ``spark.driver.extraJavaOptions``
    in ``extra_conf`` or ``spark-defaults.conf``, which are kept.  kclient's
    collector (:data:`GC_OPTION`) is left out when any options the JVM gets
    (those, ``spark.driver.defaultJavaOptions``, ``JAVA_TOOL_OPTIONS`` and the
    like) choose one.  Raises
    :class:`~kclient.errors.ConfigError` for a ``driver_memory`` that is not a
    size and :class:`~kclient.errors.FleetError` when PySpark or Java is
    missing or the session cannot start.
    """
    if driver_memory is not None:
        check_driver_memory(driver_memory)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise FleetError("the fleet pipeline needs PySpark; install it with "
                         "'pip install kclient[spark]'") from None
    if master is None and submitted():
        if driver_memory is not None:
            raise ConfigError("--driver-memory: the spark-submit driver's JVM is already "
                              "running; give spark-submit --driver-memory instead")
        try:
            return _submitted_session(app_name, progress, extra_conf)
        except Exception as exc:  # Py4J errors, as below
            raise FleetError("Spark did not start in the spark-submit driver: "
                             f"{_first_line(exc)}") from None
    if java_binary() is None:
        raise FleetError("Spark needs a Java runtime (17 or newer) and none was found; "
                         "install one or set JAVA_HOME")
    chosen = master or DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name).master(chosen)
    conf = dict(SESSION_CONF)
    if progress:
        conf["spark.ui.showConsoleProgress"] = "true"
    # Python workers (used by ``fleet scan``) run this interpreter, which has kclient.
    if not os.environ.get("PYSPARK_PYTHON"):
        conf.setdefault("spark.pyspark.python", sys.executable)
    if chosen.startswith("local"):
        conf.setdefault("spark.driver.host", "127.0.0.1")
        conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
    defaults = _spark_defaults()
    # kclient's setting of the driver's JVM options replaces the one of
    # spark-defaults.conf or extra_conf: that one comes first in kclient's.
    settings = {**defaults, **(extra_conf or {})}
    options = driver_jvm_options(input_bytes)
    if _collector_chosen_elsewhere(settings, jvm_options):
        options.remove(GC_OPTION)
    if class_archive == AUTO_ARCHIVE:
        class_archive = usable_archive()
    if isinstance(class_archive, ClassArchive):
        options.extend(class_archive.jvm_options())
    options.extend(jvm_options)
    if spark_log is not None:
        options.append(jvm_arg(f"-Dlog4j2.configurationFile=file:{_quiet_log_config(spark_log)}"))
    their_options = settings.get(_EXTRA_JAVA_OPTIONS, "").strip()
    conf[_EXTRA_JAVA_OPTIONS] = " ".join([their_options, *options] if their_options else options)
    if (driver_memory is None and chosen.startswith("local")
            and not _heap_set_elsewhere(defaults)):
        # The driver is the only executor: a large input needs more than Spark's 1 GiB.
        driver_memory = sized_driver_memory(input_bytes)
    if driver_memory is not None:
        conf["spark.driver.memory"] = driver_memory
    conf.update({key: value for key, value in (extra_conf or {}).items()
                 if key != _EXTRA_JAVA_OPTIONS})
    for key, value in conf.items():
        builder = builder.config(key, value)
    _import_ahead(_SESSION_IMPORTS)
    try:
        _start_context({"spark.master": chosen, "spark.app.name": app_name, **conf})
        spark = builder.getOrCreate()
    except Exception as exc:  # Py4J and JVM start-up failures have no common base
        raise FleetError(f"Spark did not start with master {chosen!r}: {_first_line(exc)}"
                         ) from None
    if spark_log is not None:
        spark.sparkContext.setLogLevel(spark_log.upper())
    return spark


def _start_context(settings: dict[str, str]) -> None:
    """Start the driver JVM, its stderr filtered, and a SparkContext on it with ``settings``.

    PySpark keeps one JVM per process: when an earlier session started it,
    the builder uses that one and this does nothing.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    read_end, write_end = os.pipe()
    forward(read_end)
    try:
        # PySpark's documented hook for the JVM's output (its popen_kwargs).
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})  # type: ignore[no-untyped-call]
    finally:
        os.close(write_end)  # the JVM has its own copy; the forwarder ends with the JVM
    SparkContext(conf=conf, gateway=gateway)
