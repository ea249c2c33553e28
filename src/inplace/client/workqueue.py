"""A rate-limited work queue with client-go's semantics, for level-triggered controllers.

Event handlers only ``add`` a key (``namespace/name``); workers ``get`` a key, reconcile it from
the informer cache, and call ``done``. The queue guarantees, like client-go's ``workqueue``:

* **dedupe** — a key waiting in the queue is queued once, however often it is added;
* **one worker per key** — a key being processed is never handed to a second worker; if it is
  added meanwhile it is marked *dirty* and queued again when ``done`` is called, so the change
  that arrived mid-reconcile is never lost;
* **delays** — ``add_after`` holds a key until its time (the earliest pending time wins);
* **per-item backoff** — ``add_rate_limited`` delays a key by ``base * 2**failures`` (5 ms
  doubling to 1000 s by default) until ``forget`` resets it on success.

Time comes from an injectable :class:`Clock` (``monotonic()`` + ``call_at()``); the default uses
the running event loop's timers, and the tests' ``FakeClock`` (``tests/fakeclock.py``) advances
time without sleeping. :func:`run_workers` is the standard worker loop: reconcile, forget on
success, requeue rate-limited on exception.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

from inplace.api.backoff import Backoff

__all__ = [
    "Clock",
    "ItemExponentialRateLimiter",
    "LoopClock",
    "ShutDown",
    "TimerHandle",
    "WorkQueue",
    "run_workers",
]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down: the worker should exit."""


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Time source for delays: a monotonic reading and a way to be called back at a time."""

    def monotonic(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` (in the event loop) once ``monotonic() >= when``."""
        ...


class LoopClock:
    """The real clock: :func:`time.monotonic` and the running loop's timers."""

    def monotonic(self) -> float:
        return time.monotonic()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.monotonic()), callback)


class ItemExponentialRateLimiter(Generic[K]):
    """Per-key exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError("need 0 < base_delay <= max_delay")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._backoff = Backoff(base_delay, max_delay)
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        """The delay for this failure of ``key``; counts the failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return self._backoff.after(failures)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


class WorkQueue(Generic[K]):
    """Deduplicating, rate-limited work queue (see the module docstring for the guarantees).

    ``add``/``add_after``/``add_rate_limited``/``forget``/``done``/``shutdown`` are plain
    synchronous calls, so informer event handlers can enqueue without awaiting.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        rate_limiter: ItemExponentialRateLimiter[K] | None = None,
        name: str = "",
    ) -> None:
        self.name = name
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.rate_limiter: ItemExponentialRateLimiter[K] = (
            rate_limiter if rate_limiter is not None else ItemExponentialRateLimiter()
        )
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: dict[K, tuple[float, TimerHandle]] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False

    # -- adding ------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` now (no-op if already queued; deferred until ``done`` if processing)."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds; if it is already waiting, the earlier time
        wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        when = self.clock.monotonic() + delay
        existing = self._waiting.get(key)
        if existing is not None:
            if existing[0] <= when:
                return
            existing[1].cancel()
        handle = self.clock.call_at(when, lambda: self._fire(key, when))
        self._waiting[key] = (when, handle)

    def _fire(self, key: K, when: float) -> None:
        entry = self._waiting.get(key)
        if entry is not None and entry[0] == when:
            del self._waiting[key]
            self.add(key)

    def add_rate_limited(self, key: K) -> None:
        """Queue ``key`` after its next backoff delay (``num_requeues`` grows by one)."""
        if self._shutting_down:
            return
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (call after it was processed successfully)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many times ``key`` was rate-limited since it was last forgotten."""
        return self.rate_limiter.num_requeues(key)

    # -- processing --------------------------------------------------------------------------

    async def get(self) -> K:
        """Wait for a key and mark it processing; raises :class:`ShutDown` once shut down.

        The caller must call :meth:`done` with the key when finished.
        """
        loop = asyncio.get_running_loop()
        while True:
            if self._shutting_down:
                raise ShutDown(self.name)
            if self._queue:
                key = self._queue.popleft()
                self._processing.add(key)
                self._dirty.discard(key)
                return key
            fut: asyncio.Future[None] = loop.create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                try:
                    self._getters.remove(fut)
                except ValueError:
                    # Woken but cancelled before taking the key: pass the wake-up on.
                    if self._queue:
                        self._wake_one()
                raise

    def done(self, key: K) -> None:
        """Mark ``key`` finished; if it was added while processing, queue it again."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def shutdown(self) -> None:
        """Stop handing out keys: current and future ``get`` calls raise :class:`ShutDown`;
        adds are ignored and pending delays are cancelled."""
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    # -- inspection --------------------------------------------------------------------------

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        """Keys ready to be handed out (not counting processing or delayed ones)."""
        return len(self._queue)

    def len(self) -> int:
        """Same as ``len(queue)``."""
        return len(self._queue)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def num_waiting(self) -> int:
        """Keys held back by ``add_after`` / ``add_rate_limited``."""
        return len(self._waiting)


async def run_workers(
    queue: WorkQueue[K],
    reconcile: Callable[[K], Awaitable[float | None]],
    workers: int = 1,
) -> None:
    """Process ``queue`` with ``workers`` concurrent workers until it is shut down.

    Success forgets the key's backoff; if ``reconcile`` returns a number, the key is also
    queued again after that many seconds (a periodic re-check). An exception is logged and
    the key is requeued rate-limited. Cancelling this coroutine cancels the workers.
    """
    if workers < 1:
        raise ValueError("workers must be >= 1")

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                requeue_after = await reconcile(key)
            except asyncio.CancelledError:
                queue.done(key)
                raise
            except Exception:
                log.exception(
                    "reconcile %r failed (queue %s, attempt %d); requeued with backoff",
                    key,
                    queue.name or "-",
                    queue.num_requeues(key) + 1,
                )
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
                if requeue_after is not None:
                    queue.add_after(key, requeue_after)
            queue.done(key)

    async with asyncio.TaskGroup() as tg:
        for i in range(workers):
            tg.create_task(worker(), name=f"workqueue-{queue.name or 'q'}-worker-{i}")
