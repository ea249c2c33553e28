"""The pod status the agent reports, and how it is written.

:func:`status_fields`, :func:`pod_level_fields` and :func:`own_decisions` turn what a
:class:`~inplace.node.worker.PodWorker` knows into upstream's ``PodStatus`` as the kubelet
1.36 generates it (``generateAPIPodStatus`` in ``pkg/kubelet/kubelet_pods.go``): phase,
container statuses with allocated and actual resources, their users and volume mounts, the
pod-level ``allocatedResources`` and ``resources``, ``observedGeneration``, and the agent's
condition decisions (``PodReadyToStartContainers``, ``Initialized``, ``Ready``,
``ContainersReady``, ``PodScheduled``, plus the resize and memory-pause ones), in the
kubelet's order (:data:`CONDITION_ORDER`). :class:`StatusWriter` writes them under the
status-writers rule (:mod:`inplace.api.conditions`): only what differs from the pod as last
seen, the agent's own condition types only, never overriding a decision made for a newer
generation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.conditions import KUBELET, Decision, StatusPatch, absent, status_update
from inplace.client.status import ComputeStatus

from .cgroups.base import CgroupError, CgroupResources
from .cgroups.v1 import UNLIMITED_MEMORY
from .context import NodeContext
from .model import rfc3339
from .pause import MemoryPause
from .status_model import pod_status_allocated, pod_status_resources, volume_mount_statuses
from .worker import TERMINAL, PodWorker, pod_meta

__all__ = [
    "CONDITION_ORDER",
    "StatusWriter",
    "own_decisions",
    "pod_level_fields",
    "status_fields",
]

CONDITION_ORDER: Final = (
    "MemoryPaused",
    "PodResizePending",
    "PodResizeInProgress",
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)
"""The order of the agent's conditions in ``status.conditions``: the kubelet's
(``generateAPIPodStatus`` and the status manager's ``mergePodStatus`` in
``pkg/kubelet/status/status_manager.go``): conditions it does not own first (here the
agent's ``MemoryPaused``), then the resize ones, then ``PodReadyToStartContainers``,
``Initialized``, ``Ready``, ``ContainersReady``, ``PodScheduled``. Conditions of other
writers keep their places."""


def status_fields(w: PodWorker) -> dict[str, Any]:
    """The top-level status fields the agent owns (all but ``conditions`` and the pod-level
    resources, :func:`pod_level_fields`)."""
    spec = w.spec

    def statuses(key: str) -> list[dict[str, Any]]:
        return [
            w.containers[c["name"]].status(
                allocated=w.allocated.get(c["name"]),
                actual=w.actual.get(c["name"]),
                volume_mounts=volume_mount_statuses(c),
            )
            for c in spec.get(key) or ()
        ]

    fields: dict[str, Any] = {
        "phase": w.phase(),
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": w.start_time,
        "containerStatuses": statuses("containers"),
    }
    if spec.get("initContainers"):
        fields["initContainerStatuses"] = statuses("initContainers")
    if w.observed_generation is not None:
        fields["observedGeneration"] = w.observed_generation
    return fields


def pod_level_fields(
    w: PodWorker, stored: Mapping[str, Any], cgroup: CgroupResources | None
) -> dict[str, Any]:
    """``allocatedResources`` and ``resources`` of the pod (:func:`~inplace.node.status_model.
    pod_status_allocated`, :func:`~inplace.node.status_model.pod_status_resources`), as a patch of
    ``stored`` (the pod's status as stored, which the kubelet's rules read too): a value
    that changed carries None for each key it no longer has, so the merge drops it; an
    empty ``allocatedResources`` is left out (None when stored)."""
    fields: dict[str, Any] = {
        "allocatedResources": pod_status_allocated(w.pod, w.allocated) or None,
        "resources": pod_status_resources(w.pod, w.allocated, stored=stored, cgroup=cgroup),
    }
    return {name: _replacing(stored.get(name), value) for name, value in fields.items()}


def _replacing(old: Any, new: Any) -> Any:
    """``new`` as a strategic merge patch over ``old``: keys only ``old`` has are nulled."""
    if old == new or not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch = {key: _replacing(old.get(key), value) for key, value in new.items()}
    patch.update((key, None) for key in old if key not in new)
    return patch


def own_decisions(w: PodWorker) -> dict[str, Decision]:
    """``PodReadyToStartContainers``, ``Initialized``, ``Ready``, ``ContainersReady`` and
    ``PodScheduled``, as the kubelet generates them (``pkg/kubelet/status/generate.go``), for
    the generation the agent acted on. ``PodReadyToStartContainers`` is True while the pod's
    sandbox is up (``GeneratePodReadyToStartContainersCondition``: no new sandbox needed):
    from the moment it was set up until the pod is over (the kubelet stops the sandbox of a
    terminal pod)."""
    generation = w.observed_generation
    spec = w.spec
    app = [w.containers[c["name"]] for c in spec.get("containers") or ()]
    init = [w.containers[c["name"]] for c in spec.get("initContainers") or ()]
    phase = w.phase()
    ready = (
        bool(app)
        and all(c.state == "running" for c in app)
        and all(c.state == "running" for c in init if c.sidecar)
    )
    not_ready = [c.name for c in app if c.state != "running"]
    if ready:
        cready = Decision(generation, {"status": "True"})
    elif phase == "Succeeded":
        cready = Decision(generation, {"status": "False", "reason": "PodCompleted"})
    else:
        message = f"containers with unready status: [{' '.join(not_ready)}]"
        cready = Decision(
            generation, {"status": "False", "reason": "ContainersNotReady", "message": message}
        )
    if w.initialized:
        initialized = Decision(generation, {"status": "True"})
    else:
        pending = [
            c.name
            for c in init
            if not (c.state == "terminated" and c.exit_code == 0)
            and not (c.sidecar and c.state == "running")
        ]
        initialized = Decision(
            generation,
            {
                "status": "False",
                "reason": "ContainersNotInitialized",
                "message": f"containers with incomplete status: [{' '.join(pending)}]",
            },
        )
    sandbox = w.sandbox_ready and phase not in TERMINAL
    return {
        "PodReadyToStartContainers": Decision(
            generation, {"status": "True" if sandbox else "False"}
        ),
        "Initialized": initialized,
        "Ready": cready,
        "ContainersReady": cready,
        "PodScheduled": Decision(generation, {"status": "True"}),
    }


class StatusWriter:
    def __init__(self, ctx: NodeContext, pause: MemoryPause) -> None:
        self.ctx = ctx
        self.pause = pause

    def decisions(self, w: PodWorker) -> dict[str, Decision]:
        """Every condition decision the agent holds for the pod."""
        decisions = own_decisions(w)
        decisions.update(w.resize_conditions)
        if self.pause.watched(w):
            paused = self.pause.condition(w)
            decisions["MemoryPaused"] = (
                absent(w.observed_generation)
                if paused is None
                else Decision(w.observed_generation, paused)
            )
        return decisions

    def pod_cgroup(self, w: PodWorker) -> CgroupResources | None:
        """The pod cgroup's values as the kubelet reads them for the pod's status
        (``GetPodCgroupConfig``), None when they cannot be read. cgroup v1 says "no memory
        limit" with a number (:data:`~inplace.node.cgroups.v1.UNLIMITED_MEMORY`), which the
        kubelet reports; v2's ``max`` it reports as nothing."""
        try:
            values = self.ctx.driver.read(self.ctx.paths.pod(w.uid))
        except (CgroupError, OSError, ValueError):
            return None
        if values.memory_limit_bytes is None and self.ctx.driver.name == "v1":
            values = dataclasses.replace(values, memory_limit_bytes=UNLIMITED_MEMORY)
        return values

    def compute(self, w: PodWorker) -> ComputeStatus:
        """What to write, given the pod as last seen (called again after a conflict)."""
        fields = status_fields(w)
        decisions = self.decisions(w)
        cgroup = self.pod_cgroup(w)

        def compute(pod: Any) -> StatusPatch | None:
            stored = pod.get("status") or {}
            return status_update(
                pod,
                writer=KUBELET,
                now=rfc3339(),
                fields={**fields, **pod_level_fields(w, stored, cgroup)},
                decisions=decisions,
                order=CONDITION_ORDER,
            )

        return compute

    def reports_only_generation(self, w: PodWorker) -> bool:
        """Whether the status write pending for ``w`` would report nothing but the generation
        it acted on: the same status stamped with the generation the stored pod reports
        differs in nothing."""
        reported = (w.pod.get("status") or {}).get("observedGeneration")
        acted_on = w.observed_generation
        w.observed_generation = reported if isinstance(reported, int) else None
        try:
            return self.compute(w)(w.pod) is None
        finally:
            w.observed_generation = acted_on

    async def sync(self, w: PodWorker) -> None:
        """One strategic merge PATCH of pods/NAME/status with what differs from the pod as
        the agent last saw it; nothing when nothing does."""
        if w.stopping:
            return
        compute = self.compute(w)
        if compute(w.pod) is None:
            return
        updated = await self.ctx.actions.write_pod_status(w, w.pod, compute)
        if updated is not None and pod_meta(updated).get("uid") == w.uid:
            w.pod = updated

    def flush_events(self, w: PodWorker) -> None:
        """Post the events the worker queued."""
        events, w.pending_events = w.pending_events, []
        for reason, message, warning in events:
            self.ctx.event(w, reason, message, warning=warning)

    async def publish(self, w: PodWorker) -> None:
        """Write the status, then the events (informational: posting them first would put
        API calls ahead of the status on the resize latency path)."""
        try:
            await self.sync(w)
        finally:
            self.flush_events(w)
