"""The driver JVM's stderr filter: noise lines go, everything else passes at once."""

from __future__ import annotations

import itertools
import os
import re

from hypothesis import given
from hypothesis import strategies as st

from kclient.fleet.jvmstderr import LineFilter, forward

_NOISE = b"WARNING: Using incubator modules: jdk.incubator.vector\n"


def _through(pieces: list[bytes]) -> bytes:
    lines = LineFilter()
    return b"".join(lines.feed(piece) for piece in pieces) + lines.close()


def test_the_incubator_notice_goes_and_the_rest_stays_in_order() -> None:
    text = b"first\n" + _NOISE + b"18:02:11 ERROR Executor: boom\n\tat x.y(Z.java:1)\n"
    assert _through([text]) == b"first\n18:02:11 ERROR Executor: boom\n\tat x.y(Z.java:1)\n"
    # Another module list is the same notice; a line that only mentions it is not.
    assert _through([b"WARNING: Using incubator modules: jdk.incubator.foo, a.b\n"]) == b""
    kept = b"note: WARNING: Using incubator modules: x\n"
    assert _through([kept]) == kept


def test_a_line_that_is_not_noise_passes_before_its_newline() -> None:
    # Spark's progress bar redraws one line with carriage returns and no newline.
    lines = LineFilter()
    for bar in (b"\r[Stage 3:=====>      (1 + 2) / 4]", b"\r[Stage 3:==========> (3 + 1) / 4]"):
        assert lines.feed(bar) == bar
    # The start of the notice is held until the line shows what it is.
    assert lines.feed(b"\nWARNING: Using") == b"\n"
    assert lines.feed(b" incubator modules: jdk.incubator.vector") == b""
    assert lines.feed(b"\nWARNING: low disk\n") == b"WARNING: low disk\n"
    assert lines.close() == b""
    # What follows a bar on its line is the middle of a line, never a notice.
    for piece in (b"\r[Stage 4:>", b" (0 + 2) / 2]", _NOISE):
        assert lines.feed(piece) == piece


def test_a_held_beginning_comes_out_at_the_end_of_the_stream() -> None:
    lines = LineFilter()
    assert lines.feed(b"WARN") == b""
    assert lines.close() == b"WARN"
    # A notice without its newline at the very end still goes.
    assert _through([b"WARNING: Using incubator modules: x"]) == b""


def test_a_long_line_that_starts_like_the_notice_is_not_held_for_ever() -> None:
    long = b"WARNING: Using incubator modules: " + b"m," * 5000
    lines = LineFilter()
    out = lines.feed(long)
    assert out == long  # past the holding limit it is passed on, though unfinished
    assert lines.feed(b"\nnext\n") == b"\nnext\n"


_PIECES = st.lists(st.sampled_from([
    _NOISE, b"plain line\n", b"\r[Stage 1:>  (0 + 2) / 2]", b"WARNING: other\n",
    b"WARNING: Using incubator modules: a\n", b"", b"\n", b"WARNING: Using in",
]), max_size=12)


@given(_PIECES, st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_any_split_of_the_stream_gives_the_stream_without_the_notices(
        pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    expected = b"".join(line for line in re.findall(rb"[^\n]*\n|[^\n]+$", stream)
                        if not line.startswith(b"WARNING: Using incubator modules: "))
    bounds = set(itertools.accumulate((len(piece) for piece in pieces), initial=0))
    points = sorted({min(cut, len(stream)) for cut in cuts} | bounds | {len(stream)})
    split = [stream[a:b] for a, b in itertools.pairwise(points)]
    assert _through(split) == expected


def test_forward_copies_a_pipe_to_a_descriptor_until_the_writer_closes() -> None:
    source_read, source_write = os.pipe()
    target_read, target_write = os.pipe()
    thread = forward(source_read, target_write)
    assert thread.daemon
    os.write(source_write, b"one\n" + _NOISE + b"two")
    os.close(source_write)
    thread.join(10)
    assert not thread.is_alive()
    os.close(target_write)
    with os.fdopen(target_read, "rb") as copied:
        assert copied.read() == b"one\ntwo"


def test_forward_keeps_draining_when_its_target_is_closed() -> None:
    # A writer that could not write would block the JVM on a full pipe.
    source_read, source_write = os.pipe()
    target_read, target_write = os.pipe()
    os.close(target_read)  # every write to the target now fails (broken pipe)
    thread = forward(source_read, target_write)
    for _ in range(64):  # 4 MiB: far more than a pipe buffer holds
        os.write(source_write, b"x" * 65535 + b"\n")
    os.close(source_write)
    thread.join(10)
    assert not thread.is_alive()
    os.close(target_write)
