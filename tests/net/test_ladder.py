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


# -- the application's own limits on ApiVersions (DESIGN.md §4) -------------------------


def start_capped(**limits: object) -> tuple[ladder.Decision, ladder.LadderState]:
    from kclient.negotiation import ApplicationVersions

    return ladder.start_for(ApplicationVersions.from_catalog(**limits))  # type: ignore[arg-type]


@pytest.mark.parametrize(("limits", "first"), [
    ({}, 4),
    ({"max_versions": {"ApiVersions": 1}}, 1),
    ({"max_versions": {"ApiVersions": 0}}, 0),
    ({"max_versions": {18: 2}}, 2),
    ({"avoid_versions": {"ApiVersions": [4]}}, 3),
    ({"avoid_versions": {"ApiVersions": [4, 3]}}, 2),
    ({"min_versions": {"ApiVersions": 2}}, 4),
])
def test_start_for_begins_at_the_highest_version_the_application_allows(
        limits: dict[str, object], first: int) -> None:
    decision, state = start_capped(**limits)
    assert (decision.kind, decision.version) == ("send", first)
    assert state.steps == (f"send ApiVersions v{first}",)


def test_an_application_allowing_no_apiversions_version_is_a_config_error() -> None:
    from kclient.errors import ConfigError

    with pytest.raises(ConfigError, match=r"allows no ApiVersions version \(v1-v2 "
                                          r"\(avoiding v1, v2\)\)"):
        start_capped(min_versions={"ApiVersions": 1}, max_versions={"ApiVersions": 2},
                     avoid_versions={"ApiVersions": [1, 2]})
    with pytest.raises(ConfigError):
        ladder.start(-1)


def drive(outcomes: list[ladder.Outcome], **limits: object) -> list[ladder.Decision]:
    decision, state = start_capped(**limits)
    decisions = [decision]
    for outcome in outcomes:
        decision, state = ladder.next_step(state, outcome)
        decisions.append(decision)
    return decisions


def test_retry_after_error_35_skips_avoided_versions() -> None:
    decisions = drive([Rejected(4, 35, (0, 3)), Answered(2)],
                      avoid_versions={"ApiVersions": [3]})
    assert [(d.kind, d.version) for d in decisions] == [("send", 4), ("send", 2), ("done", 2)]


def test_retry_after_error_35_stays_at_or_below_the_cap() -> None:
    # A broker that rejects v1 yet lists v0-v3 contradicts itself: no retry above the cap.
    decisions = drive([Rejected(1, 35, (0, 3))], max_versions={"ApiVersions": 1})
    assert decisions[-1].kind == "fail" and "contradicts itself" in str(decisions[-1].message)


def test_retry_after_error_35_stays_at_or_above_the_minimum() -> None:
    decisions = drive([Rejected(4, 35, (0, 2))], min_versions={"ApiVersions": 3})
    assert decisions[-1].kind == "fail"
    assert "allows v3-v4: no common version" in str(decisions[-1].message)
    assert "min_versions" in str(decisions[-1].message)


def test_pre_kip511_rejection_retries_the_lowest_allowed_version() -> None:
    decisions = drive([Rejected(4, 35, None), Answered(1)], min_versions={"ApiVersions": 1})
    assert [(d.kind, d.version) for d in decisions] == [("send", 4), ("send", 1), ("done", 1)]
    decisions = drive([Rejected(4, 35, None), Rejected(1, 35, None)],
                      avoid_versions={"ApiVersions": [0]})
    assert decisions[1].version == 1
    assert decisions[-1].kind == "fail" and "allow it in" in str(decisions[-1].message)


def test_close_reconnects_at_the_lowest_allowed_version_not_v0() -> None:
    decisions = drive([Closed(4), Closed(2)], min_versions={"ApiVersions": 2})
    assert [(d.kind, d.version, d.reconnect) for d in decisions[:2]] == [
        ("send", 4, False), ("send", 2, True)]
    # v0 was never tried, so the broker is not declared pre-0.10 and no fallback is used.
    assert decisions[-1].kind == "fail"
    assert "lowest version kclient allows (v2-v4)" in str(decisions[-1].message)


def test_cap_zero_closed_on_v0_falls_back_like_the_default_ladder() -> None:
    from kclient.negotiation import ApplicationVersions

    app = ApplicationVersions.from_catalog(max_versions={"ApiVersions": 0})
    decision, state = ladder.start_for(app, fallback="0.9.0")
    assert decision.version == 0
    decision, state = ladder.next_step(state, Closed(0))
    assert (decision.kind, decision.release) == ("fallback", "0.9.0")


def test_no_limited_ladder_ever_sends_a_version_the_application_excludes() -> None:
    outcomes_for = [
        lambda v: Closed(v),
        lambda v: Rejected(v, 35, None),
        lambda v: Rejected(v, 35, (0, 3)),
        lambda v: Rejected(v, 35, (0, 9)),
        lambda v: Rejected(v, 35, (1, 2)),
        lambda v: Rejected(v, 35, (2, 2)),
    ]
    settings: list[dict[str, object]] = [
        {"max_versions": {"ApiVersions": cap}} for cap in range(5)] + [
        {"min_versions": {"ApiVersions": low}} for low in range(5)] + [
        {"avoid_versions": {"ApiVersions": [v]}} for v in range(5)] + [
        {"min_versions": {"ApiVersions": 1}, "max_versions": {"ApiVersions": 3},
         "avoid_versions": {"ApiVersions": [2]}}]
    checked = 0
    for limits in settings:
        decision, state = start_capped(**limits)
        allowed = {v for v in state.allowed if v not in state.avoid}
        for pick in outcomes_for:
            for other in outcomes_for:
                decision, state = start_capped(**limits)
                sent = 0
                while decision.kind == "send":
                    assert decision.version in allowed, (limits, state.steps)
                    checked += 1
                    chooser = pick if sent % 2 == 0 else other
                    decision, state = ladder.next_step(state, chooser(decision.version))
                    sent += 1
                    assert sent <= 4
                assert decision.kind in ("fail", "fallback", "done")
    assert checked > 600
