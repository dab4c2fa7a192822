"""Compose one YAML document into nodes, with hard bounds, for the features loader.

PyYAML's own composers are recursive: the pure-Python one raises
``RecursionError`` on a document nested a few thousand levels deep (after many
seconds) and the libyaml one crashes the process.  This module reads the event
stream instead (from libyaml when it is installed: it is many times faster than
the pure-Python scanner) and builds the node tree with an explicit stack, so
that:

* nesting deeper than :data:`MAX_DEPTH` is refused as soon as it is seen;
* an alias (``*name``) may only refer to a node that is complete, so the tree has
  no cycles, and all aliases together may not expand to more than
  :data:`ALIAS_BUDGET` nodes or the file's own node count, whichever is larger
  (no "billion laughs");
* every failure is a :class:`~kclient.errors.FeatureFileError` naming ``file:line``.

Scalars are not constructed here: the caller turns the scalars it expects into
values (see ``kclient.negotiation.features``).
"""

from __future__ import annotations

from typing import Any

import attrs
import yaml
import yaml.events
import yaml.nodes

from kclient.errors import FeatureFileError

__all__ = ["ALIAS_BUDGET", "MAX_DEPTH", "compose_document", "yaml_loader_class"]

#: The deepest nesting of lists and mappings accepted.  A features file needs
#: six levels; the limit leaves room for hand-written variations.
MAX_DEPTH = 64

#: The number of nodes all aliases together may stand for, at the least (the
#: file's own node count is allowed when larger).
ALIAS_BUDGET = 10_000


def yaml_loader_class() -> Any:
    """libyaml's safe loader when PyYAML was built with it, else the pure-Python one."""
    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

_CACHED_SCALAR = 64
_CACHE_SIZE = 4096


@attrs.define
class _Frame:
    node: yaml.nodes.SequenceNode | yaml.nodes.MappingNode
    anchor: str | None
    weight: int = 1
    key: yaml.nodes.Node | None = None


#: What libyaml's scanner says when flow collections nest past its own limit.
_LIBYAML_DEPTH = "exceeded maximum nesting depth"


def _too_deep(source: str, line: int | None) -> FeatureFileError:
    return FeatureFileError(f"lists and mappings are nested more than {MAX_DEPTH} levels "
                            "deep; a features file needs six", source, line)


def _line(event: Any) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def compose_document(text: str, source: str) -> yaml.nodes.Node | None:
    """The node tree of the single YAML document in ``text`` (``None`` when empty).

    Raises :class:`FeatureFileError` (``source:line``) for invalid YAML, more than
    one document, nesting deeper than :data:`MAX_DEPTH`, an undefined or
    self-referring alias, or aliases expanding beyond the budget.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FeatureFileError("the text holds a character that is not valid Unicode (a lone "
                               "surrogate); save the file as UTF-8", source,
                               text.count("\n", 0, exc.start) + 1) from None
    loader = yaml_loader_class()(text)
    try:
        return _compose(loader, source)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "syntax error"
        if _LIBYAML_DEPTH in problem:
            # libyaml's scanner reads a flow collection ahead and, in the
            # libyaml that recent PyYAML wheels bundle, stops at its own limit
            # (1,000 levels) before the events reach MAX_DEPTH here: the same
            # fault, so the same message.
            raise _too_deep(source, line) from None
        raise FeatureFileError(f"invalid YAML: {problem}; check indentation, colons and "
                               "quotes around this line", source, line) from None
    except yaml.YAMLError as exc:
        raise FeatureFileError(f"invalid YAML: {exc}", source) from None
    finally:
        loader.dispose()


def _compose(loader: Any, source: str) -> yaml.nodes.Node | None:
    stack: list[_Frame] = []
    anchors: dict[str, tuple[yaml.nodes.Node, int]] = {}
    root: yaml.nodes.Node | None = None
    documents = 0
    nodes = 0
    expanded = 0
    resolved: dict[tuple[str, Any], str] = {}

    def attach(node: yaml.nodes.Node, weight: int) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        frame = stack[-1]
        frame.weight += weight
        parent = frame.node
        if isinstance(parent, yaml.nodes.SequenceNode):
            parent.value.append(node)
        elif frame.key is None:
            frame.key = node
        else:
            parent.value.append((frame.key, node))
            frame.key = None

    while loader.check_event():
        event: Any = loader.get_event()
        start: Any = event.start_mark
        if isinstance(event, yaml.events.ScalarEvent):
            nodes += 1
            tag = event.tag
            if tag is None or tag == "!":
                # Resolving is a run of regular expressions; values repeat a lot.
                key = (event.value, event.implicit)
                tag = resolved.get(key)
                if tag is None:
                    tag = loader.resolve(yaml.nodes.ScalarNode, event.value, event.implicit)
                    if len(event.value) <= _CACHED_SCALAR and len(resolved) < _CACHE_SIZE:
                        resolved[key] = tag
            end: Any = event.end_mark
            scalar = yaml.nodes.ScalarNode(tag, event.value, start, end,
                                           style=event.style)
            if event.anchor is not None:
                anchors[event.anchor] = (scalar, 1)
            attach(scalar, 1)
        elif isinstance(event, yaml.events.CollectionStartEvent):
            nodes += 1
            if len(stack) >= MAX_DEPTH:
                raise _too_deep(source, _line(event))
            tag = event.tag
            collection: yaml.nodes.SequenceNode | yaml.nodes.MappingNode
            if isinstance(event, yaml.events.SequenceStartEvent):
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.nodes.SequenceNode, None, event.implicit)
                collection = yaml.nodes.SequenceNode(tag, [], start, None,
                                                     flow_style=event.flow_style)
            else:
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.nodes.MappingNode, None, event.implicit)
                collection = yaml.nodes.MappingNode(tag, [], start, None,
                                                    flow_style=event.flow_style)
            stack.append(_Frame(collection, event.anchor))
        elif isinstance(event, yaml.events.CollectionEndEvent):
            frame = stack.pop()
            frame.node.end_mark = event.end_mark
            if frame.anchor is not None:
                anchors[frame.anchor] = (frame.node, frame.weight)
            attach(frame.node, frame.weight)
        elif isinstance(event, yaml.events.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise FeatureFileError("the file holds more than one YAML document ('---'); "
                                       "keep one", source, _line(event))
        elif isinstance(event, yaml.events.AliasEvent):
            found = anchors.get(str(event.anchor))
            if found is None:
                raise FeatureFileError(f"alias *{event.anchor} refers to no anchor defined "
                                       f"before it (and outside it); define '&{event.anchor}' "
                                       "first", source, _line(event))
            node, weight = found
            expanded += weight
            if expanded > max(ALIAS_BUDGET, nodes):
                raise FeatureFileError(f"aliases expand to more than {max(ALIAS_BUDGET, nodes)} "
                                       "nodes; write the repeated parts out or use fewer "
                                       "aliases", source, _line(event))
            attach(node, weight)
    return root
