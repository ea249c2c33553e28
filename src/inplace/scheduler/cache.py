"""The scheduler's node cache: every node's allocatable and running totals, in numpy arrays.

Each node owns one *slot* (an index into the arrays); a removed node's slot is reused. Per
slot the cache keeps:

* ``alloc_cpu`` (millicores), ``alloc_mem`` (bytes), ``alloc_pods``, ``alloc_storage``
  (ephemeral storage, bytes; none reported is none to give, as upstream) — from
  ``status.allocatable`` (``capacity`` when allocatable is absent);
* ``req_cpu``, ``req_mem``, ``req_pods``, ``req_storage`` — the **placement** totals: every
  pod bound or assumed on the node, charged ``max(desired unless Infeasible, allocated,
  actual)``, so a resize in flight (or waiting) holds its room against new pods (ephemeral
  storage, never resized, at its request);
* ``com_cpu``, ``com_mem`` — the **committed** totals the resize arbiter decides with: a pod
  whose resize is not approved yet counts at what it holds (``max(allocated, actual)``); an
  approved one at its placement charge;
* ``valid``, ``unschedulable``, ``tainted`` masks, and labels/taints for the other filters.

Totals are updated by ±pod (never recomputed), and ``generation`` moves whenever anything a
filter might cache changes (labels, taints, node set), so a plugin can memoize a mask keyed
by it. Pods the scheduler placed but whose binding has not been observed yet are *assumed*
(:meth:`NodeCache.assume`), charged like bound ones, and dropped again by
:meth:`NodeCache.forget` when binding fails; the informer's update confirms them. The
scheduler reads and writes this cache only from the event loop, in synchronous blocks, so a
scheduling cycle and a resize decision always see one consistent state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from inplace.api.quantity import read_quantity
from inplace.api.resources import EPHEMERAL_STORAGE

from .framework import PodInfo

__all__ = ["NodeCache", "NodeChange", "PodEntry"]

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

DEFAULT_MAX_PODS = 110


@dataclass(frozen=True, slots=True)
class NodeChange:
    """What an update did to a node, so the queue knows which pods it may help."""

    added: bool = False
    removed: bool = False
    grew: bool = False
    """Some allocatable value rose."""
    labels_changed: bool = False
    taints_changed: bool = False
    became_schedulable: bool = False

    @property
    def may_help(self) -> bool:
        return (
            self.added
            or self.grew
            or self.labels_changed
            or self.taints_changed
            or self.became_schedulable
        )


@dataclass(slots=True)
class PodEntry:
    """A pod charged to a node."""

    info: PodInfo
    node: str
    slot: int | None
    """The node's slot, or None while the node is not (yet) in the cache."""
    cpu: int
    mem: int
    com_cpu: int
    com_mem: int
    assumed: bool = False
    victim: bool = False
    """Being evicted by preemption: not picked as a victim again."""


def _quantity(raw: Any, milli: bool) -> int:
    return read_quantity(raw, milli=milli) or 0


def _node_resources(node: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """``(milli-CPU, memory bytes, pods, ephemeral storage bytes)`` the node offers."""
    status = node.get("status") or {}
    res = status.get("allocatable") or status.get("capacity") or {}
    pods = _quantity(res.get("pods"), False) if "pods" in res else DEFAULT_MAX_PODS
    return (
        _quantity(res.get("cpu"), True),
        _quantity(res.get("memory"), False),
        pods,
        _quantity(res.get(EPHEMERAL_STORAGE), False),
    )


def _blocking_taints(taints: Sequence[Mapping[str, Any]]) -> bool:
    return any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints)


class NodeCache:
    """Nodes and the pods charged to them (see the module docstring)."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = 0
        self.names: list[str | None] = []
        self.labels: list[Mapping[str, str]] = []
        self.taints: list[list[Mapping[str, Any]]] = []
        self.objects: list[Mapping[str, Any] | None] = []
        self.slot_of: dict[str, int] = {}
        self._free_slots: list[int] = []
        self.valid: Bools = np.zeros(0, dtype=np.bool_)
        self.unschedulable: Bools = np.zeros(0, dtype=np.bool_)
        self.tainted: Bools = np.zeros(0, dtype=np.bool_)
        self.alloc_cpu: Ints = np.zeros(0, dtype=np.int64)
        self.alloc_mem: Ints = np.zeros(0, dtype=np.int64)
        self.alloc_pods: Ints = np.zeros(0, dtype=np.int64)
        self.alloc_storage: Ints = np.zeros(0, dtype=np.int64)
        self.req_cpu: Ints = np.zeros(0, dtype=np.int64)
        self.req_mem: Ints = np.zeros(0, dtype=np.int64)
        self.req_pods: Ints = np.zeros(0, dtype=np.int64)
        self.req_storage: Ints = np.zeros(0, dtype=np.int64)
        self.com_cpu: Ints = np.zeros(0, dtype=np.int64)
        self.com_mem: Ints = np.zeros(0, dtype=np.int64)
        self.free_cpu: Ints = np.zeros(0, dtype=np.int64)
        """``alloc_cpu - req_cpu``, kept up to date (a filter allocates no temporaries)."""
        self.free_mem: Ints = np.zeros(0, dtype=np.int64)
        self.free_pods: Ints = np.zeros(0, dtype=np.int64)
        self.free_storage: Ints = np.zeros(0, dtype=np.int64)
        self._grow(capacity)
        self.generation = 0
        """Moves when node set, labels or taints change (mask caches key on it)."""
        self.pods: dict[str, PodEntry] = {}
        self.node_pods: dict[str, set[str]] = {}
        """Node name → keys of the pods charged to it (also for nodes not yet seen)."""
        self.priorities: Counter[int] = Counter()
        """Priorities of the pods in the cache (preemption's fast "nobody lower" check)."""
        self.claim_users: Counter[str] = Counter()
        """``namespace/claim`` → how many pods in the cache (bound or assumed, not finished)
        name the claim: upstream's ``PVCRefCounts``, read by VolumeRestrictions."""
        self.nominated: dict[str, PodInfo] = {}
        """Pending pods nominated to a node by preemption, keyed by pod key."""

    # -- slots -------------------------------------------------------------------------------

    def _grow(self, capacity: int) -> None:
        old = self._capacity
        if capacity <= old:
            return

        def extend(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros(capacity, dtype=arr.dtype)
            out[:old] = arr
            return out

        self.valid = extend(self.valid)
        self.unschedulable = extend(self.unschedulable)
        self.tainted = extend(self.tainted)
        self.alloc_cpu = extend(self.alloc_cpu)
        self.alloc_mem = extend(self.alloc_mem)
        self.alloc_pods = extend(self.alloc_pods)
        self.alloc_storage = extend(self.alloc_storage)
        self.req_cpu = extend(self.req_cpu)
        self.req_mem = extend(self.req_mem)
        self.req_pods = extend(self.req_pods)
        self.req_storage = extend(self.req_storage)
        self.com_cpu = extend(self.com_cpu)
        self.com_mem = extend(self.com_mem)
        self.free_cpu = extend(self.free_cpu)
        self.free_mem = extend(self.free_mem)
        self.free_pods = extend(self.free_pods)
        self.free_storage = extend(self.free_storage)
        self.names.extend([None] * (capacity - old))
        self.labels.extend([{}] * (capacity - old))
        self.taints.extend([[] for _ in range(capacity - old)])
        self.objects.extend([None] * (capacity - old))
        self._free_slots.extend(range(capacity - 1, old - 1, -1))
        self._capacity = capacity

    @property
    def size(self) -> int:
        """Number of slots (the length of every array)."""
        return self._capacity

    def __len__(self) -> int:
        return len(self.slot_of)

    def node_names(self) -> list[str]:
        return list(self.slot_of)

    def slot(self, name: str) -> int | None:
        return self.slot_of.get(name)

    # -- nodes -------------------------------------------------------------------------------

    def upsert_node(self, node: Mapping[str, Any]) -> NodeChange:
        """Add or update a node from its dict; returns what changed."""
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        name = meta.get("name") or ""
        cpu, mem, pods, storage = _node_resources(node)
        labels = dict(meta.get("labels") or {})
        # Taints as the node lifecycle controller writes them (not-ready, unreachable,
        # pressure): the scheduler reads them and infers nothing from the conditions.
        taints: list[Mapping[str, Any]] = [dict(t) for t in spec.get("taints") or ()]
        unschedulable = bool(spec.get("unschedulable"))
        slot = self.slot_of.get(name)
        added = slot is None
        if slot is None:
            if not self._free_slots:
                self._grow(max(self._capacity * 2, 64))
            slot = self._free_slots.pop()
            self.slot_of[name] = slot
            self.names[slot] = name
            self.valid[slot] = True
            grew = True
            labels_changed = taints_changed = True
            became_schedulable = not unschedulable
            self.req_cpu[slot] = self.req_mem[slot] = self.req_pods[slot] = 0
            self.req_storage[slot] = 0
            self.com_cpu[slot] = self.com_mem[slot] = 0
            for key in self.node_pods.get(name, ()):
                entry = self.pods[key]
                entry.slot = slot
                self._charge(entry, 1)
        else:
            grew = (
                cpu > self.alloc_cpu[slot]
                or mem > self.alloc_mem[slot]
                or pods > self.alloc_pods[slot]
                or storage > self.alloc_storage[slot]
            )
            labels_changed = labels != self.labels[slot]
            taints_changed = taints != self.taints[slot]
            became_schedulable = bool(self.unschedulable[slot]) and not unschedulable
        unschedulable_changed = added or bool(self.unschedulable[slot]) != unschedulable
        self.alloc_cpu[slot] = cpu
        self.alloc_mem[slot] = mem
        self.alloc_pods[slot] = pods
        self.alloc_storage[slot] = storage
        self.free_cpu[slot] = cpu - self.req_cpu[slot]
        self.free_mem[slot] = mem - self.req_mem[slot]
        self.free_pods[slot] = pods - self.req_pods[slot]
        self.free_storage[slot] = storage - self.req_storage[slot]
        self.unschedulable[slot] = unschedulable
        self.tainted[slot] = _blocking_taints(taints)
        self.labels[slot] = labels
        self.taints[slot] = taints
        self.objects[slot] = node
        if labels_changed or taints_changed or unschedulable_changed:
            self.generation += 1
        return NodeChange(
            added=added,
            grew=bool(grew),
            labels_changed=labels_changed,
            taints_changed=taints_changed,
            became_schedulable=became_schedulable,
        )

    def remove_node(self, name: str) -> NodeChange:
        slot = self.slot_of.pop(name, None)
        if slot is None:
            return NodeChange()
        for key in self.node_pods.get(name, ()):
            self.pods[key].slot = None
        self.valid[slot] = False
        self.unschedulable[slot] = self.tainted[slot] = False
        for arr in (
            self.alloc_cpu,
            self.alloc_mem,
            self.alloc_pods,
            self.alloc_storage,
            self.req_cpu,
            self.req_mem,
            self.req_pods,
            self.req_storage,
            self.com_cpu,
            self.com_mem,
            self.free_cpu,
            self.free_mem,
            self.free_pods,
            self.free_storage,
        ):
            arr[slot] = 0
        self.names[slot] = None
        self.labels[slot] = {}
        self.taints[slot] = []
        self.objects[slot] = None
        self._free_slots.append(slot)
        self.generation += 1
        return NodeChange(removed=True)

    # -- pods --------------------------------------------------------------------------------

    def _charge(self, entry: PodEntry, sign: int) -> None:
        slot = entry.slot
        if slot is None:
            return
        self.req_cpu[slot] += sign * entry.cpu
        self.req_mem[slot] += sign * entry.mem
        self.req_pods[slot] += sign
        self.req_storage[slot] += sign * entry.info.ephemeral_storage
        self.free_cpu[slot] -= sign * entry.cpu
        self.free_mem[slot] -= sign * entry.mem
        self.free_pods[slot] -= sign
        self.free_storage[slot] -= sign * entry.info.ephemeral_storage
        self.com_cpu[slot] += sign * entry.com_cpu
        self.com_mem[slot] += sign * entry.com_mem

    def _charges(
        self, info: PodInfo, approved: bool, infeasible: bool
    ) -> tuple[int, int, int, int]:
        """(placement cpu, mem, committed cpu, mem) of a pod."""
        if not info.resize_pending:
            return info.cpu, info.memory, info.cpu, info.memory
        if infeasible:
            return (
                info.committed_cpu,
                info.committed_memory,
                info.committed_cpu,
                info.committed_memory,
            )
        if approved:
            cpu = max(info.cpu, info.target_cpu)
            mem = max(info.memory, info.target_memory)
            return cpu, mem, cpu, mem
        return info.cpu, info.memory, info.committed_cpu, info.committed_memory

    def add_pod(
        self,
        info: PodInfo,
        node: str,
        *,
        assumed: bool = False,
        approved: bool = False,
        infeasible: bool = False,
    ) -> tuple[int, int] | None:
        """Charge ``info`` to ``node`` (replacing any previous charge of the same key).

        Returns the previous ``(cpu, mem)`` placement charge, or None if it is new. An
        assumed pod stays assumed until the informer reports it bound (``assumed`` False).
        ``approved``/``infeasible``: the arbiter decided the pod's pending resize (its
        condition may not be in ``info`` yet)."""
        old = self.pods.get(info.key)
        previous: tuple[int, int] | None = None
        keep_victim = False
        if old is not None:
            previous = (old.cpu, old.mem)
            keep_victim = old.victim
            self._remove_entry(old)
        cpu, mem, com_cpu, com_mem = self._charges(info, approved, infeasible)
        entry = PodEntry(
            info=info,
            node=node,
            slot=self.slot_of.get(node),
            cpu=cpu,
            mem=mem,
            com_cpu=com_cpu,
            com_mem=com_mem,
            assumed=assumed,
            victim=keep_victim,
        )
        self.pods[info.key] = entry
        self.node_pods.setdefault(node, set()).add(info.key)
        self.priorities[info.priority] += 1
        for claim in info.claims:
            self.claim_users[f"{info.namespace}/{claim}"] += 1
        self._charge(entry, 1)
        return previous

    def _remove_entry(self, entry: PodEntry) -> None:
        self._charge(entry, -1)
        keys = self.node_pods.get(entry.node)
        if keys is not None:
            keys.discard(entry.info.key)
            if not keys:
                del self.node_pods[entry.node]
        self.priorities[entry.info.priority] -= 1
        if self.priorities[entry.info.priority] <= 0:
            del self.priorities[entry.info.priority]
        for claim in entry.info.claims:
            key = f"{entry.info.namespace}/{claim}"
            self.claim_users[key] -= 1
            if self.claim_users[key] <= 0:
                del self.claim_users[key]
        del self.pods[entry.info.key]

    def remove_pod(self, key: str) -> PodEntry | None:
        entry = self.pods.get(key)
        if entry is not None:
            self._remove_entry(entry)
        return entry

    def assume(self, info: PodInfo, node: str) -> None:
        """Charge a pod the scheduler just placed, before its binding is confirmed."""
        self.add_pod(info, node, assumed=True)

    def forget(self, key: str) -> None:
        """Drop an assumed pod (its binding failed). Confirmed pods are left alone."""
        entry = self.pods.get(key)
        if entry is not None and entry.assumed:
            self._remove_entry(entry)

    def is_assumed(self, key: str) -> bool:
        entry = self.pods.get(key)
        return entry is not None and entry.assumed

    def approve_resize(self, key: str, cpu: int, mem: int) -> None:
        """Commit an approved resize whose target charge is ``cpu``/``mem``: the pod counts
        at least that much in both the placement and the committed totals."""
        entry = self.pods.get(key)
        if entry is None:
            return
        new_cpu, new_mem = max(entry.cpu, cpu), max(entry.mem, mem)
        if entry.slot is not None:
            self.req_cpu[entry.slot] += new_cpu - entry.cpu
            self.req_mem[entry.slot] += new_mem - entry.mem
            self.free_cpu[entry.slot] -= new_cpu - entry.cpu
            self.free_mem[entry.slot] -= new_mem - entry.mem
            self.com_cpu[entry.slot] += new_cpu - entry.com_cpu
            self.com_mem[entry.slot] += new_mem - entry.com_mem
        entry.cpu, entry.mem = new_cpu, new_mem
        entry.com_cpu, entry.com_mem = new_cpu, new_mem

    def release_resize(self, key: str) -> bool:
        """Stop charging a resize decided Infeasible: the pod counts at what it holds
        (committed) in the placement totals too. True if that freed room."""
        entry = self.pods.get(key)
        if entry is None or (entry.cpu, entry.mem) == (entry.com_cpu, entry.com_mem):
            return False
        freed_cpu, freed_mem = entry.cpu - entry.com_cpu, entry.mem - entry.com_mem
        if entry.slot is not None:
            self.req_cpu[entry.slot] -= freed_cpu
            self.req_mem[entry.slot] -= freed_mem
            self.free_cpu[entry.slot] += freed_cpu
            self.free_mem[entry.slot] += freed_mem
        entry.cpu, entry.mem = entry.com_cpu, entry.com_mem
        return freed_cpu > 0 or freed_mem > 0

    def pods_on(self, node: str) -> Iterator[PodEntry]:
        for key in self.node_pods.get(node, ()):
            yield self.pods[key]

    # -- nominations -------------------------------------------------------------------------

    def nominate(self, info: PodInfo, node: str) -> None:
        self.nominated[info.key] = _with_nomination(info, node)

    def clear_nomination(self, key: str) -> None:
        self.nominated.pop(key, None)

    def nominated_charge(self, pod: PodInfo) -> tuple[Ints, Ints, Ints, Ints] | None:
        """Room held for nominated pods of priority >= ``pod``'s (except ``pod``), per slot:
        ``(cpu, memory, pods, ephemeral storage)``; None when there are none (the common
        case)."""
        if not self.nominated:
            return None
        cpu = np.zeros(self._capacity, dtype=np.int64)
        mem = np.zeros(self._capacity, dtype=np.int64)
        pods = np.zeros(self._capacity, dtype=np.int64)
        storage = np.zeros(self._capacity, dtype=np.int64)
        found = False
        for key, other in self.nominated.items():
            if key == pod.key or other.priority < pod.priority:
                continue
            slot = self.slot_of.get(other.nominated_node_name)
            if slot is None:
                continue
            cpu[slot] += other.cpu
            mem[slot] += other.memory
            pods[slot] += 1
            storage[slot] += other.ephemeral_storage
            found = True
        return (cpu, mem, pods, storage) if found else None

    # -- reading -----------------------------------------------------------------------------

    def free(self, slot: int) -> tuple[int, int, int, int]:
        """Placement room on one node: ``(cpu milli, memory bytes, pods, ephemeral storage
        bytes)``."""
        return (
            int(self.free_cpu[slot]),
            int(self.free_mem[slot]),
            int(self.free_pods[slot]),
            int(self.free_storage[slot]),
        )

    def committed_free(self, slot: int) -> tuple[int, int]:
        """Room on one node as the resize arbiter sees it."""
        return (
            int(self.alloc_cpu[slot] - self.com_cpu[slot]),
            int(self.alloc_mem[slot] - self.com_mem[slot]),
        )


def _with_nomination(info: PodInfo, node: str) -> PodInfo:
    from dataclasses import replace

    return replace(info, nominated_node_name=node)
