"""Scheduling queue: priority then age, back-off on a fake clock, event-driven moves."""

from __future__ import annotations

from inplace.scheduler.framework import pod_info
from inplace.scheduler.queue import SchedulingQueue
from tests.fakeclock import FakeClock

from .helpers import pod


def make_queue() -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock()
    return SchedulingQueue(clock=clock), clock


def pop_all(q: SchedulingQueue) -> list[str]:
    out = []
    while (qp := q.pop_nowait()) is not None:
        out.append(qp.info.name)
        q.done(qp.key)
    return out


def test_priority_then_age() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("low-old", priority=0)))
    clock.advance(1)
    q.add(pod_info(pod("high", priority=100)))
    clock.advance(1)
    q.add(pod_info(pod("low-new", priority=0)))
    q.add(pod_info(pod("mid", priority=10)))
    assert pop_all(q) == ["high", "mid", "low-old", "low-new"]


def test_dedupe_and_update_in_place() -> None:
    q, _ = make_queue()
    q.add(pod_info(pod("a")))
    q.add(pod_info(pod("a")))
    assert q.active_count == 1
    q.update(pod_info(pod("a", priority=5)))
    q.add(pod_info(pod("b", priority=1)))
    assert pop_all(q) == ["a", "b"]


def test_unschedulable_waits_for_an_event_not_a_timer() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p")))
    qp = q.pop_nowait()
    assert qp is not None
    q.add_unschedulable(qp, "0/1 nodes are available")
    assert q.where("default/p") == "unschedulable"
    clock.advance(60)  # no polling: still parked
    assert q.where("default/p") == "unschedulable"
    assert q.move_all("NodeAdded") == 1
    assert q.where("default/p") == "active"  # back-off (1 s) long expired


def test_move_during_backoff_goes_to_backoff_then_active() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p")))
    qp = q.pop_nowait()
    assert qp is not None
    q.add_unschedulable(qp)
    q.move_all("PodDeleted")
    assert q.where("default/p") == "backoff"
    clock.advance(0.5)
    assert q.where("default/p") == "backoff"
    clock.advance(0.6)
    assert q.where("default/p") == "active"


def test_backoff_doubles_and_caps() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p")))
    waits = []
    for _ in range(6):
        qp = q.pop_nowait()
        assert qp is not None
        q.add_backoff(qp)
        start = clock.monotonic()
        while q.where("default/p") != "active":
            clock.advance(0.25)
        waits.append(clock.monotonic() - start)
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_event_during_the_cycle_is_not_lost() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p")))
    qp = q.pop_nowait()
    assert qp is not None
    q.move_all("PodDeleted")  # arrives while p is being scheduled
    q.add_unschedulable(qp)
    assert q.where("default/p") == "backoff"  # not parked: it is retried after back-off
    clock.advance(1.0)
    assert q.where("default/p") == "active"


def test_delete_while_in_flight_drops_the_pod() -> None:
    q, _ = make_queue()
    q.add(pod_info(pod("p")))
    qp = q.pop_nowait()
    assert qp is not None
    q.delete("default/p")
    q.add_unschedulable(qp)
    assert q.where("default/p") is None
    assert len(q) == 0


def test_update_while_in_flight_is_kept() -> None:
    q, _ = make_queue()
    q.add(pod_info(pod("p", cpu="1")))
    qp = q.pop_nowait()
    assert qp is not None
    q.update(pod_info(pod("p", cpu="2")))
    q.add_backoff(qp)
    assert qp.info.cpu == 2000


def test_update_of_unschedulable_pod_retries_it() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p", cpu="8")))
    qp = q.pop_nowait()
    assert qp is not None
    q.add_unschedulable(qp)
    clock.advance(2)
    q.update(pod_info(pod("p", cpu="1")))
    assert q.where("default/p") == "active"


def test_long_unschedulable_pods_are_flushed() -> None:
    q, clock = make_queue()
    q.add(pod_info(pod("p")))
    qp = q.pop_nowait()
    assert qp is not None
    q.add_unschedulable(qp)
    clock.advance(299)
    assert q.where("default/p") == "unschedulable"
    clock.advance(31)
    assert q.where("default/p") == "active"


def test_on_change_reports_sizes() -> None:
    seen: list[tuple[int, int, int]] = []
    q: SchedulingQueue

    def changed() -> None:
        seen.append((q.active_count, q.backoff_count, q.unschedulable_count))

    q = SchedulingQueue(clock=FakeClock(), on_change=changed)
    q.add(pod_info(pod("p")))
    assert seen[-1] == (1, 0, 0)
