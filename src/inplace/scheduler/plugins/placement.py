"""Placement filters that look at the node, not its room: NodeUnschedulable, NodeName,
TaintToleration and NodeAffinity (``nodeSelector`` plus required node affinity).

Their answers depend only on the pod's selector/tolerations and on node labels/taints, so
each vector filter memoizes its mask by (what the pod asks for, the cache's ``generation``):
10,000 identical pods cost one pass over the nodes. Reasons are upstream's texts. None of
these failures can be cured by preemption (``resolvable = False``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from inplace.api.placement import (
    UNSCHEDULABLE_TAINT,
    affinity_matches,
    match_node_selector_terms,
    tolerates,
    untolerated_taint,
)

from ..cache import NodeCache
from ..framework import CycleState, Indices, Mask, PodInfo, Status, explain_per_node

__all__ = [
    "NodeAffinity",
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "match_node_selector_terms",
    "tolerates",
]

REASON_NODE_NAME: Final = "node(s) didn't match the requested node name"
REASON_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"


class _MaskCache:
    """A few masks keyed by (signature, generation, size)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._masks: dict[Any, Mask] = {}
        self._generation = -1

    def get(self, cache: NodeCache, signature: Any) -> Mask | None:
        if self._generation != cache.generation:
            self._masks.clear()
            self._generation = cache.generation
        return self._masks.get((signature, cache.size))

    def put(self, cache: NodeCache, signature: Any, mask: Mask) -> None:
        if len(self._masks) >= self.limit:
            self._masks.clear()
        self._masks[(signature, cache.size)] = mask


# -- tolerations -----------------------------------------------------------------------------


class TaintToleration:
    """Filter: every NoSchedule/NoExecute taint of the node is tolerated."""

    name = "TaintToleration"
    resolvable = False

    def __init__(self) -> None:
        self._masks = _MaskCache()

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        if not cache.tainted.any():
            return None
        signature = pod.toleration_signature
        mask = self._masks.get(cache, signature)
        if mask is None:
            mask = ~cache.tainted
            for slot in np.flatnonzero(cache.tainted):
                if untolerated_taint(cache.taints[slot], pod.tolerations) is None:
                    mask[slot] = True
            self._masks.put(cache, signature, mask)
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        taint = untolerated_taint(cache.taints[node], pod.tolerations)
        if taint is None:
            return Status.success()
        text = f"{{{taint.get('key', '')}: {taint.get('value', '')}}}"
        return Status.unresolvable(f"node(s) had untolerated taint {text}", plugin=self.name)

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return explain_per_node(self, state, pod, cache, nodes)


# -- unschedulable ---------------------------------------------------------------------------


class NodeUnschedulable:
    """Filter: ``spec.unschedulable`` nodes only take pods tolerating its taint."""

    name = "NodeUnschedulable"
    resolvable = False

    def _tolerated(self, pod: PodInfo) -> bool:
        taint = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
        return any(tolerates(t, taint) for t in pod.tolerations)

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        if not cache.unschedulable.any() or self._tolerated(pod):
            return None
        mask: Mask = ~cache.unschedulable
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        if cache.unschedulable[node] and not self._tolerated(pod):
            return Status.unresolvable(REASON_UNSCHEDULABLE, plugin=self.name)
        return Status.success()

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return Counter({REASON_UNSCHEDULABLE: len(nodes)})


# -- node name -------------------------------------------------------------------------------


class NodeName:
    """Filter: a pod that names its node (``spec.nodeName``) fits only that node."""

    name = "NodeName"
    resolvable = False

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        if not pod.node_name:
            return None
        mask = np.zeros(cache.size, dtype=np.bool_)
        slot = cache.slot(pod.node_name)
        if slot is not None:
            mask[slot] = True
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        if pod.node_name and cache.names[node] != pod.node_name:
            return Status.unresolvable(REASON_NODE_NAME, plugin=self.name)
        return Status.success()

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return Counter({REASON_NODE_NAME: len(nodes)})


# -- node affinity ---------------------------------------------------------------------------


def _affinity_ok(pod: PodInfo, labels: Mapping[str, str], node_name: str) -> bool:
    return affinity_matches(pod.node_selector, pod.required_affinity, labels, node_name)


class NodeAffinity:
    """Filter: ``spec.nodeSelector`` and required node affinity match the node."""

    name = "NodeAffinity"
    resolvable = False

    def __init__(self) -> None:
        self._masks = _MaskCache()

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        if not pod.node_selector and pod.required_affinity is None:
            return None
        signature = pod.selector_signature
        mask = self._masks.get(cache, signature)
        if mask is None:
            mask = np.zeros(cache.size, dtype=np.bool_)
            for name, slot in cache.slot_of.items():
                if _affinity_ok(pod, cache.labels[slot], name):
                    mask[slot] = True
            self._masks.put(cache, signature, mask)
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        if _affinity_ok(pod, cache.labels[node], cache.names[node] or ""):
            return Status.success()
        return Status.unresolvable(REASON_AFFINITY, plugin=self.name)

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return Counter({REASON_AFFINITY: len(nodes)})
