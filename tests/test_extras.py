"""Without an optional extra, what needs it is one typed error naming the extra and pip's command.

Each check runs twice over: here with the extra's module blocked in this process
(``sys.modules[name] = None`` makes its import fail, as when it is absent), so
it runs in every environment, and through the real console script where the
extra is really not installed (``make test-noextras``), skipping elsewhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kclient._version import install_hint
from kclient.cli import main
from kclient.errors import ConfigError, FleetError
from kclient.extras import missing, require
from kclient.metrics import ClusterMetrics
from kclient.net.config import client_options_from_config
from tests.extras import EXTRAS, extra_missing, needs_extra

ABSENT = "kclient_test_no_such_module"


def _block(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    """Make ``package`` and any of its modules already loaded fail to import."""
    for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


def test_require_names_the_feature_the_modules_the_extra_and_the_command() -> None:
    require("metrics", "a feature", ["json"], ConfigError)  # installed: nothing happens
    assert missing(["json", ABSENT, "os.path", f"{ABSENT}.child"]) == [ABSENT, f"{ABSENT}.child"]
    with pytest.raises(FleetError) as failed:
        require("fleet", "kclient fleet's local engine", ["json", ABSENT], FleetError)
    assert str(failed.value) == (
        f"kclient fleet's local engine needs {ABSENT}, from kclient's 'fleet' extra, which "
        "is not installed here: pip install 'kclient-kafka[fleet]'")


def test_every_extra_is_read_from_pyproject() -> None:
    assert set(EXTRAS) == {"fleet", "spark", "metrics", "pkcs12"}
    assert EXTRAS["metrics"] == ("prometheus_client",)
    assert EXTRAS["pkcs12"] == ("cryptography",)
    assert EXTRAS["fleet"] == ("pyarrow",)  # the in-process engine: no PySpark to install
    assert set(EXTRAS["spark"]) == {"pyarrow", "pyspark", "pandas"}  # the fleet extra's too


def test_each_fleet_engine_checks_the_modules_its_extra_brings() -> None:
    from kclient.fleet.engine import ENGINE_EXTRAS, ENGINE_MODULES

    assert ENGINE_EXTRAS == {"local": "fleet", "spark": "spark"}
    for engine, modules in ENGINE_MODULES.items():
        assert set(modules) == set(EXTRAS[ENGINE_EXTRAS[engine]]), engine


def _synth(tmp_path: Path) -> Path:
    snapshots = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "2", "--out", str(snapshots)]) == 0
    return snapshots


def test_fleet_report_without_pyarrow_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    snapshots = _synth(tmp_path)  # JSON Lines: no pyarrow needed
    capsys.readouterr()
    _block(monkeypatch, "pyarrow")
    out = tmp_path / "out"
    for engine in ("local", "auto"):
        assert main(["fleet", "report", "--snapshots", str(snapshots), "--out", str(out),
                     "--engine", engine]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[-1] == (
            "kclient: error: kclient fleet's local engine needs pyarrow, from kclient's "
            f"'fleet' extra, which is not installed here: {install_hint('fleet')}")
        assert not out.exists()


def test_the_fleet_extra_alone_runs_the_in_process_engine(tmp_path: Path) -> None:
    needs_extra("fleet", "pyarrow")
    only_spark = frozenset(EXTRAS["spark"]) - set(EXTRAS["fleet"]) | {"py4j"}
    assert only_spark == {"pyspark", "pandas", "py4j"}
    parquet = tmp_path / "fleet.parquet"
    out = tmp_path / "out"
    done = _kclient("fleet", "synth", "--clusters", "3", "--out", str(parquet),
                    hidden=only_spark)
    assert done.returncode == 0, done.stderr
    done = _kclient("fleet", "report", "--snapshots", str(parquet), "--out", str(out),
                    hidden=only_spark)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("kclient fleet: engine: local")
    assert (out / "report.md").is_file() and (out / "feature_availability").is_dir()
    # Spark is the other extra's, named when asked for.
    done = _kclient("fleet", "report", "--snapshots", str(parquet), "--out", str(out),
                    "--engine", "spark", hidden=only_spark)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "kclient: error: kclient fleet's spark engine needs pyspark, pandas, from kclient's "
        f"'spark' extra, which is not installed here: {install_hint('spark')}")


def test_fleet_synth_to_parquet_without_pyarrow_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _block(monkeypatch, "pyarrow")
    out = tmp_path / "fleet.parquet"
    assert main(["fleet", "synth", "--clusters", "2", "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "kclient: error: writing Parquet (a path ending in .parquet; JSON Lines needs no "
        "extra) needs pyarrow, from kclient's 'fleet' extra, which is not installed here: "
        f"{install_hint('fleet')}")
    assert not out.exists()


def test_the_fleet_engines_called_from_python_name_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kclient.fleet.local import compute_local
    from kclient.fleet.session import build_session

    snapshots = _synth(tmp_path)
    _block(monkeypatch, "pyarrow")
    with pytest.raises(FleetError, match=r"^the fleet's in-process engine needs pyarrow, from "
                       r"kclient's 'fleet' extra, .*kclient-kafka\[fleet\]'$"):
        compute_local(str(snapshots))
    _block(monkeypatch, "pyspark")
    with pytest.raises(FleetError, match=r"^the fleet's Spark engine needs pyspark, pyarrow"
                       r"(, pandas)?, from kclient's 'spark' extra"):
        build_session()


def test_metrics_without_prometheus_client_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _block(monkeypatch, "prometheus_client")
    with pytest.raises(ConfigError, match=r"prometheus-client: " + r"pip install "
                       r"'kclient-kafka\[metrics\]'$"):
        ClusterMetrics(object())


def _pkcs12_config(tmp_path: Path) -> dict[str, str]:
    store = tmp_path / "client.truststore.p12"
    store.write_bytes(b"\x30\x82 not read: cryptography is missing")
    return {"bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SSL",
            "ssl.truststore.location": str(store), "ssl.truststore.type": "PKCS12"}


def test_a_pkcs12_store_without_cryptography_names_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _block(monkeypatch, "cryptography")
    with pytest.raises(ConfigError) as failed:
        client_options_from_config(_pkcs12_config(tmp_path))
    assert install_hint("pkcs12") in str(failed.value)
    assert str(failed.value).startswith("ssl.truststore.location: reading a PKCS12 store "
                                        "needs the cryptography package")


#: ``python -c`` for the kclient command in an interpreter where the modules named
#: in its first argument (comma-separated) cannot be imported, as where they are
#: not installed (an import finder refuses them: ``sys.modules`` entries of None
#: would confuse pyarrow's own optional import of pandas).
_WITHOUT = """
import sys
hidden = set(sys.argv.pop(1).split(","))
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
from kclient.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _kclient(*args: str, hidden: frozenset[str] = frozenset()
             ) -> subprocess.CompletedProcess[str]:
    """The kclient command in a child interpreter; ``hidden`` modules cannot be imported."""
    start = ["-c", _WITHOUT, ",".join(sorted(hidden))] if hidden else ["-m", "kclient.cli"]
    return subprocess.run([sys.executable, *start, *args], capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(not extra_missing("fleet"), reason="the 'fleet' extra is installed here; "
                    "make test-noextras runs this where it is not")
def test_without_the_fleet_extra_fleet_report_says_so(tmp_path: Path) -> None:
    snapshots = _synth(tmp_path)
    done = _kclient("fleet", "report", "--snapshots", str(snapshots),
                    "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("kclient: error: kclient fleet's local engine needs ")
    assert last.endswith(f"from kclient's 'fleet' extra, which is not installed here: "
                         f"{install_hint('fleet')}")
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not extra_missing("metrics"), reason="the 'metrics' extra is installed "
                    "here; make test-noextras runs this where it is not")
def test_without_the_metrics_extra_the_exporter_says_so() -> None:
    with pytest.raises(ConfigError, match=r"kclient-kafka\[metrics\]"):
        ClusterMetrics(object())


@pytest.mark.skipif(not extra_missing("pkcs12"), reason="the 'pkcs12' extra is installed "
                    "here; make test-noextras runs this where it is not")
def test_without_the_pkcs12_extra_a_command_config_store_says_so(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in _pkcs12_config(tmp_path).items()
                             if k != "bootstrap.servers"), encoding="utf-8")
    done = _kclient("api-versions", "-b", "127.0.0.1:9", "--command-config", str(props))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kclient: error: ssl.truststore.location: reading a PKCS12 "
                                  "store needs the cryptography package: "
                                  f"{install_hint('pkcs12')}")
