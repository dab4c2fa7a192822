"""kclient.options.Vocabulary: an immutable value naming options in the caller's words."""

from __future__ import annotations

import pytest

from kclient.options import PYTHON, Vocabulary


def test_python_vocabulary_names_parameters() -> None:
    assert PYTHON.name("request_timeout") == "request_timeout"
    assert PYTHON.example("api_version_fallback", "0.9.0") == (
        'api_version_fallback (e.g. api_version_fallback="0.9.0")')
    assert PYTHON.has("anything")


def test_flags_vocabulary_names_flags() -> None:
    cli = Vocabulary({"request_timeout": "--timeout"})
    assert cli.name("request_timeout") == "--timeout"
    assert cli.name("max_brokers") == "max_brokers"
    assert cli.example("request_timeout", "30") == "--timeout (e.g. --timeout 30)"
    assert cli.has("request_timeout") and not cli.has("max_brokers")


def test_vocabulary_is_an_immutable_value() -> None:
    source = {"request_timeout": "--timeout"}
    cli = Vocabulary(source)
    source["request_timeout"] = "--changed"
    assert cli.name("request_timeout") == "--timeout"
    with pytest.raises(AttributeError, match="immutable"):
        cli.flags = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        cli.flags["x"] = "--x"  # type: ignore[index]
    same = Vocabulary({"request_timeout": "--timeout"})
    assert cli == same and hash(cli) == hash(same)
    assert cli != PYTHON and Vocabulary() == PYTHON
    assert "--timeout" in repr(cli)
