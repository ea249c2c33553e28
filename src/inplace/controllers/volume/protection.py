"""Storage object in-use protection: upstream's ``pvc-protection`` and ``pv-protection``
controllers.

The API server puts ``kubernetes.io/pvc-protection`` on every new claim and
``kubernetes.io/pv-protection`` on every new volume (the ``StorageObjectInUseProtection``
admission step). Deleting one then only marks it; these controllers remove the finalizer,
and so let it go, once nothing uses it: a claim when no unfinished pod of its namespace
names it (checked in the informer, then confirmed with a live list, since a pod created a
moment ago may not be in the cache yet, as upstream's ``askAPIServer``), a volume once it is
no longer ``Bound``.
"""

from __future__ import annotations

import logging
from typing import Any

from inplace.api.storage import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, claim_names
from inplace.client import PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, PODS, Resource, key_of

from ..base import NAMESPACE_INDEX, Context, QueueController
from .model import claim_in_use, volume_in_use

__all__ = ["PVCProtectionController", "PVProtectionController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _protected(obj: Obj, finalizer: str) -> bool:
    """Being deleted, and still held by the finalizer."""
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


class _FinalizerRemover(QueueController):
    resource: Resource
    finalizer: str

    async def _release(self, obj: Obj) -> None:
        """Take the finalizer off (a compare-and-swap on the cached version; a 409 retries)."""
        meta = dict(obj.get("metadata") or {})
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != self.finalizer]
        await self.client.update(self.resource, {**obj, "metadata": meta})


class PVCProtectionController(_FinalizerRemover):
    name = "persistentvolumeclaim-protection-controller"
    workers = 2
    resource = PERSISTENTVOLUMECLAIMS
    finalizer = PVC_PROTECTION_FINALIZER

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.claims = ctx.informer(PERSISTENTVOLUMECLAIMS)
        self.pods = ctx.informer(PODS)
        self.claims.add_handler(
            self._claim_changed, lambda old, new: self._claim_changed(new), None
        )
        self.pods.add_handler(
            self._pod_changed, lambda old, new: self._pod_changed(new), self._pod_changed
        )

    def _claim_changed(self, claim: Obj) -> None:
        if _protected(claim, self.finalizer):
            self.enqueue(key_of(claim))

    def _pod_changed(self, pod: Obj) -> None:
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        for name in claim_names(pod):
            self.enqueue(f"{namespace}/{name}")

    async def reconcile(self, key: str) -> float | None:
        claim = self.claims.get(key)
        if claim is None or not _protected(claim, self.finalizer):
            return None
        namespace = str((claim.get("metadata") or {}).get("namespace") or "")
        if claim_in_use(claim, self.pods.by_index(NAMESPACE_INDEX, namespace)):
            return None  # the pod's deletion brings the claim back
        live = await self.client.list_all(PODS, namespace=namespace)
        if claim_in_use(claim, live.get("items") or []):
            return None
        await self._release(claim)
        return None


class PVProtectionController(_FinalizerRemover):
    name = "persistentvolume-protection-controller"
    workers = 1
    resource = PERSISTENTVOLUMES
    finalizer = PV_PROTECTION_FINALIZER

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.volumes = ctx.informer(PERSISTENTVOLUMES)
        self.volumes.add_handler(
            self._volume_changed, lambda old, new: self._volume_changed(new), None
        )

    def _volume_changed(self, volume: Obj) -> None:
        if _protected(volume, self.finalizer):
            self.enqueue(key_of(volume))

    async def reconcile(self, key: str) -> float | None:
        volume = self.volumes.get(key)
        if volume is None or not _protected(volume, self.finalizer) or volume_in_use(volume):
            return None
        await self._release(volume)
        return None
