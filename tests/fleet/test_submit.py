"""``fleet report`` through ``spark-submit``, kclient shipped as a zip on ``--py-files``.

The zip holds kclient laid out as its wheel is (the package plus the data files
pyproject.toml's ``force-include`` puts into it; a wheel is such a zip).  The
driver runs with PYTHONPATH cleared, from a directory without kclient, so
that kclient can only come from the shipped file: its data files
(features.yaml, the API catalog, release profiles) are read from inside the
archive.  The one spark-submit run, against a standalone cluster, is in
``test_standalone``; the helpers and the zip's own checks are here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import kclient
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.releases import known_releases
from tests.conftest import REPO_ROOT
from tests.docs.test_examples import extract_blocks
from tests.fleet.conftest import pyspark_launcher

GUIDE = REPO_ROOT / "docs" / "guide" / "fleet.md"


def guide_driver() -> str:
    """The driver script the fleet guide tells users to write (its ``fleet_job.py`` block)."""
    (block,) = [b for b in extract_blocks(GUIDE) if b.marker == "file"
                and b.argument == "fleet_job.py"]
    return block.code


def package_zip(target: Path) -> Path:
    """kclient zipped the way its wheel lays it out (read from pyproject.toml)."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for package in wheel["packages"]:
            for path in sorted((REPO_ROOT / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    out.write(path, path.relative_to(REPO_ROOT).as_posix())
        for source, dest in wheel["force-include"].items():
            origin = REPO_ROOT / source
            if origin.is_file():
                out.write(origin, dest)
                continue
            for path in sorted(p for p in origin.rglob("*") if p.is_file()):
                out.write(path, f"{dest}/{path.relative_to(origin).as_posix()}")
    return target


def python_without_kclient(where: Path) -> tuple[Path, Path]:
    """An interpreter command and a path entry that give this venv's packages but kclient.

    ``site/`` links every entry of the venv's site-packages except kclient's
    (its files and its editable-install ``.pth``); the wrapper runs the venv's
    Python with ``-S`` (no site-packages, no ``.pth``).  With ``site/`` on
    PYTHONPATH, Spark's driver and Python workers can import kclient only from
    what ``--py-files`` ships.
    """
    packages = Path(next(p for p in sys.path if p.endswith("site-packages")))
    site = where / "site"
    site.mkdir()
    for entry in packages.iterdir():
        if entry.name.startswith(("kclient", "_editable_impl_kclient", "__editable__")):
            continue
        if entry.suffix != ".pth":
            (site / entry.name).symlink_to(entry)
    wrapper = where / "python-without-kclient"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper, site


def test_package_zip_holds_the_data_files(tmp_path: Path) -> None:
    names = set(zipfile.ZipFile(package_zip(tmp_path / "kclient.zip")).namelist())
    for name in ("kclient/__init__.py", "kclient/fleet/submit.py",
                 "kclient/_shipped/features.yaml", "kclient/_shipped/schemas/api_catalog.json",
                 "kclient/negotiation/releases.json"):
        assert name in names


_FROM_ZIP = """
import json, kclient
from kclient._resources import shipped_path
from kclient.contracts import load_schema
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.releases import known_releases
from kclient.negotiation.releases import known_releases
from kclient.protocol.registry import default_registry
print(json.dumps({"module": kclient.__file__, "features": len(default_features().features),
                  "releases": len(known_releases()), "schema": load_schema("features")["$id"],
                  "registry": len(default_registry().names()),
                  "data": str(shipped_path("features.yaml"))}))
"""


def test_kclient_imported_from_the_zip_reads_its_data_files(tmp_path: Path) -> None:
    shipped = package_zip(tmp_path / "kclient.zip")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(shipped)
    result = subprocess.run([sys.executable, "-c", _FROM_ZIP], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["module"] == f"{shipped}/kclient/__init__.py"
    assert found["features"] == len(default_features().features)
    assert found["releases"] == len(known_releases())
    assert found["registry"] > 50 and found["schema"]
    # Copied out of the archive into this user's directory for that archive,
    # kept and shared: a second process (one that ends as Spark's Python
    # workers do, without exit handlers) uses the same copy, adds no directory.
    data = Path(found["data"])
    assert data.name == "features.yaml" and str(shipped) not in str(data)
    assert data.read_bytes() == (REPO_ROOT / "features.yaml").read_bytes()
    folder = data.parent.parent if data.parent.name == "_shipped" else data.parent
    try:
        _check_shared_copy(folder, env, tmp_path, found["data"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # this test's zip is gone after it


def _check_shared_copy(folder: Path, env: dict[str, str], cwd: Path, data: str) -> None:
    assert folder.name.startswith(f"kclient-data-{os.getuid()}-")
    assert folder.stat().st_mode & 0o777 == 0o700
    before = sorted(Path(tempfile.gettempdir()).glob("kclient-data-*"))
    # Ends as Spark's forked Python workers do: no exit handlers run.
    quick_exit = "import os, sys; sys.stdout.flush(); os._exit(0)\n"
    again = subprocess.run([sys.executable, "-c", _FROM_ZIP + quick_exit], env=env, cwd=cwd,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["data"] == data
    assert sorted(Path(tempfile.gettempdir()).glob("kclient-data-*")) == before
    assert not list(folder.rglob("*.partial"))


def spark_submit(tmp_path: Path, *job_args: str, master: str = "local[2]",
                 shipped_name: str = "kclient.zip", expect: int = 0) -> tuple[Path, list[str]]:
    """Run the guide's driver script with spark-submit (``master``, loopback), kclient zipped.

    Returns the file shipped (``shipped_name``) and the lines spark-submit
    printed on stdout (it merges the Python driver's stderr into its own
    stdout); fails the test unless the job exits with ``expect``.
    """
    submit = pyspark_launcher("spark-submit")
    home = submit.parent.parent
    shipped = package_zip(tmp_path / shipped_name)
    job = tmp_path / "job"
    job.mkdir()
    (job / "fleet_job.py").write_text(guide_driver(), encoding="utf-8")
    python, site = python_without_kclient(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # A temporary folder of the test's own: the driver and its Python workers
    # copy kclient's data files out of each new zip into it, and it goes with
    # the test's other files (in /tmp they would be kept, one folder per zip).
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(site),
               PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python),
               TMPDIR=str(private_tmp))
    command = [str(submit), "--master", master, "--driver-memory", "1g",
               "--conf", "spark.driver.host=127.0.0.1",
               "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.sql.shuffle.partitions=4",
               # A cluster's executors get the same packages (not kclient) and folder.
               "--conf", f"spark.executorEnv.PYTHONPATH={site}",
               "--conf", f"spark.executorEnv.TMPDIR={private_tmp}",
               "--py-files", str(shipped), "fleet_job.py", *job_args]
    result = subprocess.run(command, env=env, cwd=job, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == expect, (result.stdout[-3000:], result.stderr[-3000:])
    lines = result.stdout.strip().splitlines()
    # kclient came from the shipped zip: nothing else on the path has it.
    assert f"kclient fleet: running in a spark-submit driver (kclient {kclient.__version__} " \
        f"from {shipped})" in lines, result.stdout[-3000:]
    return shipped, lines
