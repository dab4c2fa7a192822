"""``kclient fleet`` on the command line (in-process: no Spark starts here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kclient.cli import main
from kclient.negotiation import read_snapshots
from tests.extras import needs_extra


def test_synth_writes_a_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "12", "--out", str(out), "--seed", "3"]) == 0
    assert len({r.cluster for r in read_snapshots(out)}) == 12
    assert "12 cluster(s)" in capsys.readouterr().err


def test_synth_history_writes_one_record_per_broker_and_day(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history.jsonl"
    assert main(["fleet", "synth", "--clusters", "6", "--brokers-per-cluster", "2",
                 "--history", "4", "--out", str(out)]) == 0
    records = read_snapshots(out)
    assert len(records) == 6 * 2 * 4
    assert len({r.observed_at[:10] for r in records}) == 4
    assert "6 cluster(s), 12 broker(s), 48 record(s)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fleet", "synth", "--clusters", "2", "--history", "0", "--out", str(out)])


def test_report_on_a_missing_path_fails_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fleet", "report", "--snapshots", str(tmp_path / "nope.jsonl"),
                 "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "nope.jsonl: no such file or directory" in err
    assert len(err.strip().splitlines()) == 1


def test_scan_with_a_bad_targets_file_fails_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    targets = tmp_path / "targets.jsonl"
    targets.write_text('{"cluster": "a", "bootstrap_servers": "127.0.0.1:1"}\n{"cluster": 5}\n')
    code = main(["fleet", "scan", "--targets", str(targets), "--out", str(tmp_path / "o")])
    assert code == 2
    assert f"{targets}:2: 'cluster' must be a non-empty name" in capsys.readouterr().err


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["fleet", "synth", "--clusters", "0", "--out", str(tmp_path / "x")])
    assert stop.value.code == 2


def test_report_summary_counts_clusters_per_state(capsys: pytest.CaptureFixture[str]) -> None:
    from kclient.commands.fleet import _summary
    from kclient.fleet.report import FeatureCount, ReportData

    data = ReportData(
        snapshots="f.jsonl", history=False, clusters=4, brokers=10, stale_brokers=1,
        unknown_brokers=2, fallback_brokers=0,
        features=(FeatureCount("ZSTD", 2, 1, 1), FeatureCount("ApiVersion", 4)),
        blocked=(), releases=(), upgrading=0, upgrading_names=(), bad_records=0,
        bad_lines=())
    _summary(data, "out")
    captured = capsys.readouterr()
    assert captured.out == "out/report.md\n"
    assert ("4 cluster(s), 10 broker(s) (1 stale, 2 unknown, 0 fallback); 1/2 feature(s) "
            "available everywhere; cluster verdicts: 6 available, 1 unavailable, 1 unknown"
            ) in captured.err


def test_a_bogus_master_is_one_line_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshots = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "2", "--out", str(snapshots)]) == 0
    capsys.readouterr()
    code = main(["fleet", "report", "--snapshots", str(snapshots), "--out",
                 str(tmp_path / "out"), "--master", "bogus"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--master: 'bogus' is not a Spark master URL" in err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_driver_memory_is_one_line_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshots = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "2", "--out", str(snapshots)]) == 0
    capsys.readouterr()
    for bad in ("lots", "2 g", "0g", "1.5g"):
        code = main(["fleet", "report", "--snapshots", str(snapshots), "--out",
                     str(tmp_path / "out"), "--driver-memory", bad])
        assert code == 2
        err = capsys.readouterr().err
        assert f"--driver-memory: {bad!r} is not a memory size" in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_prepare_is_deprecated_in_one_line_and_exit_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    from kclient.commands.fleet import PREPARE_RETIRED

    for argv in (["fleet", "prepare"], ["fleet", "prepare", "--remove"]):
        assert main(argv) == 0
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.splitlines() == [f"kclient fleet: {PREPARE_RETIRED}"]
    assert "no longer needed" in PREPARE_RETIRED


def test_auto_runs_in_process_and_says_so(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    needs_extra("fleet", "pyarrow")  # the local engine's tables
    snapshots = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "4", "--out", str(snapshots)]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["fleet", "report", "--snapshots", str(snapshots), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    first = captured.err.splitlines()[0]
    assert first.startswith("kclient fleet: engine: local (in-process: the input (")
    assert first.endswith("is within 1,024 MiB; --engine spark to use Spark)")
    assert captured.out == f"{out}/report.md\n"
    for table in ("cluster_api_versions", "feature_availability", "broker_releases",
                  "bad_records"):
        assert list((out / table).glob("*.parquet")), table


def test_engine_choice() -> None:
    from kclient.errors import ConfigError
    from kclient.fleet.engine import choose_engine

    def pick(requested: str, size: int | None = 10, master: str | None = None,
             submitted: bool = False) -> str:
        return choose_engine(requested, master=master, submitted=submitted,
                             input_bytes=size, limit=100).engine

    assert pick("auto") == "local"
    assert pick("auto", size=100) == "local" and pick("auto", size=101) == "spark"
    assert pick("auto", size=None) == "spark"  # remote input: its size is unknown
    assert pick("auto", master="spark://h:7077") == "spark"
    assert pick("auto", submitted=True) == "spark"
    assert pick("local", size=10**12) == "local" and pick("spark", size=1) == "spark"
    with pytest.raises(ConfigError, match="--master runs on Spark"):
        pick("local", master="local[2]")
    with pytest.raises(ConfigError, match="--engine: 'fast' is not one of"):
        pick("fast")


def test_local_with_spark_flags_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshots = tmp_path / "fleet.jsonl"
    assert main(["fleet", "synth", "--clusters", "2", "--out", str(snapshots)]) == 0
    capsys.readouterr()
    for extra, said in ((["--master", "local[2]"], "--master runs on Spark"),
                        (["--driver-memory", "2g"], "--driver-memory sizes Spark's driver")):
        code = main(["fleet", "report", "--snapshots", str(snapshots), "--out",
                     str(tmp_path / "out"), "--engine", "local", *extra])
        assert code == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1
