"""The memory-pause responder: a pod paused at its memory limit asks for more memory.

Watch-driven, no polling. Its pod handler enqueues the pods that opted in
(``inplace.dev/oom-kill-disable``) and carry a ``MemoryPaused=True`` condition; a change of
a VerticalPodAutoscaler, and a Deployment, ReplicaSet or Job appearing or going, enqueue
their namespace's paused pods (coverage may have changed).
:meth:`MemoryPauseResponder.reconcile` reads the pod from the shared cache and applies
:func:`~.decision.decide`:

* ``resize``: one strategic merge PATCH of ``pods/resize`` raising the paused containers'
  memory (the scheduler's arbiter decides it like any other resize), and event
  ``MemoryBumped``. The body is remembered per pod and generation, so a burst of events
  before the informer shows the new spec never sends it twice; a refusal (422) is event
  ``MemoryBumpFailed`` and is not retried for that generation;
* ``capped``: event ``MemoryMaxReached`` (once per pod and cap), the pod stays paused;
* ``wait``, ``give-up``, ``none``: nothing. A deferred resize is retried by the arbiter when
  room appears; the node agent enforces the pause timeout; a pod that
  :func:`~.decision.covering_vpa` gives a VPA is that VPA updater's (by
  :func:`inplace.api.vpa_targets.answering_vpa`, the rule the updater groups its pods by, so
  exactly one of the two answers a pause).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import orjson

from inplace.api.annotations import OOM_KILL_DISABLE
from inplace.api.memorypause import memory_paused
from inplace.client import (
    PODS,
    VERTICALPODAUTOSCALERS,
    APIInvalidError,
    key_of,
)

from ..base import NAMESPACE_INDEX, Context, QueueController
from ..pods import with_type
from ..workloads import WorkloadLookup
from .decision import Decision, covering_vpa, decide

__all__ = ["MemoryPauseResponder"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

COMPONENT = "memory-pause-responder"
"""The events' source."""


def _opted_in(pod: Obj) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return annotations.get(OOM_KILL_DISABLE) == "true"


class MemoryPauseResponder(QueueController):
    name = "memory-pause"
    workers = 4

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.pods = ctx.informer(PODS)
        self.vpas = ctx.informer(VERTICALPODAUTOSCALERS)
        self.workloads = WorkloadLookup(ctx)
        self.recorder = ctx.recorder(COMPONENT)
        self.sent: dict[str, tuple[Any, bytes]] = {}
        """pod uid → (generation, body) of the last resize sent."""
        self.said: dict[str, tuple[str, str]] = {}
        """pod uid → (reason, message) of the last warning recorded."""
        self.pods.add_handler(self._pod, lambda _old, new: self._pod(new), self._gone)
        self.vpas.add_handler(self._vpa, lambda _old, new: self._vpa(new), self._vpa)
        for informer in self.workloads.informers.values():
            informer.add_handler(self._workload, None, self._workload)

    def _pod(self, pod: Obj) -> None:
        if _opted_in(pod) and memory_paused(pod) is not None:
            self.enqueue(key_of(pod))

    def _gone(self, pod: Obj) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        self.sent.pop(uid, None)
        self.said.pop(uid, None)

    def _vpa(self, vpa: Obj) -> None:
        namespace = (vpa.get("metadata") or {}).get("namespace") or ""
        for pod in self.pods.by_index(NAMESPACE_INDEX, namespace):
            self._pod(pod)

    def _workload(self, obj: Obj) -> None:
        """A VPA's target (or a pod's owner) appeared or went: where the namespace has VPAs,
        which of them answers its paused pods may have changed."""
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        if self.vpas.by_index(NAMESPACE_INDEX, namespace):
            self._vpa(obj)

    async def reconcile(self, key: str) -> float | None:
        pod = self.pods.get(key)
        if pod is None or not _opted_in(pod):
            return None
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        vpas = self.vpas.by_index(NAMESPACE_INDEX, namespace)
        covered = covering_vpa(pod, vpas, self.workloads) if vpas else None
        decision = decide(pod, now=datetime.fromtimestamp(self.ctx.now(), UTC), covered_by=covered)
        if decision.action == "resize":
            await self._resize(pod, decision)
        elif decision.action == "capped":
            self._warn(pod, decision)
        return None

    async def _resize(self, pod: Obj, decision: Decision) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        body = decision.resize_body()
        fingerprint = (meta.get("generation"), orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
        if self.sent.get(uid) == fingerprint:
            return  # sent for this generation; the informer has not shown the new spec yet
        self.sent[uid] = fingerprint
        try:
            await self.client.resize_pod(str(meta.get("namespace")), str(meta.get("name")), body)
        except APIInvalidError as exc:
            self._warn(pod, Decision("none", "MemoryBumpFailed", f"pods/resize refused: {exc}"))
            return
        except Exception:
            self.sent.pop(uid, None)  # not sent: the next look tries again
            raise
        log.info("%s: %s", key_of(pod), decision.message)
        self.recorder.event(with_type(pod, PODS), "Normal", decision.reason, decision.message)

    def _warn(self, pod: Obj, decision: Decision) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        said = (decision.reason, decision.message)
        if self.said.get(uid) == said:
            return
        self.said[uid] = said
        self.recorder.event(with_type(pod, PODS), "Warning", decision.reason, decision.message)
