"""Where kclient's data files come from when it is imported from a zip archive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kclient._resources import shared_extraction_dir

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners only")


def _archive(tmp_path: Path, body: bytes = b"zip") -> Path:
    archive = tmp_path / "kclient.zip"
    archive.write_bytes(body)
    return archive


def test_one_private_directory_per_user_and_archive(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    archive = _archive(tmp_path)
    first = shared_extraction_dir(archive, temp)
    assert first is not None and first.parent == temp
    assert first.name.startswith(f"kclient-data-{os.getuid()}-")
    assert first.stat().st_mode & 0o777 == 0o700
    assert shared_extraction_dir(archive, temp) == first  # the next process finds it
    copy = tmp_path / "copied" / "kclient.zip"  # as Spark copies --py-files per application
    copy.parent.mkdir()
    copy.write_bytes(archive.read_bytes())
    assert shared_extraction_dir(copy, temp) == first
    archive.write_bytes(b"another build of the zip")
    assert shared_extraction_dir(archive, temp) not in (None, first)


def test_a_directory_that_is_not_safely_ours_is_not_used(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    archive = _archive(tmp_path)
    name = shared_extraction_dir(archive, temp)
    assert name is not None
    name.chmod(0o777)  # open to every user: someone else could plant files in it
    assert shared_extraction_dir(archive, temp) is None
    name.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    name.symlink_to(elsewhere)  # a link planted under the expected name
    assert shared_extraction_dir(archive, temp) is None
    assert shared_extraction_dir(tmp_path / "missing.zip", temp) is None
