"""The handshake ladder's pure decisions (kclient.negotiation.ladder), step by step."""

from __future__ import annotations

import pytest

from kclient.negotiation import ladder
from kclient.negotiation.ladder import Answered, Closed, Rejected


def run(outcomes: list[ladder.Outcome], fallback: str | None = None
        ) -> tuple[list[ladder.Decision], ladder.LadderState]:
    decision, state = ladder.start(fallback=fallback)
    decisions = [decision]
    for outcome in outcomes:
        decision, state = ladder.next_step(state, outcome)
        decisions.append(decision)
    return decisions, state


def test_first_attempt_is_v4() -> None:
    decision, state = ladder.start()
    assert (decision.kind, decision.version, decision.reconnect) == ("send", 4, False)
    assert state.steps == ("send ApiVersions v4",)


def test_answered_is_done() -> None:
    decisions, state = run([Answered(4)])
    assert decisions[-1].kind == "done"
    assert state.steps[-1] == "ApiVersions v4 answered"


def test_step1_retry_at_the_broker_max_once() -> None:
    decisions, state = run([Rejected(4, 35, (0, 3)), Answered(3)])
    assert [(d.kind, d.version, d.reconnect) for d in decisions] == [
        ("send", 4, False), ("send", 3, False), ("done", 3, False)]
    assert "broker speaks v0-v3; retry v3" in state.steps[1]


def test_step1_no_loop_when_the_broker_contradicts_itself() -> None:
    decisions, state = run([Rejected(4, 35, (0, 3)), Rejected(3, 35, (0, 3))])
    assert decisions[-1].kind == "fail"
    assert "contradicts itself" in str(decisions[-1].message)
    assert len(state.steps) == 3


def test_step1_broker_newer_than_us_retries_our_max_only_if_untried() -> None:
    decisions, _ = run([Rejected(4, 35, (0, 7))])
    assert decisions[-1].kind == "fail"  # v4 already tried: no loop


def test_step1_no_common_version() -> None:
    decision, state = ladder.start(our_max=2)
    decision, state = ladder.next_step(state, Rejected(2, 35, (3, 5)))
    assert decision.kind == "fail" and "no common version" in str(decision.message)


def test_step2_empty_list_retries_v0() -> None:
    decisions, state = run([Rejected(4, 35, None), Answered(0)])
    assert [(d.kind, d.version) for d in decisions] == [("send", 4), ("send", 0), ("done", 0)]
    assert "without a range (pre-2.4)" in state.steps[1]


def test_step2_v0_rejected_too_fails() -> None:
    decisions, _ = run([Rejected(4, 35, None), Rejected(0, 35, None)])
    assert decisions[-1].kind == "fail"


def test_step3_close_on_flexible_reconnects_for_v0_once() -> None:
    decisions, state = run([Closed(4), Answered(0)])
    assert [(d.kind, d.version, d.reconnect) for d in decisions] == [
        ("send", 4, False), ("send", 0, True), ("done", 0, False)]
    assert state.reconnected
    assert "reconnect and retry v0" in state.steps[1]


@pytest.mark.parametrize("fallback", ["0.9.0", None])
def test_step4_closed_again_on_v0(fallback: str | None) -> None:
    decisions, state = run([Closed(4), Closed(0)], fallback=fallback)
    last = decisions[-1]
    if fallback is None:
        assert last.kind == "fail"
        assert "api_version_fallback" in str(last.message)
    else:
        assert (last.kind, last.release) == ("fallback", "0.9.0")
        assert "assume release 0.9.0" in state.steps[-1]
    assert len(state.steps) == 3


def test_pre_kip511_then_closed_on_v0_uses_fallback() -> None:
    decisions, _ = run([Rejected(4, 35, None), Closed(0)], fallback="0.9.0")
    assert decisions[-1].kind == "fallback"


def test_closed_on_v3_after_step1_reconnects_once_then_gives_up() -> None:
    decisions, _ = run([Rejected(4, 35, (0, 3)), Closed(3), Closed(0)])
    assert [(d.kind, d.version, d.reconnect) for d in decisions[:3]] == [
        ("send", 4, False), ("send", 3, False), ("send", 0, True)]
    assert decisions[-1].kind == "fail"


def test_other_error_codes_fail_at_once() -> None:
    decisions, _ = run([Rejected(4, 58, None)])
    assert decisions[-1].kind == "fail" and "error code 58" in str(decisions[-1].message)


def test_every_path_terminates_within_a_few_steps() -> None:
    # Whatever a broker does, the ladder never sends more than 4 requests.
    outcomes_for = [
        lambda v: Closed(v),
        lambda v: Rejected(v, 35, None),
        lambda v: Rejected(v, 35, (0, 3)),
        lambda v: Rejected(v, 35, (0, 9)),
        lambda v: Rejected(v, 35, (1, 2)),
    ]
    for pick in outcomes_for:
        for other in outcomes_for:
            decision, state = ladder.start()
            sent = 1
            while decision.kind == "send":
                assert decision.version is not None
                chooser = pick if sent % 2 else other
                decision, state = ladder.next_step(state, chooser(decision.version))
                sent += 1
                assert sent <= 5
            assert decision.kind in ("fail", "fallback", "done")
