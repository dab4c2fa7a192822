"""`kclient request` (any API, negotiated version) and `kclient decode`/`encode` of APIs
beyond the handshake, through the installed console script."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kclient.protocol import decode, encode

from .conftest import Emulator, run_kclient

pytestmark = pytest.mark.timeout(120)


def test_request_prints_the_answer_at_the_negotiated_version(
        emulator: Callable[..., Emulator]) -> None:
    emu = emulator("--release", "3.9", "--port", "0")
    done = run_kclient("request", "-b", emu.bootstrap, "DescribeCluster", "--controller")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["api"], answer["version"], answer["dropped"]) == ("DescribeCluster", 1, [])
    assert answer["response"]["controller_id"] == answer["broker"]
    assert "is_fenced" not in answer["response"]["brokers"][0]  # a v2 field, not shown at v1


def test_request_refuses_a_field_the_version_lacks_unless_told(
        emulator: Callable[..., Emulator]) -> None:
    emu = emulator("--release", "2.0", "--port", "0")
    body = json.dumps({"topics": None, "include_topic_authorized_operations": True})
    refused = run_kclient("request", "-b", emu.bootstrap, "Metadata", "--json", body)
    assert refused.returncode == 2
    port = emu.bootstrap.rsplit(":", 1)[1]
    assert refused.stderr == (
        f"kclient: error: MetadataRequest v6 for broker node 1 (127.0.0.1:{port}) has no field "
        "include_topic_authorized_operations (IncludeTopicAuthorizedOperations exists from v8 "
        f"on), but the request sets it; broker node 1 (127.0.0.1:{port}) speaks MetadataRequest "
        "up to v6: send it to a broker that supports v8, or pass --drop-unsupported to send "
        "the request without it\n")
    dropped = run_kclient("request", "-b", emu.bootstrap, "Metadata", "--json", body,
                          "--drop-unsupported", "--version", "5")
    assert dropped.returncode == 0, dropped.stderr
    answer = json.loads(dropped.stdout)
    assert answer["version"] == 5
    assert answer["dropped"] == ["include_topic_authorized_operations"]


@pytest.mark.parametrize(("api", "direction", "version", "body"), [
    ("CreateTopics", "request", 7, {"topics": [{"name": "t", "num_partitions": 3,
                                                "replication_factor": 1}],
                                    "timeout_ms": 1000}),
    ("ListOffsets", "response", 8, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "offset": 42, "leader_epoch": 1}]}]}),
    ("InitProducerId", "response", 4, {"producer_id": 9, "producer_epoch": 1}),
    ("FindCoordinator", "request", 4, {"coordinator_keys": ["g"]}),
    ("DescribeConfigs", "request", 4, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": None}]}),
    # Kafka 4's group protocols, from the 4.3.0 release specs.
    ("ConsumerGroupHeartbeat", "request", 1, {"group_id": "g", "member_epoch": 0,
                                              "subscribed_topic_regex": "orders-.*"}),
    ("ShareFetch", "request", 2, {"group_id": "g", "member_id": "m", "share_session_epoch": 0}),
    ("StreamsGroupDescribe", "response", 0, {"groups": [{"group_id": "g",
                                                         "group_state": "Stable"}]}),
])
def test_decode_and_encode_any_shipped_api(api: str, direction: str, version: int,
                                           body: dict[str, object], tmp_path: Path) -> None:
    name = f"{api}{direction.capitalize()}"
    wire = encode(name, version, body)
    decoded = run_kclient("decode", direction, "--api", api, "--version", str(version),
                          "--hex", wire.hex())
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads(decoded.stdout)  # the JSON document
    source = tmp_path / "body.json"
    source.write_text(decoded.stdout)
    encoded = run_kclient("encode", direction, "--api", api, "--version", str(version),
                          "--json", str(source))
    assert encoded.returncode == 0, encoded.stderr
    assert bytes.fromhex(encoded.stdout.strip()) == wire
    assert decode(name, version, wire).to_dict()


def test_request_names_error_codes_and_exits_non_zero_unless_allowed(
        emulator: Callable[..., Emulator]) -> None:
    from kclient.commands.request import EXIT_ANSWER_ERROR

    emu = emulator("--release", "3.9", "--port", "0")
    per_item = json.dumps({"topics": [{"name": "nope"}], "allow_auto_topic_creation": False})
    done = run_kclient("request", "-b", emu.bootstrap, "Metadata", "--json", per_item)
    assert done.returncode == EXIT_ANSWER_ERROR == 4, done.stderr
    topic = json.loads(done.stdout)["response"]["topics"][0]
    assert list(topic)[:3] == ["error_code", "error_name", "name"]
    assert (topic["error_code"], topic["error_name"]) == (3, "UNKNOWN_TOPIC_OR_PARTITION")
    assert done.stderr == (
        "kclient request: the answer carries an error code: MetadataResponse: "
        "UNKNOWN_TOPIC_OR_PARTITION (3) at topics[name=nope]: This broker does not hold the "
        "topic or partition (or does not know it yet). (retriable: the same request may "
        "succeed when sent again) (--allow-errors exits 0)\n")
    allowed = run_kclient("request", "-b", emu.bootstrap, "Metadata", "--json", per_item,
                          "--allow-errors")
    assert allowed.returncode == 0 and allowed.stderr == "", allowed.stderr
    assert json.loads(allowed.stdout) == json.loads(done.stdout)
    # A top-level error code: a fetch session the broker does not know.
    top = run_kclient("request", "-b", emu.bootstrap, "Fetch", "--json",
                      json.dumps({"session_id": 12345, "session_epoch": 1}))
    assert top.returncode == 4
    response = json.loads(top.stdout)["response"]
    assert (response["error_code"], response["error_name"]) == (70, "FETCH_SESSION_ID_NOT_FOUND")
    assert top.stderr == (
        "kclient request: the answer carries an error code: FetchResponse: "
        "FETCH_SESSION_ID_NOT_FOUND (70): The fetch session is unknown to the broker. "
        "(retriable: the same request may succeed when sent again) (--allow-errors exits 0)\n")
    # An answer without errors still names its zero codes and exits 0.
    fine = run_kclient("request", "-b", emu.bootstrap, "DescribeCluster")
    assert fine.returncode == 0, fine.stderr
    assert json.loads(fine.stdout)["response"]["error_name"] == "NONE"


def test_name_error_codes_unknown_code_and_prefixed_fields() -> None:
    from kclient.commands.request import name_error_codes

    answer = {"top_level_error_code": 0, "items": [{"error_code": 32767, "x": 1}]}
    assert name_error_codes(answer) == [("items[0].error_code", 32767,
                                         "UNKNOWN_ERROR_CODE(32767)")]
    assert answer == {"top_level_error_code": 0, "top_level_error_name": "NONE",
                      "items": [{"error_code": 32767,
                                 "error_name": "UNKNOWN_ERROR_CODE(32767)", "x": 1}]}


def test_field_version_error_names_parameters_in_python_and_flags_on_the_command_line(
        ) -> None:
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.errors import FieldVersionError
    from kclient.protocol.versioncheck import check_request

    body = {"topics": None, "include_topic_authorized_operations": True}
    with pytest.raises(FieldVersionError) as python:
        check_request("MetadataRequest", 6, body)
    assert str(python.value).endswith(
        "; send version=8 or later, or pass drop_unsupported=True (or "
        "drop_unsupported=['include_topic_authorized_operations']) to send the request "
        "without it")
    assert python.value.options == ("version", "drop_unsupported")
    assert CLI_VOCABULARY.text(python.value).endswith(
        "; send --version 8 or later, or pass --drop-unsupported to send the request "
        "without it")


def test_max_response_size_refuses_a_large_answer_in_one_line(
        emulator: Callable[..., Emulator]) -> None:
    emu = emulator("--release", "3.9", "--port", "0")
    result = run_kclient("request", "Metadata", "-b", emu.bootstrap,
                         "--max-response-size", "16")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "--max-response-size; raise it for larger answers" in result.stderr
    bad = run_kclient("request", "Metadata", "-b", emu.bootstrap, "--max-response-size", "0")
    assert bad.returncode == 2 and "--max-response-size" in bad.stderr
