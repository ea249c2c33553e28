"""The PersistentVolume controller: binding, and the local-path provisioner.

Upstream's ``persistentvolume-binder-controller`` (claims and volumes bound both ways:
``claimRef`` on the volume, ``volumeName`` on the claim, the phases and the
``pv.kubernetes.io/*`` annotations) and k3s's local-path-provisioner in one controller:
a claim of a class whose provisioner is ``rancher.io/local-path`` gets a volume
``pvc-<claim uid>`` backed by the directory ``<root>/pvc-<claim uid>`` (``hostPath``,
``DirectoryOrCreate``, mode 0777 as k3s makes it). For ``WaitForFirstConsumer`` the volume is
made once the scheduler has annotated the claim with the node its first pod goes to, and the
volume records that node in its ``nodeAffinity`` as k3s does (``kubernetes.io/hostname In
[<node>]``: node agents register that label with their node's name). The node agents of one
host share the directory, but a volume belongs to the node it was provisioned for.

The directory is made and removed here, by this process, because the controller manager
runs on the host whose data dir holds it (``--default-local-storage-path``, k3s's flag name;
``inplace up`` passes ``<data>/storage``). k3s runs a helper pod on the node instead; on one
host that indirection buys nothing. Without the flag the controller only binds, and claims of
the local-path class wait as for any external provisioner.

Each sync re-reads the informers and does the remaining steps of a binding in upstream's
order (volume ``claimRef``, volume ``Bound``, claim ``volumeName``, claim ``Bound``), so a
sync interrupted anywhere (a 409, a crash) is completed by the next one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inplace.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_STORAGE_PROVISIONER,
    BETA_ANN_STORAGE_PROVISIONER,
    BETA_STORAGE_CLASS_ANNOTATION,
    LOCAL_PATH_PROVISIONER,
    claim_class,
    default_class,
    is_default_class,
)
from inplace.client import (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STORAGECLASSES,
    APIAlreadyExistsError,
    APINotFoundError,
    key_of,
)

from ..base import Context, QueueController
from .model import ClaimDecision, decide_claim, decide_volume

__all__ = ["PersistentVolumeController", "volume_name_for"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

_CLAIM = "claim:"
_VOLUME = "volume:"
_DIRECTORY = "directory:"
_HOSTNAME_LABEL = "kubernetes.io/hostname"


def volume_name_for(claim: Mapping[str, Any]) -> str:
    """Upstream's name of a provisioned volume: ``pvc-<claim uid>``."""
    return f"pvc-{(claim.get('metadata') or {}).get('uid')}"


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    assert isinstance(meta, dict)
    return meta


def _with_kind(obj: Obj, kind: str) -> Obj:
    return {**obj, "apiVersion": "v1", "kind": kind}


class PersistentVolumeController(QueueController):
    name = "persistentvolume-binder-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        root = ctx.options.get("local_path_root")
        self.root: Path | None = Path(root) if root else None
        self.provisioner = LOCAL_PATH_PROVISIONER if self.root is not None else ""
        self.events = ctx.recorder("persistentvolume-controller")
        self.claims = ctx.informer(PERSISTENTVOLUMECLAIMS)
        self.volumes = ctx.informer(PERSISTENTVOLUMES)
        self.classes = ctx.informer(STORAGECLASSES)
        self.claims.add_handler(
            self._claim_changed, lambda old, new: self._claim_changed(new), self._claim_deleted
        )
        self.volumes.add_handler(
            self._volume_changed, lambda old, new: self._volume_changed(new), self._volume_deleted
        )
        self.classes.add_handler(
            self._class_changed, lambda old, new: self._class_changed(new), None
        )

    # -- handlers: keys only ---------------------------------------------------------------

    def _claim_changed(self, claim: Obj) -> None:
        self.enqueue(_CLAIM + key_of(claim))

    def _claim_deleted(self, claim: Obj) -> None:
        volume = (claim.get("spec") or {}).get("volumeName")
        if volume:
            self.enqueue(_VOLUME + str(volume))
        uid = (claim.get("metadata") or {}).get("uid")
        for pv in self.volumes.list():
            if ((pv.get("spec") or {}).get("claimRef") or {}).get("uid") == uid:
                self.enqueue(_VOLUME + key_of(pv))

    def _volume_changed(self, volume: Obj) -> None:
        self.enqueue(_VOLUME + key_of(volume))
        ref = (volume.get("spec") or {}).get("claimRef")
        if isinstance(ref, Mapping) and ref.get("namespace") and ref.get("name"):
            self.enqueue(f"{_CLAIM}{ref['namespace']}/{ref['name']}")
        elif ref is None:
            # An unclaimed volume may satisfy a waiting claim of its class (upstream finds
            # these on its periodic resync; here the volume's event is enough).
            self._enqueue_unbound((volume.get("spec") or {}).get("storageClassName") or "")

    def _volume_deleted(self, volume: Obj) -> None:
        """A ``Delete`` volume this provisioner made is gone (deleted by hand, its protection
        lifted once released): its directory goes with it."""
        self._volume_changed(volume)
        spec = volume.get("spec") or {}
        annotations = (volume.get("metadata") or {}).get("annotations") or {}
        path = (spec.get("hostPath") or {}).get("path")
        if (
            path
            and spec.get("persistentVolumeReclaimPolicy") == "Delete"
            and annotations.get(ANN_DYNAMICALLY_PROVISIONED) == self.provisioner
        ):
            self.enqueue(_DIRECTORY + str(path))

    def _class_changed(self, storage_class: Obj) -> None:
        self._enqueue_unbound((storage_class.get("metadata") or {}).get("name"))
        if is_default_class(storage_class):
            for claim in self.claims.list():
                if _without_class(claim):
                    self.enqueue(_CLAIM + key_of(claim))

    def _enqueue_unbound(self, name: object) -> None:
        """Every claim of class ``name`` not bound yet."""
        for claim in self.claims.list():
            if not (claim.get("spec") or {}).get("volumeName") and claim_class(claim) == name:
                self.enqueue(_CLAIM + key_of(claim))

    # -- reconcile -----------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        if key.startswith(_CLAIM):
            await self._sync_claim(key[len(_CLAIM) :])
        elif key.startswith(_VOLUME):
            await self._sync_volume(key[len(_VOLUME) :])
        elif key.startswith(_DIRECTORY):
            await self._remove_directory(key[len(_DIRECTORY) :])
        return None

    async def _sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        if _without_class(claim):
            default = default_class(self.classes.list())
            if default is not None:
                # Upstream's retroactive default StorageClass assignment (GA in v1.28): a
                # claim created while there was no default gets the one there is now.
                spec = {
                    **(claim.get("spec") or {}),
                    "storageClassName": default["metadata"]["name"],
                }
                await self.client.update(PERSISTENTVOLUMECLAIMS, {**claim, "spec": spec})
                return  # its update event brings it back
        class_name = claim_class(claim)
        storage_class = self.classes.get(class_name) if class_name else None
        decision = decide_claim(
            claim,
            self.volumes.list(),
            storage_class,
            provisioner=self.provisioner,
        )
        if decision.step == "bind":
            volume = self.volumes.get(decision.volume)
            if volume is not None:
                await self._bind(claim, volume)
        elif decision.step == "provision":
            assert storage_class is not None
            await self._provision(claim, storage_class, decision.node)
        elif decision.step == "lost":
            await self._claim_lost(claim, decision)
        elif decision.step == "wait":
            if decision.reason == "ExternalProvisioning" and storage_class is not None:
                await self._annotate_provisioner(claim, str(storage_class.get("provisioner")))
            if decision.reason:
                self._claim_event(claim, decision)

    def _claim_event(self, claim: Obj, decision: ClaimDecision) -> None:
        self.events.event(
            _with_kind(claim, "PersistentVolumeClaim"),
            decision.event_type,
            decision.reason,
            decision.message,
        )

    async def _annotate_provisioner(self, claim: Obj, provisioner: str) -> Obj:
        """Upstream marks a claim it expects a provisioner to serve (both annotation forms)."""
        annotations = (claim.get("metadata") or {}).get("annotations") or {}
        if annotations.get(ANN_STORAGE_PROVISIONER) == provisioner:
            return claim
        meta = dict(claim.get("metadata") or {})
        meta["annotations"] = {
            **annotations,
            ANN_STORAGE_PROVISIONER: provisioner,
            BETA_ANN_STORAGE_PROVISIONER: provisioner,
        }
        # An update (compare-and-swap), not a patch: upstream's binder role has no patch.
        return await self.client.update(PERSISTENTVOLUMECLAIMS, {**claim, "metadata": meta})

    async def _claim_lost(self, claim: Obj, decision: ClaimDecision) -> None:
        if (claim.get("status") or {}).get("phase") != "Lost":
            status = dict(claim.get("status") or {})
            status["phase"] = "Lost"
            await self.client.update(
                PERSISTENTVOLUMECLAIMS, {**claim, "status": status}, subresource="status"
            )
        self._claim_event(claim, decision)

    async def _bind(self, claim: Obj, volume: Obj) -> None:
        """Upstream ``bind``: volume first (claimRef, then Bound), then the claim."""
        claim_meta = claim.get("metadata") or {}
        spec = dict(volume.get("spec") or {})
        ref = spec.get("claimRef") or {}
        by_controller = False
        if ref.get("uid") != claim_meta.get("uid"):
            by_controller = not ref
            spec["claimRef"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": claim_meta.get("namespace"),
                "name": claim_meta.get("name"),
                "uid": claim_meta.get("uid"),
                "resourceVersion": claim_meta.get("resourceVersion"),
            }
            body = {**volume, "spec": spec, "metadata": dict(volume.get("metadata") or {})}
            if by_controller:
                annotations = dict(body["metadata"].get("annotations") or {})
                annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
                body["metadata"]["annotations"] = annotations
            volume = await self.client.update(PERSISTENTVOLUMES, body)
        if (volume.get("status") or {}).get("phase") != "Bound":
            status = {**(volume.get("status") or {}), "phase": "Bound"}
            volume = await self.client.update(
                PERSISTENTVOLUMES, {**volume, "status": status}, subresource="status"
            )
        volume_name = (volume.get("metadata") or {}).get("name")
        annotations = dict(claim_meta.get("annotations") or {})
        if (claim.get("spec") or {}).get("volumeName") != volume_name or annotations.get(
            ANN_BIND_COMPLETED
        ) != "yes":
            wanted = {ANN_BIND_COMPLETED: "yes"}
            if not (claim.get("spec") or {}).get("volumeName"):
                wanted[ANN_BOUND_BY_CONTROLLER] = "yes"
            annotations.update(wanted)
            body = {
                **claim,
                "metadata": {**claim_meta, "annotations": annotations},
                "spec": {**(claim.get("spec") or {}), "volumeName": volume_name},
            }
            claim = await self.client.update(PERSISTENTVOLUMECLAIMS, body)
        volume_spec = volume.get("spec") or {}
        status = dict(claim.get("status") or {})
        wanted_status = {
            "phase": "Bound",
            "accessModes": list(volume_spec.get("accessModes") or []),
            "capacity": dict(volume_spec.get("capacity") or {}),
        }
        if any(status.get(k) != v for k, v in wanted_status.items()):
            status.update(wanted_status)
            await self.client.update(
                PERSISTENTVOLUMECLAIMS, {**claim, "status": status}, subresource="status"
            )

    async def _provision(self, claim: Obj, storage_class: Obj, node: str) -> None:
        """k3s's local-path ``Provision``: the directory, then the volume pre-bound to the
        claim (the next sync of the claim binds it)."""
        assert self.root is not None
        claim = await self._annotate_provisioner(claim, self.provisioner)
        name = volume_name_for(claim)
        if self.volumes.get(name) is not None:
            return  # made by an earlier sync; its event brings the claim back to bind
        meta = claim.get("metadata") or {}
        claim_spec = claim.get("spec") or {}
        self.events.event(
            _with_kind(claim, "PersistentVolumeClaim"),
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{meta.get("namespace")}/'
            f'{meta.get("name")}"',
        )
        requests = (claim_spec.get("resources") or {}).get("requests") or {}
        path = self.root / name
        await asyncio.to_thread(_make_directory, path)
        spec: Obj = {
            "capacity": {"storage": requests["storage"]},
            "accessModes": list(claim_spec.get("accessModes") or ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": (storage_class.get("metadata") or {}).get("name"),
            "volumeMode": claim_spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta.get("namespace"),
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
        }
        if node:
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": _HOSTNAME_LABEL, "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            }
        body: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {ANN_DYNAMICALLY_PROVISIONED: self.provisioner},
            },
            "spec": spec,
        }
        try:
            await self.client.create(PERSISTENTVOLUMES, body)
        except APIAlreadyExistsError:
            return  # already there (an earlier sync whose answer was lost)
        self.events.event(
            _with_kind(claim, "PersistentVolumeClaim"),
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}",
        )

    # -- volumes ---------------------------------------------------------------------------

    async def _sync_volume(self, name: str) -> None:
        volume = self.volumes.get(name)
        if volume is None:
            return
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        claim = None
        if ref.get("namespace") and ref.get("name"):
            claim = self.claims.get(f"{ref['namespace']}/{ref['name']}")
        decision = decide_volume(volume, claim, provisioner=self.provisioner)
        if decision.step == "released" and await self._claim_still_there(ref):
            return  # the cache is behind: the claim exists (upstream checks live too)
        if decision.step in ("available", "bound", "released"):
            phase = decision.step.capitalize()
            status = {**(volume.get("status") or {}), "phase": phase}
            await self.client.update(
                PERSISTENTVOLUMES, {**volume, "status": status}, subresource="status"
            )
        elif decision.step == "unbind":
            meta = dict(volume.get("metadata") or {})
            annotations = dict(meta.get("annotations") or {})
            annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
            meta["annotations"] = annotations
            spec = dict(volume.get("spec") or {})
            spec.pop("claimRef", None)
            await self.client.update(PERSISTENTVOLUMES, {**volume, "metadata": meta, "spec": spec})
        elif decision.step == "delete":
            await self._delete_volume(volume)
        if decision.reason:
            self.events.event(
                _with_kind(volume, "PersistentVolume"), "Warning", decision.reason, decision.message
            )

    async def _claim_still_there(self, ref: Mapping[str, Any]) -> bool:
        """A live read of the claim a volume names, before the volume is released."""
        if not ref.get("namespace") or not ref.get("name"):
            return False
        try:
            live = await self.client.get(
                PERSISTENTVOLUMECLAIMS, str(ref["name"]), namespace=str(ref["namespace"])
            )
        except APINotFoundError:
            return False
        return bool((live.get("metadata") or {}).get("uid") == ref.get("uid"))

    async def _remove_directory(self, path: str) -> None:
        """Remove a volume's directory, only if this provisioner could have made it."""
        if self.root is not None and _inside(Path(path), self.root):
            await asyncio.to_thread(shutil.rmtree, path, True)

    async def _delete_volume(self, volume: Obj) -> None:
        """Reclaim ``Delete`` of a volume this provisioner made: its directory, then it."""
        path = ((volume.get("spec") or {}).get("hostPath") or {}).get("path")
        meta = volume.get("metadata") or {}
        if path:
            await self._remove_directory(str(path))
        await self.client.delete(
            PERSISTENTVOLUMES,
            str(meta.get("name")),
            preconditions={"uid": str(meta.get("uid") or "")},
        )


def _without_class(claim: Mapping[str, Any]) -> bool:
    """A claim that names no class at all (not even ``""``) and is not bound."""
    spec = claim.get("spec") or {}
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return (
        spec.get("storageClassName") is None
        and BETA_STORAGE_CLASS_ANNOTATION not in annotations
        and not spec.get("volumeName")
        and not (claim.get("metadata") or {}).get("deletionTimestamp")
    )


def _inside(path: Path, root: Path) -> bool:
    """Only a directory this provisioner made is ever removed: ``<root>/pvc-*``, no links."""
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return resolved.parent == root.resolve() and resolved.name.startswith("pvc-")


def _make_directory(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o777)  # k3s's mode: whatever uid the pod runs as can write
