"""How an emulated broker misbehaves: the odd answers real brokers and proxies give.

A :class:`Behaviour` is parsed from short words so that tests, the CLI and the
``python -m kclient.emulator`` runner can name them the same way::

    legacy                      close the connection on ApiVersions (Kafka < 0.10)
    pre-kip511                  error 35 with an empty list on an unknown ApiVersions version
    closes-on-flexible          close the connection on any flexible (v3+ ApiVersions) request
    zero-length-for-unknown     answer unknown requests with a zero-length frame
    slow:SECONDS                wait before every answer
    hang                        accept the connection, read, never answer
    drop-after:N                close each connection after answering N requests
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kclient.errors import ConfigError

__all__ = ["BEHAVIOUR_WORDS", "Behaviour"]

#: The words :meth:`Behaviour.parse` understands (``slow`` and ``drop-after`` take a value).
BEHAVIOUR_WORDS = (
    "legacy",
    "pre-kip511",
    "closes-on-flexible",
    "zero-length-for-unknown",
    "slow:SECONDS",
    "hang",
    "drop-after:N",
)


def _non_negative(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if value < 0:
        raise ConfigError(f"behaviour {attribute.name} must be 0 or more, got {value}")


@attrs.frozen
class Behaviour:
    """The odd behaviours of one emulated broker (all off by default)."""

    legacy: bool = False
    pre_kip511: bool = False
    closes_on_flexible: bool = False
    zero_length_for_unknown: bool = False
    delay: float = attrs.field(default=0.0, validator=_non_negative)
    hang: bool = False
    drop_after: int | None = None

    @classmethod
    def parse(cls, spec: str | Iterable[str] | Behaviour | None) -> Behaviour:
        """Parse ``"slow:0.2,drop-after:3"`` (or a list of words) into a behaviour."""
        if spec is None:
            return cls()
        if isinstance(spec, Behaviour):
            return spec
        words = spec.split(",") if isinstance(spec, str) else list(spec)
        values: dict[str, object] = {}
        for raw in words:
            word = raw.strip().lower()
            if not word:
                continue
            name, _, arg = word.partition(":")
            if name in ("legacy", "pre-kip511", "closes-on-flexible", "zero-length-for-unknown",
                        "hang") and not arg:
                values[name.replace("-", "_")] = True
            elif name == "slow" and arg:
                try:
                    values["delay"] = float(arg)
                except ValueError:
                    raise ConfigError(f"behaviour 'slow:{arg}': the delay must be a number of "
                                      "seconds, e.g. slow:0.5") from None
            elif name == "drop-after" and arg.isdigit() and int(arg) > 0:
                values["drop_after"] = int(arg)
            else:
                raise ConfigError(f"unknown emulator behaviour {raw.strip()!r}; use one of "
                                  f"{', '.join(BEHAVIOUR_WORDS)}")
        return cls(
            legacy=bool(values.get("legacy", False)),
            pre_kip511=bool(values.get("pre_kip511", False)),
            closes_on_flexible=bool(values.get("closes_on_flexible", False)),
            zero_length_for_unknown=bool(values.get("zero_length_for_unknown", False)),
            delay=float(values.get("delay", 0.0)),  # type: ignore[arg-type]
            hang=bool(values.get("hang", False)),
            drop_after=values.get("drop_after"),  # type: ignore[arg-type]
        )

    def words(self) -> list[str]:
        """The behaviour as the words :meth:`parse` reads (empty when all off)."""
        out = []
        if self.legacy:
            out.append("legacy")
        if self.pre_kip511:
            out.append("pre-kip511")
        if self.closes_on_flexible:
            out.append("closes-on-flexible")
        if self.zero_length_for_unknown:
            out.append("zero-length-for-unknown")
        if self.delay:
            out.append(f"slow:{self.delay:g}")
        if self.hang:
            out.append("hang")
        if self.drop_after is not None:
            out.append(f"drop-after:{self.drop_after}")
        return out

    def __str__(self) -> str:
        return ",".join(self.words()) or "normal"
