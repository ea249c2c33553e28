from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.client import (
    ItemExponentialRateLimiter,
    ShutDown,
    WorkQueue,
    run_workers,
)
from tests.fakeclock import FakeClock


def drain(q: WorkQueue[str]) -> list[str]:
    """Take every ready key without waiting (and mark each done)."""
    out = []
    while len(q):
        key = q._queue[0]
        out.append(key)
        q._queue.popleft()
        q._dirty.discard(key)
    return out


async def test_dedupes_pending_keys() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for key in ["a", "b", "a", "a", "b", "c"]:
        q.add(key)
    assert len(q) == 3
    assert q.len() == 3
    assert [await q.get(), await q.get(), await q.get()] == ["a", "b", "c"]
    assert len(q) == 0


async def test_key_being_processed_is_not_handed_out_twice() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    assert await q.get() == "a"
    q.add("a")  # changed while processing: remembered, not queued
    q.add("a")
    assert len(q) == 0
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not second.done()
    q.done("a")  # now it is queued again, once
    assert await asyncio.wait_for(second, 1) == "a"
    q.done("a")
    assert len(q) == 0


async def test_done_without_readd_does_not_requeue() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    key = await q.get()
    q.done(key)
    assert len(q) == 0
    assert not q.is_processing("a")


async def test_add_after_orders_by_time() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("late", 2.0)
    q.add_after("early", 1.0)
    q.add_after("now", 0)
    assert [await q.get()] == ["now"]
    assert q.num_waiting() == 2
    clock.advance(0.999)
    assert len(q) == 0
    clock.advance(0.001)
    assert len(q) == 1 and await q.get() == "early"
    clock.advance(5)
    assert await q.get() == "late"


async def test_add_after_earliest_time_wins() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 5.0)
    q.add_after("a", 1.0)
    q.add_after("a", 3.0)  # later than the pending 1.0: ignored
    assert q.num_waiting() == 1
    clock.advance(1.0)
    assert await q.get() == "a"
    q.done("a")
    clock.advance(10.0)
    assert len(q) == 0
    assert clock.pending == 0


async def test_backoff_grows_and_is_capped() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialRateLimiter(base_delay=0.005, max_delay=0.04)
    )
    expected = [0.005, 0.01, 0.02, 0.04, 0.04]
    for i, delay in enumerate(expected):
        q.add_rate_limited("k")
        assert q.num_requeues("k") == i + 1
        clock.advance(delay * 0.99)
        assert len(q) == 0, f"ready too early at attempt {i}"
        clock.advance(delay * 0.02)
        assert await q.get() == "k"
        q.done("k")
    q.forget("k")
    assert q.num_requeues("k") == 0
    q.add_rate_limited("k")
    clock.advance(0.005)
    assert await q.get() == "k"


def test_default_rate_limiter_matches_client_go() -> None:
    rl: ItemExponentialRateLimiter[str] = ItemExponentialRateLimiter()
    delays = [rl.when("x") for _ in range(30)]
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert delays[-1] == 1000.0
    assert all(b >= a for a, b in itertools.pairwise(delays))
    for _ in range(200):  # never overflows
        assert rl.when("x") == 1000.0
    assert rl.when("other") == 0.005
    with pytest.raises(ValueError):
        ItemExponentialRateLimiter(base_delay=0)


async def test_shutdown_wakes_getters_and_stops_everything() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    waiters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.add_after("later", 1)
    q.shutdown()
    for w in waiters:
        with pytest.raises(ShutDown):
            await w
    with pytest.raises(ShutDown):
        await q.get()
    q.add("x")
    q.add_rate_limited("y")
    assert len(q) == 0
    assert clock.pending == 0
    assert q.shutting_down


async def test_cancelled_getter_does_not_lose_a_wakeup() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes `first` ...
    first.cancel()  # ... which is cancelled before it can take the key
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) == "a"


async def test_real_clock_add_after() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("a", 0.01)
    assert await asyncio.wait_for(q.get(), 5) == "a"


async def test_run_workers_requeues_failures_and_forgets_success() -> None:
    q: WorkQueue[str] = WorkQueue(
        rate_limiter=ItemExponentialRateLimiter(base_delay=0.001, max_delay=0.01), name="t"
    )
    attempts: dict[str, int] = {}
    requeues_seen: list[int] = []
    done = asyncio.Event()

    async def reconcile(key: str) -> None:
        attempts[key] = attempts.get(key, 0) + 1
        requeues_seen.append(q.num_requeues(key))
        if attempts[key] < 3:
            raise RuntimeError("not yet")
        done.set()

    q.add("a")
    task = asyncio.create_task(run_workers(q, reconcile, workers=2))
    await asyncio.wait_for(done.wait(), 5)
    await asyncio.sleep(0)
    assert attempts == {"a": 3}
    assert requeues_seen == [0, 1, 2]
    assert q.num_requeues("a") == 0  # forgotten on success
    q.shutdown()
    await asyncio.wait_for(task, 5)


async def test_run_workers_never_runs_a_key_twice_at_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    active: set[str] = set()
    overlap: list[str] = []
    max_parallel = 0
    processed: list[str] = []

    async def reconcile(key: str) -> None:
        nonlocal max_parallel
        if key in active:
            overlap.append(key)
        active.add(key)
        max_parallel = max(max_parallel, len(active))
        await asyncio.sleep(0.002)
        if len(processed) < 40:
            q.add(key)  # a change arrives while processing
        processed.append(key)
        active.discard(key)

    for key in ["a", "b", "c", "d"]:
        q.add(key)
    task = asyncio.create_task(run_workers(q, reconcile, workers=8))
    async with asyncio.timeout(5):
        while len(processed) < 40 or len(q) or any(q.is_processing(k) for k in "abcd"):
            await asyncio.sleep(0.005)
    q.shutdown()
    await asyncio.wait_for(task, 5)
    assert overlap == []
    assert max_parallel > 1  # different keys do run concurrently
    assert set(processed) == {"a", "b", "c", "d"}


async def test_run_workers_requeue_after() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    calls: list[str] = []

    async def reconcile(key: str) -> float | None:
        calls.append(key)
        return 30.0 if len(calls) == 1 else None

    q.add("a")
    task = asyncio.create_task(run_workers(q, reconcile, workers=1))
    async with asyncio.timeout(5):
        while q.num_waiting() == 0:
            await asyncio.sleep(0.001)
    assert calls == ["a"]
    clock.advance(30.0)
    async with asyncio.timeout(5):
        while len(calls) < 2:
            await asyncio.sleep(0.001)
    q.shutdown()
    await asyncio.wait_for(task, 5)
    assert calls == ["a", "a"]


ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from("abc")),
        st.tuples(st.just("get"), st.just("")),
        st.tuples(st.just("done"), st.just("")),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_queue_model(script: list[tuple[str, str]]) -> None:
    """Against a simple model: no key in two workers, nothing lost, pending keys deduped."""

    async def run() -> None:
        q: WorkQueue[str] = WorkQueue(clock=FakeClock())
        in_flight: list[str] = []
        owed: set[str] = set()  # keys added since they were last handed out
        for op, key in script:
            if op == "add":
                q.add(key)
                owed.add(key)
            elif op == "get" and len(q):
                got = await q.get()
                assert got not in in_flight
                assert got in owed
                owed.discard(got)
                in_flight.append(got)
            elif op == "done" and in_flight:
                q.done(in_flight.pop(0))
            assert len(q) == len(set(q._queue))
            assert not set(q._queue) & set(in_flight)
        for key in in_flight:
            q.done(key)
        assert set(drain(q)) == owed

    asyncio.run(run())
