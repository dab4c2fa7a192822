"""The driver JVM's class archive: where it lives, when it is used, built for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from kclient.errors import FleetError
from kclient.fleet.classarchive import (
    CACHE_ENV,
    ClassArchive,
    archive_folder,
    build_archive,
    cache_dir,
    check_archive,
    current_archive,
    remove_archives,
    remove_stale_archives,
    runtime_key,
    usable_archive,
)

_ROOT = Path(__file__).resolve().parents[2]


def _kclient(*args: str, env: dict[str, str], timeout: float = 600
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kclient.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env={**env, "PYTHONPATH": str(_ROOT)})


def test_the_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    assert cache_dir({CACHE_ENV: str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": "/x/cache"}) == Path("/x/cache/kclient")
    assert cache_dir({CACHE_ENV: "", "XDG_CACHE_HOME": "/x"}) == Path("/x/kclient")
    assert cache_dir({}) == Path.home() / ".cache" / "kclient"
    assert cache_dir({CACHE_ENV: "~/c"}) == Path.home() / "c"
    assert cache_dir({CACHE_ENV: "rel"}) == Path.cwd() / "rel"
    assert archive_folder(tmp_path) == tmp_path / "spark-classes"


def _runtime(root: Path) -> tuple[Path, Path]:
    """A stand-in Java runtime and Spark jars folder under ``root``."""
    java = root / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java")
    jars = root / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"core")
    return java, jars


def test_the_runtime_key_changes_with_java_or_any_jar(tmp_path: Path) -> None:
    java, jars = _runtime(tmp_path)
    key = runtime_key(java, jars)
    assert key == runtime_key(java, jars) and len(key) == 20
    (jars / "spark-sql.jar").write_bytes(b"two")
    with_sql = runtime_key(java, jars)
    assert with_sql != key
    (jars / "spark-sql.jar").write_bytes(b"two, upgraded")
    assert runtime_key(java, jars) != with_sql
    other = tmp_path / "jdk21" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"java")
    assert runtime_key(other, jars) != runtime_key(java, jars)


def _fake_archive(folder: Path, body: bytes = b"archive") -> ClassArchive:
    folder.mkdir(parents=True, exist_ok=True)
    archive = ClassArchive(folder / "k.jsa")
    archive.path.write_bytes(body)
    stat = archive.path.stat()
    archive.record.write_text(json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))
    return archive


def test_an_archive_is_used_only_as_it_was_built(tmp_path: Path) -> None:
    absent = ClassArchive(tmp_path / "none.jsa")
    assert "kclient fleet prepare" in (absent.problem() or "")
    archive = _fake_archive(tmp_path / "a")
    assert archive.problem() is None
    # Cut short (a full disk, a partial copy): HotSpot would crash on it.
    archive.path.write_bytes(b"arch")
    assert "changed since it was built" in (archive.problem() or "")
    archive.record.write_text("{not json")
    assert "build record" in (archive.problem() or "")
    archive.record.unlink()
    assert "build record" in (archive.problem() or "")


def test_archive_options_keep_a_path_with_spaces_whole(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "with space" / "k.jsa")
    options = archive.jvm_options()
    assert options[0] == f'"-XX:SharedArchiveFile={archive.path}"'
    assert "-XX:+VerifySharedSpaces" in options
    assert ClassArchive(tmp_path / 'a"b' / "k.jsa").jvm_options() == []


def test_remove_deletes_every_archive_and_record(tmp_path: Path) -> None:
    folder = archive_folder(tmp_path)
    _fake_archive(folder)
    (folder / ".k.123.partial").write_bytes(b"x")
    (folder / "other.txt").write_bytes(b"kept")
    assert remove_archives(tmp_path) == 3
    assert sorted(p.name for p in folder.iterdir()) == ["other.txt"]
    assert remove_archives(tmp_path / "never") == 0


def _archive_for(folder: Path, java: Path, jars: Path, *, named: bool = True) -> Path:
    """An archive file and record as a build for that runtime leaves them."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{runtime_key(java, jars)}.jsa"
    path.write_bytes(b"x" * 1000)
    noted = {"size": 1000, "mtime_ns": path.stat().st_mtime_ns}
    if named:
        noted |= {"java": str(java), "jars": str(jars)}
    path.with_suffix(".json").write_text(json.dumps(noted))
    return path


def test_only_archives_of_a_runtime_that_changed_or_went_are_stale(tmp_path: Path) -> None:
    folder = archive_folder(tmp_path / "cache")
    upgraded = _archive_for(folder, *_runtime(tmp_path / "upgraded"))
    (tmp_path / "upgraded" / "jars" / "spark-core.jar").write_bytes(b"core, newer")
    gone_java, gone_jars = _runtime(tmp_path / "gone")
    gone = _archive_for(folder, gone_java, gone_jars)
    shutil.rmtree(tmp_path / "gone")
    current = _archive_for(folder, *_runtime(tmp_path / "current"))  # another venv's, in use
    old_java, old_jars = _runtime(tmp_path / "old-kclient")
    unnamed = _archive_for(folder, old_java, old_jars, named=False)
    (old_jars / "spark-core.jar").write_bytes(b"changed, but the record cannot tell")
    (folder / "broken.jsa").write_bytes(b"no record")
    removed, freed = remove_stale_archives(tmp_path / "cache")
    assert removed == tuple(sorted((upgraded, gone))) and freed == 2000
    assert sorted(p.name for p in folder.iterdir()) == sorted([
        current.name, current.with_suffix(".json").name, unnamed.name,
        unnamed.with_suffix(".json").name, "broken.jsa"])
    assert remove_stale_archives(tmp_path / "cache") == ((), 0)
    assert remove_stale_archives(tmp_path / "never") == ((), 0)


def test_without_java_there_is_no_archive_and_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert current_archive(tmp_path) is None
    assert usable_archive(tmp_path) is None
    with pytest.raises(FleetError, match="needs Java and PySpark"):
        build_archive(tmp_path)
    done = _kclient("fleet", "prepare", env={**os.environ, "JAVA_HOME": str(tmp_path)},
                    timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("kclient: ")
    assert "Traceback" not in done.stderr


def test_a_build_that_runs_too_long_is_stopped_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="took over 2 s and was stopped"):
        build_archive(tmp_path, timeout=2)
    assert list(archive_folder(tmp_path).iterdir()) == []


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A cache with a real archive, built by ``kclient fleet prepare``: (cache, archive)."""
    cache = tmp_path_factory.mktemp("prepared-cache")
    # The archive of a PySpark upgraded since: prepare removes it.
    java, jars = _runtime(tmp_path_factory.mktemp("upgraded"))
    stale = _archive_for(archive_folder(cache), java, jars)
    (jars / "spark-core.jar").write_bytes(b"core, newer")
    env = {**os.environ, CACHE_ENV: str(cache)}
    done = _kclient("fleet", "prepare", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    archive = Path(done.stdout.strip())
    assert "class archive of" in done.stderr and "Traceback" not in done.stderr
    assert ("removed 1 class archive(s) of a Java runtime or Spark that changed or is gone "
            "(0 MiB)") in done.stderr
    assert not stale.exists() and not stale.with_suffix(".json").exists()
    noted = json.loads(archive.with_suffix(".json").read_text())
    assert runtime_key(Path(noted["java"]), Path(noted["jars"])) == archive.stem
    yield cache, archive


_SESSION = textwrap.dedent("""
    import sys
    from kclient.fleet.session import build_session
    spark = build_session("local[1]", jvm_options=["-Xlog:class+load=info:file=" + sys.argv[1]])
    assert spark.range(5).count() == 5
    spark.stop()
""")


def _classes_from_archive(cache: Path, log: Path) -> int:
    """Start a session with ``cache`` and count the Spark classes it mapped from the archive."""
    done = subprocess.run([sys.executable, "-c", _SESSION, str(log)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, CACHE_ENV: str(cache), "PYTHONPATH": str(_ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return sum(1 for line in log.read_text().splitlines()
               if "org.apache.spark" in line and "shared objects file (top)" in line)


def test_prepare_builds_an_archive_the_next_session_maps(
        prepared: tuple[Path, Path], tmp_path: Path) -> None:
    cache, archive = prepared
    assert archive.parent == archive_folder(cache) and archive.suffix == ".jsa"
    assert usable_archive(cache) == ClassArchive(archive)
    assert not list(archive.parent.glob(".*.partial"))
    assert _classes_from_archive(cache, tmp_path / "with.log") > 1000
    # An empty cache: the same session loads every Spark class from its jar.
    assert _classes_from_archive(tmp_path / "empty", tmp_path / "without.log") == 0


def test_a_damaged_archive_is_turned_off_not_a_crash(
        prepared: tuple[Path, Path], tmp_path: Path) -> None:
    _, built = prepared
    cache = tmp_path / "cache"
    archive = archive_folder(cache) / built.name
    archive.parent.mkdir(parents=True)
    shutil.copyfile(built, archive)
    with archive.open("r+b") as data:  # same size, bytes flipped in the middle
        data.seek(archive.stat().st_size // 2)
        data.write(b"\xff" * 65536)
    stat = archive.stat()
    archive.with_suffix(".json").write_text(
        json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))
    assert usable_archive(cache) is not None  # the record matches: only HotSpot can tell
    assert _classes_from_archive(cache, tmp_path / "damaged.log") == 0


def test_report_says_it_uses_the_archive_and_remove_clears_it(
        prepared: tuple[Path, Path], tmp_path: Path) -> None:
    cache, _ = prepared
    env = {**os.environ, CACHE_ENV: str(cache)}
    snapshots = tmp_path / "fleet.jsonl"
    assert _kclient("fleet", "synth", "--clusters", "3", "--out", str(snapshots),
                    env=env).returncode == 0
    done = _kclient("fleet", "report", "--snapshots", str(snapshots), "--out",
                    str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"with the class archive {archive_folder(cache)}" in done.stderr
    assert "cds" not in done.stdout + done.stderr  # HotSpot's own archive notes stay quiet
    assert (tmp_path / "out" / "report.html").is_file()
    copy = tmp_path / "copy"
    shutil.copytree(cache, copy)
    removed = _kclient("fleet", "prepare", "--remove", env={**os.environ, CACHE_ENV: str(copy)})
    assert removed.returncode == 0
    assert "removed 2 file(s)" in removed.stderr
    assert usable_archive(copy) is None



def test_a_cut_short_archive_is_caught_before_it_is_kept(
        prepared: tuple[Path, Path], tmp_path: Path) -> None:
    _, built = prepared
    check_archive(built)
    short = tmp_path / "short.jsa"
    with built.open("rb") as whole:
        short.write_bytes(whole.read(5 << 20))
    here = sorted(Path.cwd().glob("hs_err_pid*.log"))
    with pytest.raises(FleetError, match="unreadable"):
        check_archive(short)
    # HotSpot's crash report went to a scratch folder, not the working directory.
    assert sorted(Path.cwd().glob("hs_err_pid*.log")) == here
