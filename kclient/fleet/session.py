"""Starting Spark for the fleet command line: a minimal local session, any master on request.

The library (:func:`kclient.fleet.pipeline.run_report` and the rest) never
starts or tunes a session: it takes the caller's and leaves it as it found
it.  This module is the command line's own session, kept small on purpose:
UTC times, no web UI, a local driver bound to 127.0.0.1, Spark's log quieted
through Spark's own log4j configuration, and the driver heap passed through
when asked.  JVM options, collectors and heap sizes belong to
``spark-submit`` and ``spark-defaults.conf``, which the operator owns.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Literal

from kclient.errors import ConfigError, FleetError
from kclient.fleet.engine import require_engine

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "SESSION_CONF", "SparkLog", "build_session",
           "check_driver_memory", "spark_errors", "spark_failure", "stop_session", "submitted"]

DEFAULT_MASTER = "local[*]"

#: Settings of the sessions the command line starts: UTC times (observation
#: days are UTC days) and no web UI.  Everything else is Spark's default or
#: the operator's (``spark-defaults.conf``, ``spark-submit --conf``).
SESSION_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: Spark's setting for the driver JVM's options: the quiet log configuration
#: goes there, after any options the caller gives in ``extra_conf``.
_EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


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


def stop_session(spark: SparkSession) -> None:
    """Stop ``spark``; a driver JVM that is gone or going is not a second error.

    A JVM that died (out of heap, killed) answers the stop with a Py4J or
    connection error: the run's own error has been reported already.
    """
    try:
        spark.stop()
    except Exception as exc:  # Py4J errors have no common base
        if not (_jvm_gone(exc) or isinstance(exc, spark_errors())):
            raise


def java_binary() -> str | None:
    """The ``java`` Spark's launcher would run: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def build_session(master: str | None = None, app_name: str = "kclient-fleet", *,
                  progress: bool = False, spark_log: SparkLog | None = "error",
                  extra_conf: dict[str, str] | None = None,
                  driver_memory: str | None = None) -> SparkSession:
    """The command line's SparkSession for ``master`` (``local[*]`` when None).

    ``progress=True`` turns on Spark's console progress bar (stage counts on
    stderr).  ``spark_log`` is how much of Spark's own log reaches stderr:
    ``"error"`` its errors (with their Java stack traces), ``"off"`` nothing
    (the errors that matter come back as exceptions anyway), ``None`` what
    Spark's own configuration says; it is a log4j2 configuration file handed
    to the driver JVM (``-Dlog4j2.configurationFile``), after the options of
    ``spark.driver.extraJavaOptions`` in ``extra_conf``.  A ``local`` master
    binds to 127.0.0.1.  ``driver_memory`` (``2g``, ``512m``) is passed to
    Spark as ``spark.driver.memory``; without it Spark's own default (or
    ``spark-defaults.conf``) stands.  ``extra_conf`` settings are applied last.
    In a driver started by ``spark-submit`` (see :func:`submitted`) with no
    ``master`` given, the session is spark-submit's: its master and
    ``--conf`` settings win, and :data:`SESSION_CONF` fills in only what they
    leave unset; ``driver_memory`` is an error there (the JVM already runs).
    Raises :class:`~kclient.errors.ConfigError` for a ``driver_memory`` that
    is not a size and :class:`~kclient.errors.FleetError` when PySpark or
    Java is missing or the session cannot start.
    """
    if driver_memory is not None:
        check_driver_memory(driver_memory)
    require_engine("spark", "the fleet's Spark engine")
    from pyspark.sql import SparkSession
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
    conf = dict(SESSION_CONF)
    if progress:
        conf["spark.ui.showConsoleProgress"] = "true"
    # Python workers (used by ``fleet scan``) run this interpreter, which has kclient.
    if not os.environ.get("PYSPARK_PYTHON"):
        conf["spark.pyspark.python"] = sys.executable
    if chosen.startswith("local"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if driver_memory is not None:
        conf["spark.driver.memory"] = driver_memory
    conf.update(extra_conf or {})
    if spark_log is not None:
        log = f"-Dlog4j2.configurationFile=file:{_quiet_log_config(spark_log)}"
        theirs = conf.get(_EXTRA_JAVA_OPTIONS, "").strip()
        conf[_EXTRA_JAVA_OPTIONS] = f"{theirs} {log}".strip()
    builder = SparkSession.builder.appName(app_name).master(chosen)
    for key, value in conf.items():
        builder = builder.config(key, value)
    _import_ahead(_SESSION_IMPORTS)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # Py4J and JVM start-up failures have no common base
        raise FleetError(f"Spark did not start with master {chosen!r}: {_first_line(exc)}"
                         ) from None
    if spark_log is not None:
        spark.sparkContext.setLogLevel(spark_log.upper())
    return spark
