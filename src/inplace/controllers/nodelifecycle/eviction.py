"""The taint-eviction controller: pods leave nodes with ``NoExecute`` taints they do not
tolerate (upstream's ``pkg/controller/tainteviction``).

A pod is deleted at once when it does not tolerate a ``NoExecute`` taint of its node, after
its smallest ``tolerationSeconds`` when it tolerates them for a while (every pod tolerates
``not-ready`` and ``unreachable`` for 300 s unless it says otherwise), never when it tolerates
them forever. Before the delete the pod gets upstream's ``DisruptionTarget`` condition
(``DeletionByTaintManager``), and a ``TaintManagerEviction`` event. The pod's owner sees it
terminating and creates a replacement, which the scheduler keeps off the tainted node.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.conditions import StatusPatch, present, status_update
from inplace.api.timestamps import rfc3339
from inplace.client import NODES, PODS, APIConflictError, APINotFoundError, key_of
from inplace.client.status import write_pod_status

from ..base import NODE_INDEX, Context, QueueController
from ..pods import is_terminating, uid_of
from .model import eviction_delay

__all__ = ["TaintEvictionController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _no_execute(node: Obj | None) -> list[Obj]:
    if node is None:
        return []
    return [
        t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"
    ]


class TaintEvictionController(QueueController):
    name = "taint-eviction-controller"
    workers = 4

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.nodes = ctx.informer(NODES)
        self.pods = ctx.informer(PODS)
        self.recorder = ctx.recorder("taint-eviction-controller")
        self.nodes.add_handler(self._node_changed, self._node_updated, None)
        self.pods.add_handler(self._pod_changed, lambda old, new: self._pod_changed(new), None)

    def _node_changed(self, node: Obj) -> None:
        if _no_execute(node):
            for pod in self.pods.by_index(NODE_INDEX, key_of(node)):
                self.enqueue(key_of(pod))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if _no_execute(old) != _no_execute(new):
            for pod in self.pods.by_index(NODE_INDEX, key_of(new)):
                self.enqueue(key_of(pod))

    def _pod_changed(self, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not is_terminating(pod) and _no_execute(self.nodes.get(node)):
            self.enqueue(key_of(pod))

    async def reconcile(self, key: str) -> float | None:
        pod = self.pods.get(key)
        if pod is None or is_terminating(pod):
            return None
        spec = pod.get("spec") or {}
        taints = _no_execute(self.nodes.get(spec.get("nodeName") or ""))
        if not taints:
            return None
        delay = eviction_delay(spec.get("tolerations") or (), taints, self.ctx.now())
        if delay is None:
            return None
        if delay > 0:
            return delay
        await self._evict(pod, taints)
        return None

    async def _evict(self, pod: Obj, taints: list[Obj]) -> None:
        meta = pod["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        log.info(
            "evicting pod %s/%s from %s: %s",
            namespace,
            name,
            (pod.get("spec") or {}).get("nodeName"),
            ", ".join(f"{t.get('key')}:NoExecute" for t in taints),
        )
        self.recorder.event(
            {**pod, "apiVersion": "v1", "kind": "Pod"},
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {namespace}/{name}",
        )
        stamp = rfc3339(self.ctx.now())

        def disruption_target(current: Mapping[str, Any]) -> StatusPatch | None:
            generation = (current.get("metadata") or {}).get("generation")
            decision = present(
                generation,
                "True",
                "DeletionByTaintManager",
                "Taint manager: deleting due to NoExecute taint",
            )
            return status_update(
                current, writer=self.name, now=stamp, decisions={"DisruptionTarget": decision}
            )

        await write_pod_status(self.client, namespace or "", name, pod, disruption_target)
        with contextlib.suppress(APINotFoundError, APIConflictError):
            await self.client.delete(
                PODS, name, namespace=namespace, preconditions={"uid": uid_of(pod)}
            )
