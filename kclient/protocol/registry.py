"""A registry of message specs and their compiled codecs.

The default registry holds the specs kclient ships in ``schemas/``; it is
built on first use (never at import) and applications may add directories of
their own specs.  Compiled codecs are cached per (message, version).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

from kclient._resources import shipped_path
from kclient.errors import SchemaError, UnknownMessageError
from kclient.protocol.codec import CompiledMessage, Message, compile_message, message_classes
from kclient.protocol.schema import MessageSpec, parse_spec

__all__ = ["Registry", "default_registry"]


class Registry:
    """Message specs by name, with lazily compiled, cached codecs."""

    def __init__(self) -> None:
        self._specs: dict[str, MessageSpec] = {}
        self._classes: dict[str, dict[str, type[Message]]] = {}
        self._codecs: dict[tuple[str, int], CompiledMessage] = {}

    def add(self, spec: MessageSpec) -> None:
        """Register ``spec`` (replacing any spec of the same name)."""
        self._specs[spec.name] = spec
        self._classes.pop(spec.name, None)
        for key in [k for k in self._codecs if k[0] == spec.name]:
            del self._codecs[key]

    def load_file(self, path: str | Path) -> MessageSpec:
        """Parse and register one spec file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SchemaError(str(path), "", f"cannot read spec: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise SchemaError(str(path), "", f"not UTF-8 text (byte {exc.start}); message "
                              "specs are UTF-8 JSON") from None
        spec = parse_spec(text, str(path))
        self.add(spec)
        return spec

    def load_directory(self, directory: str | Path) -> list[MessageSpec]:
        """Register every ``*.json`` spec in ``directory`` (not recursive)."""
        directory = Path(directory)
        if not directory.is_dir():
            raise SchemaError(str(directory), "", "not a directory of message specs")
        return [self.load_file(p) for p in sorted(directory.glob("*.json"))
                if p.name != "api_catalog.json"]

    def spec(self, name: str) -> MessageSpec:
        """The spec named ``name`` (e.g. ``"MetadataResponse"``)."""
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownMessageError(
                f"no message spec named {name!r}; known: {', '.join(sorted(self._specs))}. "
                "Load more with kclient.protocol.load_directory(DIR)"
            )
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[MessageSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def codec(self, name: str, version: int) -> CompiledMessage:
        """The compiled codec of ``name`` at ``version`` (compiled once, then cached)."""
        key = (name, version)
        codec = self._codecs.get(key)
        if codec is None:
            spec = self.spec(name)
            classes = self._classes.get(name)
            if classes is None:
                classes = self._classes[name] = message_classes(spec)
            codec = self._codecs[key] = compile_message(spec, version, classes)
        return codec

    def message_class(self, name: str) -> type[Message]:
        """The Message subclass of ``name``'s top-level struct (to build values)."""
        spec = self.spec(name)
        classes = self._classes.get(name)
        if classes is None:
            classes = self._classes[name] = message_classes(spec)
        return classes[spec.root.name]


@cache
def default_registry() -> Registry:
    """The registry of the specs kclient ships, loaded on first use."""
    registry = Registry()
    registry.load_directory(shipped_path("schemas"))
    return registry
