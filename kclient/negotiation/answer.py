"""A broker's ApiVersions answer, read into ranges and features (pure).

:func:`read_api_versions` decodes the body of an ApiVersionsResponse and checks
every entry; :func:`broker_versions` turns the result into the
:class:`~kclient.negotiation.model.BrokerVersions` of one broker.  The
connection layer only moves bytes.

Rules for what a broker may advertise:

* every API key and version is 0 or more and each ``min`` is at most its
  ``max``; otherwise the answer is a :class:`~kclient.errors.ProtocolError`
  naming the entry (kclient cannot pick versions from a range that does not
  exist, and saying so at once beats a silent time-out);
* an API key (or feature name) listed twice with the *same* range is kept once;
  listed twice with *different* ranges the answer is a ProtocolError.  Apache
  Kafka's brokers never repeat a key.  Its Java client keeps whichever entry
  comes last (NodeApiVersions puts each entry in a map) and librdkafka sorts the
  list and binary-searches it, so for them the wire order decides silently.
  kclient refuses instead: the broker contradicts itself, and choosing either
  entry (or their union) could send a version the broker does not speak.
* the same checks apply to supported and finalized features (KIP-584).

Answers are decoded once per distinct body (brokers of one cluster usually send
identical bytes) into a read-only :class:`ApiVersionsAnswer` shared by every
broker that sent them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from kclient import protocol
from kclient.errors import ProtocolError
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.ranges import VersionRange
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import ApiKey

__all__ = ["CACHE_ENTRIES", "CACHE_MAX_BODY", "ApiVersionsAnswer", "answer_cache_info",
           "broker_versions", "read_api_versions",
           "summarise_response"]


@attrs.frozen
class ApiVersionsAnswer:
    """What the handshake needs from one ApiVersionsResponse (shared between brokers).

    ``key18`` is the broker's own ``(min, max)`` for ApiVersions when it lists
    it (the handshake ladder retries within it after error 35).
    """

    error_code: int
    apis: Mapping[int, VersionRange]
    supported_features: Mapping[str, VersionRange]
    finalized_features: Mapping[str, VersionRange]
    finalized_features_epoch: int
    key18: tuple[int, int] | None


def _impossible(what: str, low: int, high: int) -> ProtocolError:
    """The error for an entry whose range no broker can speak."""
    problem = "negative versions" if min(low, high) < 0 else "min above max"
    return ProtocolError(f"the ApiVersions answer lists {what} with versions {low}-{high} "
                         f"({problem}), which no broker can speak; the broker is broken "
                         "or not a Kafka broker: report it to its operators")


def _collect(entries: Iterable[tuple[Any, int, int]], kind: str,
             describe: Callable[[Any], str]) -> dict[Any, VersionRange]:
    """The ranges by key; ``describe(key)`` names an entry, only in an error."""
    found: dict[Any, VersionRange] = {}
    for key, low, high in entries:
        if low < 0 or high < 0 or low > high:
            raise _impossible(describe(key), low, high)
        rng = VersionRange(low, high)
        seen = found.get(key)
        if seen is not None and seen != rng:
            raise ProtocolError(f"the ApiVersions answer lists {describe(key)} twice, with "
                                f"versions {seen} and {rng}; a broker advertises each {kind} "
                                "once, so kclient cannot tell which it speaks: report it to "
                                "the broker's operators")
        found[key] = rng
    return found


def summarise_response(response: Any) -> ApiVersionsAnswer:
    """Check a decoded ApiVersionsResponse and read it into an :class:`ApiVersionsAnswer`.

    Raises :class:`~kclient.errors.ProtocolError` naming the bad entry (see the
    module's rules for ranges and repeated keys).
    """
    catalog = default_catalog()
    keys = [(int(i.api_key), int(i.min_version), int(i.max_version)) for i in response.api_keys]
    for key, _, _ in keys:
        if key < 0:
            raise ProtocolError(f"the ApiVersions answer lists API key {key}; keys are 0 or "
                                "more: the broker is broken or not a Kafka broker")
    apis = _collect(keys, "API key", lambda key: f"{catalog.name_of(key)} (key {key})")
    supported = _collect(((str(f.name), int(f.min_version), int(f.max_version))
                          for f in (getattr(response, "supported_features", None) or ())),
                         "feature", lambda name: f"supported feature {name!r}")
    finalized = _collect(((str(f.name), int(f.min_version_level), int(f.max_version_level))
                          for f in (getattr(response, "finalized_features", None) or ())),
                         "feature", lambda name: f"finalized feature {name!r}")
    epoch = getattr(response, "finalized_features_epoch", -1)
    own = apis.get(ApiKey.API_VERSIONS)
    # Read-only views: one answer object serves every broker that sent these bytes.
    return ApiVersionsAnswer(
        int(response.error_code), MappingProxyType(dict(sorted(apis.items()))),
        MappingProxyType(dict(sorted(supported.items()))),
        MappingProxyType(dict(sorted(finalized.items()))),
        -1 if epoch is None else int(epoch),
        None if own is None else (own.min, own.max))


#: Bodies larger than this are decoded every time, never cached: real answers are
#: about 1 KiB (every API of Kafka 4.x), so only a hostile or broken peer sends
#: more, and caching its answer would keep its memory alive after it is gone.
CACHE_MAX_BODY = 16 * 1024
#: How many distinct answers are remembered (oldest forgotten first).
CACHE_ENTRIES = 128


@functools.lru_cache(maxsize=CACHE_ENTRIES)
def _read_cached(version: int, body: bytes) -> ApiVersionsAnswer:
    return _read(version, body)


def _read(version: int, body: bytes) -> ApiVersionsAnswer:
    response = protocol.decode_response(ApiKey.API_VERSIONS, version, bytes(4) + body)[1]
    return summarise_response(response)


def answer_cache_info() -> Any:
    """Hits, misses and size of the cache of decoded answers (``functools`` form)."""
    return _read_cached.cache_info()


def read_api_versions(version: int, body: bytes) -> ApiVersionsAnswer:
    """Decode and check the body of an ApiVersionsResponse to a request at ``version``.

    ``body`` is what follows the response header (always v0 for ApiVersions:
    the correlation id alone), so it is the same on every broker advertising the
    same ranges; each distinct body of at most :data:`CACHE_MAX_BODY` bytes is
    decoded once (at most :data:`CACHE_ENTRIES` are kept).  An error-35 body is
    read in the v0 layout whatever ``version`` was asked.  Malformed or
    contradictory bodies raise :class:`~kclient.errors.ProtocolError` (and are
    not cached).
    """
    if len(body) > CACHE_MAX_BODY:
        return _read(version, body)
    return _read_cached(version, body)


def broker_versions(answer: ApiVersionsAnswer, node_id: int, host: str, port: int, *,
                    rack: str | None = None, handshake: Iterable[str] = ()) -> BrokerVersions:
    """The :class:`BrokerVersions` of the broker at ``host:port`` that sent ``answer``.

    ApiVersionsResponse carries no broker software name or version (KIP-511 sends
    the *client's* to the broker), so ``software`` stays ``None``.
    """
    return BrokerVersions(
        node_id, host, port, answer.apis, rack=rack,
        supported_features=answer.supported_features,
        finalized_features=answer.finalized_features,
        finalized_features_epoch=answer.finalized_features_epoch,
        source="api_versions", handshake=tuple(handshake),
    )
