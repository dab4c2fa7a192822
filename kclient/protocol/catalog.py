"""The catalog of Kafka API keys kclient knows about.

Every key a broker may advertise (0-92) has an entry: its name, the version
range an application speaks by default, where flexible versions start and which
versions are deprecated.  Negotiation uses it for every API, including those
whose full message schema kclient does not ship.

The default range is what kclient's codec sends: tools/gen_data.py derives it
from the shipped specs in ``schemas/`` (their versions without an unstable newest
one, which is decoded but never chosen), so the catalog and the codec cannot
disagree.  A key without a stable spec version (``sendable`` is ``None``) keeps
the newest Kafka release's advertised range, negotiable for other clients but
not encodable by kclient.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import attrs

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient._resources import shipped_path
from kclient.errors import SchemaError, UnknownMessageError
from kclient.spelling import closest_name

__all__ = ["ApiInfo", "Catalog", "default_catalog", "load_catalog"]


#: The spec listener names that mean "a broker serves this key to clients".
_BROKER_LISTENERS = frozenset({"broker", "zkBroker"})


@attrs.frozen
class ApiInfo:
    """What kclient knows about one API key."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int | None
    deprecated: tuple[int, int] | None
    about: str
    #: The first Apache Kafka release whose brokers advertise the key (``None``
    #: for keys only controllers serve); from the release data, by tools/gen_data.py.
    since: str | None = None
    #: The listeners that serve the key, from its spec (``"broker"``,
    #: ``"zkBroker"``, ``"controller"``); ``None`` for keys without a spec.
    listeners: tuple[str, ...] | None = None
    #: The versions kclient's shipped spec describes, which the codec encodes and
    #: decodes (``(lo, hi)``, an unstable newest version included); ``None``
    #: when kclient ships no spec for the key.
    codec_versions: tuple[int, int] | None = None
    #: The versions kclient chooses to send: :attr:`codec_versions` without an
    #: unstable newest version.  When set, ``min_version``/``max_version`` are
    #: exactly this; ``None`` when the codec has no stable version of the key,
    #: which an application built on kclient then does not speak.  An entry made
    #: by hand without it sends ``min_version``-``max_version``.
    sendable: tuple[int, int] | None = attrs.field(
        default=attrs.Factory(lambda info: (info.min_version, info.max_version),
                              takes_self=True))
    #: Names Kafka gave the key before (``("ListClientMetricsResources",)`` for
    #: ListConfigResources); :meth:`Catalog.by_name` finds the key by them too.
    former_names: tuple[str, ...] = ()

    @property
    def controller_only(self) -> bool:
        """True for keys only controllers serve (Vote, BrokerRegistration...).

        Kafka's ``kafka-broker-api-versions`` tool leaves them out, and so does
        ``kclient api-versions`` unless ``--all`` is given.
        """
        return self.listeners is not None and not set(self.listeners) & _BROKER_LISTENERS

    def is_flexible(self, version: int) -> bool:
        """True when ``version`` uses the KIP-482 flexible encoding."""
        return self.flexible_from is not None and version >= self.flexible_from


@attrs.frozen
class Catalog:
    """An immutable lookup table of :class:`ApiInfo`, by key and by name."""

    _by_key: Mapping[int, ApiInfo]
    _by_name: Mapping[str, ApiInfo]

    @classmethod
    def from_infos(cls, infos: list[ApiInfo]) -> Catalog:
        """Build a catalog; names (current or former) are matched case-insensitively."""
        by_key = {info.key: info for info in sorted(infos, key=lambda i: i.key)}
        by_name = {old.lower(): info for info in infos for old in info.former_names}
        by_name.update({info.name.lower(): info for info in infos})
        return cls(by_key, by_name)

    def by_key(self, key: int) -> ApiInfo | None:
        """The entry for ``key``, or None when the key is unknown."""
        return self._by_key.get(key)

    def by_name(self, name: str) -> ApiInfo | None:
        """The entry named ``name`` (case-insensitive; a former name works too), or None."""
        return self._by_name.get(name.lower())

    def resolve(self, api: str | int) -> ApiInfo:
        """Look an API up by name or key (``"Produce"``, ``0`` or ``"0"``).

        Raises :class:`~kclient.errors.UnknownMessageError` when it is unknown.
        """
        info: ApiInfo | None
        if isinstance(api, int):
            info = self.by_key(api)
        elif api.strip().isdigit():
            info = self.by_key(int(api))
        else:
            info = self.by_name(api.strip())
        if info is None:
            suggestion = None if isinstance(api, int) else self.suggest(api)
            hint = f"; did you mean {suggestion!r}?" if suggestion else ""
            raise UnknownMessageError(
                f"unknown Kafka API {api!r}{hint} (use a name such as 'Produce' or a key from "
                f"0 to {max(self._by_key)})", api, suggestion)
        return info

    def suggest(self, name: str) -> str | None:
        """The API name closest to a mistyped ``name`` (:func:`kclient.spelling.closest_name`)."""
        return closest_name(name, (info.name for info in self))

    def name_of(self, key: int) -> str:
        """The API's name, or ``UNKNOWN(<key>)`` as Kafka's own tools print it."""
        info = self.by_key(key)
        return info.name if info is not None else f"UNKNOWN({key})"

    def __iter__(self) -> Iterator[ApiInfo]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key


def _pair(raw: Any) -> tuple[int, int] | None:
    return None if raw is None else (int(raw[0]), int(raw[1]))


def _info_from_json(path: Path, index: int, raw: Any) -> ApiInfo:
    where = f"apis[{index}]"
    try:
        deprecated = raw.get("deprecated")
        return ApiInfo(
            key=int(raw["key"]),
            name=str(raw["name"]),
            min_version=int(raw["min_version"]),
            max_version=int(raw["max_version"]),
            flexible_from=None if raw.get("flexible_from") is None else int(raw["flexible_from"]),
            deprecated=None if deprecated is None else (int(deprecated[0]), int(deprecated[1])),
            about=str(raw.get("about", "")),
            since=None if raw.get("since") is None else str(raw["since"]),
            listeners=None if raw.get("listeners") is None else tuple(
                str(name) for name in raw["listeners"]),
            codec_versions=_pair(raw.get("codec_versions")),
            sendable=_pair(raw.get("sendable")),
            former_names=tuple(str(name) for name in raw.get("former_names") or ()),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise SchemaError(str(path), where, f"invalid catalog entry: {exc!r}") from None


def schema_file_error(message: str, path: str) -> SchemaError:
    """The :class:`SchemaError` for a spec or catalog file refused as input
    (an :data:`~kclient._inputfile.ErrorFactory`)."""
    return SchemaError(path, "", message)


def load_catalog(path: Path) -> Catalog:
    """Load a catalog file in kclient's ``api_catalog.json`` format."""
    # kclient's input rule: a FIFO or device is refused, never opened.
    text = read_input_text(path, "the API catalog", limit=MAX_SETTINGS_INPUT,
                           error=schema_file_error)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SchemaError(str(path), "", f"cannot read API catalog: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("apis"), list):
        raise SchemaError(str(path), "apis", "expected an object with an 'apis' list")
    return Catalog.from_infos([_info_from_json(path, i, r) for i, r in enumerate(data["apis"])])


@cache
def default_catalog() -> Catalog:
    """The catalog shipped with kclient (loaded once, then cached)."""
    return load_catalog(shipped_path("schemas/api_catalog.json"))
