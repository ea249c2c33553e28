"""The pod status the agent reports, and how it is written.

:func:`build_status` turns what a :class:`~inplace.node.worker.PodWorker` knows into
upstream's ``PodStatus`` (phase, conditions, container statuses with allocated and actual
resources); :class:`StatusWriter` sends only what differs from the cached pod, as one
strategic merge PATCH of ``pods/NAME/status``, then posts the events the change queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import NodeContext
from .model import merge_conditions, rfc3339
from .pause import MemoryPause
from .worker import PodWorker, pod_meta

__all__ = ["StatusWriter", "build_status", "status_patch"]


def build_status(
    w: PodWorker, extra_conditions: Mapping[str, dict[str, Any] | None], now: str
) -> dict[str, Any]:
    """The status the agent wants for the pod: its own conditions (``PodScheduled``,
    ``Initialized``, ``ContainersReady``, ``Ready``) plus ``extra_conditions`` (type →
    condition, None = remove), merged into the current ones."""
    spec = w.spec
    current = w.pod.get("status") or {}
    app = [w.containers[c["name"]] for c in spec.get("containers") or ()]
    init = [w.containers[c["name"]] for c in spec.get("initContainers") or ()]
    phase = w.phase()
    ready = (
        bool(app)
        and all(c.state == "running" for c in app)
        and all(c.state == "running" for c in init if c.sidecar)
    )
    not_ready = [c.name for c in app if c.state != "running"]
    msg = f"containers with unready status: [{' '.join(not_ready)}]"
    cready: dict[str, Any]
    if ready:
        cready = {"status": "True"}
    elif phase == "Succeeded":
        cready = {"status": "False", "reason": "PodCompleted"}
    else:
        cready = {"status": "False", "reason": "ContainersNotReady", "message": msg}
    if w.initialized:
        initialized: dict[str, Any] = {"status": "True"}
    else:
        pending = [
            c.name
            for c in init
            if not (c.state == "terminated" and c.exit_code == 0)
            and not (c.sidecar and c.state == "running")
        ]
        initialized = {
            "status": "False",
            "reason": "ContainersNotInitialized",
            "message": f"containers with incomplete status: [{' '.join(pending)}]",
        }
    wanted: dict[str, dict[str, Any] | None] = {
        "PodScheduled": {"status": "True"},
        "Initialized": initialized,
        "ContainersReady": dict(cready),
        "Ready": dict(cready),
    }
    wanted.update(extra_conditions)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": merge_conditions(current.get("conditions") or [], wanted, now),
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
        status["initContainerStatuses"] = [
            c.status(
                allocated=w.allocated.get(c.name) if c.sidecar else None,
                actual=w.actual.get(c.name) if c.sidecar else None,
            )
            for c in init
        ]
    return status


def status_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The strategic merge patch that turns ``current`` into ``wanted`` (fields the agent
    owns only; conditions by type, with stale keys nulled and removed types deleted)."""
    patch = {k: v for k, v in wanted.items() if k != "conditions" and current.get(k) != v}
    old = {c.get("type"): c for c in current.get("conditions") or ()}
    new = {c["type"]: c for c in wanted.get("conditions") or ()}
    items: list[dict[str, Any]] = []
    for ctype, cond in new.items():
        before = old.get(ctype)
        if _present(before) != _present(cond):
            item = dict(cond)
            for key in before or ():
                item.setdefault(key, None)
            items.append(item)
    for ctype in old:
        if ctype not in new:
            items.append({"type": ctype, "$patch": "delete"})
    if items:
        patch["conditions"] = items
    return patch


def _present(cond: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A condition without its null fields: a merge patch stores no nulls (``lastProbeTime:
    null`` is written as absent), so a null and a missing field are the same."""
    return None if cond is None else {k: v for k, v in cond.items() if v is not None}


class StatusWriter:
    def __init__(self, ctx: NodeContext, pause: MemoryPause) -> None:
        self.ctx = ctx
        self.pause = pause

    def wanted(self, w: PodWorker) -> dict[str, Any]:
        extra = dict(w.resize_conditions)
        if self.pause.watched(w):
            extra["MemoryPaused"] = self.pause.condition(w)
        return build_status(w, extra, rfc3339())

    async def sync(self, w: PodWorker) -> None:
        """One strategic merge PATCH of pods/NAME/status with what differs from the cache.

        Conditions merge by type (upstream's patch strategy), so only the agent's own
        conditions that changed are sent and a scheduler's ``PodResizeScheduled`` written in
        between is never overwritten; a removed condition is a ``$patch: delete`` item."""
        if w.stopping:
            return
        patch = status_patch(w.pod.get("status") or {}, self.wanted(w))
        if not patch:
            return
        updated = await self.ctx.actions.patch_pod_status(w, patch)
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
