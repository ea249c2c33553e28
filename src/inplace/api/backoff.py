"""Exponential back-off: the one rule every retry in the project follows.

A delay starts at ``initial`` and doubles up to ``maximum``. Components keep their own
state (the previous delay or an attempt count) and ask this for the next one, so the
policy stays a pure value that tests can table.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RESIZE_RETRY", "Backoff"]


@dataclass(frozen=True)
class Backoff:
    initial: float
    maximum: float
    factor: float = 2.0

    def next(self, previous: float | None) -> float:
        """The delay after ``previous`` (None or 0 for the first retry)."""
        if not previous:
            return self.initial
        return min(previous * self.factor, self.maximum)

    def after(self, attempts: int) -> float:
        """The delay before retry number ``attempts + 1`` (0 for the first)."""
        return min(self.initial * self.factor ** min(max(attempts, 0), 64), self.maximum)


RESIZE_RETRY = Backoff(1.0, 300.0)
"""Resizes that wait (Deferred, Error) are retried on events first, and on this timer: 1 s
doubling to 5 min (DESIGN.md)."""
