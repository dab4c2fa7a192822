"""The one rule for files written into a user's folder (kclient._outputfile): never via a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kclient._outputfile import fresh_folder, output_stream, unlink_links, write_output


def test_a_link_at_the_name_is_replaced_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("precious")
    link = tmp_path / "report.md"
    link.symlink_to(target)
    write_output(link, b"# report\n")
    assert not link.is_symlink() and link.read_bytes() == b"# report\n"
    assert target.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt", "report.md"]


def test_a_failed_write_leaves_the_name_as_it_was_and_no_partial(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("the last report")
    with pytest.raises(RuntimeError), output_stream(path) as handle:
        handle.write(b"half a report")
        raise RuntimeError("rendering failed")
    assert path.read_text() == "the last report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_output(tmp_path / "chart.svg", b"<svg/>")
    finally:
        os.umask(umask)
    assert (tmp_path / "chart.svg").stat().st_mode & 0o777 == 0o644


def test_a_fresh_folder_replaces_a_link_a_file_or_a_folder_without_following(
        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / "table").symlink_to(elsewhere, target_is_directory=True)
    assert list(fresh_folder(out / "table").iterdir()) == []
    assert (elsewhere / "keep.txt").read_text() == "keep"
    (out / "table" / "inner").symlink_to(elsewhere / "keep.txt")  # a link inside
    fresh_folder(out / "table")
    assert (elsewhere / "keep.txt").read_text() == "keep"
    (out / "table").rmdir()
    (out / "table").write_text("a file")
    assert fresh_folder(out / "table").is_dir()


def test_unlink_links_removes_only_links_of_the_names(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    (tmp_path / "a").symlink_to(target)
    (tmp_path / "b").write_text("regular")
    (tmp_path / "c").symlink_to(target)
    unlink_links(tmp_path, {"a", "b", "missing"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "c", "target"]
    assert target.read_text() == "x"
