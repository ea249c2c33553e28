"""The pod status the agent reports, and how it is written.

:func:`status_fields` and :func:`own_decisions` turn what a
:class:`~inplace.node.worker.PodWorker` knows into upstream's ``PodStatus``: phase, container
statuses with allocated and actual resources, ``observedGeneration``, and the agent's
condition decisions (``PodScheduled``, ``Initialized``, ``ContainersReady``, ``Ready``, plus
the resize and memory-pause ones). :class:`StatusWriter` writes them under the status-writers
rule (:mod:`inplace.api.conditions`): only what differs from the pod as last seen, the
agent's own condition types only, never overriding a decision made for a newer generation.
"""

from __future__ import annotations

from typing import Any

from inplace.api.conditions import KUBELET, Decision, StatusPatch, absent, status_update
from inplace.client.status import ComputeStatus

from .context import NodeContext
from .model import rfc3339
from .pause import MemoryPause
from .worker import PodWorker, pod_meta

__all__ = ["StatusWriter", "own_decisions", "status_fields"]


def status_fields(w: PodWorker) -> dict[str, Any]:
    """The top-level status fields the agent owns (all but ``conditions``)."""
    spec = w.spec
    app = [w.containers[c["name"]] for c in spec.get("containers") or ()]
    init = [w.containers[c["name"]] for c in spec.get("initContainers") or ()]
    fields: dict[str, Any] = {
        "phase": w.phase(),
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": w.start_time,
        "containerStatuses": [
            c.status(allocated=w.allocated.get(c.name), actual=w.actual.get(c.name)) for c in app
        ],
    }
    if init:
        fields["initContainerStatuses"] = [
            c.status(
                allocated=w.allocated.get(c.name) if c.sidecar else None,
                actual=w.actual.get(c.name) if c.sidecar else None,
            )
            for c in init
        ]
    if w.observed_generation is not None:
        fields["observedGeneration"] = w.observed_generation
    return fields


def own_decisions(w: PodWorker) -> dict[str, Decision]:
    """``PodScheduled``, ``Initialized``, ``ContainersReady`` and ``Ready``, as kubelet
    generates them, for the generation the agent acted on."""
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
    return {
        "PodScheduled": Decision(generation, {"status": "True"}),
        "Initialized": initialized,
        "ContainersReady": cready,
        "Ready": cready,
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

    def compute(self, w: PodWorker) -> ComputeStatus:
        """What to write, given the pod as last seen (called again after a conflict)."""
        fields = status_fields(w)
        decisions = self.decisions(w)

        def compute(pod: Any) -> StatusPatch | None:
            return status_update(
                pod, writer=KUBELET, now=rfc3339(), fields=fields, decisions=decisions
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
