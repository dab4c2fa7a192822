"""Messages that name options: kept in parts (kclient.options), read in Python names by
``str()`` and in flags by the command line (kclient.commands.vocabulary)."""

from __future__ import annotations

import pickle

import pytest

from kclient.commands.vocabulary import CLI_VOCABULARY, PYTHON, Vocabulary
from kclient.errors import BrokerConnectionError, ConfigError, SnapshotError
from kclient.options import Example, Option, Setting, Text, joined, render


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


def test_render_reads_each_marker_in_python_names_or_flags() -> None:
    parts = ("raise ", Option("request_timeout"), "; set ", Example("max_brokers", "8"),
             "; send ", Setting("version", "8"), "; pass ",
             Option("drop_unsupported", python="drop_unsupported=True"), "; fix ",
             Option("max_frame_size"))
    assert render(parts) == (
        'raise request_timeout; set max_brokers (e.g. max_brokers="8"); send version=8; '
        "pass drop_unsupported=True; fix max_frame_size")
    assert CLI_VOCABULARY.text(Text(*parts)) == (
        "raise --timeout; set --max-brokers (e.g. --max-brokers 8); send --version 8; "
        "pass --drop-unsupported; fix max_frame_size")  # no flag: the parameter name


def test_a_text_is_its_python_string_and_keeps_its_parts() -> None:
    text = Text("raise ", Option("request_timeout"), " for slow brokers")
    assert text == "raise request_timeout for slow brokers" and isinstance(text, str)
    assert text.parts == ("raise ", Option("request_timeout"), " for slow brokers")
    quoted = Text("broker a: ", text, "!")  # a message quoting another keeps its options
    assert quoted.parts == ("broker a: raise ", Option("request_timeout"),
                            " for slow brokers!")
    assert f"{text}" == str(text)  # plain formatting gives the Python reading
    both = joined("; ", [text, "plain", Text(Option("tls"))])
    assert CLI_VOCABULARY.text(both) == "raise --timeout for slow brokers; plain; --tls"
    again = pickle.loads(pickle.dumps(quoted))
    assert again == quoted and again.parts == quoted.parts


def test_errors_keep_the_options_they_name_through_their_prefixes() -> None:
    plain = ConfigError("nothing to name")
    assert plain.parts == ("nothing to name",) and plain.options == ()
    timeout = BrokerConnectionError(Text("no answer; raise ", Option("request_timeout")),
                                    "h:9092")
    assert str(timeout) == "broker h:9092: no answer; raise request_timeout"
    assert timeout.options == ("request_timeout",)
    assert CLI_VOCABULARY.text(timeout) == "broker h:9092: no answer; raise --timeout"
    located = SnapshotError(Text("raise ", Example("max_brokers", "8")), "f.jsonl", 3)
    assert str(located) == 'f.jsonl:3: raise max_brokers (e.g. max_brokers="8")'
    assert CLI_VOCABULARY.text(located) == "f.jsonl:3: raise --max-brokers (e.g. --max-brokers 8)"
    assert CLI_VOCABULARY.text(ValueError("not ours")) == "not ours"
