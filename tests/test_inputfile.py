"""The one rule for input files (kclient._inputfile): regular files only, a size cap."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from kclient._inputfile import (
    MAX_SETTINGS_INPUT,
    check_input_file,
    read_input_bytes,
    read_input_stream,
    read_input_text,
)
from kclient.errors import ConfigError, SnapshotError


def test_regular_file_within_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes("héllo".encode())
    assert read_input_text(path, "the file", limit=16) == "héllo"
    assert read_input_bytes(path, "the file", limit=6) == "héllo".encode()


def test_file_over_the_cap_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 100)
    with pytest.raises(ConfigError, match=r"the file .*big\.txt is too large \(100 bytes, "
                                          r"more than the 99 bytes"):
        read_input_bytes(path, "the file", limit=99)


def test_stream_over_the_cap_is_refused() -> None:
    assert read_input_stream(io.BytesIO(b"abc"), "--json:", limit=3) == b"abc"
    with pytest.raises(ConfigError, match="--json: stdin is too large"):
        read_input_stream(io.BytesIO(b"abcd"), "--json:", limit=3)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifo_and_device_are_refused_with_the_callers_error(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SnapshotError) as info:
        read_input_text(fifo, "the snapshot file", limit=MAX_SETTINGS_INPUT,
                        error=SnapshotError)
    assert str(info.value) == (f"{fifo}: the snapshot file is a FIFO (named pipe), not a "
                               "regular file; kclient reads input only from regular files: "
                               "save the content to a file and give its path")
    if Path("/dev/zero").exists():
        with pytest.raises(ConfigError, match="is a character device, not a regular file"):
            read_input_bytes("/dev/zero", "the file", limit=MAX_SETTINGS_INPUT)


def test_missing_directory_and_nul_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist; check the path"):
        check_input_file(tmp_path / "nope", "--ca:", limit=10)
    with pytest.raises(ConfigError, match="is a directory, not a regular file"):
        check_input_file(tmp_path, "--ca:", limit=10)
    with pytest.raises(ConfigError, match="cannot be read"):
        check_input_file("a\0b", "--ca:", limit=10)


def test_not_utf8_names_the_byte_not_the_content(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_bytes(b"secret\xff")
    with pytest.raises(ConfigError) as info:
        read_input_text(path, "password file", limit=100)
    assert "is not UTF-8 text (byte 6)" in str(info.value)
    assert "secret" not in str(info.value)


def test_a_small_file_costs_a_small_buffer_not_the_cap(tmp_path: Path) -> None:
    """Reading asks for the file's size, not the cap (256 MiB would be allocated)."""
    import tracemalloc

    path = tmp_path / "body.json"
    path.write_bytes(b"{}" * 50)
    read_input_bytes(path, "--json:", limit=256 * 1024 * 1024)  # warm up imports, caches
    tracemalloc.start()
    try:
        assert read_input_bytes(path, "--json:", limit=256 * 1024 * 1024) == b"{}" * 50
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024, peak


def test_a_library_opening_by_path_reads_the_very_file_checked(tmp_path: Path) -> None:
    """opened_input_path: the path given out names the descriptor opened under the rule,
    so swapping another file (a FIFO) in at the same path after the check changes nothing."""
    from kclient._inputfile import opened_input_path

    path = tmp_path / "ca.pem"
    path.write_text("the checked file")
    with opened_input_path(path, "--ca:", limit=MAX_SETTINGS_INPUT) as opened:
        if hasattr(os, "mkfifo"):
            path.unlink()
            os.mkfifo(path)  # opening the path itself now would block
        with open(opened, encoding="utf-8") as handle:
            assert handle.read() == "the checked file"
    if hasattr(os, "mkfifo"):
        with pytest.raises(ConfigError, match="is a FIFO"), \
                opened_input_path(path, "--ca:", limit=MAX_SETTINGS_INPUT):
            pass
