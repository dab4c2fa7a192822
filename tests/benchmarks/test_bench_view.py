"""The view benchmarks' harnesses, briefly: what they time is what they say (no timing here)."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.bench_rolling import run_rolling
from benchmarks.bench_view import RELEASES, _answers, _first_view, _incremental
from kclient.negotiation import BrokerState, default_features, release_profile

pytestmark = pytest.mark.timeout(120)


def test_the_answers_are_a_rolling_upgrade_each_broker_stale_then_on_the_other_release() -> None:
    view = _first_view(3)
    answers = list(_answers(3, 12))
    for number, answer in enumerate(answers):
        before = view.broker(answer.node_id)
        if number % 2 == 0:
            assert answer.state is BrokerState.STALE and answer.apis == before.apis
        else:
            assert answer.state is BrokerState.ANSWERED and answer.apis != before.apis
            assert answer.apis in [release_profile(r) for r in RELEASES]
        view = view.with_broker(answer)
    assert [a.node_id for a in answers[::2]] == [1, 2, 3, 1, 2, 3]
    cpu, wall = _incremental(3, 12, default_features(), repeat=1)
    assert len(cpu) == len(wall) == 12


def test_the_rolling_harness_restarts_brokers_and_sees_each_new_answer() -> None:
    found = asyncio.run(run_rolling(6, 2))
    assert (found["brokers"], found["answered_at_start"], found["restarts"]) == (6, 6, 2)
