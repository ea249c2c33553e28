"""A manual clock for tests (the :class:`inplace.client.Clock` protocol): time moves only
when :meth:`FakeClock.advance` is called. Test-only, so it lives under ``tests/``."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from inplace.client.workqueue import TimerHandle

__all__ = ["FakeClock"]


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A manual clock for tests: time moves only when :meth:`advance` is called, and due
    callbacks run synchronously inside it, in time order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and fire every callback that became due."""
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            self._now = max(self._now, when)
            if not timer.cancelled:
                timer.callback()
        self._now = target

    @property
    def pending(self) -> int:
        """Number of scheduled, not yet fired, not cancelled callbacks."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)
