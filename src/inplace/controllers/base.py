"""What every controller shares: the shared informers, the clock, the event recorders.

A controller is built from a :class:`Context` (its constructor registers informer handlers
that only enqueue keys) and run with ``await controller.run()`` once the informers it asked
for have synced. :class:`SharedInformers` makes one informer per resource however many
controllers ask for it, as client-go's ``SharedInformerFactory``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from inplace.client import (
    PODS,
    APIConflictError,
    APINotFoundError,
    Client,
    Clock,
    Informer,
    LoopClock,
    Resource,
    WorkQueue,
    key_of,
    run_workers,
)

from .events import ControllerEvents
from .pods import (
    CONTROLLER_INDEX,
    OWNER_INDEX,
    controller_of,
    controller_uid_index,
    owner_uids_index,
    selector_of,
    uid_of,
)

__all__ = [
    "NAMESPACE_INDEX",
    "NODE_INDEX",
    "Context",
    "Controller",
    "QueueController",
    "SharedInformers",
    "controller_key",
    "selecting",
]

Obj = dict[str, Any]

log = logging.getLogger(__name__)

CONFLICT_RETRY = 0.05
"""Seconds before a key whose write lost a compare-and-swap (409) is reconciled again."""

NAMESPACE_INDEX = "namespace"
"""Informer index of namespaced resources: the object's namespace."""


NODE_INDEX = "node"
"""Informer index of pods: the node they are bound to."""


def _namespace_index(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def _node_index(pod: Obj) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


OPTIONAL_GROUPS: Final = frozenset({"autoscaling.k8s.io"})
"""API groups a cluster may not serve (CRDs): their informers count as synced and empty
until the kind is installed, so a controller that also reads them (the workload-resize
controller reads VPAs) runs on a cluster without them."""


def controller_key(
    obj: Mapping[str, Any], kind: str, owners: Informer, ref: Mapping[str, Any] | None = None
) -> str | None:
    """``namespace/name`` of the ``kind`` object in ``owners`` that controls ``obj`` (its
    controller reference, or ``ref``): the same object by uid, never a namesake that replaced
    it (upstream's ``resolveControllerRef``)."""
    ref = controller_of(obj) if ref is None else ref
    if ref is None or ref.get("kind") != kind:
        return None
    key = f"{(obj.get('metadata') or {}).get('namespace') or ''}/{ref.get('name')}"
    owner = owners.get(key)
    return key if owner is not None and uid_of(owner) == ref.get("uid") else None


def selecting(obj: Mapping[str, Any], owners: Informer) -> list[str]:
    """Keys of the objects in ``owners`` of ``obj``'s namespace whose selector matches its
    labels: who may adopt it (upstream's ``getPodXs`` lookups for orphans)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return [
        key_of(owner)
        for owner in owners.by_index(NAMESPACE_INDEX, meta.get("namespace") or "")
        if selector_of(owner).matches(labels)
    ]


class SharedInformers:
    """One :class:`Informer` per resource, with the ownership indexes every controller uses."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._informers: dict[Resource, Informer] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def get(self, resource: Resource, *, optional: bool = False) -> Informer:
        """The resource's informer, made (and started, once the others run) on first use.
        ``optional``: a kind the cluster may stop serving (a custom resource)."""
        informer = self._informers.get(resource)
        if informer is None:
            optional = optional or resource.group in OPTIONAL_GROUPS
            informer = Informer(self.client, resource, optional=optional)
            informer.add_index(CONTROLLER_INDEX, controller_uid_index)
            informer.add_index(OWNER_INDEX, owner_uids_index)
            if resource.namespaced:
                informer.add_index(NAMESPACE_INDEX, _namespace_index)
            if resource == PODS:
                informer.add_index(NODE_INDEX, _node_index)
            self._informers[resource] = informer
            if self._tasks:  # already running: start this one too
                self._tasks.append(asyncio.create_task(informer.run()))
        return informer

    def remove(self, resource: Resource) -> None:
        """Stop following a resource (a custom resource whose definition went away)."""
        informer = self._informers.pop(resource, None)
        if informer is not None:
            informer.stop()

    @property
    def resources(self) -> list[Resource]:
        return list(self._informers)

    def start(self) -> None:
        for informer in self._informers.values():
            self._tasks.append(
                asyncio.create_task(informer.run(), name=f"informer-{informer.resource.plural}")
            )

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.wait_synced() for i in self._informers.values()))

    @property
    def synced(self) -> bool:
        return all(i.has_synced for i in self._informers.values())

    async def stop(self) -> None:
        for informer in self._informers.values():
            informer.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []


@dataclass
class Context:
    """What a controller is built from."""

    client: Client
    informers: SharedInformers
    clock: Clock = field(default_factory=LoopClock)
    """Monotonic time and timers (work queue delays)."""
    now: Callable[[], float] = time.time
    """Wall-clock time (Unix seconds), compared with the time stamps objects carry."""
    options: Mapping[str, Any] = field(default_factory=dict)
    recorders: dict[str, ControllerEvents] = field(default_factory=dict)

    def recorder(self, component: str) -> ControllerEvents:
        recorder = self.recorders.get(component)
        if recorder is None:
            recorder = self.recorders[component] = ControllerEvents(self.client, component)
        return recorder

    def informer(self, resource: Resource, *, optional: bool = False) -> Informer:
        return self.informers.get(resource, optional=optional)


class Controller(Protocol):
    name: str

    async def run(self) -> None:
        """Work until cancelled."""
        ...


class QueueController:
    """A controller whose work is a queue of keys reconciled by a few workers."""

    name = "controller"
    workers = 4

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.queue: WorkQueue[str] = WorkQueue(clock=ctx.clock, name=self.name)

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    async def reconcile(self, key: str) -> float | None:
        raise NotImplementedError

    async def _reconcile(self, key: str) -> float | None:
        try:
            return await self.reconcile(key)
        except APIConflictError as exc:
            # Written from a cache a step behind: expected, and the informer is about to
            # deliver the newer object. Look again shortly, without an error in the log.
            log.debug("%s: %s: %s; retrying", self.name, key, exc)
            return CONFLICT_RETRY
        except APINotFoundError as exc:
            # Something this sync wrote to went away meanwhile; its deletion event brings
            # the key back if anything is left to do.
            log.debug("%s: %s: %s", self.name, key, exc)
            return None

    async def run(self) -> None:
        try:
            await run_workers(self.queue, self._reconcile, self.workers)
        finally:
            self.queue.shutdown()
