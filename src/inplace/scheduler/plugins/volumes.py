"""VolumeBinding: upstream's volume binding plugin, for the claims one host serves.

* PreFilter: every claim a pod names must exist and not be deleting; a claim that is not
  bound and whose class binds ``Immediate`` (or that has no class) makes the pod
  unschedulable with upstream's reason (``pod has unbound immediate PersistentVolumeClaims``)
  until the PersistentVolume controller binds it.
* Filter (upstream ``FindPodVolumes``): a bound claim's volume must exist
  (``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``) and its
  node affinity admit the node (``node(s) had volume node affinity conflict``); each unbound
  ``WaitForFirstConsumer`` claim, smallest request first, needs on the node either a volume
  that satisfies it (:func:`~inplace.api.storage.find_best_match`: pre-bound to it, or
  ``Available``; each volume serves one claim) or a class that can provision there (a
  provisioner other than ``kubernetes.io/no-provisioner``, ``allowedTopologies`` admitting
  the node) — else ``node(s) didn't find available persistent volumes to bind``. The
  local-path class provisions on any node.
* PreBind (upstream ``BindPodVolumes``): each such claim is annotated
  ``volume.kubernetes.io/selected-node: <node>``; then the plugin waits, at most
  ``bind_timeout`` seconds (upstream's ``bindTimeoutSeconds``, 600), until the
  PersistentVolume controller has bound every one of them fully (``volumeName`` and
  ``pv.kubernetes.io/bind-completed``, upstream's test, and phase ``Bound``, the
  controller's next write, so a pod is never bound before its claim reads ``Bound``) to a
  volume that admits the node. Only then is the pod bound. The wait is woken by the
  scheduler's informers (:meth:`VolumeObjects.changed`), not by polling. The claim gone, its
  ``selected-node`` moved or removed (a provisioner gives a claim back that way), the pod
  gone, or the time up is an error
  (``binding volumes: timed out waiting for the condition``) and the pod goes back to the
  queue with back-off, as upstream.

Unlike upstream, the scheduler does not write a matching static volume's ``claimRef`` itself:
once ``selected-node`` names the node, the PersistentVolume controller binds the claim with
the same :func:`~inplace.api.storage.find_best_match`, or provisions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from inplace.api.storage import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode,
    claim_class,
    claim_fully_bound,
    find_best_match,
    storage_bytes,
    topology_allows,
    volume_allows_node,
)
from inplace.client import PERSISTENTVOLUMECLAIMS, APIError, Client

from ..cache import NodeCache
from ..framework import CycleState, Indices, Mask, PodInfo, Status, explain_per_node

__all__ = [
    "BIND_TIMEOUT_SECONDS",
    "REASON_BIND_CONFLICT",
    "REASON_NODE_CONFLICT",
    "REASON_PV_NOT_EXIST",
    "REASON_TIMED_OUT",
    "REASON_UNBOUND_IMMEDIATE",
    "VolumeBinding",
    "VolumeObjects",
    "claim_not_found",
]

REASON_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
REASON_TIMED_OUT: Final = "binding volumes: timed out waiting for the condition"
BIND_TIMEOUT_SECONDS: Final = 600.0
"""Upstream's default ``VolumeBindingArgs.bindTimeoutSeconds``."""
_STATE_KEY: Final = "VolumeBinding"

Obj = Mapping[str, Any]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _version(obj: Obj) -> int:
    """An object's ``resourceVersion`` as a number (0 when absent or not a number)."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def claim_not_found(name: str, plugin: str) -> Status:
    """Upstream's PreFilter answer for a claim the pod names that does not exist."""
    return Status.unresolvable(f'persistentvolumeclaim "{name}" not found', plugin=plugin)


class VolumeObjects:
    """The claims, volumes and classes the volume plugins read, kept by the scheduler's
    informers; every change wakes the PreBind waits (:meth:`wait_for_change`)."""

    def __init__(self) -> None:
        self.claims: dict[str, Obj] = {}
        self.volumes: dict[str, Obj] = {}
        self.classes: dict[str, Obj] = {}
        self.pod_pending: Callable[[str], bool] = lambda key: True
        """Whether the pod (``namespace/name``) still waits to be bound; the scheduler sets
        it, and calls :meth:`changed` when a pending pod goes."""
        self._change: asyncio.Event | None = None

    def changed(self) -> None:
        """Wake every wait in :meth:`wait_for_change`."""
        event, self._change = self._change, None
        if event is not None:
            event.set()

    async def wait_for_change(self, timeout: float) -> None:
        """Return at the next :meth:`changed`, or after ``timeout`` seconds."""
        if self._change is None:
            self._change = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._change.wait(), timeout)

    def set_claim(self, claim: Obj) -> None:
        self.claims[_key(claim)] = claim
        self.changed()

    def drop_claim(self, claim: Obj) -> None:
        self.claims.pop(_key(claim), None)
        self.changed()

    def set_volume(self, volume: Obj) -> None:
        self.volumes[_name(volume)] = volume
        self.changed()

    def drop_volume(self, volume: Obj) -> None:
        self.volumes.pop(_name(volume), None)
        self.changed()

    def set_class(self, storage_class: Obj) -> None:
        self.classes[_name(storage_class)] = storage_class
        self.changed()

    def drop_class(self, storage_class: Obj) -> None:
        self.classes.pop(_name(storage_class), None)
        self.changed()


@dataclass(slots=True)
class _Delayed:
    """An unbound ``WaitForFirstConsumer`` claim, its class, and the volumes of that class
    that could serve it (unclaimed, or pre-bound to it)."""

    claim: Obj
    storage_class: Obj
    candidates: list[Obj]


def _can_provision(storage_class: Obj, labels: Mapping[str, str]) -> bool:
    """Upstream ``checkVolumeProvisions``: a provisioner that provisions, on this node."""
    provisioner = storage_class.get("provisioner")
    if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
        return False
    return topology_allows(storage_class, labels)


@dataclass(slots=True)
class _PodVolumes:
    """One pod's view, computed in PreFilter."""

    cache: NodeCache
    bound: list[Obj] = field(default_factory=list)
    """The volumes of its bound claims."""
    missing_volume: bool = False
    """A bound claim names a volume that does not exist."""
    delayed: list[_Delayed] = field(default_factory=list)
    """Its unbound ``WaitForFirstConsumer`` claims, smallest request first."""

    @property
    def every_node(self) -> bool:
        """No node can fail: nothing missing, no bound volume with node affinity, and every
        delayed claim provisionable anywhere with no volume to match."""
        return (
            not self.missing_volume
            and not any((v.get("spec") or {}).get("nodeAffinity") for v in self.bound)
            and all(
                not d.candidates
                and not d.storage_class.get("allowedTopologies")
                and _can_provision(d.storage_class, {})
                for d in self.delayed
            )
        )


class VolumeBinding:
    name = "VolumeBinding"
    resolvable = False

    def __init__(
        self,
        objects: VolumeObjects,
        client: Client | None = None,
        *,
        bind_timeout: float = BIND_TIMEOUT_SECONDS,
    ) -> None:
        self.objects = objects
        self.client = client
        self.bind_timeout = bind_timeout

    def _pod_volumes(self, state: CycleState) -> _PodVolumes | None:
        value = state.get(_STATE_KEY)
        return value if isinstance(value, _PodVolumes) else None

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status:
        if not pod.claims:
            return Status.success()
        view = _PodVolumes(cache)
        unbound_immediate = False
        for name in pod.claims:
            claim = self.objects.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return claim_not_found(name, self.name)
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return Status.unresolvable(
                    f'persistentvolumeclaim "{name}" is being deleted', plugin=self.name
                )
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if volume_name:
                volume = self.objects.volumes.get(str(volume_name))
                if volume is None:
                    view.missing_volume = True
                else:
                    view.bound.append(volume)
                continue
            class_name = claim_class(claim)
            storage_class = self.objects.classes.get(class_name) if class_name else None
            if storage_class is not None and binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER:
                candidates = [
                    v
                    for v in self.objects.volumes.values()
                    if ((v.get("spec") or {}).get("storageClassName") or "") == class_name
                ]
                view.delayed.append(_Delayed(claim, storage_class, candidates))
            else:
                unbound_immediate = True
        if unbound_immediate:
            return Status.unresolvable(REASON_UNBOUND_IMMEDIATE, plugin=self.name)
        view.delayed.sort(key=_requested)
        state[_STATE_KEY] = view
        return Status.success()

    def _reason(self, view: _PodVolumes, cache: NodeCache, slot: int) -> str:
        """Why the node cannot serve the pod's claims ("" when it can)."""
        node = cache.names[slot]
        if node is None:
            return REASON_NODE_CONFLICT
        labels = cache.labels[slot]
        if view.missing_volume:
            return REASON_PV_NOT_EXIST
        if not all(volume_allows_node(v, node, labels) for v in view.bound):
            return REASON_NODE_CONFLICT
        chosen: set[str] = set()
        for delayed in view.delayed:
            free = [v for v in delayed.candidates if _name(v) not in chosen]
            match = find_best_match(delayed.claim, free, node, labels)
            if match is not None:
                chosen.add(_name(match))
            elif not _can_provision(delayed.storage_class, labels):
                return REASON_BIND_CONFLICT
        return ""

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None:
        view = self._pod_volumes(state)
        if view is None or view.every_node:
            return None
        mask = np.zeros(cache.size, dtype=np.bool_)
        for slot in cache.slot_of.values():
            mask[slot] = not self._reason(view, cache, slot)
        return mask

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        view = self._pod_volumes(state)
        reason = "" if view is None else self._reason(view, cache, node)
        if not reason:
            return Status.success()
        return Status.unresolvable(reason, plugin=self.name)

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        return explain_per_node(self, state, pod, cache, nodes)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Select the node for each delayed claim, then wait until all are bound."""
        view = self._pod_volumes(state)
        if view is None or not view.delayed or self.client is None:
            return Status.success()
        written: dict[str, int] = {}
        for delayed in view.delayed:
            claim = delayed.claim
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(ANN_SELECTED_NODE) == node:
                continue
            body = {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}}
            try:
                updated = await self.client.patch(
                    PERSISTENTVOLUMECLAIMS, _name(claim), body, namespace=pod.namespace
                )
            except (APIError, ConnectionError) as exc:
                return Status.error(f"selecting node for claim {_name(claim)}: {exc}")
            written[_name(claim)] = _version(updated)
        return await self._wait_bound(view, pod, node, written)

    async def _wait_bound(
        self, view: _PodVolumes, pod: PodInfo, node: str, written: Mapping[str, int]
    ) -> Status:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.bind_timeout
        while True:
            problem, done = self._check_bindings(view, pod, node, written)
            if problem:
                return Status.error(f"binding volumes: {problem}")
            if done:
                return Status.success()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return Status.error(REASON_TIMED_OUT)
            await self.objects.wait_for_change(remaining)

    def _check_bindings(
        self, view: _PodVolumes, pod: PodInfo, node: str, written: Mapping[str, int]
    ) -> tuple[str, bool]:
        """Upstream ``checkBindings``: (a reason to give up, all bound)."""
        if not self.objects.pod_pending(pod.key):
            return "pod does not exist any more", False
        slot = view.cache.slot(node)
        labels = view.cache.labels[slot] if slot is not None else {}
        done = True
        for delayed in view.delayed:
            name = _name(delayed.claim)
            claim = self.objects.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found', False
            if _version(claim) < written.get(name, 0):
                done = False  # our annotation is not in the informer's copy yet
                continue
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(ANN_SELECTED_NODE) != node:
                return f'provisioning failed for PVC "{name}"', False
            volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
            if volume_name:
                volume = self.objects.volumes.get(volume_name)
                if volume is None:
                    done = False
                    continue
                if not volume_allows_node(volume, node, labels):
                    return f'pv "{volume_name}" node affinity doesn\'t match node "{node}"', False
            phase = (claim.get("status") or {}).get("phase")
            if not claim_fully_bound(claim) or phase != "Bound":
                done = False  # upstream stops at fully bound; the phase is one write later
        return "", done


def _requested(delayed: _Delayed) -> int:
    """A claim's storage request in bytes (upstream sorts delayed claims by it)."""
    spec = delayed.claim.get("spec") or {}
    return storage_bytes((spec.get("resources") or {}).get("requests")) or 0
