"""A registry of message specs and their compiled codecs.

The default registry holds the specs kclient ships in ``schemas/`` (every
request and response of Kafka's protocol); it is built on first use (never at
import) and only lists the files then: a spec is parsed the first time it is
asked for, and a codec compiled the first time a (message, version) is used.
Applications may add directories of their own specs.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient._resources import shipped_path
from kclient.errors import SchemaError, UnknownMessageError
from kclient.protocol.catalog import default_catalog, schema_file_error
from kclient.protocol.codec import CompiledMessage, Message, compile_message, message_classes
from kclient.protocol.schema import MessageSpec, parse_spec, version_problem

if TYPE_CHECKING:
    from kclient.protocol.headers import Route

__all__ = ["Registry", "default_registry"]


class Registry:
    """Message specs by name, with lazily compiled, cached codecs."""

    def __init__(self) -> None:
        self._specs: dict[str, MessageSpec] = {}
        # Files listed but not parsed yet, by the message name their file is named after.
        self._pending: dict[str, Path] = {}
        self._classes: dict[str, dict[str, type[Message]]] = {}
        self._codecs: dict[tuple[str, int], CompiledMessage] = {}
        #: The routes of :func:`kclient.protocol.headers.route` by (API key, version),
        #: built from these codecs; emptied whenever a spec is added or listed.
        self.routes: dict[tuple[int, int], Route] = {}

    def add(self, spec: MessageSpec) -> None:
        """Register ``spec`` (replacing any spec of the same name)."""
        self.routes.clear()
        self._specs[spec.name] = spec
        self._pending.pop(spec.name, None)
        self._classes.pop(spec.name, None)
        for key in [k for k in self._codecs if k[0] == spec.name]:
            del self._codecs[key]

    def load_file(self, path: str | Path) -> MessageSpec:
        """Parse and register one spec file."""
        path = Path(path)
        # kclient's input rule: a FIFO or device is refused, never opened.
        text = read_input_text(path, "the message spec", limit=MAX_SETTINGS_INPUT,
                               error=schema_file_error)
        spec = parse_spec(text, str(path))
        self.add(spec)
        return spec

    def load_directory(self, directory: str | Path) -> list[MessageSpec]:
        """Register every ``*.json`` spec in ``directory`` (not recursive)."""
        directory = Path(directory)
        if not directory.is_dir():
            raise SchemaError(str(directory), "", "not a directory of message specs")
        return [self.load_file(p) for p in _spec_files(directory)]

    def index_directory(self, directory: str | Path) -> int:
        """List the specs of ``directory`` without parsing them; each is parsed (and
        checked to be named after its file) the first time it is asked for.
        Returns how many files were listed."""
        directory = Path(directory)
        if not directory.is_dir():
            raise SchemaError(str(directory), "", "not a directory of message specs")
        files = _spec_files(directory)
        self.routes.clear()
        for path in files:
            self._specs.pop(path.stem, None)
            self._classes.pop(path.stem, None)
            self._pending[path.stem] = path
        return len(files)

    def _parse_pending(self, name: str) -> MessageSpec | None:
        path = self._pending.get(name)
        if path is None:
            return None
        spec = self.load_file(path)
        if spec.name != name:
            raise SchemaError(str(path), "name", f"the file of {name!r} defines {spec.name!r}; "
                              "name spec files after their message")
        return spec

    def spec(self, name: str) -> MessageSpec:
        """The spec named ``name`` (e.g. ``"MetadataResponse"``)."""
        spec = self._specs.get(name) or self._parse_pending(name)
        if spec is None:
            raise UnknownMessageError(self._unknown(name))
        return spec

    def _unknown(self, name: str) -> str:
        """Why ``name`` has no spec, and what to do about it."""
        load = ("load the spec files of a Kafka release that has it (the JSON files of "
                "clients/src/main/resources/common/message) with "
                "kclient.protocol.load_directory(DIR)")
        api = name.removesuffix("Request").removesuffix("Response")
        info = default_catalog().by_name(api) if api != name else None
        if info is not None and info.name.lower() != api.lower():
            return (f"no message spec named {name!r}: Kafka renamed API {api} (key "
                    f"{info.key}) to {info.name}; use {info.name}{name.removeprefix(api)}")
        if info is not None:
            added = (f"added in Apache Kafka {info.since}" if info.since else
                     "served by KRaft controllers only")
            return (f"kclient ships no spec for {name}: API {info.name} (key {info.key}) was "
                    f"{added}, after the Kafka specs kclient was built from; {load}")
        known = sorted({*self._specs, *self._pending})
        return (f"no message spec named {name!r} ({len(known)} known, e.g. "
                f"{', '.join(known[:4])}); check the name (MetadataRequest, not Metadata) or "
                f"{load}")

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self._pending

    def names(self) -> list[str]:
        """The names of every registered spec, parsed or not (sorted)."""
        return sorted({*self._specs, *self._pending})

    def __iter__(self) -> Iterator[MessageSpec]:
        return iter([self.spec(name) for name in self.names()])

    def __len__(self) -> int:
        return len(self._specs) + len(self._pending)

    def codec(self, name: str, version: int) -> CompiledMessage:
        """The compiled codec of ``name`` at ``version`` (compiled once, then cached)."""
        key = (name, version)
        # Only a true int finds a codec by its key: True and 3.0 equal 1 and 3 there.
        codec = self._codecs.get(key) if type(version) is int else None
        if codec is None:
            spec = self.spec(name)
            if version not in spec.valid:
                raise UnknownMessageError(self._no_version(spec, version))
            classes = self._classes.get(name)
            if classes is None:
                classes = self._classes[name] = message_classes(spec)
            codec = self._codecs[key] = compile_message(spec, version, classes)
        return codec

    @staticmethod
    def _no_version(spec: MessageSpec, version: int) -> str:
        problem = version_problem(version)
        if problem is not None:
            return f"{spec.name}: a version {problem}"
        what = f"{spec.name} has no version {version} (its spec has {spec.valid})"
        api = spec.name.removesuffix("Request").removesuffix("Response")
        info = default_catalog().by_name(api) if spec.api_key is not None else None
        if info is not None and version > spec.valid.hi and version <= info.max_version:
            return (f"{what}: v{version} is newer than the Kafka specs kclient was built "
                    "from; send an older version (version=...) or load the spec files of a "
                    "newer Kafka with kclient.protocol.load_directory(DIR)")
        return what

    def message_class(self, name: str) -> type[Message]:
        """The Message subclass of ``name``'s top-level struct (to build values)."""
        spec = self.spec(name)
        classes = self._classes.get(name)
        if classes is None:
            classes = self._classes[name] = message_classes(spec)
        return classes[spec.root.name]


def _spec_files(directory: Path) -> list[Path]:
    return [p for p in sorted(directory.glob("*.json")) if p.name != "api_catalog.json"]


@cache
def default_registry() -> Registry:
    """The registry of the specs kclient ships: listed on first use, each spec
    parsed when first asked for."""
    registry = Registry()
    registry.index_directory(shipped_path("schemas"))
    return registry
