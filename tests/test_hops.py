"""The request path stays short: tools/hops.py's walks, measured here on a real run."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.timeout(120)


def _hops() -> ModuleType:
    path = REPO_ROOT / "tools" / "hops.py"
    spec = importlib.util.spec_from_file_location("kclient_tools_hops", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def walks() -> dict[str, dict[str, Any]]:
    measured: dict[str, dict[str, Any]] = _hops().measure()
    return measured


def test_a_request_resolves_its_api_once_and_asks_the_registry_nothing(
        walks: dict[str, dict[str, Any]]) -> None:
    request, reconnect = walks["request"], walks["reconnect"]
    # The walk really went to the socket and back ...
    assert {"kclient.net.client", "kclient.net.connection", "kclient.protocol.framing",
            "kclient.protocol.compiled"} <= set(request["modules"])
    # ... turning the name into a key once, with every codec already resolved.
    lookups = request["lookups"]
    assert lookups.get("Catalog.resolve") == 1, lookups
    assert not {name for name in lookups if name.startswith("Registry.")}, lookups
    assert "kclient.protocol.registry" not in request["modules"]
    # The reconnect's answer reached on_change through the client.
    assert {"kclient.net.connection", "kclient.net.client"} <= set(reconnect["modules"])


def test_an_answer_others_gave_changes_the_view_without_judging_anything_again(
        walks: dict[str, dict[str, Any]]) -> None:
    """Walk (c): a rolling upgrade's middle step changes which brokers share which
    answer, nothing a verdict depends on: no API or feature is judged again and no
    name or key is looked up on the way to on_change."""
    rolling = walks["rolling"]
    modules = set(rolling["modules"])
    assert {"kclient.net.client", "kclient.negotiation.tally",
            "kclient.negotiation.diff"} <= modules
    assert not modules & {"kclient.negotiation.evaluation", "kclient.negotiation.judge",
                          "kclient.protocol.catalog"}, rolling["modules"]
