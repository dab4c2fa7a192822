"""The fuzz harness (benchmarks/bench_fuzz.py): its regression corpus and a smoke run.

The corpus in tests/data/fuzz/ holds the inputs that once escaped kclient's
promise (a traceback, a hang, a prompt, a giant allocation instead of a typed
error); each must now end in a typed error, fast.  The smoke run fuzzes every
target for a few seconds and must find no non-typed exception.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import pytest

from benchmarks import bench_fuzz
from kclient.cli import main as cli_main
from kclient.errors import AuthenticationError, ConfigError, FeatureFileError, SnapshotError
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.snapshot import read_snapshots
from kclient.net import TlsConfig
from kclient.sasl.scram import ScramClient

CORPUS = Path(__file__).resolve().parents[1] / "data" / "fuzz"


def _files(folder: str, pattern: str) -> list[Path]:
    found = sorted((CORPUS / folder).glob(pattern))
    assert found, f"no corpus files in {folder}"
    return found


@pytest.mark.parametrize("path", _files("features", "*.yaml"), ids=lambda p: p.name)
def test_features_corpus(path: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(FeatureFileError) as info:
        load_features(path)
    assert time.perf_counter() - started < 1.0
    assert str(info.value).startswith(f"{path}:")


def test_ansi_names_are_read_and_escaped() -> None:
    records = read_snapshots(CORPUS / "snapshot" / "ansi_names.jsonl")
    assert records[0].host.startswith("\x1b")  # valid text is kept as it is ...
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["api-versions", "--snapshot",
                         str(CORPUS / "snapshot" / "ansi_names.jsonl")]) == 0
    assert "\x1b" not in out.getvalue() and "\\x1b[2J" in out.getvalue()  # ... printed escaped


@pytest.mark.parametrize("path", [p for p in _files("snapshot", "*.jsonl")
                                  if p.name != "ansi_names.jsonl"], ids=lambda p: p.name)
def test_snapshot_corpus(path: Path) -> None:
    with pytest.raises(SnapshotError) as info:
        read_snapshots(path)
    assert str(info.value).startswith(f"{path}:1: ")


def _argv_cases() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = json.loads((CORPUS / "cli" / "argv.json").read_text())
    return cases


@pytest.mark.parametrize("case", _argv_cases(), ids=lambda c: " ".join(c["argv"])[:60])
def test_cli_corpus(case: dict[str, object]) -> None:
    argv = [str(CORPUS / "cli" / a[1:]) if a.startswith("@") else a
            for a in case["argv"]]  # type: ignore[attr-defined]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    lines = err.getvalue().splitlines()
    assert code == 2, err.getvalue()
    assert len(lines) == 1 and lines[0].startswith("kclient: error: "), lines
    assert str(case["error"]) in lines[0]
    assert "\x1b" not in lines[0]


@pytest.mark.parametrize("hex_line", (CORPUS / "scram" / "server_first.txt").read_text().split())
def test_scram_corpus(hex_line: str) -> None:
    client = ScramClient("SCRAM-SHA-1", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL",
                         hash_name="sha1")
    client.initial_response()
    started = time.perf_counter()
    with pytest.raises(AuthenticationError, match="iteration"):
        client.evaluate_challenge(bytes.fromhex(hex_line))
    assert time.perf_counter() - started < 1.0


def test_tls_corpus_encrypted_key() -> None:
    tls = CORPUS / "tls"
    with pytest.raises(ConfigError, match="is encrypted; give its password"):
        TlsConfig(cert_file=tls / "client.pem", key_file=tls / "client-encrypted.key").context()
    TlsConfig(cert_file=tls / "client.pem", key_file=tls / "client-encrypted.key",
              key_password="pw").context()


def test_every_corpus_file_is_a_typed_refusal_in_its_fuzz_target() -> None:
    targets, cleanup = bench_fuzz.build_targets(seed=1)
    try:
        by_name = {t.name: t for t in targets}
        for folder, name in (("features", "parse_features"), ("snapshot", "snapshot"),
                             ("properties", "properties"), ("features", "features_file")):
            for path in _files(folder, "*"):
                context = False if name == "features_file" else None
                accepted, problem = bench_fuzz.run_case(by_name[name], context,
                                                        path.read_bytes())
                assert problem is None, f"{path.name}: {problem}"
                assert not accepted or path.name == "ansi_names.jsonl", path.name
    finally:
        cleanup()


def test_mutation_is_deterministic() -> None:
    import random

    first = [bench_fuzz.mutate(b"abcdef" * 10, random.Random(7), [b"xyz"], [b"!!int "])
             for _ in range(3)]
    again = [bench_fuzz.mutate(b"abcdef" * 10, random.Random(7), [b"xyz"], [b"!!int "])
             for _ in range(3)]
    assert first == again


def test_smoke_run_finds_no_untyped_exception() -> None:
    reports = bench_fuzz.run(None, cases=400, seconds=2.0, seed=20261123)
    assert [r.name for r in reports] == list(bench_fuzz.iter_target_names())
    for report in reports:
        assert report.cases >= 50, report.lines()
        assert report.failure_count == 0, "\n".join(report.lines())
        assert report.refused > 0, report.name  # the mutants reach the error paths


def test_jaas_scaling_figure_reports_every_shape() -> None:
    """The figure's content (the times themselves are the benchmark's business)."""
    lines = bench_fuzz.jaas_scaling_lines(small=1_000, large=8_000)
    assert lines[0].startswith("jaas scaling (parse time of one sasl.jaas.config value; "
                               "linear: x8, quadratic: x64)")
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "many options", "one long value", "escapes", "unterminated quote"]
    for line in lines[1:]:
        assert " 1 KB " in line and " 8 KB " in line and "(x" in line


def test_input_targets_are_listed_and_built() -> None:
    targets, cleanup = bench_fuzz.build_targets(seed=2)
    try:
        names = [t.name for t in targets]
        assert names == list(bench_fuzz.iter_target_names())
        assert set(bench_fuzz.INPUT_TARGETS) <= set(names)
        for target in targets:
            if target.name in bench_fuzz.INPUT_TARGETS:
                assert target.seeds, target.name
                # Every seed is valid input or a typed refusal, never a finding.
                for context, data in target.seeds:
                    assert bench_fuzz.run_case(target, context, data)[1] is None, target.name
    finally:
        cleanup()


def test_report_counts_non_typed_failures_by_kind() -> None:
    def run(context: object, data: bytes) -> None:
        if len(data) % 3 == 0:
            raise ValueError("too long")
        if len(data) % 3 == 1:
            raise ConfigError("typed")
        data.decode("ascii")

    target = bench_fuzz.Target("kinds", [(None, b"abcd"), (None, b"\xff" * 5)], run)
    report = bench_fuzz.fuzz_target(target, cases=300, seconds=30.0, seed=3)
    assert report.failure_count == sum(report.failure_kinds.values()) > 0
    assert set(report.failure_kinds) <= {"ValueError", "UnicodeDecodeError"}
    assert any(line.startswith("  non-typed by kind: ") for line in report.lines())
