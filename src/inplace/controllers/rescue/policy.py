"""One pass of the rescuer, pure: which rescues to start and which shrunk pods to grow.

The controller (over the API) and the replay (over a simulated cluster) both call
:func:`decide` with the cluster as :mod:`.model` values and what they have in flight, and
carry out what it returns. The rules:

* a rescue in flight (its donors resizing, the scheduler yet to retry) holds its pending pod
  and its donors out of planning until the pod is placed, or ``grace`` after every donor's
  shrink was applied (the scheduler retries at once when room is freed: a pod still pending
  then lost its room to another, which the scheduler may place on a node other than the one
  planned), or ``timeout`` after it started; then it is *expired*, and the pod is planned
  afresh with the room there is (nothing is shrunk twice for it meanwhile);
* the other pending pods are planned together (:func:`~.model.plan`);
* a node is *under pressure* while a rescue in flight or just planned targets it, or a
  pending pod fits it as it is (the scheduler is about to use the room);
* a shrunk pod grows back toward its goal (its VPA's target, else its original requests)
  on a node not under pressure, as room allows; under pressure it grows only as far as its
  floor (its usage rose since it was shrunk), never beyond its goal. The most important pods
  grow first; growth never uses room a planned placement counts on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from .model import (
    SEARCH_LIMIT,
    Donor,
    Growth,
    NodeRoom,
    Pending,
    Plan,
    Rescue,
    Size,
    plan,
    plan_growth,
)

__all__ = ["DEFAULT_GRACE", "DEFAULT_TIMEOUT", "Decision", "InFlight", "Shrunk", "decide"]

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds a rescue may stay in flight before its pending pod is planned again."""
DEFAULT_GRACE: Final = 2.0
"""Seconds the scheduler is given to place a pending pod once its donors' shrinks applied."""


@dataclass(frozen=True, slots=True)
class InFlight:
    """A rescue started: its donors were asked to shrink for ``pending`` at ``since``."""

    pending: str
    node: str
    donors: tuple[str, ...]
    since: float
    settled: float | None = None
    """When every donor's shrink was seen applied (None: not yet)."""

    def expired(self, now: float, *, timeout: float, grace: float) -> bool:
        if self.settled is not None and now - self.settled >= grace:
            return True
        return now - self.since >= timeout

    def deadline(self, *, timeout: float, grace: float) -> float:
        """When :meth:`expired` turns True, unless something changes first."""
        late = self.since + timeout
        return late if self.settled is None else min(late, self.settled + grace)


@dataclass(frozen=True, slots=True)
class Shrunk:
    """A pod the rescuer shrank that is not back at its goal, settled (no resize in flight)."""

    key: str
    node: str
    priority: int
    current: Mapping[str, Size]
    goal: Mapping[str, Size]
    floor: Mapping[str, Size] = field(default_factory=dict)
    """Per container, the least it may hold now (peak usage plus margin...); empty when
    unknown (its usage history is too short)."""


@dataclass(frozen=True, slots=True)
class Decision:
    rescues: tuple[Rescue, ...]
    growths: tuple[Growth, ...]
    expired: tuple[str, ...]
    """Pending pods whose rescue in flight timed out."""
    plan: Plan


def decide(
    pending: Iterable[Pending],
    rooms: Iterable[NodeRoom],
    donors: Iterable[Donor],
    shrunk: Iterable[Shrunk],
    inflight: Mapping[str, InFlight],
    *,
    now: float,
    timeout: float = DEFAULT_TIMEOUT,
    grace: float = DEFAULT_GRACE,
    search_limit: int = SEARCH_LIMIT,
) -> Decision:
    expired = tuple(
        sorted(k for k, f in inflight.items() if f.expired(now, timeout=timeout, grace=grace))
    )
    active = {k: f for k, f in inflight.items() if k not in expired}
    busy = {d for f in active.values() for d in f.donors}
    result = plan(
        [p for p in pending if p.key not in active],
        rooms,
        [d for d in donors if d.key not in busy],
        search_limit=search_limit,
    )
    pressure = {f.node for f in active.values()}
    pressure.update(r.node for r in result.rescues)
    pressure.update((result.fits or {}).values())
    wanted = []
    for pod in shrunk:
        if pod.key in busy:
            continue
        goal = dict(pod.goal)
        if pod.node in pressure:
            goal = {
                name: want.min(pod.floor[name]) if name in pod.floor else pod.current[name]
                for name, want in goal.items()
                if name in pod.current
            }
        wanted.append((pod.key, pod.node, pod.priority, pod.current, goal))
    growths = plan_growth(wanted, result.rooms)
    return Decision(result.rescues, tuple(growths), expired, result)
