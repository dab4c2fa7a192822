"""Tests that need ../shared say what it is and where it comes from when it is absent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, shared_absent, skip_without_shared


def test_the_reason_says_what_the_folder_is_and_where_it_comes_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "shared" / "kafka-specs"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        skip_without_shared(missing, "the specs this test reads")
    assert str(skipped.value.msg) == (
        f"reference folder {missing} is absent (the specs this test reads): ../shared, next "
        "to the checkout, holds Apache Kafka's JSON message specs and release data that "
        "kclient's tests compare against; it is not part of the repository (the team's "
        "machines and CI provide it, see the README)")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"\(CI is set, so it must be present\)$"):
        skip_without_shared(missing)
    skip_without_shared(tmp_path)  # present: nothing happens


def test_no_test_skips_with_a_bare_shared_is_absent() -> None:
    bare = re.compile(r"skip\(.*\.\./shared is absent")
    offenders = [f"{path.relative_to(REPO_ROOT)}:{number}"
                 for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if bare.search(line)]
    assert not offenders, f"use tests.conftest.skip_without_shared: {offenders}"
    assert "../shared" in shared_absent()
