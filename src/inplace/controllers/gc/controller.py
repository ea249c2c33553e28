"""The garbage collector: dependents follow their owners (upstream's ``garbagecollector``).

The dependency graph is the shared informers themselves: every watched resource is indexed
by owner uid, and a uid → object map is kept from their events. Events only enqueue:

* an object whose owner is unknown to the caches, or is gone, or is being deleted in the
  foreground, is *attempted* (:mod:`.model` decides: keep, drop references, delete);
* an owner being deleted in the foreground is attempted too: its blocking dependents are
  deleted, and once none is left its ``foregroundDeletion`` finalizer is removed;
* an owner being deleted with ``orphan`` has its reference removed from every dependent,
  then its ``orphan`` finalizer.

Before an owner is declared gone it is read live from the API server (a cache may simply not
have seen a new owner yet, as upstream's ``absentOwnerCache`` check does), and deletes carry
the object's uid and resourceVersion as preconditions, so nothing is deleted on stale
information.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

from inplace.client import (
    CONFIGMAPS,
    CONTROLLERREVISIONS,
    CRONJOBS,
    CUSTOMRESOURCEDEFINITIONS,
    DAEMONSETS,
    DEPLOYMENTS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    STATEFULSETS,
    APIConflictError,
    APINotFoundError,
    Informer,
    Resource,
    key_of,
)

from ..base import Context, QueueController
from ..pods import OWNER_INDEX, uid_of
from .model import FOREGROUND, ORPHAN, Action, Owner, blocking_dependents, decide, deleting_with

__all__ = ["DEPENDENT_RESOURCES", "GarbageCollector"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEPENDENT_RESOURCES: tuple[Resource, ...] = (
    PODS,
    REPLICASETS,
    DEPLOYMENTS,
    STATEFULSETS,
    DAEMONSETS,
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    JOBS,
    CRONJOBS,
    PODDISRUPTIONBUDGETS,
    LEASES,
    NODES,
    CONFIGMAPS,
    SECRETS,
    SERVICES,
    SERVICEACCOUNTS,
)
"""The built-in kinds whose objects are followed (as dependents and as owners): what the
workload controllers own (pods, ReplicaSets, ControllerRevisions, a StatefulSet's claims, a
CronJob's Jobs) and what owns them, and what operators make for their custom resources
(ConfigMaps, Secrets, Services, ServiceAccounts). Every custom resource is followed too, from
its definition (:meth:`GarbageCollector._follow`). Upstream's collector follows every served
kind; an owner of a kind followed neither way is never presumed gone."""

_OWNER_KINDS: dict[tuple[str, str], Resource] = {
    (r.group, r.kind): r for r in (*DEPENDENT_RESOURCES, NAMESPACES)
}


_PROPAGATION: dict[str, Literal["Orphan", "Background", "Foreground"]] = {
    "Orphan": "Orphan",
    "Background": "Background",
    "Foreground": "Foreground",
}


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def custom_resource_of(crd: Mapping[str, Any]) -> Resource | None:
    """The resource a CustomResourceDefinition serves, at its storage version, once its names
    are accepted (None before, or for a definition without one)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    storage = [v.get("name") for v in spec.get("versions") or () if v.get("storage")]
    accepted = any(
        c.get("type") == "NamesAccepted" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
    )
    if not (accepted and storage and spec.get("group") and names.get("plural")):
        return None
    return Resource(
        str(spec["group"]),
        str(storage[0]),
        str(names["plural"]),
        spec.get("scope") == "Namespaced",
        str(names.get("kind") or ""),
    )


class GarbageCollector(QueueController):
    name = "garbage-collector-controller"
    workers = 4

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.informers: dict[str, Informer] = {}
        self.resources: dict[str, Resource] = {}
        self.by_uid: dict[str, tuple[str, str]] = {}
        """Object uid → (resource id, cache key)."""
        self.own_informers: set[str] = set()
        """The custom resources' informers this collector started (and stops with them)."""
        self.owner_kinds: dict[tuple[str, str], Resource] = dict(_OWNER_KINDS)
        """(group, kind) → resource, for reading an owner live: the built-in kinds and every
        custom resource defined since the collector started (kept after its definition goes:
        an owner of that kind then reads as gone)."""
        for resource in DEPENDENT_RESOURCES:
            self._follow(resource)
        definitions = ctx.informer(CUSTOMRESOURCEDEFINITIONS, optional=True)
        definitions.add_handler(
            lambda crd: self._definition(crd),
            lambda _old, crd: self._definition(crd),
            lambda crd: self._definition(crd, gone=True),
        )

    # -- what is followed --------------------------------------------------------------------

    def _follow(self, resource: Resource) -> None:
        """Watch a resource's objects as dependents and owners (optional for a custom
        resource: its definition may go away)."""
        rid = f"{resource.group}/{resource.plural}"
        self.owner_kinds[(resource.group, resource.kind)] = resource
        if rid in self.informers:
            return
        custom = resource not in DEPENDENT_RESOURCES
        if custom and resource not in self.ctx.informers.resources:
            self.own_informers.add(rid)  # no other controller watches it: ours to stop
        informer = self.ctx.informer(resource, optional=custom)
        self.informers[rid] = informer
        self.resources[rid] = resource
        informer.add_handler(*self._handlers(rid))
        if custom:  # dependents already seen whose owner is of this kind: look again
            for dep_rid, dependents in self.informers.items():
                for obj in dependents.list():
                    if any(
                        _group(str(ref.get("apiVersion") or "")) == resource.group
                        and ref.get("kind") == resource.kind
                        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ()
                    ):
                        self._enqueue("attempt", dep_rid, key_of(obj))

    def _definition(self, crd: Obj, *, gone: bool = False) -> None:
        resource = custom_resource_of(crd)
        if resource is None:
            return
        if not gone:
            self._follow(resource)
            return
        rid = f"{resource.group}/{resource.plural}"
        if rid in self.own_informers:  # a kind still served built in (the VPA) stays followed
            self.own_informers.discard(rid)
            self.informers.pop(rid, None)
            self.ctx.informers.remove(self.resources.pop(rid))

    # -- graph events ----------------------------------------------------------------------

    def _handlers(
        self, rid: str
    ) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
        def added(obj: Obj) -> None:
            self._changed(rid, obj, None)

        def updated(old: Obj, new: Obj) -> None:
            self._changed(rid, new, old)

        def deleted(obj: Obj) -> None:
            self._deleted(rid, obj)

        return added, updated, deleted

    def _enqueue(self, verb: str, rid: str, key: str) -> None:
        self.queue.add(f"{verb}|{rid}|{key}")

    def _changed(self, rid: str, obj: Obj, old: Obj | None) -> None:
        uid = uid_of(obj)
        key = key_of(obj)
        if uid:
            self.by_uid[uid] = (rid, key)
        meta = obj.get("metadata") or {}
        if deleting_with(obj, FOREGROUND):
            self._enqueue("attempt", rid, key)
        if deleting_with(obj, ORPHAN):
            self._enqueue("orphan", rid, key)
        refs = meta.get("ownerReferences") or ()
        for ref in refs:
            owner_uid = str(ref.get("uid"))
            owner = self.by_uid.get(owner_uid)
            if owner is None:
                self._enqueue("attempt", rid, key)
                break
            owner_informer = self.informers.get(owner[0])
            owner_obj = owner_informer.get(owner[1]) if owner_informer is not None else None
            if owner_obj is not None and deleting_with(owner_obj, FOREGROUND):
                self._enqueue("attempt", rid, key)
                break
        if old is not None:
            before = {
                str(r.get("uid")) for r in (old.get("metadata") or {}).get("ownerReferences") or ()
            }
            after = {str(r.get("uid")) for r in refs}
            for gone in before - after:
                self._owner_maybe_unblocked(gone)

    def _deleted(self, rid: str, obj: Obj) -> None:
        uid = uid_of(obj)
        self.by_uid.pop(uid, None)
        for dep_rid, informer in self.informers.items():
            for key in informer.index_keys(OWNER_INDEX, uid):
                self._enqueue("attempt", dep_rid, key)
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
            self._owner_maybe_unblocked(str(ref.get("uid")))

    def _owner_maybe_unblocked(self, owner_uid: str) -> None:
        owner = self.by_uid.get(owner_uid)
        informer = self.informers.get(owner[0]) if owner is not None else None
        if owner is None or informer is None:
            return
        obj = informer.get(owner[1])
        if obj is not None and deleting_with(obj, FOREGROUND):
            self._enqueue("attempt", owner[0], owner[1])

    # -- reading -----------------------------------------------------------------------------

    def _dependents(self, uid: str) -> list[tuple[str, Obj]]:
        out = []
        for rid, informer in self.informers.items():
            for obj in informer.by_index(OWNER_INDEX, uid):
                out.append((rid, obj))
        return out

    async def _owner_state(self, ref: Mapping[str, Any], namespace: str | None) -> Owner:
        uid = str(ref.get("uid"))
        cached = self.by_uid.get(uid)
        informer = self.informers.get(cached[0]) if cached is not None else None
        if cached is not None and informer is not None:
            obj = informer.get(cached[1])
            if obj is not None and uid_of(obj) == uid:
                return Owner.WAITING if deleting_with(obj, FOREGROUND) else Owner.SOLID
        resource = self.owner_kinds.get(
            (_group(str(ref.get("apiVersion") or "")), str(ref.get("kind")))
        )
        if resource is None:
            return Owner.UNKNOWN
        try:
            live = await self.client.get(
                resource, str(ref.get("name")), namespace=namespace if resource.namespaced else None
            )
        except APINotFoundError:
            return Owner.DANGLING
        if uid_of(live) != uid:
            return Owner.DANGLING
        return Owner.WAITING if deleting_with(live, FOREGROUND) else Owner.SOLID

    # -- work --------------------------------------------------------------------------------

    async def reconcile(self, item: str) -> float | None:
        verb, rid, key = item.split("|", 2)
        resource = self.resources.get(rid)
        informer = self.informers.get(rid)
        obj = informer.get(key) if informer is not None else None
        if resource is None or obj is None:
            return None
        if verb == "orphan":
            await self._orphan(resource, obj)
            return None
        if deleting_with(obj, FOREGROUND):
            await self._process_deleting_dependents(rid, resource, obj)
            return None
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return None  # being deleted already, nothing to decide
        await self._attempt(resource, obj)
        return None

    async def _attempt(self, resource: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        refs = meta.get("ownerReferences") or ()
        if not refs:
            return
        owners = {str(ref.get("uid")): await self._owner_state(ref, namespace) for ref in refs}
        decision = decide(obj, owners, has_dependents=bool(self._dependents(uid_of(obj))))
        if decision.action is Action.NOTHING:
            return
        name = meta["name"]
        try:
            latest = await self.client.get(resource, name, namespace=namespace)
        except APINotFoundError:
            return
        if uid_of(latest) != uid_of(obj):
            return
        if decision.action is Action.REMOVE_REFERENCES:
            await self._remove_refs(resource, latest, decision.remove_uids)
            return
        log.info("deleting %s %s (%s)", resource.kind, key_of(obj), decision.propagation)
        try:
            await self.client.delete(
                resource,
                name,
                namespace=namespace,
                propagation_policy=_PROPAGATION[decision.propagation],
                preconditions={
                    "uid": uid_of(latest),
                    "resourceVersion": latest["metadata"]["resourceVersion"],
                },
            )
        except APINotFoundError:
            pass

    async def _remove_refs(self, resource: Resource, obj: Obj, uids: tuple[str, ...]) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": u} for u in uids]}}
        try:
            await self.client.patch(
                resource,
                meta["name"],
                patch,
                patch_type="strategic",
                namespace=meta.get("namespace"),
            )
        except APINotFoundError:
            pass

    async def _remove_finalizer(self, resource: Resource, obj: Obj, finalizer: str) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}
        try:
            await self.client.patch(
                resource,
                meta["name"],
                patch,
                patch_type="strategic",
                namespace=meta.get("namespace"),
            )
        except APINotFoundError:
            pass

    async def _process_deleting_dependents(self, rid: str, resource: Resource, owner: Obj) -> None:
        uid = uid_of(owner)
        dependents = self._dependents(uid)
        blocking = blocking_dependents(uid, [d for _, d in dependents])
        if not blocking:
            await self._remove_finalizer(resource, owner, FOREGROUND)
            return
        blocking_uids = {uid_of(d) for d in blocking}
        for dep_rid, dep in dependents:
            if uid_of(dep) in blocking_uids and not deleting_with(dep, FOREGROUND):
                self._enqueue("attempt", dep_rid, key_of(dep))

    async def _orphan(self, resource: Resource, owner: Obj) -> None:
        uid = uid_of(owner)
        for dep_rid, dep in self._dependents(uid):
            try:
                await self._remove_refs(self.resources[dep_rid], dep, (uid,))
            except APIConflictError:
                raise
        await self._remove_finalizer(resource, owner, ORPHAN)
