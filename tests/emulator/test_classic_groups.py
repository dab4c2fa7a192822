"""The classic group coordinator as a pure state machine, driven with synthetic time:
Kafka's join, sync, heartbeat, leave and expiry rules without a socket or a clock."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator.classic_groups import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroupCoordinator,
    GroupSettings,
)
from kclient.protocol.constants import ErrorCode

SESSION, REBALANCE = 10_000, 30_000


class Driver:
    """A coordinator, a synthetic clock and the answers delivered to parked requests."""

    def __init__(self, **settings: Any) -> None:
        self.coordinator = ClassicGroupCoordinator(GroupSettings(**settings))
        self.now = 100.0
        self.answers: dict[object, dict[str, Any]] = {}

    def _collect(self) -> None:
        for ref, body in self.coordinator.drain():
            assert ref not in self.answers, f"{ref} answered twice"
            self.answers[ref] = body

    def join(self, ref: str, member_id: str = "", *, instance_id: str | None = None,
             protocols: tuple[str, ...] = ("range",), session: int = SESSION,
             known: bool = True) -> dict[str, Any] | None:
        answer = self.coordinator.join(
            self.now, ref, group_id="g", member_id=member_id, instance_id=instance_id,
            client_id="app", protocol_type="consumer",
            protocols=[(p, p.encode()) for p in protocols], session_timeout_ms=session,
            rebalance_timeout_ms=REBALANCE, require_known_member=known)
        self._collect()
        return answer

    def sync(self, ref: str, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None) -> dict[str, Any] | None:
        answer = self.coordinator.sync(
            self.now, ref, group_id="g", member_id=member_id, instance_id=None,
            generation=generation, protocol_type="consumer", protocol_name=None,
            assignments=assignments or {})
        self._collect()
        return answer

    def heartbeat(self, member_id: str, generation: int) -> int:
        return self.coordinator.heartbeat(self.now, group_id="g", member_id=member_id,
                                          instance_id=None, generation=generation)

    def advance(self, seconds: float) -> None:
        """Move the clock on, running each timer at its own deadline."""
        end = self.now + seconds
        while (due := self.coordinator.next_deadline()) is not None and due <= end:
            self.now = max(self.now, due)
            self.coordinator.tick(self.now)
            self._collect()
        self.now = end

    @property
    def group(self) -> Any:
        return self.coordinator.groups["g"]


def joined_member(driver: Driver, ref: str) -> str:
    """A dynamic member through MEMBER_ID_REQUIRED and its (parked) second join."""
    first = driver.join(ref + "-0")
    assert first is not None and first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert driver.join(ref, first["member_id"]) is None  # parked for the rebalance
    return str(first["member_id"])


def test_a_first_member_waits_the_initial_delay_then_leads_alone() -> None:
    driver = Driver()
    member = joined_member(driver, "a")
    assert driver.group.state == PREPARING_REBALANCE and "a" not in driver.answers
    driver.advance(0.099)
    assert "a" not in driver.answers
    driver.advance(0.002)
    answer = driver.answers["a"]
    assert (answer["error_code"], answer["generation_id"], answer["leader"]) == (
        ErrorCode.NONE, 1, member)
    assert [m["member_id"] for m in answer["members"]] == [member]
    assert driver.group.state == COMPLETING_REBALANCE
    assert driver.sync("s", member, 1, {member: b"plan"}) == {
        "error_code": ErrorCode.NONE, "assignment": b"plan", "protocol_type": "consumer",
        "protocol_name": "range"}
    assert driver.group.state == STABLE


def test_a_second_member_rebalances_and_the_follower_waits_for_the_leaders_sync() -> None:
    driver = Driver()
    leader = joined_member(driver, "a")
    driver.advance(0.2)
    driver.sync("s1", leader, 1, {leader: b"all"})
    follower = joined_member(driver, "b")
    assert driver.heartbeat(leader, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = driver.join("a2", leader)  # the leader rejoins: everyone has joined
    assert rejoined is not None and len(rejoined["members"]) == 2
    assert rejoined["generation_id"] == driver.answers["b"]["generation_id"] == 2
    assert driver.answers["b"]["members"] == []
    assert driver.sync("sb", follower, 2) is None  # parked until the leader's
    assert driver.sync("sa", leader, 2, {leader: b"x", follower: b"y"}) is not None
    assert driver.answers["sb"]["assignment"] == b"y"
    assert driver.heartbeat(follower, 2) == ErrorCode.NONE
    assert driver.heartbeat(follower, 1) == ErrorCode.ILLEGAL_GENERATION


def test_pending_member_ids_expire_after_the_session_timeout() -> None:
    driver = Driver()
    first = driver.join("a0")
    assert first is not None
    pending = first["member_id"]
    assert pending in driver.group.pending
    driver.advance(SESSION / 1000 + 0.01)
    assert driver.group.pending == {}
    answer = driver.join("a1", pending)  # the id is no longer known
    assert answer is not None and answer["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_silent_member_is_removed_and_the_group_rebalances() -> None:
    driver = Driver()
    leader = joined_member(driver, "a")
    follower = joined_member(driver, "b")
    driver.advance(0.2)
    driver.sync("sa", leader, 1, {})
    driver.sync("sb", follower, 1)
    for _ in range(3):  # only the leader heartbeats
        driver.advance(SESSION / 3500)
        assert driver.heartbeat(leader, 1) == ErrorCode.NONE
    driver.advance(SESSION / 3500)
    assert list(driver.group.members) == [leader]
    assert driver.heartbeat(leader, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_members_that_do_not_rejoin_in_the_rebalance_timeout_are_removed() -> None:
    driver = Driver()
    leader = joined_member(driver, "a")
    follower = joined_member(driver, "b")
    driver.advance(0.2)
    driver.sync("sa", leader, 1, {})
    driver.sync("sb", follower, 1)
    driver.join("a2", leader)  # the leader rejoins; the follower heartbeats, never rejoins
    for _ in range(7):
        driver.advance((REBALANCE / 1000 - 1) / 7)
        assert driver.heartbeat(follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert "a2" not in driver.answers
    driver.advance(1.01)
    assert driver.answers["a2"]["generation_id"] == 2
    assert list(driver.group.members) == [leader]


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    driver = Driver()
    leader = joined_member(driver, "a")
    follower = joined_member(driver, "b")
    driver.advance(0.2)
    assert driver.sync("sb", follower, 1) is None
    for _ in range(6):  # the leader heartbeats but never sends its SyncGroup
        driver.advance(REBALANCE / 6000)
        if leader in driver.group.members:
            driver.heartbeat(leader, 1)
    driver.advance(0.01)
    # Kafka's expirePendingSync: the silent leader goes, the others are told to rejoin.
    assert driver.answers["sb"]["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert list(driver.group.members) == [follower]
    assert driver.group.state == PREPARING_REBALANCE


def test_leave_empties_the_group_and_answers_unknown_members() -> None:
    driver = Driver()
    member = joined_member(driver, "a")
    driver.advance(0.2)
    top, codes = driver.coordinator.leave(driver.now, "g", [(member, None), ("nobody", None)])
    assert (top, codes) == (ErrorCode.NONE, [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID])
    driver.advance(0.2)
    assert driver.group.state == EMPTY and driver.group.members == {}


def test_joins_are_checked_like_kafka() -> None:
    driver = Driver()
    for kwargs, code in [({"session": 5999}, ErrorCode.INVALID_SESSION_TIMEOUT),
                         ({"member_id": "ghost"}, ErrorCode.UNKNOWN_MEMBER_ID)]:
        answer = driver.join("x", **kwargs)
        assert answer is not None and answer["error_code"] == code
    joined_member(driver, "a")
    answer = driver.join("y", protocols=("roundrobin",))
    assert answer is not None and answer["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_static_members_replace_their_old_id() -> None:
    driver = Driver()
    assert driver.join("a", instance_id="i1") is None
    driver.advance(0.2)
    old = driver.answers["a"]["member_id"]
    driver.sync("s", old, 1, {old: b"p"})
    again = driver.join("b", instance_id="i1")  # restarted with an empty member id
    assert again is not None and again["member_id"] != old
    assert driver.heartbeat(old, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    code = driver.coordinator.heartbeat(driver.now, group_id="g", member_id=old,
                                        instance_id="i1", generation=1)
    assert code == ErrorCode.FENCED_INSTANCE_ID


@pytest.mark.parametrize(("generation", "member", "expected"), [
    (-1, "", ErrorCode.UNKNOWN_MEMBER_ID),  # a simple commit while members are active
    (1, "nobody", ErrorCode.UNKNOWN_MEMBER_ID),
    (7, None, ErrorCode.ILLEGAL_GENERATION),
    (1, None, ErrorCode.NONE),
])
def test_offset_commits_are_validated_like_kafka(generation: int, member: str | None,
                                                  expected: int) -> None:
    driver = Driver()
    joined = joined_member(driver, "a")
    driver.advance(0.2)
    driver.sync("s", joined, 1, {})
    code = driver.coordinator.commit_error(driver.now, "g", joined if member is None else member,
                                           None, generation)
    assert code == expected
    assert driver.coordinator.commit_error(driver.now, "other", "", None, -1) == ErrorCode.NONE


def test_the_next_deadline_follows_changes_without_scanning_every_group() -> None:
    driver = Driver()
    for index in range(200):
        driver.coordinator.join(driver.now, index, group_id=f"g{index}", member_id="",
                                instance_id=None, client_id="c", protocol_type="consumer",
                                protocols=[("range", b"")], session_timeout_ms=SESSION,
                                rebalance_timeout_ms=REBALANCE, require_known_member=True)
    assert driver.coordinator.next_deadline() == pytest.approx(driver.now + SESSION / 1000)
    driver.advance(SESSION / 1000 + 1)
    assert driver.coordinator.next_deadline() is None
    assert all(not g.pending for g in driver.coordinator.groups.values())
