"""VolumeBinding: upstream's volume binding plugin, kept to what local volumes need.

* PreFilter: every claim a pod names must exist and not be deleting; a claim that is not
  bound and whose class binds ``Immediate`` makes the pod unschedulable with upstream's
  reason (``pod has unbound immediate PersistentVolumeClaims``) until the PersistentVolume
  controller binds it.
* Filter: a node must satisfy the node affinity of every volume the pod's bound claims hold
  (``node(s) had volume node affinity conflict``).
* PreBind: a claim of a ``WaitForFirstConsumer`` class that is not bound yet is annotated
  ``volume.kubernetes.io/selected-node: <node>``, which is what the provisioner waits for.
  Upstream then waits for the claim to be bound before binding the pod; here the pod is
  bound at once and the node agent waits (``FailedMount``) until the claim is bound, which
  keeps a slow provisioner from holding a binding slot.

Matching a delayed claim to an existing static volume on the chosen node is not done here
(upstream's ``FindPodVolumes``): the PersistentVolume controller does it once the node is
selected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from inplace.api.storage import (
    ANN_SELECTED_NODE,
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode,
    claim_class,
    claim_names,
    volume_allows_node,
)
from inplace.client import PERSISTENTVOLUMECLAIMS, APIError, Client

from ..cache import NodeCache
from ..framework import CycleState, Indices, Mask, PodInfo, Status, explain_per_node

__all__ = ["REASON_NODE_CONFLICT", "REASON_UNBOUND_IMMEDIATE", "VolumeBinding", "VolumeObjects"]

REASON_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
_STATE_KEY: Final = "VolumeBinding"

Obj = Mapping[str, Any]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


class VolumeObjects:
    """The claims, volumes and classes the plugin reads, kept by the scheduler's informers."""

    def __init__(self) -> None:
        self.claims: dict[str, Obj] = {}
        self.volumes: dict[str, Obj] = {}
        self.classes: dict[str, Obj] = {}

    def set_claim(self, claim: Obj) -> None:
        self.claims[_key(claim)] = claim

    def drop_claim(self, claim: Obj) -> None:
        self.claims.pop(_key(claim), None)

    def set_volume(self, volume: Obj) -> None:
        self.volumes[_name(volume)] = volume

    def drop_volume(self, volume: Obj) -> None:
        self.volumes.pop(_name(volume), None)

    def set_class(self, storage_class: Obj) -> None:
        self.classes[_name(storage_class)] = storage_class

    def drop_class(self, storage_class: Obj) -> None:
        self.classes.pop(_name(storage_class), None)


class _PodVolumes:
    """One pod's view, computed in PreFilter: bound volumes, and delayed claims to annotate."""

    __slots__ = ("bound", "delayed")

    def __init__(self) -> None:
        self.bound: list[Obj] = []
        self.delayed: list[Obj] = []


class VolumeBinding:
    name = "VolumeBinding"
    resolvable = False

    def __init__(self, objects: VolumeObjects, client: Client | None = None) -> None:
        self.objects = objects
        self.client = client

    def _pod_volumes(self, state: CycleState) -> _PodVolumes | None:
        value = state.get(_STATE_KEY)
        return value if isinstance(value, _PodVolumes) else None

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status:
        names = claim_names(pod.obj)
        if not names:
            return Status.success()
        view = _PodVolumes()
        unbound_immediate = False
        for name in names:
            claim = self.objects.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return Status.unresolvable(
                    f'persistentvolumeclaim "{name}" not found', plugin=self.name
                )
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return Status.unresolvable(
                    f'persistentvolumeclaim "{name}" is being deleted', plugin=self.name
                )
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if volume_name:
                volume = self.objects.volumes.get(str(volume_name))
                if volume is not None:
                    view.bound.append(volume)
                continue
            class_name = claim_class(claim)
            storage_class = self.objects.classes.get(class_name) if class_name else None
            if class_name and binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER:
                view.delayed.append(claim)
            else:
                unbound_immediate = True
        if unbound_immediate:
            return Status.unresolvable(REASON_UNBOUND_IMMEDIATE, plugin=self.name)
        state[_STATE_KEY] = view
        return Status.success()

    def _allows(self, view: _PodVolumes, cache: NodeCache, slot: int) -> bool:
        name = cache.names[slot]
        if name is None:
            return False
        labels = cache.labels[slot]
        return all(volume_allows_node(v, name, labels) for v in view.bound)

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        view = self._pod_volumes(state)
        if view is None or not any((v.get("spec") or {}).get("nodeAffinity") for v in view.bound):
            return None
        mask = np.zeros(cache.size, dtype=np.bool_)
        for slot in cache.slot_of.values():
            mask[slot] = self._allows(view, cache, slot)
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        view = self._pod_volumes(state)
        if view is None or self._allows(view, cache, node):
            return Status.success()
        return Status.unresolvable(REASON_NODE_CONFLICT, plugin=self.name)

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return explain_per_node(self, state, pod, cache, nodes)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Annotate each delayed claim with the chosen node (upstream ``BindPodVolumes``)."""
        view = self._pod_volumes(state)
        if view is None or not view.delayed or self.client is None:
            return Status.success()
        for claim in view.delayed:
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(ANN_SELECTED_NODE) == node:
                continue
            body = {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}}
            try:
                await self.client.patch(
                    PERSISTENTVOLUMECLAIMS, _name(claim), body, namespace=pod.namespace
                )
            except (APIError, ConnectionError) as exc:
                return Status.error(f"selecting node for claim {_name(claim)}: {exc}")
        return Status.success()
