"""The controller manager: which controllers run, their shared informers, and their lifetime.

``--controllers`` has upstream's syntax: ``*`` is every controller, ``name`` adds one,
``-name`` removes one (``*,-garbage-collector-controller``); names are upstream's, with their
short aliases (``deployment`` for ``deployment-controller``). ``workload-resize`` is this
project's: the in-place resize of a workload's pods, which also runs alone against a real
cluster where upstream's controllers own ReplicaSets and Jobs.

Start-up is upstream's: build every selected controller (each registers handlers on the
shared informers it needs), start the informers, wait until all have listed, then run the
controllers' workers. Nothing is reconciled from a partial cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inplace.client import Client, ServiceAccountCredentials

from .base import Context, Controller, SharedInformers

__all__ = ["CONTROLLERS", "ControllerManager", "ControllerSpec", "select_controllers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerSpec:
    name: str
    aliases: tuple[str, ...]
    build: Callable[[Context], Controller]
    help: str
    service_account: str
    """The ``kube-system`` service account the controller acts as with
    ``--use-service-account-credentials`` (upstream's name, bound to
    ``system:controller:<service_account>`` by the default RBAC policy)."""


def _replicaset(ctx: Context) -> Controller:
    from .replicaset import ReplicaSetController

    return ReplicaSetController(ctx)


def _deployment(ctx: Context) -> Controller:
    from .deployment.controller import DeploymentController

    return DeploymentController(ctx)


def _job(ctx: Context) -> Controller:
    from .job.controller import JobController

    return JobController(ctx)


def _statefulset(ctx: Context) -> Controller:
    from .statefulset.controller import StatefulSetController

    return StatefulSetController(ctx)


def _daemonset(ctx: Context) -> Controller:
    from .daemonset.controller import DaemonSetController

    return DaemonSetController(ctx)


def _cronjob(ctx: Context) -> Controller:
    from .cronjob.controller import CronJobController

    return CronJobController(ctx)


def _ttl(ctx: Context) -> Controller:
    from .job.ttl import TTLAfterFinishedController

    return TTLAfterFinishedController(ctx)


def _disruption(ctx: Context) -> Controller:
    from .disruption import DisruptionController

    return DisruptionController(ctx)


def _gc(ctx: Context) -> Controller:
    from .gc.controller import GarbageCollector

    return GarbageCollector(ctx)


def _node_lifecycle(ctx: Context) -> Controller:
    from .nodelifecycle.controller import NodeLifecycleController

    return NodeLifecycleController(ctx)


def _pod_gc(ctx: Context) -> Controller:
    from .podgc.controller import PodGarbageCollector

    return PodGarbageCollector(ctx)


def _taint_eviction(ctx: Context) -> Controller:
    from .nodelifecycle.eviction import TaintEvictionController

    return TaintEvictionController(ctx)


def _persistent_volume(ctx: Context) -> Controller:
    from .volume.controller import PersistentVolumeController

    return PersistentVolumeController(ctx)


def _pvc_protection(ctx: Context) -> Controller:
    from .volume.protection import PVCProtectionController

    return PVCProtectionController(ctx)


def _pv_protection(ctx: Context) -> Controller:
    from .volume.protection import PVProtectionController

    return PVProtectionController(ctx)


def _workload_resize(ctx: Context) -> Controller:
    from .workloadresize.controller import WorkloadResizeController

    return WorkloadResizeController(ctx)


def _release(ctx: Context) -> Controller:
    from .release.controller import ReleaseController

    return ReleaseController(ctx)


def _rescue(ctx: Context) -> Controller:
    from .rescue.controller import RescueController

    return RescueController(ctx)


def _memory_pause(ctx: Context) -> Controller:
    from .memorypause.controller import MemoryPauseResponder

    return MemoryPauseResponder(ctx)


def _vpa(ctx: Context) -> Controller:
    from .vpa.controller import VpaController

    return VpaController(ctx)


CONTROLLERS: tuple[ControllerSpec, ...] = (
    ControllerSpec(
        "replicaset-controller",
        ("replicaset",),
        _replicaset,
        "ReplicaSets",
        service_account="replicaset-controller",
    ),
    ControllerSpec(
        "deployment-controller",
        ("deployment",),
        _deployment,
        "Deployments",
        service_account="deployment-controller",
    ),
    ControllerSpec(
        "job-controller",
        ("job",),
        _job,
        "Jobs",
        service_account="job-controller",
    ),
    ControllerSpec(
        "statefulset-controller",
        ("statefulset",),
        _statefulset,
        "StatefulSets",
        service_account="statefulset-controller",
    ),
    ControllerSpec(
        "daemonset-controller",
        ("daemonset",),
        _daemonset,
        "DaemonSets",
        service_account="daemon-set-controller",
    ),
    ControllerSpec(
        "cronjob-controller",
        ("cronjob",),
        _cronjob,
        "CronJobs",
        service_account="cronjob-controller",
    ),
    ControllerSpec(
        "ttl-after-finished-controller",
        ("ttl-after-finished",),
        _ttl,
        "deletes finished Jobs after ttlSecondsAfterFinished",
        service_account="ttl-after-finished-controller",
    ),
    ControllerSpec(
        "disruption-controller",
        ("disruption",),
        _disruption,
        "PodDisruptionBudget status",
        service_account="disruption-controller",
    ),
    ControllerSpec(
        "garbage-collector-controller",
        ("garbagecollector", "garbage-collector"),
        _gc,
        "deletes dependents of deleted owners (background, foreground, orphan)",
        service_account="generic-garbage-collector",
    ),
    ControllerSpec(
        "node-lifecycle-controller",
        ("nodelifecycle", "node-lifecycle"),
        _node_lifecycle,
        "marks nodes whose Lease expired Unknown and taints not-ready/unreachable nodes",
        service_account="node-controller",
    ),
    ControllerSpec(
        "pod-garbage-collector-controller",
        ("podgc", "pod-garbage-collector"),
        _pod_gc,
        "force-deletes pods bound to nodes that are gone, terminating unscheduled pods, and "
        "finished pods beyond the threshold",
        service_account="pod-garbage-collector",
    ),
    ControllerSpec(
        "taint-eviction-controller",
        ("taint-eviction",),
        _taint_eviction,
        "deletes pods from nodes with NoExecute taints they do not tolerate",
        service_account="taint-eviction-controller",
    ),
    ControllerSpec(
        "persistentvolume-binder-controller",
        ("persistentvolume-binder",),
        _persistent_volume,
        "binds claims and volumes; provisions local-path volumes (--default-local-storage-path)",
        service_account="persistent-volume-binder",
    ),
    ControllerSpec(
        "persistentvolumeclaim-protection-controller",
        ("pvc-protection",),
        _pvc_protection,
        "keeps a claim a pod uses until the pod is gone",
        service_account="pvc-protection-controller",
    ),
    ControllerSpec(
        "persistentvolume-protection-controller",
        ("pv-protection",),
        _pv_protection,
        "keeps a bound volume until it is released",
        service_account="pv-protection-controller",
    ),
    ControllerSpec(
        "workload-resize",
        ("workload-resize-controller",),
        _workload_resize,
        "resizes a workload's pods in place when only its template's resources change",
        service_account="workload-resize-controller",
    ),
    ControllerSpec(
        "in-place-release",
        ("release", "in-place-release-controller"),
        _release,
        "completes in place a resources-only change the operator's webhook held from rolling "
        "out (real clusters)",
        service_account="in-place-release-controller",
    ),
    ControllerSpec(
        "rescue-controller",
        ("rescue",),
        _rescue,
        "shrinks over-provisioned shrinkable pods in place to make room for pending pods",
        service_account="rescue-controller",
    ),
    ControllerSpec(
        "memory-pause",
        ("memory-pause-responder",),
        _memory_pause,
        "asks for more memory for pods paused at their limit (inplace.dev/memory-on-pause)",
        service_account="memory-pause-responder",
    ),
    ControllerSpec(
        "vertical-pod-autoscaler",
        ("vpa", "vpa-recommender", "vpa-updater"),
        _vpa,
        "VerticalPodAutoscalers: recommender (status, checkpoints) and updater (in-place resizes)",
        service_account="vertical-pod-autoscaler",
    ),
)


class ControllerSelectionError(ValueError):
    """``--controllers`` names a controller that does not exist."""


def select_controllers(text: str) -> list[ControllerSpec]:
    """The controllers ``--controllers`` selects, in the table's order."""
    by_name: dict[str, ControllerSpec] = {}
    for spec in CONTROLLERS:
        by_name[spec.name] = spec
        for alias in spec.aliases:
            by_name[alias] = spec
    chosen: set[str] = set()
    removed: set[str] = set()
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        if raw == "*":
            chosen.update(spec.name for spec in CONTROLLERS)
            continue
        negate = raw.startswith("-")
        name = raw[1:] if negate else raw
        spec_ = by_name.get(name)
        if spec_ is None:
            known = ", ".join(spec.name for spec in CONTROLLERS)
            raise ControllerSelectionError(f'unknown controller "{name}" (known: {known})')
        (removed if negate else chosen).add(spec_.name)
    return [spec for spec in CONTROLLERS if spec.name in chosen and spec.name not in removed]


class ControllerManager:
    """Runs the selected controllers over one set of shared informers (read with `client`).

    With `credentials` (``--use-service-account-credentials``) each controller writes with
    its own service account's client, as upstream's ``SAControllerClientBuilder`` makes
    them, so it holds only its ``system:controller:*`` role; without, every controller
    writes with `client`."""

    def __init__(
        self,
        client: Client,
        specs: Iterable[ControllerSpec],
        *,
        options: Mapping[str, Any] | None = None,
        credentials: ServiceAccountCredentials | None = None,
    ) -> None:
        self.client = client
        self.informers = SharedInformers(client)
        self.context = Context(client, self.informers, options=dict(options or {}))
        self.specs = list(specs)
        self.credentials = credentials
        self._clients: dict[str, Client] = {}
        self.controllers: dict[str, Controller] = {}
        self.synced = asyncio.Event()

    async def connect(self) -> None:
        """With credentials: make (or find) each selected controller's service account and
        its client, before :meth:`build`."""
        if self.credentials is None:
            return
        for spec in self.specs:
            self._clients[spec.name] = await self.credentials.client_for(spec.service_account)

    def build(self) -> None:
        for spec in self.specs:
            if spec.name in self.controllers:
                continue
            context = self.context
            if self.credentials is not None:
                # Its own client; the informers and the recorders' table stay shared.
                context = dataclasses.replace(self.context, client=self._clients[spec.name])
            self.controllers[spec.name] = spec.build(context)

    async def run(self) -> None:
        """Build, sync the informers, run every controller until cancelled."""
        await self.connect()
        self.build()
        self.informers.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            await self.informers.wait_synced()
            for recorder in self.context.recorders.values():
                recorder.start()
            self.synced.set()
            log.info(
                "informers synced (%s); running %s",
                ", ".join(r.plural for r in self.informers.resources),
                ", ".join(self.controllers),
            )
            tasks = [
                asyncio.create_task(c.run(), name=f"controller-{name}")
                for name, c in self.controllers.items()
            ]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for recorder in self.context.recorders.values():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(recorder.flush(), 2.0)
                await recorder.stop()
            await self.informers.stop()
