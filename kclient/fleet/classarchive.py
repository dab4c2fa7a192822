"""A class archive for the Spark driver JVM: ``kclient fleet prepare`` builds it once.

Every ``fleet report`` starts a fresh driver JVM, which loads and verifies
some twenty thousand Spark classes from their jars before the first job, and
more during the first queries.  HotSpot can instead map classes it loaded in
an earlier run from an archive file (application class data sharing, JDK 13
and newer): ``kclient fleet prepare`` runs a small synthetic report once in a
JVM started with ``-XX:ArchiveClassesAtExit`` and keeps the archive in the
cache directory (:func:`cache_dir`).  Later sessions started by
:func:`kclient.fleet.session.build_session` map it when it is there.

An archive belongs to one Java runtime and one set of Spark jars: its file
name is a digest of both (:func:`runtime_key`), so another JDK or PySpark
looks for another file and finds none.  A damaged archive makes HotSpot crash
rather than fall back, so an archive is used only when its size and time
still match the record written next to it when it was built, and with
``-XX:+VerifySharedSpaces`` (checksums checked at start-up; a mismatch turns
the archive off).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from kclient.errors import FleetError

__all__ = [
    "CACHE_ENV",
    "ClassArchive",
    "PreparedArchive",
    "archive_folder",
    "build_archive",
    "cache_dir",
    "check_archive",
    "current_archive",
    "java_binary",
    "jvm_arg",
    "remove_archives",
    "remove_stale_archives",
    "runtime_key",
    "spark_home",
    "usable_archive",
]

#: Environment variable naming kclient's cache directory.
CACHE_ENV = "KCLIENT_CACHE_DIR"
#: The archives' folder inside the cache directory.
ARCHIVE_FOLDER = "spark-classes"
#: The longest a build may take (JVM start, two small reports, the dump).
BUILD_TIMEOUT = 900.0
#: HotSpot's own notes on classes it cannot archive (signed jars, old class
#: files) are noise to a user: the archive works without those classes.
_QUIET_CDS = "-Xlog:cds=off,cds+dynamic=off"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """kclient's cache directory: ``$KCLIENT_CACHE_DIR``, else ``$XDG_CACHE_HOME/kclient``.

    Without either, ``~/.cache/kclient``.
    """
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return _absolute(env[CACHE_ENV])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return _absolute(base) / "kclient"


def _absolute(path: str) -> Path:
    """``path`` with ``~`` expanded, made absolute: the JVM gets it as an option."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def archive_folder(cache: Path | None = None) -> Path:
    """The folder of the class archives inside ``cache`` (default :func:`cache_dir`)."""
    return (cache or cache_dir()) / ARCHIVE_FOLDER


def runtime_key(java: Path, jars: Path) -> str:
    """A digest of the Java runtime (``java`` binary, resolved) and Spark's ``jars`` folder.

    Covers each file's path, size and modification time: the java binary, the
    runtime's module image and every jar.  Any upgrade changes it.
    """
    digest = hashlib.sha256()
    home = java.parent.parent
    files = [java, home / "lib" / "modules", *sorted(jars.glob("*.jar"))]
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            digest.update(f"{path}\0missing\n".encode())
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def java_binary() -> Path | None:
    """The ``java`` that Spark's launcher runs (resolved), or ``None`` when there is none.

    As ``spark-class`` picks it: ``$JAVA_HOME/bin/java`` when ``JAVA_HOME``
    is set, else ``java`` on the ``PATH``.
    """
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        return None
    return Path(os.path.realpath(found))


def spark_home() -> Path | None:
    """Where Spark is, as PySpark finds it: ``$SPARK_HOME``, else its own package's folder."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        spec = importlib.util.find_spec("pyspark")  # located, not imported
        if spec is None or spec.origin is None:
            return None
        home = os.path.dirname(spec.origin)
    return Path(home)


def _spark_jars() -> Path | None:
    """Spark's ``jars`` folder (see :func:`spark_home`)."""
    home = spark_home()
    jars = home / "jars" if home is not None else None
    return jars if jars is not None and jars.is_dir() else None


def jvm_arg(text: str) -> str:
    """``text`` as one item of ``spark.driver.extraJavaOptions`` (quoted if it has spaces).

    Spark splits that setting at blanks, keeping quoted parts whole.
    """
    return f'"{text}"' if any(c.isspace() for c in text) else text


@attrs.frozen
class ClassArchive:
    """Where the class archive for this Java runtime and these Spark jars is (or would be)."""

    path: Path

    @property
    def record(self) -> Path:
        """The JSON file written next to the archive when it was built (its size and time)."""
        return self.path.with_suffix(".json")

    def problem(self) -> str | None:
        """``None`` when the archive can be used; else why not, in a few words."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return "not built yet (kclient fleet prepare builds it)"
        except OSError as exc:
            return f"unreadable ({exc.strerror or exc})"
        try:
            noted = json.loads(self.record.read_text(encoding="utf-8"))
            size, mtime = int(noted["size"]), int(noted["mtime_ns"])
        except (OSError, ValueError, KeyError, TypeError):
            return "its build record is missing or damaged; run kclient fleet prepare again"
        if (size, mtime) != (stat.st_size, stat.st_mtime_ns):
            return "changed since it was built; run kclient fleet prepare again"
        return None

    def jvm_options(self) -> list[str]:
        """Driver JVM options that map this archive (checked at start-up, quietly)."""
        if '"' in str(self.path):
            return []  # cannot be passed through Spark's option splitting
        return [jvm_arg(f"-XX:SharedArchiveFile={self.path}"), "-XX:+VerifySharedSpaces",
                _QUIET_CDS]


def _runtime() -> tuple[Path, Path] | None:
    """The ``java`` binary and Spark ``jars`` folder found here, or ``None`` without either."""
    java, jars = java_binary(), _spark_jars()
    return None if java is None or jars is None else (java, jars)


def _archive_for(java: Path, jars: Path, cache: Path | None) -> ClassArchive:
    """The archive of that runtime in ``cache``: its file is named after the runtime's key."""
    return ClassArchive(archive_folder(cache) / f"{runtime_key(java, jars)}.jsa")


def current_archive(cache: Path | None = None) -> ClassArchive | None:
    """The archive for the Java runtime and PySpark found here, or ``None`` without either.

    The archive need not exist: see :meth:`ClassArchive.problem`.
    """
    runtime = _runtime()
    return None if runtime is None else _archive_for(*runtime, cache)


def remove_stale_archives(cache: Path | None = None) -> tuple[tuple[Path, ...], int]:
    """Delete the archives no session can use again; returns them and the bytes freed.

    An archive is named after the key of the runtime it was built for, and
    its record names that runtime (the ``java`` binary and the Spark ``jars``
    folder).  When that runtime's key is now another one (Java or PySpark
    was upgraded or removed), the archive is stale.  An archive whose record
    does not name its runtime (built by an older kclient) is kept: whether
    it is stale cannot be told.
    """
    removed: list[Path] = []
    freed = 0
    for path in sorted(archive_folder(cache).glob("*.jsa")):
        try:
            noted = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            java, jars = Path(noted["java"]), Path(noted["jars"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _archive_for(java, jars, cache).path.name == path.name:
            continue
        try:
            size = path.stat().st_size
            path.unlink()
            path.with_suffix(".json").unlink(missing_ok=True)
        except FileNotFoundError:  # removed meanwhile by another prepare
            continue
        except OSError as exc:
            raise FleetError(f"cannot remove the stale class archive {path}: "
                             f"{exc.strerror or exc}") from None
        removed.append(path)
        freed += size
    return tuple(removed), freed


def usable_archive(cache: Path | None = None) -> ClassArchive | None:
    """The archive to start Spark's driver with, when there is a usable one."""
    archive = current_archive(cache)
    return archive if archive is not None and archive.problem() is None else None


@attrs.frozen
class PreparedArchive:
    """What :func:`build_archive` did: the archive, its size, the build's wall time.

    Also the stale archives it removed (see :func:`remove_stale_archives`)
    and their bytes.
    """

    archive: ClassArchive
    size: int
    seconds: float
    removed: tuple[Path, ...]
    freed: int


def _last_words(text: str) -> str:
    """The last line of a failed build's output that says something (not a JVM frame)."""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("at ")]
    return lines[-1] if lines else "no output"


def build_archive(cache: Path | None = None, *, timeout: float = BUILD_TIMEOUT,
                  log: Callable[[str], None] | None = None) -> PreparedArchive:
    """Build the class archive for this Java runtime and PySpark (about a minute).

    Runs a child Python process that starts Spark with
    ``-XX:ArchiveClassesAtExit``, reports on a small synthetic fleet (JSON
    Lines, then Parquet with ``--history``) and lets its JVM exit; the file it
    leaves replaces the archive atomically, and a record of its size, time
    and runtime is written next to it; then the archives of runtimes that
    changed are removed (:func:`remove_stale_archives`).  Raises
    :class:`~kclient.errors.FleetError` when Java or PySpark is missing, the
    cache directory cannot be written, or the build fails or takes longer
    than ``timeout`` seconds.
    """
    say = log or (lambda _text: None)
    runtime = _runtime()
    if runtime is None:
        raise FleetError("the class archive needs Java and PySpark, and one of them was not "
                         "found; install 'kclient[spark]' and a Java runtime (17 or newer)")
    archive = _archive_for(*runtime, cache)
    folder = archive.path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FleetError(f"cannot create the cache directory {folder}: "
                         f"{exc.strerror or exc}; set {CACHE_ENV} to another one") from None
    partial = folder / f".{archive.path.stem}.{os.getpid()}.partial"
    started = time.perf_counter()
    say(f"building the class archive {archive.path} (about a minute)")
    try:
        with tempfile.TemporaryDirectory(prefix="kclient-prepare-") as work:
            _run_build(partial, Path(work), timeout)
        try:
            size = partial.stat().st_size
        except FileNotFoundError:
            raise FleetError("the JVM exited without writing the class archive; is this "
                             "Java runtime 13 or newer?") from None
        check_archive(partial)
        os.replace(partial, archive.path)
        stat = archive.path.stat()
        record = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                  "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "java": str(runtime[0]), "jars": str(runtime[1])}
        staged = folder / f".{archive.record.name}.{os.getpid()}.partial"
        staged.write_text(json.dumps(record) + "\n", encoding="utf-8")
        os.replace(staged, archive.record)
    except OSError as exc:
        raise FleetError(f"cannot write the class archive in {folder}: "
                         f"{exc.strerror or exc}; set {CACHE_ENV} to another directory"
                         ) from None
    finally:
        partial.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    removed, freed = remove_stale_archives(cache)
    return PreparedArchive(archive, size, seconds, removed, freed)


def _run_build(partial: Path, work: Path, timeout: float) -> None:
    """Run the build child (:mod:`kclient.fleet.archivebuild`) in its own process group, bounded."""
    command = [sys.executable, "-m", "kclient.fleet.archivebuild", str(partial), str(work)]
    # A spark-submit driver's gateway is not the child's: it starts its own JVM.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                             env=env)
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the child and its JVM
        child.communicate()
        raise FleetError(f"building the class archive took over {timeout:g} s and was "
                         "stopped; try again on a less busy machine") from None
    if child.returncode != 0:
        with contextlib.suppress(ProcessLookupError):  # a JVM the failed child left behind
            os.killpg(child.pid, signal.SIGKILL)
        raise FleetError(f"building the class archive failed (exit {child.returncode}): "
                         f"{_last_words(output)}")


def check_archive(path: Path) -> None:
    """Start a bare JVM on the archive at ``path``; a :class:`FleetError` if it cannot read it.

    An archive HotSpot cannot read would crash every report that maps it.
    Without Spark's class path the JVM declines the archive's classes, but it
    reads the file first, and a cut-short file is a crash (non-zero exit).
    """
    java = java_binary()
    try:
        # A crash writes HotSpot's error report: into a scratch folder, not the user's.
        with tempfile.TemporaryDirectory(prefix="kclient-check-") as scratch:
            command = [str(java), f"-XX:SharedArchiveFile={path}", "-XX:+VerifySharedSpaces",
                       _QUIET_CDS, f"-XX:ErrorFile={scratch}/hs_err_%p.log",
                       "-XX:-CreateCoredumpOnCrash", "-version"]
            done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                                  check=False, cwd=scratch)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FleetError(f"could not check the new class archive with {java}: {exc}") from None
    if done.returncode != 0:
        raise FleetError(f"the new class archive is unreadable (java exited with "
                         f"{done.returncode}); it was not kept: run kclient fleet prepare again")


def remove_archives(cache: Path | None = None) -> int:
    """Delete every class archive (any runtime's) and its record; returns the files removed."""
    folder = archive_folder(cache)
    removed = 0
    for pattern in ("*.jsa", "*.json", ".*.partial"):
        for path in folder.glob(pattern):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise FleetError(f"cannot remove {path}: {exc.strerror or exc}") from None
            removed += 1
    return removed


def dump_options(target: Path) -> list[str]:
    """Driver JVM options that write the classes it loaded to ``target`` when it exits."""
    return [jvm_arg(f"-XX:ArchiveClassesAtExit={target}"), _QUIET_CDS]
