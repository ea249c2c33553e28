"""Expectations: client-go's ``ControllerExpectations``, so nothing is created or deleted twice.

A controller that creates three pods and reconciles again before its informer has seen them
would count too few pods and create three more. So, before it creates or deletes, it records
what it expects to see (:meth:`Expectations.expect_creations`, :meth:`expect_deletions`); the
informer's handlers record what it sees (:meth:`creation_observed`, :meth:`deletion_observed`);
and a reconcile acts on its counts only once :meth:`satisfied` (everything expected has been
seen, or the record expired, or there is none). Deletions are tracked by pod key, as
upstream's ``UIDTrackingControllerExpectations``, so a deletion is counted once whether the
informer reports it as a ``deletionTimestamp`` update or as the final delete.

The records are in memory only, and that is enough: a restarted controller starts with none,
and its informers list everything (the pods it created before it died included) before any
reconcile runs. ``ttl`` (upstream: 5 minutes) bounds how long a lost event can stall a key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["EXPECTATIONS_TTL", "Expectations"]

EXPECTATIONS_TTL = 300.0
"""Upstream's ``ExpectationsTimeout``: a record older than this counts as satisfied."""


@dataclass(slots=True)
class _Record:
    adds: int = 0
    deletes: set[str] = field(default_factory=set)
    dels: int = 0
    """Deletions expected without a key (Jobs count them, as upstream's job controller)."""
    stamp: float = 0.0

    def fulfilled(self) -> bool:
        return self.adds <= 0 and self.dels <= 0 and not self.deletes


class Expectations:
    """Per controller key (``namespace/name``): creations and deletions still to be observed."""

    def __init__(self, clock: Callable[[], float], *, ttl: float = EXPECTATIONS_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._records: dict[str, _Record] = {}

    def satisfied(self, key: str) -> bool:
        """May the controller trust its cache for ``key``? True when nothing is expected, when
        everything expected was observed, or when the record is older than the TTL."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.fulfilled():
            return True
        return self._clock() - record.stamp > self._ttl

    def expect_creations(self, key: str, count: int) -> None:
        """About to create ``count`` objects for ``key`` (replaces any earlier record)."""
        self._records[key] = _Record(adds=count, stamp=self._clock())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        """About to delete the objects named ``pod_keys`` for ``key``."""
        self._records[key] = _Record(deletes=set(pod_keys), stamp=self._clock())

    def expect_deletion_count(self, key: str, count: int) -> None:
        """About to delete ``count`` objects whose deletion is observed by count only."""
        self._records[key] = _Record(dels=count, stamp=self._clock())

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None and record.adds > 0:
            record.adds -= 1

    def deletion_observed(self, key: str, pod_key: str | None = None) -> None:
        """A deletion was seen (or will never be: the request failed). With ``pod_key`` only
        a deletion that was expected by key counts; without, one counted deletion."""
        record = self._records.get(key)
        if record is None:
            return
        if pod_key is not None and pod_key in record.deletes:
            record.deletes.discard(pod_key)
        elif pod_key is None and record.dels > 0:
            record.dels -= 1

    def lower_creations(self, key: str, count: int) -> None:
        """``count`` creations that were expected will never happen (skipped or failed)."""
        record = self._records.get(key)
        if record is not None:
            record.adds = max(0, record.adds - count)

    def pending(self, key: str) -> tuple[int, int]:
        """(creations, deletions) still expected for ``key``, for logs and tests."""
        record = self._records.get(key)
        if record is None:
            return 0, 0
        return max(record.adds, 0), len(record.deletes) + max(record.dels, 0)

    def forget(self, key: str) -> None:
        """The controller object is gone: drop its record."""
        self._records.pop(key, None)
