"""The churn harness, briefly: threads on one SyncClient while brokers restart."""

from __future__ import annotations

import pytest

from benchmarks.bench_churn import run_churn

pytestmark = pytest.mark.timeout(120)


def test_every_thread_progresses_and_close_leaves_nothing() -> None:
    result = run_churn(seconds=4, threads=6, restart_every=0.5, seed=7)
    assert result.problems() == [], result.line()
    assert result.restarts >= 4, result.line()
    # Every thread ended on the close: its last call failed with ClientClosedError.
    assert result.outcomes["closed"] == 6, result.line()


def test_the_harness_reports_a_broken_contract() -> None:
    """A result with stuck threads, leaks or untyped errors is a failure."""
    from benchmarks.bench_churn import CALL_BOUND, ChurnResult

    result = ChurnResult(seconds=1, threads=2, stuck_threads=1, leaked_fds=2,
                         slowest_call=CALL_BOUND + 1, lost_writes=3)
    result.untyped.append("RuntimeError: boom")
    problems = " | ".join(result.problems())
    for part in ("untyped", "a call took", "still blocked", "sockets left open", "no call",
                 "writes onto lost connections"):
        assert part in problems
