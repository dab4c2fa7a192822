"""The request path stays short: tools/hops.py's walks, measured here on a real run."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

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


def test_a_request_resolves_its_api_once_and_asks_the_registry_nothing() -> None:
    walks = _hops().measure()
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
