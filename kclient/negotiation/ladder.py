"""The ApiVersions handshake ladder as a pure decision function.

The connection layer tries ApiVersions at the highest version kclient speaks and
reports what happened (an answer, an UNSUPPORTED_VERSION error with or without
the broker's range for ApiVersions, or a closed connection).  :func:`next_step`
says what to do next, so the rules live here, without sockets, and every step is
recorded:

1. error 35 listing the broker's ApiVersions range -> retry at min(our max, its
   max), at most once per version;
2. error 35 with an empty list (brokers before Kafka 2.4) -> retry at v0;
3. the connection closed before any answer to a v1+ request -> reconnect and
   retry at v0, once (proxies that choke on flexible requests);
4. closed again on v0 -> the broker predates ApiVersions (Kafka < 0.10): assume
   the configured fallback release, or fail naming ``api_version_fallback``.
"""

from __future__ import annotations

from typing import Literal

import attrs

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
]

#: How the "broker predates ApiVersions" error names the option that helps; the
#: CLI swaps it for its flag.
FALLBACK_OPTION_HINT = 'api_version_fallback (e.g. api_version_fallback="0.9.0")'

#: The highest ApiVersions version kclient speaks.
API_VERSIONS_MAX = 4


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
    """Where the ladder stands: versions tried, whether v0 got its reconnect, the steps."""

    our_max: int = API_VERSIONS_MAX
    fallback: str | None = None
    tried: tuple[int, ...] = ()
    reconnected: bool = False
    steps: tuple[str, ...] = ()

    def _with(self, step: str, tried: tuple[int, ...] | None = None,
              reconnected: bool | None = None) -> LadderState:
        return attrs.evolve(
            self,
            steps=(*self.steps, step),
            tried=self.tried if tried is None else tried,
            reconnected=self.reconnected if reconnected is None else reconnected,
        )


def start(our_max: int = API_VERSIONS_MAX, fallback: str | None = None
          ) -> tuple[Decision, LadderState]:
    """The first decision: send ApiVersions at ``our_max``."""
    if our_max < 0:
        raise ValueError(f"the highest ApiVersions version must be 0 or more, got {our_max}")
    state = LadderState(our_max=our_max, fallback=fallback, tried=(our_max,))
    return Decision("send", our_max), state._with(f"send ApiVersions v{our_max}")


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
    if outcome.error_code != 35:
        return _fail(state, f"ApiVersions v{version} answered error {outcome.error_code}",
                     f"the broker answered ApiVersions v{version} with error code "
                     f"{outcome.error_code}; check the broker's logs")
    if outcome.broker_range is not None:
        low, high = outcome.broker_range
        retry = min(state.our_max, high)
        step = (f"ApiVersions v{version} rejected (UNSUPPORTED_VERSION); broker speaks "
                f"v{low}-v{high}")
        if retry < low or retry < 0:
            return _fail(state, step, f"the broker speaks ApiVersions v{low}-v{high}, kclient "
                                      f"speaks v0-v{state.our_max}: no common version")
        if retry in state.tried:
            return _fail(state, step, f"the broker rejected ApiVersions v{retry} although it "
                                      f"lists v{low}-v{high}; it contradicts itself")
        return _send(state, retry, f"{step}; retry v{retry}")
    step = f"ApiVersions v{version} rejected (UNSUPPORTED_VERSION) without a range (pre-2.4)"
    if 0 in state.tried:
        return _fail(state, step, "the broker rejected ApiVersions v0; it cannot be negotiated "
                                  "with")
    return _send(state, 0, f"{step}; retry v0")


def _after_close(state: LadderState, outcome: Closed) -> tuple[Decision, LadderState]:
    version = outcome.version
    step = f"{outcome.reason} before an answer to ApiVersions v{version}"
    if version > 0 and not state.reconnected and 0 not in state.tried:
        return _send(state, 0, f"{step}; reconnect and retry v0", reconnect=True)
    if version == 0 and state.fallback is not None:
        return (Decision("fallback", release=state.fallback),
                state._with(f"{step}; broker predates ApiVersions: assume release "
                            f"{state.fallback}"))
    if version == 0:
        return _fail(state, step, "the broker closes the connection on ApiVersions v0, so it "
                                  "predates Kafka 0.10 (or is not a Kafka broker); set "
                                  f"{FALLBACK_OPTION_HINT} to assume that release's versions")
    return _fail(state, step, f"the broker closed the connection on ApiVersions v{version} "
                              "after the v0 retry; check that the address is a Kafka listener")
