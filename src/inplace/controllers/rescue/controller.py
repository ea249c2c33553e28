"""The rescue controller: shrink over-provisioned running pods in place so pending pods fit.

Wiring only; every decision is :func:`~.policy.decide` over :func:`~.snapshot.snapshot` of
the shared informers' caches. One pass at a time (a work queue with one key), started by
what can change the answer: a pod, node or VPA event, and each new round of usage
readings while a pod is pending for room or a shrunk pod waits to grow back. A pass:

1. forgets rescues whose pending pod was bound (counted with the time it took), deleted,
   or not placed two seconds after its donors' shrinks were applied (another pod took the
   room) or within ``--rescue-timeout``;
2. reverts a shrink the node could not apply (``PodResizeInProgress`` reason ``Error``:
   the kernel refused a memory limit under the container's usage), back to what the pod
   holds, so it is not counted as room and nothing is left half-done;
3. starts the planned rescues: for each donor, first the ``inplace.dev/original-resources``
   annotation (a compare-and-swap on the cached ``resourceVersion``, so a stale cache can
   never overwrite the size a pod had before its first shrink), then a ``pods/resize``;
   events on the pending pod ("made room on node-1 by shrinking a, b") and each donor
   ("shrunk to fit pending pod x"). The scheduler's arbiter approves the shrinks, the node
   agent applies them, and the scheduler's event-driven retry places the pending pod;
4. grows shrunk pods back as :func:`~.policy.decide` says, and removes the annotation once
   a pod is back at its size.

Usage comes from ``metrics.k8s.io``, else the nodes' Summary API through the node proxy
(:mod:`inplace.controllers.usage`, shared with the autoscaler), every
``--rescue-usage-interval`` (the node agents' sampling period), kept for
``--rescue-usage-window`` (:mod:`.usage`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from inplace.api.annotations import ORIGINAL_RESOURCES
from inplace.api.conditions import find_condition
from inplace.api.original_resources import format_original_resources
from inplace.api.placement import format_cpu, format_memory
from inplace.api.resources import parse_resource_list
from inplace.client import (
    NODES,
    PODS,
    VERTICALPODAUTOSCALERS,
    APIConflictError,
    APIError,
    APINotFoundError,
)

from ..base import Context, QueueController
from ..pods import with_type
from ..usage import PodMetricsSource
from ..workloads import WorkloadLookup
from .metrics import RescueMetrics
from .model import Growth, Rescue, Shrink, Size
from .policy import DEFAULT_GRACE, DEFAULT_TIMEOUT, InFlight, Shrunk, decide
from .snapshot import Snapshot, snapshot
from .usage import DEFAULT_MIN_HISTORY, DEFAULT_WINDOW, UsagePeaks
from .view import (
    RescueSettings,
    current_sizes,
    goal_of,
    growth_patch,
    is_shrunk,
    lacking,
    original_resources,
    pod_key,
    resize_patch,
    shrink_patch,
    size_of,
    unsettled,
)

__all__ = ["COMPONENT", "RescueController"]

log = logging.getLogger(__name__)

COMPONENT = "rescue-controller"
PASS = "pass"
"""The work queue's one key: a pass over the whole cluster."""
FAILED_DONOR_REST = 300.0
"""Seconds a pod whose shrink the node could not apply is no donor."""

Obj = dict[str, Any]


def _changes(changes: tuple[tuple[str, Size, Size], ...]) -> str:
    parts = []
    for name, before, after in changes:
        sizes = []
        if before.cpu != after.cpu:
            sizes.append(f"cpu {format_cpu(before.cpu)}→{format_cpu(after.cpu)}")
        if before.memory != after.memory:
            sizes.append(f"memory {format_memory(before.memory)}→{format_memory(after.memory)}")
        parts.append(f"{name}: {', '.join(sizes)}" if len(changes) > 1 else ", ".join(sizes))
    return "; ".join(parts)


def _failed_resize(pod: Obj) -> bool:
    cond = find_condition(pod, "PodResizeInProgress")
    return cond is not None and cond.get("reason") == "Error"


def _held(pod: Obj) -> dict[str, Size]:
    """What each container's cgroups hold (``resources.requests`` in its status), else what
    was allocated to it, where the node reported either."""
    out: dict[str, Size] = {}
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        actual = (cs.get("resources") or {}).get("requests") or cs.get("allocatedResources")
        if isinstance(actual, Mapping):
            out[str(cs.get("name") or "")] = size_of(parse_resource_list(actual))
    return out


class RescueController(QueueController):
    name = COMPONENT
    workers = 1

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        options = ctx.options
        self.settings = RescueSettings(
            margin=float(options.get("rescue_margin", RescueSettings.margin))
        )
        self.timeout = float(options.get("rescue_timeout", DEFAULT_TIMEOUT))
        self.grace = float(options.get("rescue_grace", DEFAULT_GRACE))
        self.usage_interval = float(options.get("rescue_usage_interval", 5.0))
        self.peaks = UsagePeaks(
            window=float(options.get("rescue_usage_window", DEFAULT_WINDOW)),
            min_history=float(options.get("rescue_min_history", DEFAULT_MIN_HISTORY)),
        )
        registry = options.get("metrics_registry")
        self.metrics = RescueMetrics(registry)
        self.events = ctx.recorder(COMPONENT)
        self.pods = ctx.informer(PODS)
        self.nodes = ctx.informer(NODES)
        self.vpas = ctx.informer(VERTICALPODAUTOSCALERS)
        self.workloads = WorkloadLookup(ctx)
        self.usage = PodMetricsSource(self.client, self.nodes, COMPONENT)
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        for informer in (self.nodes, self.vpas):
            informer.add_handler(self._kick, lambda old, new: self._kick(new), self._kick)
        self.inflight: dict[str, InFlight] = {}
        self.failed: dict[str, float] = {}
        """Donors whose shrink the node could not apply, and when: left alone a while."""
        self._attention = False
        """Something is pending for room or waiting to grow: new usage readings matter."""

    # -- events ----------------------------------------------------------------------------

    def _kick(self, _obj: Obj | None = None) -> None:
        self.enqueue(PASS)

    def _pod_added(self, pod: Obj) -> None:
        if lacking(pod) or (pod.get("spec") or {}).get("nodeName"):
            self._kick()

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        # A pod's own status churn (readiness) seldom changes room; a size, a binding, a
        # scheduling verdict or our annotation does.
        if (
            old.get("spec") != new.get("spec")
            or lacking(old) != lacking(new)
            or _held(old) != _held(new)
            or is_shrunk(old) != is_shrunk(new)
            or _failed_resize(old) != _failed_resize(new)
            or find_condition(old, "PodResizePending") != find_condition(new, "PodResizePending")
            or (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase")
        ):
            self._kick()

    def _pod_deleted(self, pod: Obj) -> None:
        self.peaks.forget(pod_key(pod))
        self._kick()

    # -- usage ------------------------------------------------------------------------------

    async def _poll_usage(self) -> None:
        """Read PodMetrics at the node agents' sampling period, forever."""
        while True:
            try:
                added = self.peaks.record_pod_metrics(await self.usage.read())
                known = {pod_key(p) for p in self.pods.list()}
                for key in self.peaks.pods():
                    if key not in known:
                        self.peaks.forget(key)
                if added and self._attention:
                    self._kick()
            except (APIError, OSError) as exc:
                log.debug("reading pod metrics failed: %s", exc)
            await asyncio.sleep(self.usage_interval)

    async def run(self) -> None:
        poller = asyncio.create_task(self._poll_usage(), name="rescue-usage")
        self._kick()
        try:
            await super().run()
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    # -- one pass ---------------------------------------------------------------------------

    def _settle_inflight(self, pods: Mapping[str, Obj], now: float) -> None:
        """Forget the rescues whose pod was bound or deleted; note when every donor of the
        others has its shrink applied (the scheduler retries then)."""
        for key, flight in list(self.inflight.items()):
            pod = pods.get(key)
            if pod is None:
                self.metrics.outcomes.labels("gone").inc()
            elif (pod.get("spec") or {}).get("nodeName"):
                self.metrics.outcomes.labels("placed").inc()
                self.metrics.placement_seconds.observe(max(0.0, now - flight.since))
            else:
                if flight.settled is None and all(
                    d in pods and not unsettled(pods[d]) for d in flight.donors
                ):
                    self.inflight[key] = replace(flight, settled=now)
                continue
            del self.inflight[key]

    async def reconcile(self, key: str) -> float | None:
        started = time.perf_counter()
        now = self.ctx.now()
        pods = {pod_key(p): p for p in self.pods.list()}
        self._settle_inflight(pods, now)
        for pod in pods.values():
            if is_shrunk(pod) and _failed_resize(pod):
                await self._revert(pod, now)
        for donor, when in list(self.failed.items()):
            if now - when >= FAILED_DONOR_REST:
                del self.failed[donor]
        busy = {d for f in self.inflight.values() for d in f.donors} | set(self.failed)
        state = snapshot(
            pods.values(),
            self.nodes.list(),
            self.vpas.list(),
            self.workloads,
            self.peaks,
            now=now,
            settings=self.settings,
            busy=busy,
        )
        shrunk, forgotten = await self._shrunk(state, busy)
        # A pod whose annotation was just removed still carries it in the cache: shrinking
        # it in this pass would skip remembering its size, so it is no donor until then.
        donors = [d for d in state.donors if d.key not in forgotten]
        decision = decide(
            state.pending,
            state.rooms,
            donors,
            shrunk,
            self.inflight,
            now=now,
            timeout=self.timeout,
            grace=self.grace,
        )
        for expired in decision.expired:
            self.inflight.pop(expired, None)
            self.metrics.outcomes.labels("expired").inc()
        for rescue in decision.rescues:
            await self._start(rescue, state, now)
        for growth in decision.growths:
            await self._grow(growth, state)
        self.metrics.pending.set(len(state.pending))
        self.metrics.shrunk.set(sum(1 for p in pods.values() if is_shrunk(p)))
        self._attention = bool(state.pending or shrunk or self.inflight)
        self.metrics.pass_seconds.observe(time.perf_counter() - started)
        if self.inflight:
            first = min(
                f.deadline(timeout=self.timeout, grace=self.grace) for f in self.inflight.values()
            )
            return max(0.05, first - now)
        return None

    async def _shrunk(self, state: Snapshot, busy: set[str]) -> tuple[list[Shrunk], set[str]]:
        """The shrunk pods that may grow, and those back at their size, whose annotation
        this removes."""
        floors = {d.key: {c.name: c.floor for c in d.containers} for d in state.donors}
        out: list[Shrunk] = []
        forgotten: set[str] = set()
        for key, pod in state.pods.items():
            if not is_shrunk(pod) or key in busy or unsettled(pod):
                continue
            vpa = state.vpas.get(key)
            goal = goal_of(pod, vpa)
            current = current_sizes(pod)
            if goal is None or all(
                current[name].covers(want) for name, want in goal.items() if name in current
            ):
                await self._forget_original(pod)
                forgotten.add(key)
                continue
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            priority = (pod.get("spec") or {}).get("priority")
            out.append(
                Shrunk(
                    key,
                    node,
                    priority if isinstance(priority, int) else 0,
                    current,
                    goal,
                    floors.get(key, {}),
                )
            )
        return out, forgotten

    # -- acting ------------------------------------------------------------------------------

    async def _patch_resize(self, pod: Obj, body: dict[str, Any]) -> Obj:
        meta = pod.get("metadata") or {}
        patched: Obj = await self.client.resize_pod(
            str(meta.get("namespace")), str(meta.get("name")), body
        )
        return patched

    async def _remember(self, pod: Obj) -> bool:
        """Write the pod's size before its first shrink; False if the cache was stale."""
        if is_shrunk(pod):
            return True
        meta = pod.get("metadata") or {}
        body = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": {
                    ORIGINAL_RESOURCES: format_original_resources(original_resources(pod))
                },
            }
        }
        try:
            await self.client.patch(
                PODS, str(meta.get("name")), body, namespace=str(meta.get("namespace"))
            )
        except (APIConflictError, APINotFoundError):
            return False
        return True

    async def _forget_original(self, pod: Mapping[str, Any]) -> None:
        """Remove the annotation of a pod back at its size; a compare-and-swap, so a pod
        shrunk again meanwhile keeps it (a later pass looks again)."""
        meta = pod.get("metadata") or {}
        body = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": {ORIGINAL_RESOURCES: None},
            }
        }
        with contextlib.suppress(APIConflictError, APINotFoundError):
            await self.client.patch(
                PODS, str(meta.get("name")), body, namespace=str(meta.get("namespace"))
            )

    async def _shrink(self, pod: Obj, shrink: Shrink, pending: str) -> bool:
        if not await self._remember(pod):
            return False
        try:
            await self._patch_resize(pod, shrink_patch(pod, shrink))
        except APIError as exc:
            log.warning("shrinking %s for %s failed: %s", shrink.donor, pending, exc)
            self.metrics.resizes.labels("shrink", "error").inc()
            return False
        self.metrics.resizes.labels("shrink", "ok").inc()
        self.metrics.reclaimed_cpu.inc(shrink.freed.cpu)
        self.metrics.reclaimed_memory.inc(shrink.freed.memory)
        self.events.event(
            with_type(pod, PODS),
            "Normal",
            "ShrunkForPendingPod",
            f"shrunk to fit pending pod {pending}: {_changes(shrink.containers)}",
        )
        return True

    async def _start(self, rescue: Rescue, state: Snapshot, now: float) -> None:
        done: list[str] = []
        for shrink in rescue.shrinks:
            pod = state.pods.get(shrink.donor)
            if pod is not None and await self._shrink(dict(pod), shrink, rescue.pending):
                done.append(shrink.donor)
        if not done:
            return
        self.inflight[rescue.pending] = InFlight(rescue.pending, rescue.node, tuple(done), now)
        self.metrics.rescues.inc()
        pending = state.pods.get(rescue.pending)
        if pending is not None:
            names = ", ".join(d.split("/", 1)[1] for d in done)
            self.events.event(
                with_type(dict(pending), PODS),
                "Normal",
                "MadeRoom",
                f"made room on {rescue.node} by shrinking {names}",
            )
        log.info("rescue of %s on %s: shrunk %s", rescue.pending, rescue.node, ", ".join(done))

    async def _grow(self, growth: Growth, state: Snapshot) -> None:
        pod = state.pods.get(growth.pod)
        if pod is None:
            return
        try:
            await self._patch_resize(
                dict(pod), growth_patch(pod, growth, state.vpas.get(growth.pod))
            )
        except APIError as exc:
            log.warning("growing %s back failed: %s", growth.pod, exc)
            self.metrics.resizes.labels("grow", "error").inc()
            return
        self.metrics.resizes.labels("grow", "ok").inc()
        self.events.event(
            with_type(dict(pod), PODS),
            "Normal",
            "GrownBack",
            f"grown back {'to its size' if growth.complete else 'as room allows'}: "
            f"{_changes(growth.containers)}",
        )

    async def _revert(self, pod: Obj, now: float) -> None:
        """A shrink the node could not apply goes back to what the pod holds; the rescue
        that counted on it ends now, and the pod is no donor for a while."""
        key = pod_key(pod)
        self.failed[key] = now
        for pending, flight in list(self.inflight.items()):
            if key in flight.donors:
                del self.inflight[pending]
                self.metrics.outcomes.labels("failed").inc()
        held = _held(pod)
        current = current_sizes(pod)
        changes = tuple(
            (name, current[name], held[name])
            for name in sorted(current)
            if name in held and held[name] != current[name]
        )
        if not changes:
            return
        try:
            await self._patch_resize(pod, resize_patch(pod, changes))
        except APIError as exc:
            log.warning("reverting the shrink of %s failed: %s", pod_key(pod), exc)
            self.metrics.resizes.labels("revert", "error").inc()
            return
        self.metrics.resizes.labels("revert", "ok").inc()
        message = (find_condition(pod, "PodResizeInProgress") or {}).get("message") or ""
        self.events.event(
            with_type(pod, PODS),
            "Warning",
            "ShrinkFailed",
            f"the node could not apply the shrink ({message}); back to {_changes(changes)}",
        )
