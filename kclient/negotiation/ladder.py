"""The ApiVersions handshake ladder as a pure decision function.

The connection layer tries ApiVersions at the highest version kclient speaks and
reports what happened (an answer, an UNSUPPORTED_VERSION error with or without
the broker's range for ApiVersions, or a closed connection).  :func:`next_step`
says what to do next, so the rules live here, without sockets, and every step is
recorded.

The ladder only ever sends versions the application allows for ApiVersions
itself: within ``[our_min, our_max]`` and not in ``avoid``
(:func:`start_for` reads them from an
:class:`~kclient.negotiation.model.ApplicationVersions`).  "The lowest allowed
version" below is v0 unless the application excludes it.

0. start at the highest allowed version (v4 by default);
1. error 35 listing the broker's ApiVersions range -> retry at the highest
   allowed version the broker lists, at most once per version;
2. error 35 with an empty list (brokers before Kafka 2.4) -> retry at the lowest
   allowed version (v0, which every broker knows, unless excluded);
3. the connection closed before any answer to a request above the lowest
   allowed version -> reconnect and retry at the lowest allowed version, once
   (proxies that choke on flexible requests);
4. closed again on v0 -> the broker predates ApiVersions (Kafka < 0.10): assume
   the configured fallback release, or fail naming ``api_version_fallback``.
   Closed on the lowest allowed version when that is above v0 -> fail naming
   the application's settings (v0 was not tried, so nothing proves the broker
   is that old).

Nothing is ever sent outside the allowed versions: where a rule would need such
a version the ladder fails and says which setting forbids it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import attrs

from kclient.errors import ConfigError
from kclient.negotiation.ranges import VersionRange, highest_allowed
from kclient.options import Example, Option, Text
from kclient.protocol.constants import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kclient.negotiation.model import ApplicationVersions

__all__ = [
    "API_VERSIONS_MAX",
    "Answered",
    "Closed",
    "Decision",
    "LadderState",
    "Outcome",
    "Rejected",
    "next_step",
    "start",
    "start_for",
]

#: The highest ApiVersions version kclient speaks.
API_VERSIONS_MAX = 4

#: How failures name the settings that narrowed the versions the ladder may send.
_SETTINGS_HINT = ("max_versions/min_versions/avoid_versions for ApiVersions")


@attrs.frozen
class Answered:
    """The broker answered the ApiVersions request at ``version`` without error."""

    version: int


@attrs.frozen
class Rejected:
    """The broker answered with error ``error_code`` (35 = UNSUPPORTED_VERSION).

    ``broker_range`` is its advertised ``(min, max)`` for ApiVersions (key 18)
    when the error body lists it (Kafka 2.4+), else ``None``.
    """

    version: int
    error_code: int
    broker_range: tuple[int, int] | None = None


@attrs.frozen
class Closed:
    """The connection closed (or was reset) before an answer to ``version`` arrived."""

    version: int
    reason: str = "connection closed"


Outcome = Answered | Rejected | Closed

DecisionKind = Literal["send", "done", "fallback", "fail"]


@attrs.frozen
class Decision:
    """What to do next.

    * ``send``: send ApiVersions at ``version`` (on a new connection if
      ``reconnect``);
    * ``done``: negotiation succeeded;
    * ``fallback``: assume release ``release`` for this broker;
    * ``fail``: give up, ``message`` says why and what to do.
    """

    kind: DecisionKind
    version: int | None = None
    reconnect: bool = False
    release: str | None = None
    message: str | None = None


@attrs.frozen
class LadderState:
    """Where the ladder stands: versions tried, whether the reconnect was used, the steps.

    ``our_min``/``our_max`` and ``avoid`` are the ApiVersions versions the
    application allows; the ladder never sends another.
    """

    our_max: int = API_VERSIONS_MAX
    fallback: str | None = None
    tried: tuple[int, ...] = ()
    reconnected: bool = False
    steps: tuple[str, ...] = ()
    our_min: int = 0
    avoid: frozenset[int] = frozenset()
    plaintext: bool = True

    @property
    def allowed(self) -> VersionRange:
        """The application's ApiVersions range (avoided versions still inside)."""
        return VersionRange(self.our_min, self.our_max)

    @property
    def lowest(self) -> int | None:
        """The lowest version the ladder may send (v0 unless excluded), or ``None``."""
        for version in self.allowed:
            if version not in self.avoid:
                return version
        return None

    def describe(self) -> str:
        """The allowed versions in words, e.g. ``v0-v4`` or ``v1-v4 (avoiding v3)``."""
        text = f"v{self.our_min}" if self.our_min == self.our_max else (
            f"v{self.our_min}-v{self.our_max}")
        avoided = sorted(v for v in self.avoid if v in self.allowed)
        if avoided:
            text += f" (avoiding {', '.join(f'v{v}' for v in avoided)})"
        return text

    def _with(self, step: str, tried: tuple[int, ...] | None = None,
              reconnected: bool | None = None) -> LadderState:
        return attrs.evolve(
            self,
            steps=(*self.steps, step),
            tried=self.tried if tried is None else tried,
            reconnected=self.reconnected if reconnected is None else reconnected,
        )


def start(our_max: int = API_VERSIONS_MAX, fallback: str | None = None, *,
          our_min: int = 0, avoid: Iterable[int] = (), plaintext: bool = True
          ) -> tuple[Decision, LadderState]:
    """The first decision: send ApiVersions at the highest allowed version.

    Allowed are ``our_min`` to ``our_max`` minus ``avoid``.  Raises
    :class:`~kclient.errors.ConfigError` when that leaves no version (nothing is
    sent then).
    """
    if our_min < 0 or our_max < our_min:
        raise ConfigError(f"ApiVersions versions v{our_min}-v{our_max} are not a range of "
                          f"versions 0 or more; fix {_SETTINGS_HINT}")
    state = LadderState(our_max=our_max, fallback=fallback, our_min=our_min,
                        avoid=frozenset(avoid), plaintext=plaintext)
    first = highest_allowed(state.allowed, state.avoid)
    if first is None:
        raise ConfigError(f"the application allows no ApiVersions version ({state.describe()}), "
                          f"so no broker can be asked; fix {_SETTINGS_HINT}")
    state = attrs.evolve(state, tried=(first,))
    return Decision("send", first), state._with(f"send ApiVersions v{first}")


def start_for(application: ApplicationVersions, fallback: str | None = None, *,
              plaintext: bool = True) -> tuple[Decision, LadderState]:
    """:func:`start` with the application's own range and avoided versions for ApiVersions.

    This is the handshake's one rule for "which ApiVersions versions may be
    sent" (the application's caps, minimums and avoided versions
    apply to the ApiVersions request itself).
    """
    rng = application.apis.get(ApiKey.API_VERSIONS)
    if rng is None:
        raise ConfigError("the application's catalog has no ApiVersions (key 18), so no "
                          "broker can be asked; use a catalog that lists it")
    return start(rng.max, fallback, our_min=rng.min,
                 avoid=application.avoided(ApiKey.API_VERSIONS), plaintext=plaintext)


def _send(state: LadderState, version: int, step: str, reconnect: bool = False
          ) -> tuple[Decision, LadderState]:
    new = state._with(step, tried=(*state.tried, version),
                      reconnected=state.reconnected or reconnect)
    return Decision("send", version, reconnect=reconnect), new


def _fail(state: LadderState, step: str, message: str) -> tuple[Decision, LadderState]:
    return Decision("fail", message=message), state._with(step)


def next_step(state: LadderState, outcome: Outcome) -> tuple[Decision, LadderState]:
    """The decision after ``outcome`` and the new state (with the step recorded)."""
    if isinstance(outcome, Answered):
        return Decision("done", outcome.version), state._with(
            f"ApiVersions v{outcome.version} answered")
    if isinstance(outcome, Rejected):
        return _after_rejection(state, outcome)
    return _after_close(state, outcome)


def _after_rejection(state: LadderState, outcome: Rejected) -> tuple[Decision, LadderState]:
    version = outcome.version
    if outcome.error_code != ErrorCode.UNSUPPORTED_VERSION:
        return _fail(state, f"ApiVersions v{version} answered error {outcome.error_code}",
                     f"the broker answered ApiVersions v{version} with error code "
                     f"{outcome.error_code}; check the broker's logs")
    if outcome.broker_range is not None:
        low, high = outcome.broker_range
        step = (f"ApiVersions v{version} rejected (UNSUPPORTED_VERSION); broker speaks "
                f"v{low}-v{high}")
        common = (state.allowed.intersection(VersionRange(low, high))
                  if 0 <= low <= high else None)
        retry = highest_allowed(common, state.avoid)
        if retry is None:
            return _fail(state, step, f"the broker speaks ApiVersions v{low}-v{high}, kclient "
                                      f"allows {state.describe()}: no common version "
                                      f"(see {_SETTINGS_HINT})")
        if retry in state.tried:
            return _fail(state, step, f"the broker rejected ApiVersions v{retry} although it "
                                      f"lists v{low}-v{high}; it contradicts itself")
        return _send(state, retry, f"{step}; retry v{retry}")
    step = f"ApiVersions v{version} rejected (UNSUPPORTED_VERSION) without a range (pre-2.4)"
    lowest = state.lowest
    assert lowest is not None  # start() refuses an application allowing no version
    if lowest in state.tried:
        if lowest == 0:
            return _fail(state, step, "the broker rejected ApiVersions v0; it cannot be "
                                      "negotiated with")
        return _fail(state, step, f"the broker rejected ApiVersions v{lowest}, the lowest "
                                  f"version kclient allows ({state.describe()}); brokers "
                                  f"before Kafka 2.4 answer v0: allow it in {_SETTINGS_HINT}")
    return _send(state, lowest, f"{step}; retry v{lowest}")


def _after_close(state: LadderState, outcome: Closed) -> tuple[Decision, LadderState]:
    version = outcome.version
    step = f"{outcome.reason} before an answer to ApiVersions v{version}"
    lowest = state.lowest
    assert lowest is not None  # start() refuses an application allowing no version
    if version > lowest and not state.reconnected and lowest not in state.tried:
        return _send(state, lowest, f"{step}; reconnect and retry v{lowest}", reconnect=True)
    if version > 0 and version == lowest:
        return _fail(state, step, f"the broker closed the connection on ApiVersions "
                                  f"v{version}, the lowest version kclient allows "
                                  f"({state.describe()}); v0 would tell whether it predates "
                                  f"ApiVersions: allow it in {_SETTINGS_HINT}")
    if version == 0 and state.fallback is not None:
        return (Decision("fallback", release=state.fallback),
                state._with(f"{step}; broker predates ApiVersions: assume release "
                            f"{state.fallback}"))
    if version == 0:
        tls = Text("; or the listener expects TLS: connect with TLS (", Option("tls"), ")"
                   ) if state.plaintext else ""
        return _fail(state, step, Text("the broker closes the connection on ApiVersions v0: "
                                       "it predates Kafka 0.10 (set ",
                                       Example("api_version_fallback", "0.9.0"),
                                       " to assume that release's versions)", tls,
                                       "; or it is not a Kafka listener"))
    return _fail(state, step, f"the broker closed the connection on ApiVersions v{version} "
                              f"after the v{lowest} retry; check that the address is a Kafka "
                              "listener")
