"""NodeResourcesFit (filter) and the resource scoring strategies.

The fit check (cpu, memory, a pod slot and ephemeral storage, as upstream's ``fitsRequest``;
extended resources are not counted) is a pure function,
:func:`~inplace.api.placement.fit_reasons` (shared with the rescue controller through
``api``), returning structured reasons (:class:`~inplace.api.placement.Insufficient`, printed
``Insufficient memory: requested 2Gi, free 1Gi``); the vector filter computes the same answer
for every node at once from the cache's arrays. Room held for nominated pods of at least the
pod's priority counts as taken, as upstream's ``addNominatedPods`` does.

Scoring, as upstream's ``NodeResourcesFit`` strategies and ``NodeResourcesBalancedAllocation``
(cpu and memory, weight 1 each), on ``requested + pod`` with upstream's non-zero defaults
for a pod that requests nothing (100m cpu, 200MB memory):

* LeastAllocated: ``mean((allocatable - requested) / allocatable) * 100``;
* MostAllocated: ``mean(requested / allocatable) * 100``;
* BalancedAllocation: ``(1 - std(requested / allocatable)) * 100``.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

import numpy as np

from inplace.api.placement import Insufficient, fit_reasons, format_cpu, format_memory

from ..cache import Ints, NodeCache
from ..framework import CycleState, Floats, Indices, Mask, PodInfo, Status

__all__ = [
    "BalancedAllocation",
    "Insufficient",
    "LeastAllocated",
    "MostAllocated",
    "NodeResourcesFit",
    "fit_reasons",
    "format_cpu",
    "format_memory",
]

DEFAULT_MILLI_CPU: Final = 100
DEFAULT_MEMORY: Final = 200 * 1024 * 1024


def _free(state: CycleState, pod: PodInfo, cache: NodeCache) -> tuple[Ints, Ints, Ints, Ints]:
    """Free room per slot after nominated pods, ``(cpu, memory, pods, ephemeral storage)``
    (the cache's own arrays when none are nominated: no copies on the hot path)."""
    nominated = cache.nominated_charge(pod)
    if nominated is None:
        return cache.free_cpu, cache.free_mem, cache.free_pods, cache.free_storage
    cached = state.get("fit.free")
    if cached is not None and cached[0] == cache.size:
        free: tuple[Ints, Ints, Ints, Ints] = cached[1]
        return free
    result = (
        cache.free_cpu - nominated[0],
        cache.free_mem - nominated[1],
        cache.free_pods - nominated[2],
        cache.free_storage - nominated[3],
    )
    state["fit.free"] = (cache.size, result)
    return result


class NodeResourcesFit:
    """Filter: the pod's placement charge fits the node's free room."""

    name = "NodeResourcesFit"
    resolvable = True

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status:
        if pod.error:
            return Status.unresolvable(pod.error, plugin=self.name)
        state.pop("fit.free", None)
        return Status.success()

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        free_cpu, free_mem, free_pods, free_storage = _free(state, pod, cache)
        mask: Mask = free_pods >= 1
        if pod.cpu > 0:
            mask &= free_cpu >= pod.cpu
        if pod.memory > 0:
            mask &= free_mem >= pod.memory
        if pod.ephemeral_storage > 0:
            mask &= free_storage >= pod.ephemeral_storage
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        free_cpu, free_mem, free_pods, free_storage = _free(state, pod, cache)
        reasons = fit_reasons(
            pod.cpu,
            pod.memory,
            int(free_cpu[node]),
            int(free_mem[node]),
            int(free_pods[node]),
            ephemeral_storage=pod.ephemeral_storage,
            free_ephemeral_storage=int(free_storage[node]),
        )
        if reasons:
            return Status.unschedulable(*(str(r) for r in reasons), plugin=self.name)
        return Status.success()

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        free_cpu, free_mem, free_pods, free_storage = _free(state, pod, cache)
        counts: Counter[str] = Counter()
        too_many = int((free_pods[nodes] < 1).sum())
        if too_many:
            counts["Too many pods"] = too_many
        if pod.cpu > 0:
            n = int((free_cpu[nodes] < pod.cpu).sum())
            if n:
                counts["Insufficient cpu"] = n
        if pod.memory > 0:
            n = int((free_mem[nodes] < pod.memory).sum())
            if n:
                counts["Insufficient memory"] = n
        if pod.ephemeral_storage > 0:
            n = int((free_storage[nodes] < pod.ephemeral_storage).sum())
            if n:
                counts["Insufficient ephemeral-storage"] = n
        return counts


def _fractions(
    state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
) -> tuple[Floats, Floats]:
    """``(requested + pod) / allocatable`` for cpu and memory over ``nodes`` (once per
    cycle: every scoring plugin shares it)."""
    cached = state.get("score.fractions")
    if cached is not None and cached[0] is nodes:
        shared: tuple[Floats, Floats] = cached[1]
        return shared
    cpu = pod.cpu or DEFAULT_MILLI_CPU
    mem = pod.memory or DEFAULT_MEMORY
    alloc_cpu = cache.alloc_cpu[nodes].astype(np.float64)
    alloc_mem = cache.alloc_mem[nodes].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_cpu = np.where(alloc_cpu > 0, (cache.req_cpu[nodes] + cpu) / alloc_cpu, 1.0)
        f_mem = np.where(alloc_mem > 0, (cache.req_mem[nodes] + mem) / alloc_mem, 1.0)
    state["score.fractions"] = (nodes, (f_cpu, f_mem))
    return f_cpu, f_mem


class LeastAllocated:
    """Score: prefer the emptiest nodes (spreads load; upstream's default strategy)."""

    name = "LeastAllocated"

    def __init__(self, weight: int = 1) -> None:
        self.weight = weight

    def score_nodes(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Floats:
        f_cpu, f_mem = _fractions(state, pod, cache, nodes)
        s_cpu = np.where(f_cpu > 1.0, 0.0, (1.0 - f_cpu) * 100.0)
        s_mem = np.where(f_mem > 1.0, 0.0, (1.0 - f_mem) * 100.0)
        out: Floats = (s_cpu + s_mem) / 2.0
        return out


class MostAllocated:
    """Score: prefer the fullest nodes that still fit (bin packing)."""

    name = "MostAllocated"

    def __init__(self, weight: int = 1) -> None:
        self.weight = weight

    def score_nodes(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Floats:
        f_cpu, f_mem = _fractions(state, pod, cache, nodes)
        s_cpu = np.where(f_cpu > 1.0, 0.0, f_cpu * 100.0)
        s_mem = np.where(f_mem > 1.0, 0.0, f_mem * 100.0)
        out: Floats = (s_cpu + s_mem) / 2.0
        return out


class BalancedAllocation:
    """Score: prefer nodes whose cpu and memory would be used in the same proportion."""

    name = "BalancedAllocation"

    def __init__(self, weight: int = 1) -> None:
        self.weight = weight

    def score_nodes(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Floats:
        f_cpu, f_mem = _fractions(state, pod, cache, nodes)
        f_cpu = np.minimum(f_cpu, 1.0)
        f_mem = np.minimum(f_mem, 1.0)
        std = np.abs(f_cpu - f_mem) / 2.0
        out: Floats = (1.0 - std) * 100.0
        return out
