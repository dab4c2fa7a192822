"""Generated code is debuggable: tracebacks show its lines, errors keep their offsets."""

from __future__ import annotations

import linecache
import traceback

import pytest

from kclient.errors import InvalidLengthError, TruncatedMessageError
from kclient.protocol import default_registry, encode
from kclient.protocol.generated import is_generated


def _api_versions_v3() -> bytes:
    return encode("ApiVersionsResponse", 3, {
        "error_code": 0, "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 9}]})


def test_error_raised_in_generated_code_shows_its_source_line() -> None:
    codec = default_registry().codec("ApiVersionsResponse", 3)
    data = _api_versions_v3()
    bad = data[:2] + b"\x7f" + data[3:]  # the compact array claims 126 elements
    with pytest.raises(InvalidLengthError) as caught:
        codec.decode(bad)
    assert caught.value.offset == 2
    text = "".join(traceback.format_exception(caught.value))
    assert f'File "{codec.filename}"' in text
    assert "in _dec_ApiVersionsResponse" in text
    assert "raise _BadLen('array ApiKeys claims '" in text


def test_low_level_error_keeps_the_generated_frame_and_offset() -> None:
    codec = default_registry().codec("ApiVersionsResponse", 0)
    with pytest.raises(TruncatedMessageError) as caught:
        codec.decode(b"\x00")  # the int16 error code is cut
    assert caught.value.offset == 0
    text = "".join(traceback.format_exception(caught.value))
    assert "in _dec_ApiVersionsResponse" in text
    # the generated line that read past the end: ``v<k>, = _U<k>(buf, pos)``
    assert any(line.strip().startswith("v") and "= _U" in line and line.strip().endswith(
        "(buf, pos)") for line in text.splitlines()), text


def test_generated_scripts_have_unique_registered_names() -> None:
    one = default_registry().codec("ApiVersionsResponse", 3)
    two = default_registry().codec("ApiVersionsResponse", 2)
    assert one.filename != two.filename
    for codec in (one, two):
        assert is_generated(codec.filename)
        assert codec.filename.startswith("<kclient generated decode/encode ApiVersionsResponse v")
        assert "".join(linecache.getlines(codec.filename)) == codec.source
    assert not is_generated("<kclient-codec>")


def test_struct_init_and_builder_are_registered_too() -> None:
    cls = default_registry().message_class("ApiVersionsResponse")
    init_file = cls._init.__code__.co_filename
    assert is_generated(init_file) and "ApiVersionsResponse.__init__" in init_file
    assert "def _init(self" in "".join(linecache.getlines(init_file))
    cls.from_value({"error_code": 0})
    build_file = cls.__dict__["_build"].__code__.co_filename
    assert is_generated(build_file) and "ApiVersionsResponse.from_value" in build_file
