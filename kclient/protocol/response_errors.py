"""Error codes carried by decoded responses, as a typed exception.

Kafka answers most failures inside a successful response: a top-level
``error_code`` (FindCoordinator, InitProducerId...), or one per item (per topic
in CreateTopics, per partition in ListOffsets).  :func:`response_errors`
collects every non-zero code with where it was found; :func:`raise_for_error`
(``Message.raise_for_error``) raises them as
:class:`~kclient.errors.KafkaResponseError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kclient.errors import KafkaResponseError
from kclient.protocol.constants import ErrorCode

if TYPE_CHECKING:
    # Message's own module calls this one (raise_for_error); children are found
    # through the class's _children table, so no runtime import is needed.
    from kclient.protocol.message import Message

__all__ = ["raise_for_error", "response_errors"]

# Fields that name an item in a path, in order of preference after the spec's map key.
_ITEM_KEYS = ("name", "topic", "topic_name", "partition_index", "partition", "resource_name",
              "group_id", "node_id", "broker_id", "topic_id", "transactional_id", "key")


def _code(value: int) -> ErrorCode | int:
    try:
        return ErrorCode(value)
    except ValueError:
        return value  # a code newer than kclient's table


def _label(item: Message) -> str:
    cls = type(item)
    keys = [f.attr for f in cls._field_specs if f.map_key]
    keys += [k for k in _ITEM_KEYS if k in cls._fields and k not in keys]
    for attr in keys:
        value = getattr(item, attr)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"{attr}={value}"
    return ""


def _walk(obj: Message, path: str, out: list[tuple[str, ErrorCode | int, str | None]]) -> None:
    cls = type(obj)
    code = getattr(obj, "error_code", 0) if "error_code" in cls._fields else 0
    if isinstance(code, int) and code != ErrorCode.NONE:
        text = getattr(obj, "error_message", None) if "error_message" in cls._fields else None
        out.append((path or "<top>", _code(code), text if isinstance(text, str) else None))
    for attr, _child in cls._children.items():
        value = getattr(obj, attr)
        # _children lists the struct-valued fields: a list of messages or one (or None).
        if isinstance(value, list):
            for index, item in enumerate(value):
                label = _label(item) or str(index)
                _walk(item, f"{path}{'.' if path else ''}{attr}[{label}]", out)
        elif value is not None:
            _walk(value, f"{path}{'.' if path else ''}{attr}", out)


def response_errors(response: Message) -> list[tuple[str, ErrorCode | int, str | None]]:
    """Every non-zero error code in ``response``: ``(path, code, error message)``,
    top level first (path ``"<top>"``), then items in wire order."""
    out: list[tuple[str, ErrorCode | int, str | None]] = []
    _walk(response, "", out)
    return out


def _describe(code: ErrorCode | int) -> str:
    if isinstance(code, ErrorCode):
        return f"{code.name} ({int(code)})"
    return f"error code {code} (unknown to kclient)"


def raise_for_error(response: Message) -> None:
    """Raise :class:`~kclient.errors.KafkaResponseError` when ``response`` carries any
    non-zero error code; do nothing otherwise."""
    found = response_errors(response)
    if not found:
        return
    path, code, message = found[0]
    retriable = all(isinstance(c, ErrorCode) and c.retriable for _, c, _m in found)
    name = type(response).__name__
    where = "" if path == "<top>" else f" at {path}"
    detail = message or (code.description if isinstance(code, ErrorCode) else "")
    more = "" if len(found) == 1 else f"; {len(found) - 1} more: " + ", ".join(
        f"{p}: {_describe(c)}" for p, c, _m in found[1:6]) + (
        " ..." if len(found) > 6 else "")
    advice = ("retriable: the same request may succeed when sent again" if retriable else
              "not retriable: fix the request or the cluster state first")
    text = f"{name}: {_describe(code)}{where}: {detail}{more} ({advice})"
    errors: tuple[tuple[str, Any], ...] = tuple((p, c) for p, c, _m in found)
    raise KafkaResponseError(text, error=code, errors=errors, retriable=retriable,
                             response=response)
