"""Preemption: the fewest, lowest-priority victims on one node, disruption budgets first.

Pure functions (no I/O), as upstream's ``DefaultPreemption``:

1. On a node, take away every pod of lower priority than the preemptor; if the preemptor
   still does not fit, the node cannot help.
2. Otherwise *reprieve* pods one by one — those whose eviction would violate a
   PodDisruptionBudget first, then the others, each group from the highest priority down —
   keeping every pod without which the preemptor still fits. The rest are the victims.
3. Among candidate nodes pick the one with the fewest budget violations, then the lowest
   highest-victim priority, then the lowest sum of victim priorities, then the fewest
   victims.

The same selection serves a pending pod (need = its requests plus one pod slot, room = the
node's placement room) and a resize (need = the delta, room = the committed room; ephemeral
storage, never resized, needs none), and so
does the acting step, :func:`evict_victims` (the one I/O here): the scheduler and the arbiter
both call it once they chose.
:class:`DisruptionBudgets` answers "would evicting this pod violate a budget" from the PDB
informer's objects, spending ``disruptionsAllowed`` as victims are picked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inplace.api.selectors import LabelSelector, SelectorError
from inplace.client import APIError, APINotFoundError, APITooManyRequestsError

from .framework import PodInfo

if TYPE_CHECKING:
    from .actions import ClusterActions
    from .cache import PodEntry

log = logging.getLogger(__name__)

__all__ = [
    "Candidate",
    "DisruptionBudgets",
    "Room",
    "Victims",
    "evict_victims",
    "pick_node",
    "select_victims",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pod that could be evicted, with what it frees."""

    key: str
    priority: int
    cpu: int
    memory: int
    violates_budget: bool = False
    created: float = 0.0
    ephemeral_storage: int = 0


@dataclass(frozen=True, slots=True)
class Victims:
    node: str
    pods: tuple[Candidate, ...]

    @property
    def budget_violations(self) -> int:
        return sum(1 for p in self.pods if p.violates_budget)

    @property
    def highest_priority(self) -> int:
        return max((p.priority for p in self.pods), default=-(2**31))

    @property
    def priority_sum(self) -> int:
        return sum(p.priority for p in self.pods)


Room = tuple[int, int, int, int]
"""``(cpu milli, memory bytes, pod slots, ephemeral storage bytes)``."""


def _fits(need: Room, room: Room) -> bool:
    return all(n <= 0 or n <= r for n, r in zip(need, room, strict=True))


def _room_without(room: Room, p: Candidate, gone: int = 1) -> Room:
    """``room`` once ``p`` has left (``gone=-1``: once it is back)."""
    return (
        room[0] + gone * p.cpu,
        room[1] + gone * p.memory,
        room[2] + gone,
        room[3] + gone * p.ephemeral_storage,
    )


def select_victims(
    node: str,
    *,
    preemptor_priority: int,
    need: Room,
    room: Room,
    pods: Iterable[Candidate],
) -> Victims | None:
    """The victims on ``node`` that make ``need`` (a :data:`Room`) fit, given the node's
    ``room`` now; None if even removing every lower-priority pod fails. An empty victim
    tuple means it fits already."""
    if _fits(need, room):
        return Victims(node, ())
    lower = [p for p in pods if p.priority < preemptor_priority]
    for p in lower:
        room = _room_without(room, p)
    if not _fits(need, room):
        return None
    # Most important first within each group: higher priority, then older.
    violating = sorted(
        (p for p in lower if p.violates_budget), key=lambda p: (-p.priority, p.created)
    )
    others = sorted(
        (p for p in lower if not p.violates_budget), key=lambda p: (-p.priority, p.created)
    )
    victims: list[Candidate] = []
    for p in (*violating, *others):
        after = _room_without(room, p, gone=-1)
        if _fits(need, after):
            room = after  # reprieved: it stays
        else:
            victims.append(p)
    return Victims(node, tuple(victims))


def pick_node(candidates: Sequence[Victims]) -> Victims | None:
    """upstream ``pickOneNodeForPreemption`` (the criteria that do not need start times)."""
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda v: (v.budget_violations, v.highest_priority, v.priority_sum, len(v.pods)),
    )


class DisruptionBudgets:
    """PodDisruptionBudgets by namespace, with the disruptions they still allow."""

    def __init__(self, budgets: Iterable[Mapping[str, Any]]) -> None:
        self._by_ns: dict[str, list[tuple[str, LabelSelector]]] = {}
        self._allowed: dict[str, int] = {}
        for pdb in budgets:
            meta = pdb.get("metadata") or {}
            ns = meta.get("namespace") or ""
            name = meta.get("name") or ""
            try:
                selector = LabelSelector.from_dict((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            key = f"{ns}/{name}"
            self._by_ns.setdefault(ns, []).append((key, selector))
            self._allowed[key] = int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)

    def matching(self, pod: PodInfo) -> list[str]:
        """Keys (``namespace/name``) of the budgets that select ``pod``."""
        return [
            key
            for key, selector in self._by_ns.get(pod.namespace, ())
            if selector.matches(pod.labels)
        ]

    def would_violate(self, pod: PodInfo) -> bool:
        return any(self._allowed.get(key, 0) <= 0 for key in self.matching(pod))

    def spend(self, pod: PodInfo) -> bool:
        """Charge evicting ``pod``; True if it violates a budget (upstream's
        ``filterPodsWithPDBViolation``, which decrements as it goes)."""
        violates = False
        for key in self.matching(pod):
            if self._allowed.get(key, 0) <= 0:
                violates = True
            self._allowed[key] = self._allowed.get(key, 0) - 1
        return violates

    def candidates(self, pods: Sequence[tuple[PodInfo, int, int]]) -> list[Candidate]:
        """Candidates for ``(pod, cpu it frees, memory it frees)`` triples (and the ephemeral
        storage it requests), the budgets charged lowest priority first (without touching
        this object's counts)."""
        ordered = sorted(pods, key=lambda t: (t[0].priority, -t[0].created))
        scratch = DisruptionBudgets(())
        scratch._by_ns = self._by_ns
        scratch._allowed = dict(self._allowed)
        return [
            Candidate(p.key, p.priority, cpu, mem, scratch.spend(p), p.created, p.ephemeral_storage)
            for p, cpu, mem in ordered
        ]


async def evict_victims(
    actions: ClusterActions,
    preemptor: PodInfo,
    node: str,
    entries: Sequence[PodEntry],
    violating: set[str],
    why: str = "",
) -> None:
    """Evict the chosen victims through the Eviction API (so budgets are honoured), each with a
    ``Preempted`` event. A victim chosen knowing it violates a budget (``violating``: no other
    choice made room) is deleted when the eviction is refused, as upstream's preemption does. A
    victim that could not be evicted is no longer counted as leaving (``entry.victim``)."""
    for entry in entries:
        victim = entry.info
        try:
            try:
                await actions.evict(victim)
            except APITooManyRequestsError:
                if victim.key not in violating:
                    raise
                await actions.delete(victim)
        except APINotFoundError:
            pass
        except (APIError, ConnectionError) as exc:
            log.warning("preempting %s for %s failed: %s", victim.key, preemptor.key, exc)
            entry.victim = False
            continue
        actions.event(
            victim,
            "Normal",
            "Preempted",
            f"Preempted by pod {preemptor.uid} on node {node}{why}",
        )
