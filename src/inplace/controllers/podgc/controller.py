"""The pod garbage collector: force-deletes the pods nothing else would ever finish
(upstream's ``pod-garbage-collector-controller``; the decisions are in :mod:`.model`).

Every ``CHECK_PERIOD`` (20 s) one pass over the pod and node caches: finished pods beyond the
threshold, terminating pods on out-of-service nodes, pods bound to a node that is gone (after
the node has been missing for the quarantine and a direct GET answers 404), and terminating
pods that were never bound. Each goes as upstream's ``markFailedAndDeletePod`` does: a pod not
yet finished is first marked ``Failed`` (with ``DisruptionTarget``/``DeletionByPodGC`` when its
node is gone: no agent will ever report its end), then deleted with a grace period of 0.

Without it a pod bound to a node that does not exist stays ``Terminating`` for ever once
deleted (no node agent confirms its end), and ``kubectl delete --wait`` waits for it in vain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.conditions import Decision, present, status_update
from inplace.api.timestamps import rfc3339
from inplace.client import NODES, PODS, APIConflictError, APIError, APINotFoundError, key_of

from ..base import Context
from ..pods import uid_of
from . import model

__all__ = ["PodGarbageCollector"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

NAME = "pod-garbage-collector"


class PodGarbageCollector:
    name = "pod-garbage-collector-controller"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.pods = ctx.informer(PODS)
        self.nodes = ctx.informer(NODES)
        self.period = float(ctx.options.get("pod_gc_check_period", model.CHECK_PERIOD))
        self.threshold = int(
            ctx.options.get("terminated_pod_gc_threshold", model.TERMINATED_THRESHOLD)
        )
        self.quarantine = model.Quarantine(
            float(ctx.options.get("pod_gc_quarantine", model.QUARANTINE))
        )

    async def run(self) -> None:
        while True:
            started = self.ctx.clock.monotonic()
            try:
                await self.gc_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pod garbage collection pass failed")
            elapsed = self.ctx.clock.monotonic() - started
            await asyncio.sleep(max(0.1, self.period - elapsed))

    async def gc_once(self) -> None:
        """One pass, in upstream's order."""
        pods = self.pods.list()
        nodes = {key_of(node): node for node in self.nodes.list()}
        for pod in model.terminated_beyond(pods, self.threshold):
            await self._delete(pod, "terminated pods beyond the threshold")
        for pod in model.out_of_service_terminating(pods, nodes):
            await self._delete(pod, "terminating on an out-of-service node")
        gone = await self._deleted_nodes(model.missing_nodes(pods, nodes.keys()))
        for pod in model.orphaned(pods, gone):
            target = present(
                (pod.get("metadata") or {}).get("generation"),
                "True",
                "DeletionByPodGC",
                "PodGC: node no longer exists",
            )
            await self._delete(pod, "its node no longer exists", target)
        for pod in model.unscheduled_terminating(pods):
            await self._delete(pod, "terminating and never scheduled")

    async def _deleted_nodes(self, missing: set[str]) -> set[str]:
        """The missing names past quarantine that the API confirms gone (a GET answers 404:
        the cache may be behind a node that was just registered)."""
        gone = set()
        for name in self.quarantine.due(missing, self.ctx.clock.monotonic()):
            self.quarantine.release(name)
            try:
                await self.client.get(NODES, name)
            except APINotFoundError:
                gone.add(name)
            except APIError as exc:
                log.warning("pod gc: cannot tell whether node %s exists: %s", name, exc)
        return gone

    async def _delete(
        self, pod: Mapping[str, Any], why: str, target: Decision | None = None
    ) -> None:
        """Upstream ``markFailedAndDeletePodWithCondition``: Failed first (no agent will say
        so), then deleted at once; a pod gone or replaced meanwhile is left alone."""
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        log.info("pod gc: force deleting pod %s/%s: %s", namespace, name, why)
        phase = (pod.get("status") or {}).get("phase")
        try:
            if phase not in ("Succeeded", "Failed"):
                patch = status_update(
                    pod,
                    writer=NAME,
                    now=rfc3339(self.ctx.now()),
                    fields={"phase": "Failed"},
                    decisions={"DisruptionTarget": target} if target is not None else None,
                )
                if patch is not None:
                    await self.client.patch(
                        PODS,
                        name,
                        {"metadata": {"uid": uid_of(pod)}, "status": patch.status},
                        namespace=namespace,
                        subresource="status",
                        patch_type="strategic",
                    )
            with contextlib.suppress(APINotFoundError):
                await self.client.delete(
                    PODS,
                    name,
                    namespace=namespace,
                    grace_period_seconds=0,
                    preconditions={"uid": uid_of(pod)},
                )
        except (APINotFoundError, APIConflictError) as exc:
            log.debug("pod gc: %s/%s: %s", namespace, name, exc)
        except APIError as exc:
            log.warning("pod gc: deleting %s/%s failed: %s", namespace, name, exc)
