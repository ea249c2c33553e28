"""The in-place release controller (``in-place-release``): carries out :mod:`.model`'s steps
for every workload the operator's webhook held, on whatever cluster it runs against.

It writes only what the steps say: a ReplicaSet's template (PUT, resourceVersion-guarded),
pods' revision labels (:func:`~inplace.controllers.workloadresize.revisions.adopt_revision`),
and the workload's restore patch (guarded the same way). The resizing itself is the
workload-resize controller's, which runs beside it. Events on the workload: ``InPlaceHeld``
while it waits (once per reason) and ``InPlaceReleased`` when it gives the workload back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.annotations import HELD
from inplace.client import (
    CONTROLLERREVISIONS,
    DAEMONSETS,
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    Informer,
    Resource,
    key_of,
)

from ..base import Context, QueueController
from ..pods import CONTROLLER_INDEX, controller_of, is_active, uid_of, with_type
from ..workloadresize.revisions import adopt_revision
from .model import (
    Relabel,
    Restore,
    Step,
    UpdateReplicaSet,
    Wait,
    daemon_set_plan,
    deployment_plan,
    stateful_set_plan,
)

__all__ = ["ReleaseController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

_WAIT_AGAIN = 1.0
"""Seconds before a waiting workload is looked at again (its own events usually come first)."""


def _held(obj: Mapping[str, Any]) -> bool:
    return HELD in ((obj.get("metadata") or {}).get("annotations") or {})


class ReleaseController(QueueController):
    name = "in-place-release"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.kinds: dict[str, tuple[Resource, Informer]] = {
            kind: (res, ctx.informer(res))
            for kind, res in (
                ("Deployment", DEPLOYMENTS),
                ("StatefulSet", STATEFULSETS),
                ("DaemonSet", DAEMONSETS),
            )
        }
        self.replica_sets = ctx.informer(REPLICASETS)
        self.revisions = ctx.informer(CONTROLLERREVISIONS)
        self.pods = ctx.informer(PODS)
        self.recorder = ctx.recorder("in-place-release-controller")
        self.said: dict[str, str] = {}
        """Workload key → the wait last announced."""
        for kind, (_, informer) in self.kinds.items():
            informer.add_handler(*self._workload_handlers(kind))
        for dependents in (self.replica_sets, self.revisions, self.pods):
            dependents.add_handler(self._dependent, lambda _old, new: self._dependent(new), None)

    def _workload_handlers(self, kind: str) -> tuple[Any, Any, Any]:
        def added(obj: Obj) -> None:
            if _held(obj):
                self.enqueue(f"{kind}/{key_of(obj)}")

        def updated(_old: Obj, new: Obj) -> None:
            added(new)

        def deleted(obj: Obj) -> None:
            self.said.pop(f"{kind}/{key_of(obj)}", None)

        return added, updated, deleted

    def _dependent(self, obj: Obj) -> None:
        """A ReplicaSet, revision or pod of a held workload changed: look at the workload."""
        ref = controller_of(obj)
        if ref is None or ref.get("kind") not in self.kinds:
            return
        namespace = (obj.get("metadata") or {}).get("namespace")
        key = f"{namespace}/{ref.get('name')}"
        owner = self.kinds[str(ref["kind"])][1].get(key)
        if owner is not None and _held(owner):
            self.enqueue(f"{ref['kind']}/{key}")

    def _owned(self, informer: Informer, owner: Mapping[str, Any]) -> list[Obj]:
        return list(informer.by_index(CONTROLLER_INDEX, uid_of(owner)))

    def plan(self, kind: str, workload: Obj) -> list[Step]:
        if kind == "Deployment":
            return deployment_plan(workload, self._owned(self.replica_sets, workload))
        revisions = self._owned(self.revisions, workload)
        pods = [p for p in self._owned(self.pods, workload) if is_active(p)]
        if kind == "StatefulSet":
            return stateful_set_plan(workload, revisions, pods)
        return daemon_set_plan(workload, revisions, pods)

    async def reconcile(self, key: str) -> float | None:
        kind, _, name_key = key.partition("/")
        if kind not in self.kinds:
            return None
        resource, informer = self.kinds[kind]
        workload = informer.get(name_key)
        if workload is None or not _held(workload):
            self.said.pop(key, None)
            return None
        typed = with_type(workload, resource)
        for step in self.plan(kind, workload):
            if isinstance(step, Wait):
                if self.said.get(key) != step.reason:
                    self.said[key] = step.reason
                    self.recorder.event(typed, "Normal", "InPlaceHeld", step.reason)
                return _WAIT_AGAIN
            if isinstance(step, UpdateReplicaSet):
                await self._update_replica_set(key, step)
            elif isinstance(step, Relabel):
                await adopt_revision(self.client, step.pod, step.labels)
            elif isinstance(step, Restore):
                await self._restore(resource, workload, typed, step)
                self.said.pop(key, None)
        return None

    async def _update_replica_set(self, key: str, step: UpdateReplicaSet) -> None:
        rs = step.replica_set
        body = with_type({**rs, "spec": {**rs["spec"], "template": step.template}}, REPLICASETS)
        meta = body["metadata"]
        await self.client.update(REPLICASETS, body, namespace=meta.get("namespace"))
        log.info("%s: %s: ReplicaSet %s at the new template", self.name, key, meta.get("name"))

    async def _restore(self, resource: Resource, workload: Obj, typed: Obj, step: Restore) -> None:
        meta = workload["metadata"]
        patch = {
            **step.patch,
            "metadata": {**step.patch["metadata"], "resourceVersion": meta.get("resourceVersion")},
        }
        await self.client.patch(resource, meta["name"], patch, namespace=meta.get("namespace"))
        self.recorder.event(typed, "Normal", "InPlaceReleased", step.message)
