"""VolumeRestrictions: upstream's ``ReadWriteOncePod`` rule.

A claim whose access modes include ``ReadWriteOncePod`` may be used by one pod at a time in
the whole cluster. PreFilter counts the pod's RWOP claims that some pod in the cache already
names (bound or assumed and not finished: the cache's ``claim_users``, upstream's
``PVCRefCounts``); Filter then rejects every node with upstream's reason while that count is
above zero. The pod waits in the unschedulable set and is retried when a pod is deleted or
finishes (the scheduler's ``PodRemovedOrShrunk`` move).

The status code is upstream's (``Unschedulable``), but the plugin is not ``resolvable``:
upstream's preemption can evict a lower-priority holder of the claim, and this scheduler's
preemption, which frees room by resources, cannot tell that doing so would help.

Upstream's other checks here (the same GCE PD, EBS volume, RBD image or iSCSI IQN on a node)
are for volume sources nothing on this host can mount.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

import numpy as np

from inplace.api.storage import uses_read_write_once_pod

from ..cache import NodeCache
from ..framework import CycleState, Indices, Mask, PodInfo, Status
from .volumes import VolumeObjects, claim_not_found

__all__ = ["REASON_READ_WRITE_ONCE_POD_CONFLICT", "VolumeRestrictions"]

REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_STATE_KEY: Final = "PreFilterVolumeRestrictions"


class VolumeRestrictions:
    name = "VolumeRestrictions"
    resolvable = False

    def __init__(self, objects: VolumeObjects) -> None:
        self.objects = objects

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status:
        """Count the pod's ``ReadWriteOncePod`` claims already in use (upstream
        ``calPreFilterState``); a claim that does not exist is unresolvable, as upstream."""
        conflicts = 0
        for name in pod.claims:
            claim = self.objects.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return claim_not_found(name, self.name)
            if uses_read_write_once_pod(claim) and cache.claim_users[f"{pod.namespace}/{name}"]:
                conflicts += 1
        state[_STATE_KEY] = conflicts
        return Status.success()

    def _conflicts(self, state: CycleState) -> int:
        value = state.get(_STATE_KEY)
        return value if isinstance(value, int) else 0

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        if not self._conflicts(state):
            return None
        return np.zeros(cache.size, dtype=np.bool_)

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        if not self._conflicts(state):
            return Status.success()
        return Status.unschedulable(REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=self.name)

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        if not self._conflicts(state):
            return Counter()
        return Counter({REASON_READ_WRITE_ONCE_POD_CONFLICT: len(nodes)})
