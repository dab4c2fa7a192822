"""kclient/protocol/constants.py: regenerated it is unchanged, and it agrees with the data."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

from kclient.protocol import ApiKey, ErrorCode, default_catalog
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE, INT16_MAX, error_name
from tests.conftest import REPO_ROOT


def _gen_constants() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_constants", REPO_ROOT / "tools" / "gen_constants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_constants_module_is_up_to_date() -> None:
    shipped = (REPO_ROOT / "kclient" / "protocol" / "constants.py").read_text(encoding="utf-8")
    assert _gen_constants().render() == shipped, (
        "kclient/protocol/constants.py is stale: run python tools/gen_constants.py")


def test_every_catalog_key_has_a_member_named_after_it() -> None:
    catalog = list(default_catalog())
    assert [int(k) for k in ApiKey] == [info.key for info in catalog]
    for info in catalog:
        member = ApiKey(info.key)
        assert member.name.replace("_", "") == info.name.upper(), (member, info.name)
    assert ApiKey.API_VERSIONS == 18 and ApiKey.SASL_HANDSHAKE == 17
    assert ApiKey.DESCRIBE_CLUSTER == 60 and ApiKey.METADATA == 3


def test_error_codes_match_the_facts_file() -> None:
    facts = json.loads((REPO_ROOT / "tools" / "facts" / "kafka_errors.json").read_text())
    by_code = {e["code"]: e for e in facts["errors"]}
    assert sorted(by_code) == sorted(int(c) for c in ErrorCode)
    for member in ErrorCode:
        fact = by_code[int(member)]
        assert (member.name, member.retriable, member.description) == (
            fact["name"], fact["retriable"], fact["about"])


def test_error_code_members() -> None:
    assert ErrorCode.UNSUPPORTED_VERSION == 35 and not ErrorCode.UNSUPPORTED_VERSION.retriable
    assert ErrorCode.NOT_COORDINATOR.retriable and ErrorCode.LEADER_NOT_AVAILABLE.retriable
    assert not ErrorCode.SASL_AUTHENTICATION_FAILED.retriable
    assert ErrorCode(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode.NONE == 0 and not ErrorCode.NONE
    assert error_name(35) == "UNSUPPORTED_VERSION (35)"
    assert error_name(30000) == "UNKNOWN(30000)"
    assert all(member.description for member in ErrorCode)


def test_limits() -> None:
    assert INT16_MAX == 2**15 - 1
    assert DEFAULT_MAX_FRAME_SIZE == 100 * 1024 * 1024


def test_constant_names_follow_kafka_spelling() -> None:
    name = _gen_constants().constant_name
    assert name("ApiVersions") == "API_VERSIONS"
    assert name("OffsetForLeaderEpoch") == "OFFSET_FOR_LEADER_EPOCH"
    assert name("DescribeUserScramCredentials") == "DESCRIBE_USER_SCRAM_CREDENTIALS"
