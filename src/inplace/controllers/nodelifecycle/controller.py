"""The node lifecycle controller: node health from Leases, and the taints it implies.

Every ``node_monitor_period`` (5 s) each node is checked (:func:`.model.stale`): a node
agent that has neither renewed its Lease nor posted a heartbeat for
``node_monitor_grace_period`` (40 s; 60 s for a node that never posted status) has its
health conditions set ``Unknown`` ("Kubelet stopped posting node status."), its pods marked
not ready, and a ``NodeNotReady`` event. Independently, whenever a node changes, its taints
are made to follow its conditions (:func:`.model.desired_taints`): ``unreachable`` for
Ready=Unknown and ``not-ready`` for Ready=False, both ``NoExecute`` (the taint-eviction
controller then evicts the pods after their ``tolerationSeconds``) and ``NoSchedule`` (the
scheduler reads it), plus the pressure and ``unschedulable`` taints. When the agent comes
back and posts Ready=True the taints go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from inplace.api.conditions import NODE_LIFECYCLE, StatusPatch, present, status_update
from inplace.api.timestamps import rfc3339
from inplace.client import LEASES, NODES, PODS, APIConflictError, APINotFoundError, key_of
from inplace.client.status import write_pod_status

from ..base import NODE_INDEX, Context, QueueController
from ..pods import is_ready
from .model import desired_taints, heartbeat, merge_taints, ready_status, unknown_conditions

__all__ = ["NodeLifecycleController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"
STARTUP_GRACE = 60.0
"""Upstream's ``nodeStartupGracePeriod``: for a node that never posted a Ready condition."""


class NodeLifecycleController(QueueController):
    name = "node-lifecycle-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.nodes = ctx.informer(NODES)
        self.leases = ctx.informer(LEASES)
        self.pods = ctx.informer(PODS)
        self.recorder = ctx.recorder(self.name)
        self.grace = float(ctx.options.get("node_monitor_grace_period", 40.0))
        self.period = float(ctx.options.get("node_monitor_period", 5.0))
        self.probes: dict[str, tuple[str | None, str | None, float]] = {}
        """Node → (Ready heartbeat seen, Lease renewTime seen, when either last changed)."""
        self.nodes.add_handler(self._node_seen, lambda old, new: self._node_seen(new), self._gone)
        self.leases.add_handler(self._lease_seen, lambda old, new: self._lease_seen(new), None)

    def _clock(self) -> float:
        return self.ctx.clock.monotonic()

    def _node_seen(self, node: Obj) -> None:
        name = key_of(node)
        beat = heartbeat(node)
        seen = self.probes.get(name)
        if seen is None:
            self.probes[name] = (beat, None, self._clock())
        elif seen[0] != beat:
            self.probes[name] = (beat, seen[1], self._clock())
        self.enqueue(name)

    def _lease_seen(self, lease: Obj) -> None:
        meta = lease.get("metadata") or {}
        if meta.get("namespace") != LEASE_NAMESPACE:
            return
        name = str(meta.get("name"))
        renew = (lease.get("spec") or {}).get("renewTime")
        seen = self.probes.get(name)
        if seen is None:
            self.probes[name] = (None, renew, self._clock())
        elif seen[1] != renew:
            self.probes[name] = (seen[0], renew, self._clock())

    def _gone(self, node: Obj) -> None:
        self.probes.pop(key_of(node), None)

    # -- health ------------------------------------------------------------------------------

    async def monitor_once(self) -> None:
        """Mark every node whose agent went silent for its grace period Unknown."""
        now = self._clock()
        for node in self.nodes.list():
            name = key_of(node)
            seen = self.probes.get(name)
            if seen is None:
                continue
            grace = self.grace if ready_status(node) is not None else STARTUP_GRACE
            if now - seen[2] <= grace:
                continue
            if ready_status(node) == "Unknown" and all(
                c.get("status") == "Unknown"
                for c in (node.get("status") or {}).get("conditions") or ()
                if c.get("type") in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
            ):
                continue
            try:
                await self._mark_unknown(name)
            except Exception:
                log.exception("marking node %s Unknown failed", name)

    async def _mark_unknown(self, name: str) -> None:
        for _ in range(5):
            try:
                node = await self.client.get(NODES, name)
            except APINotFoundError:
                return
            conditions = unknown_conditions(node, rfc3339(self.ctx.now()))
            if conditions is None:
                return
            was_ready = ready_status(node) == "True"
            body = {**node, "status": {**(node.get("status") or {}), "conditions": conditions}}
            try:
                await self.client.update(NODES, body, subresource="status")
            except APIConflictError:
                continue
            log.info("node %s: Lease not renewed for %.0fs; marked Unknown", name, self.grace)
            if was_ready:
                self.recorder.event(
                    {**node, "apiVersion": "v1", "kind": "Node"},
                    "Normal",
                    "NodeNotReady",
                    f"Node {name} status is now: NodeNotReady",
                )
            await self._mark_pods_not_ready(name)
            return

    async def _mark_pods_not_ready(self, node: str) -> None:
        """Upstream's ``MarkPodsNotReady``, under the status-writers rule
        (:mod:`inplace.api.conditions`): the decision Ready=False for each pod's generation."""
        stamp = rfc3339(self.ctx.now())

        def not_ready(pod: Mapping[str, Any]) -> StatusPatch | None:
            generation = (pod.get("metadata") or {}).get("generation")
            return status_update(
                pod,
                writer=NODE_LIFECYCLE,
                now=stamp,
                decisions={"Ready": present(generation, "False")},
            )

        for pod in self.pods.by_index(NODE_INDEX, node):
            if not is_ready(pod):
                continue
            meta = pod["metadata"]
            await write_pod_status(
                self.client, meta.get("namespace") or "", meta["name"], pod, not_ready
            )

    # -- taints ------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> float | None:
        node = self.nodes.get(name)
        if node is None:
            return None
        stamp = rfc3339(self.ctx.now())
        if (
            merge_taints((node.get("spec") or {}).get("taints") or [], desired_taints(node), stamp)
            is None
        ):
            return None
        for _ in range(5):
            try:
                fresh = await self.client.get(NODES, name)
            except APINotFoundError:
                return None
            taints = merge_taints(
                (fresh.get("spec") or {}).get("taints") or [], desired_taints(fresh), stamp
            )
            if taints is None:
                return None
            spec = {**(fresh.get("spec") or {})}
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)
            try:
                await self.client.update(NODES, {**fresh, "spec": spec})
            except APIConflictError:
                continue
            log.info("node %s taints: %s", name, [f"{t['key']}:{t['effect']}" for t in taints])
            return None
        raise RuntimeError(f"node {name}: taints not updated after repeated conflicts")

    async def run(self) -> None:
        async def monitor() -> None:
            while True:
                started = time.monotonic()
                await self.monitor_once()
                await asyncio.sleep(max(0.1, self.period - (time.monotonic() - started)))

        task = asyncio.create_task(monitor(), name="node-monitor")
        try:
            await super().run()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
