"""The one worker loop (`benchmark.execution.workers.Workers`) that the suite's trials and checks
and `benchmark compare`'s steps share: a slot's worker is started on demand and kept while it
lives, a dead one is closed and replaced, and every worker is closed on the way out or killed when
an exception (an interrupt) leaves the block. Real processes that only wait on their stdin."""

from __future__ import annotations

import pytest

from benchmark.execution.workers import Worker, Workers

IDLE = ("-c", "import sys; sys.stdin.read()")  # exits when its stdin closes, as a worker does


def idle(_: str = "") -> Worker:
    return Worker(entry=IDLE)


def test_a_live_worker_is_kept_and_a_dead_one_closed_and_replaced():
    with Workers(idle) as workers:
        first = workers.get("A")
        assert workers.get("A") is first and first.alive()
        other = workers.get("B")
        assert other is not first
        first.proc.kill()
        first.proc.wait()
        second = workers.get("A")
        assert second is not first and second.alive()
        assert first not in workers.open and workers.open == [other, second]
        workers.retire("A")
        assert not second.alive() and workers.open == [other]
    assert not other.alive() and workers.open == []


def test_a_first_start_may_differ_from_the_replacements():
    started: list[str] = []

    def replacement(label: str) -> Worker:
        started.append(label)
        return idle()

    with Workers(replacement) as workers:
        workers.start("A", idle)
        assert started == []  # the factory given once, not the slot's
        workers.current["A"].proc.kill()
        workers.current["A"].proc.wait()
        workers.get("A")
        assert started == ["A"]


def test_an_interrupt_kills_every_worker_and_a_clean_exit_closes_them():
    with pytest.raises(KeyboardInterrupt), Workers(idle) as workers:
        started = [workers.get("A"), workers.get("B")]
        raise KeyboardInterrupt
    assert all(w.proc.returncode == -9 for w in started)  # killed, not asked to exit
    with Workers(idle) as workers:
        started = [workers.get("A"), workers.get("B")]
    assert all(w.proc.returncode == 0 for w in started)  # stdin closed: they exited
