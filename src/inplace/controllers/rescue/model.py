"""The rescuer's pure decisions: which running pods to shrink, by how much, to place a pending pod.

Nothing here performs I/O or reads a clock. :mod:`.view` turns API objects (pods, nodes,
VPAs, usage peaks) into the values below; the controller and ``inplace rescue --dry-run`` act
on, or print, what :func:`plan` returns. Units: CPU in millicores, memory in bytes.

The rules, for one pending pod:

* a **donor** is a running pod that allows shrinking (``inplace.dev/shrinkable`` or a VPA in
  ``InPlace``/``InPlaceOrRecreate``), of **equal or lower priority**, not resizing already;
  each of its containers has a **floor** it is never shrunk below (its recent peak usage
  plus a margin, its VPA's ``lowerBound``, its ``minAllowed``: see :func:`container_floor`);
* on a node where the pod passes every rule but room, the **need** is what its requests lack
  of the node's free room; the node can help when its donors' reclaimable room covers the
  need in both CPU and memory (a pod slot cannot be made by shrinking);
* among the sets of donors that cover the need, the **fewest** win, then the **least
  important** (lowest highest priority, then lowest sum of priorities), then the ones with
  the most slack left; among nodes the same order, then the node's name;
* from the donors chosen, least important first, only the need is taken, not all that could
  be; a donor's new requests never go below its floors, and memory is rounded to whole MiB;
* when the pod fits some node as it is, nothing is shrunk (the scheduler will place it), and
  when no shrinking can place it, nothing is shrunk either.

:func:`plan` rescues several pending pods in turn (highest priority, then oldest, first),
each against the room the earlier ones took, so two never count on the same room.
:func:`plan_growth` gives shrunk donors their size back as room allows.

Finding the fewest donors covering a two-dimensional need is a small set-cover problem: the
search below is exact (every subset of the smallest sufficient size is compared) while that
costs at most ``search_limit`` subsets per node, and otherwise keeps the greedy answer
(least important first, then every donor not needed dropped, most important first, as
upstream's preemption reprieves victims).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

__all__ = [
    "DEFAULT_MARGIN",
    "MEMORY_STEP",
    "SEARCH_LIMIT",
    "ContainerShare",
    "Donor",
    "Growth",
    "NodeRoom",
    "Pending",
    "Plan",
    "Rescue",
    "Shrink",
    "Size",
    "choose_donors",
    "container_floor",
    "grow",
    "plan",
    "plan_growth",
]

DEFAULT_MARGIN: Final = 0.15
"""Room left above a container's recent peak usage (15%)."""
MEMORY_STEP: Final = 1024 * 1024
"""Memory requests are set in whole MiB (floors rounded up, new requests down to a step)."""
SEARCH_LIMIT: Final = 20_000
"""Subsets of donors compared per node before the greedy answer is kept."""


@dataclass(frozen=True, slots=True, order=True)
class Size:
    """CPU millicores and memory bytes."""

    cpu: int = 0
    memory: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(self.cpu + other.cpu, self.memory + other.memory)

    def __sub__(self, other: Size) -> Size:
        return Size(self.cpu - other.cpu, self.memory - other.memory)

    def positive(self) -> Size:
        return Size(max(self.cpu, 0), max(self.memory, 0))

    def min(self, other: Size) -> Size:
        return Size(min(self.cpu, other.cpu), min(self.memory, other.memory))

    def max(self, other: Size) -> Size:
        return Size(max(self.cpu, other.cpu), max(self.memory, other.memory))

    def covers(self, need: Size) -> bool:
        return self.cpu >= need.cpu and self.memory >= need.memory

    @property
    def zero(self) -> bool:
        return self.cpu <= 0 and self.memory <= 0

    @staticmethod
    def total(sizes: Iterable[Size]) -> Size:
        cpu = memory = 0
        for size in sizes:
            cpu += size.cpu
            memory += size.memory
        return Size(cpu, memory)


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _round_down(value: int, step: int) -> int:
    return value // step * step


def container_floor(
    peak: Size,
    *,
    margin: float = DEFAULT_MARGIN,
    lower_bound: Size | None = None,
    min_allowed: Size | None = None,
    minimum: Size = Size(),
) -> Size:
    """The least a container may be shrunk to: its recent peak usage plus ``margin``, and no
    less than its VPA's ``lowerBound``, its ``minAllowed`` or ``minimum``; memory in whole
    MiB, rounded up."""
    cpu = math.ceil(peak.cpu * (1.0 + margin))
    memory = math.ceil(peak.memory * (1.0 + margin))
    floor = Size(cpu, memory).max(minimum)
    for bound in (lower_bound, min_allowed):
        if bound is not None:
            floor = floor.max(bound)
    return Size(floor.cpu, _round_up(floor.memory, MEMORY_STEP))


# -- the values decisions are made on ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerShare:
    """One container of a donor: the requests it runs with and the least it may be given."""

    name: str
    request: Size
    floor: Size

    @property
    def reclaimable(self) -> Size:
        return (self.request - self.floor).positive()


@dataclass(frozen=True)
class Donor:
    """A running pod that may be shrunk.

    ``charge`` is what the pod holds on its node (the scheduler's placement charge); ``fixed``
    is what it would hold with every container in ``containers`` at zero (its init
    containers, sidecars and overhead), so shrinking the containers' total to ``S`` leaves
    ``max(S + charge - requested, fixed)`` — exact for a shrink, an upper bound for growth.
    """

    key: str
    node: str
    priority: int
    containers: tuple[ContainerShare, ...]
    charge: Size
    fixed: Size = Size()
    created: float = 0.0

    @property
    def requested(self) -> Size:
        return Size.total(c.request for c in self.containers)

    def charge_at(self, total: Size) -> Size:
        """The pod's charge once its containers' requests add up to ``total``."""
        return (total + self.charge - self.requested).max(self.fixed)

    @functools.cached_property
    def reclaimable(self) -> Size:
        """How much the node gains when every container is at its floor."""
        floors = Size.total(c.request.min(c.floor) for c in self.containers)
        return (self.charge - self.charge_at(floors)).positive()


@dataclass(frozen=True, slots=True)
class NodeRoom:
    """A node's free room: allocatable minus what its pods hold."""

    name: str
    free: Size
    free_pods: int = 1


@dataclass(frozen=True, slots=True)
class Pending:
    """A pod the scheduler could not place for lack of CPU or memory."""

    key: str
    priority: int
    request: Size
    nodes: frozenset[str] | None = None
    """The nodes it may run on by every rule but room (None: all of them)."""
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class Shrink:
    """New requests for some containers of one donor, and what that frees on its node."""

    donor: str
    node: str
    containers: tuple[tuple[str, Size, Size], ...]
    """``(container, requests now, requests after)`` for each container that changes."""
    freed: Size


@dataclass(frozen=True, slots=True)
class Rescue:
    """Shrink these donors on ``node``, and the pending pod fits there."""

    pending: str
    node: str
    shrinks: tuple[Shrink, ...]

    @property
    def donors(self) -> tuple[str, ...]:
        return tuple(s.donor for s in self.shrinks)


@dataclass(frozen=True, slots=True)
class Plan:
    """What :func:`plan` decided for each pending pod."""

    rescues: tuple[Rescue, ...] = ()
    fits: Mapping[str, str] | None = None
    """Pending pods that fit a node as it is (key → node): nothing to shrink for them."""
    unplaced: tuple[str, ...] = ()
    """Pending pods no shrinking can place."""
    rooms: tuple[NodeRoom, ...] = ()
    """Every node's room once the pods placed above are (the room left for anything else)."""


# -- choosing donors ---------------------------------------------------------------------------


def _importance(donor: Donor) -> tuple[int, float, str]:
    """Least important first: lower priority, then the younger pod, then the name."""
    return (donor.priority, -donor.created, donor.key)


def _lower_bound(need: Size, candidates: Sequence[Donor]) -> int:
    """No set smaller than this can cover ``need`` (the largest shares, per resource)."""
    bound = 1
    for amount, values in (
        (need.cpu, [d.reclaimable.cpu for d in candidates]),
        (need.memory, [d.reclaimable.memory for d in candidates]),
    ):
        if amount <= 0:
            continue
        got = 0
        for count, value in enumerate(sorted(values, reverse=True), start=1):
            got += value
            if got >= amount:
                bound = max(bound, count)
                break
    return bound


def _greedy(need: Size, candidates: Sequence[Donor]) -> list[Donor] | None:
    """Least important first until the need is covered, then every donor not needed dropped,
    most important first."""
    chosen: list[Donor] = []
    got = Size()
    for donor in sorted(candidates, key=_importance):
        if got.covers(need):
            break
        chosen.append(donor)
        got += donor.reclaimable
    if not got.covers(need):
        return None
    for donor in sorted(chosen, key=_importance, reverse=True):
        if (got - donor.reclaimable).covers(need):
            chosen.remove(donor)
            got -= donor.reclaimable
    return chosen


SetKey = tuple[int, int, int, float, tuple[str, ...]]


def _set_key(need: Size, donors: Sequence[Donor]) -> SetKey:
    """Fewest, then least important, then the smallest share of the donors' slack taken
    (in the resource most strained), then names for a stable answer."""
    slack = Size.total(d.reclaimable for d in donors)
    share = max(
        need.cpu / slack.cpu if need.cpu > 0 else 0.0,
        need.memory / slack.memory if need.memory > 0 else 0.0,
    )
    return (
        len(donors),
        max(d.priority for d in donors),
        sum(d.priority for d in donors),
        share,
        tuple(sorted(d.key for d in donors)),
    )


def _fewest(need: Size, candidates: Sequence[Donor], search_limit: int) -> list[Donor] | None:
    greedy = _greedy(need, candidates)
    if greedy is None:
        return None
    n = len(candidates)
    for size in range(_lower_bound(need, candidates), len(greedy) + 1):
        if math.comb(n, size) > search_limit:
            break
        best: tuple[Donor, ...] | None = None
        best_key: SetKey | None = None
        for subset in itertools.combinations(candidates, size):
            if not Size.total(d.reclaimable for d in subset).covers(need):
                continue
            key = _set_key(need, subset)
            if best_key is None or key < best_key:
                best, best_key = subset, key
        if best is not None:
            return list(best)
    return greedy


def _shrink(donor: Donor, take: Size) -> Shrink:
    """Take ``take`` off the donor's charge: from the containers with the most to give first,
    never below a floor, memory requests set to whole MiB."""
    cpu_left, memory_left = take.cpu, take.memory
    changes: list[tuple[str, Size, Size]] = []
    for share in sorted(
        donor.containers, key=lambda c: (-c.reclaimable.cpu, -c.reclaimable.memory, c.name)
    ):
        give = share.reclaimable
        cpu = min(give.cpu, cpu_left)
        memory = min(give.memory, memory_left)
        if cpu <= 0 and memory <= 0:
            continue
        new_memory = share.request.memory
        if memory > 0:
            new_memory = max(
                _round_down(share.request.memory - memory, MEMORY_STEP), share.floor.memory
            )
        after = Size(share.request.cpu - max(cpu, 0), new_memory)
        cpu_left -= max(cpu, 0)
        memory_left -= share.request.memory - new_memory
        changes.append((share.name, share.request, after))
    total_after = donor.requested - Size.total(before - after for _, before, after in changes)
    freed = donor.charge - donor.charge_at(total_after)
    changes.sort()
    return Shrink(donor.key, donor.node, tuple(changes), freed.positive())


def _takes(need: Size, donors: Sequence[Donor]) -> list[tuple[Donor, Size]]:
    """Only the need, least important donor first."""
    out: list[tuple[Donor, Size]] = []
    left = need
    for donor in sorted(donors, key=_importance):
        take = donor.reclaimable.min(left.positive())
        left = left - take
        if not take.zero:
            out.append((donor, take))
    return out


def choose_donors(
    pending: Pending,
    nodes: Iterable[NodeRoom],
    donors: Iterable[Donor],
    *,
    search_limit: int = SEARCH_LIMIT,
) -> Rescue | str | None:
    """The node and donors for ``pending``: a :class:`Rescue`; the name of a node it fits as
    it is (nothing to shrink); or None when no shrinking can place it."""
    by_node: dict[str, list[Donor]] = {}
    for donor in donors:
        by_node.setdefault(donor.node, []).append(donor)
    best: tuple[SetKey, str, list[Donor], Size] | None = None
    for node in sorted(nodes, key=lambda n: n.name):
        if pending.nodes is not None and node.name not in pending.nodes:
            continue
        if node.free_pods < 1:
            continue
        need = (pending.request - node.free).positive()
        if need.zero:
            return node.name
        candidates = [
            d
            for d in by_node.get(node.name, ())
            if d.priority <= pending.priority
            and (
                (need.cpu > 0 and d.reclaimable.cpu > 0)
                or (need.memory > 0 and d.reclaimable.memory > 0)
            )
        ]
        if not Size.total(d.reclaimable for d in candidates).covers(need):
            continue
        chosen = _fewest(need, candidates, search_limit)
        if chosen is None:
            continue
        key = _set_key(need, chosen)
        if best is None or key < best[0]:
            best = (key, node.name, chosen, need)
    if best is None:
        return None
    _, node_name, chosen, need = best
    shrinks = tuple(_shrink(donor, take) for donor, take in _takes(need, chosen))
    return Rescue(pending.key, node_name, shrinks)


def _after(donor: Donor, shrink: Shrink) -> Donor:
    """The donor once ``shrink`` is applied."""
    new = {name: after for name, _, after in shrink.containers}
    containers = tuple(replace(c, request=new.get(c.name, c.request)) for c in donor.containers)
    return replace(donor, containers=containers, charge=donor.charge - shrink.freed)


def plan(
    pending: Iterable[Pending],
    nodes: Iterable[NodeRoom],
    donors: Iterable[Donor],
    *,
    search_limit: int = SEARCH_LIMIT,
) -> Plan:
    """Every pending pod in turn (highest priority, then oldest, first), each against the
    room and donors the ones before it left."""
    rooms = {n.name: n for n in nodes}
    pool = {d.key: d for d in donors}
    rescues: list[Rescue] = []
    fits: dict[str, str] = {}
    unplaced: list[str] = []
    for pod in sorted(pending, key=lambda p: (-p.priority, p.created, p.key)):
        choice = choose_donors(pod, rooms.values(), pool.values(), search_limit=search_limit)
        if choice is None:
            unplaced.append(pod.key)
            continue
        node_name = choice if isinstance(choice, str) else choice.node
        room = rooms[node_name]
        freed = Size()
        if isinstance(choice, Rescue):
            for shrink in choice.shrinks:
                pool[shrink.donor] = _after(pool[shrink.donor], shrink)
                freed += shrink.freed
            rescues.append(choice)
        else:
            fits[pod.key] = node_name
        rooms[node_name] = replace(
            room, free=room.free + freed - pod.request, free_pods=room.free_pods - 1
        )
    return Plan(tuple(rescues), fits, tuple(unplaced), tuple(rooms.values()))


# -- growing back ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Growth:
    """New (larger) requests for some containers of a shrunk pod."""

    pod: str
    node: str
    containers: tuple[tuple[str, Size, Size], ...]
    """``(container, requests now, requests after)`` for each container that grows."""
    complete: bool
    """The pod is back at its goal in every container."""


def grow(
    key: str,
    node: str,
    current: Mapping[str, Size],
    goal: Mapping[str, Size],
    room: Size,
) -> Growth | None:
    """Raise ``current`` toward ``goal`` per container, using at most ``room`` in all; never
    lowers anything. None when nothing can grow (no room, or already there)."""
    left = room.positive()
    changes: list[tuple[str, Size, Size]] = []
    complete = True
    for name in sorted(current):
        now = current[name]
        want = goal.get(name, now).max(now)
        add = (want - now).min(left)
        memory = add.memory
        if memory > 0 and now.memory + memory < want.memory:
            memory = max(_round_down(now.memory + memory, MEMORY_STEP) - now.memory, 0)
        add = Size(add.cpu, memory)
        after = now + add
        if after != want:
            complete = False
        if not add.zero:
            changes.append((name, now, after))
            left = left - add
    if not changes:
        return None
    return Growth(key, node, tuple(changes), complete)


def plan_growth(
    wanted: Iterable[tuple[str, str, int, Mapping[str, Size], Mapping[str, Size]]],
    rooms: Iterable[NodeRoom],
) -> list[Growth]:
    """Growth for ``(pod, node, priority, current, goal)`` entries, the most important first
    on each node, each within the room the ones before it left."""
    free = {r.name: r.free for r in rooms}
    out: list[Growth] = []
    for key, node, _priority, current, goal in sorted(wanted, key=lambda w: (-w[2], w[0])):
        room = free.get(node)
        if room is None:
            continue
        growth = grow(key, node, current, goal, room)
        if growth is None:
            continue
        used = Size.total(after - before for _, before, after in growth.containers)
        free[node] = room - used
        out.append(growth)
    return out
