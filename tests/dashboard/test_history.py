"""Bounded history (inplace.dashboard.history): ring buffers, steps, markers, pauses."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from inplace.dashboard.history import Marker, PodHistory, Steps, UsageRing

NAN = math.nan


def test_a_ring_grows_by_doubling_then_overwrites_the_oldest() -> None:
    ring = UsageRing(5, initial=2)
    for i in range(4):
        assert ring.append(float(i), i * 10.0, i * 100.0)
    assert ring.allocated == 4
    for i in range(4, 8):
        ring.append(float(i), i * 10.0, i * 100.0)
    assert ring.allocated == 5  # never above capacity
    times, cpu, memory = ring.since(0.0)
    assert times.tolist() == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert cpu.tolist() == [30.0, 40.0, 50.0, 60.0, 70.0]
    assert memory.tolist() == [300.0, 400.0, 500.0, 600.0, 700.0]
    assert ring.last() == (7.0, 70.0, 700.0)


def test_a_repeated_sample_is_dropped() -> None:
    ring = UsageRing(10)
    assert ring.append(5.0, 1.0, 2.0)
    assert not ring.append(5.0, 9.0, 9.0)  # the metrics API answers the same sample again
    assert not ring.append(4.0, 9.0, 9.0)
    assert len(ring) == 1
    assert ring.last() == (5.0, 1.0, 2.0)


def test_since_cuts_at_the_window_start() -> None:
    ring = UsageRing(10)
    for t in (1.0, 2.0, 3.0, 4.0):
        ring.append(t, t, t)
    assert ring.since(2.5)[0].tolist() == [3.0, 4.0]
    assert ring.since(3.0)[0].tolist() == [3.0, 4.0]
    assert ring.since(9.0)[0].tolist() == []


@given(
    capacity=st.integers(1, 40),
    gaps=st.lists(st.floats(0.01, 100.0), min_size=0, max_size=120),
)
def test_a_ring_holds_exactly_the_newest_samples(capacity: int, gaps: list[float]) -> None:
    ring = UsageRing(capacity, initial=1)
    times = np.cumsum(gaps).tolist()
    for i, t in enumerate(times):
        ring.append(t, float(i), float(-i))
    kept = times[-capacity:] if times else []
    got_times, got_cpu, got_memory = ring.since(-1.0)
    assert got_times.tolist() == kept
    assert got_cpu.tolist() == [float(i) for i in range(len(times))][-capacity:][: len(kept)]
    assert got_memory.tolist() == [-v for v in got_cpu.tolist()]
    assert ring.allocated <= capacity


@given(
    capacity=st.integers(1, 30),
    count=st.integers(0, 90),
    start=st.floats(-5.0, 100.0),
)
def test_since_is_a_filter_whatever_the_wrap(capacity: int, count: int, start: float) -> None:
    ring = UsageRing(capacity, initial=1)
    for t in range(count):
        ring.append(float(t), float(t) * 2, float(t) * 3)
    kept = [float(t) for t in range(count)][-capacity:] if count else []
    times, cpu, memory = ring.since(start)
    assert times.tolist() == [t for t in kept if t >= start]
    assert cpu.tolist() == [t * 2 for t in times.tolist()]
    assert memory.tolist() == [t * 3 for t in times.tolist()]


def test_steps_keep_changes_only_and_nan_equals_nan() -> None:
    steps = Steps(2)
    assert steps.record(10.0, (1.0, NAN))
    assert not steps.record(11.0, (1.0, NAN))  # same values: no point
    assert steps.record(12.0, (2.0, NAN))
    assert steps.record(11.5, (2.0, 5.0))  # never goes back: moved up to the last point
    assert [at for at, _ in steps.points] == [10.0, 12.0, 12.0]


def test_steps_give_the_value_in_force_at_each_time() -> None:
    steps = Steps(1)
    steps.record(10.0, (100.0,))
    steps.record(20.0, (200.0,))
    values = steps.at(np.array([5.0, 10.0, 15.0, 20.0, 25.0]))
    assert np.isnan(values[0, 0])
    assert values[0, 1:].tolist() == [100.0, 100.0, 200.0, 200.0]


def test_trimming_steps_keeps_the_value_in_force_at_the_window_start() -> None:
    steps = Steps(1)
    for at, v in ((1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (10.0, 4.0)):
        steps.record(at, (v,))
    steps.trim(5.0)
    assert steps.points == [(3.0, (3.0,)), (10.0, (4.0,))]
    assert steps.starts_before(5.0)
    assert steps.change_times(5.0) == [10.0]


def test_markers_are_deduplicated_by_key_and_kept_in_order() -> None:
    history = PodHistory(usage_capacity=8, max_markers=3)
    completed = Marker(10.0, "resize-completed", "ResizeCompleted")
    started = Marker(10.0, "resize-started", "ResizeStarted")
    assert history.add_marker(completed, key="e1")
    assert not history.add_marker(completed, key="e1")  # the same event after a relist
    assert history.add_marker(started, key="e2")  # same second: started sorts first
    assert history.add_marker(Marker(5.0, "restarted", "Restarted"), key="e3")
    assert [m.reason for m in history.markers] == ["Restarted", "ResizeStarted", "ResizeCompleted"]
    history.add_marker(Marker(20.0, "paused", "MemoryPaused"))
    assert len(history.markers) == 3  # bounded: the oldest goes
    history.trim(15.0)
    assert [m.reason for m in history.markers] == ["MemoryPaused"]


def test_pauses_open_and_close_once() -> None:
    history = PodHistory(usage_capacity=8)
    assert history.pause_started(10.0)
    assert not history.pause_started(11.0)  # still the same pause
    assert history.pause_ended(15.0)
    assert not history.pause_ended(16.0)
    assert list(history.pauses) == [[10.0, 15.0]]
    history.pause_started(20.0)
    history.trim(18.0)
    assert list(history.pauses) == [[20.0, None]]


def test_within_a_second_a_resize_starts_before_it_completes_whatever_the_write_order() -> None:
    history = PodHistory(usage_capacity=8)
    history.add_marker(Marker(10.0, "resize-completed", "ResizeCompleted", seq=5))
    history.add_marker(Marker(10.0, "resize-started", "ResizeStarted", seq=9))
    history.add_marker(Marker(10.0, "resize-started", "ResizeStarted", "second", seq=7))
    assert [(m.reason, m.seq) for m in history.markers] == [
        ("ResizeStarted", 7),
        ("ResizeStarted", 9),
        ("ResizeCompleted", 5),
    ]
