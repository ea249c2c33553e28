"""Resize actuation: bring a pod's allocations and cgroups to its spec's resources.

Desired (spec) vs allocated (checkpointed). The agent acts when the scheduler approved the
generation (``PodResizeScheduled``), when it runs with ``admit_without_scheduler``, or when
no request grows; it re-checks the fit on its own ledger (``PodResizePending`` ``Deferred``
or ``Infeasible`` otherwise), allocates (checkpoint first: a crash now re-applies on
restart), restarts the containers whose ``resizePolicy`` says so, and writes the cgroups in
the safe order from :func:`~inplace.node.model.plan_resize`. A write the kernel refuses
(a memory limit below usage) leaves ``PodResizeInProgress`` with reason ``Error`` and is
retried with back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping

import orjson

from inplace.api.annotations import RESIZE_POLICY
from inplace.api.backoff import RESIZE_RETRY
from inplace.api.conditions import Decision, absent, present

from .cgroups.base import CgroupError, CgroupResources, CgroupWriteError
from .context import NodeContext
from .ledger import Ledger
from .model import (
    Alloc,
    CgroupWrite,
    container_cgroup,
    desired_allocs,
    fits_allocatable,
    plan_resize,
    pod_allocated_requests,
    pod_cgroup,
    requests_grow,
    restart_needed,
    sizing_of,
)
from .worker import TERMINAL, PodWorker, pod_annotation

__all__ = ["Resizer"]


class Resizer:
    """Actuates resizes for one node. ``publish`` writes a worker's status and events (used
    before containers are restarted for a resize, so the restart is visible as it happens)."""

    def __init__(
        self,
        ctx: NodeContext,
        ledger: Ledger,
        publish: Callable[[PodWorker], Awaitable[None]],
        *,
        on_memory_raised: Callable[[PodWorker], None] | None = None,
    ) -> None:
        """``on_memory_raised``: called once a resize that raised a container's memory limit
        is written (the memory pause resumes the containers it parked)."""
        self.ctx = ctx
        self.ledger = ledger
        self.publish = publish
        self.on_memory_raised = on_memory_raised

    def approved(self, w: PodWorker, desired: Mapping[str, Alloc]) -> bool:
        """May the agent apply the desired resources now?

        Yes when the scheduler approved this generation, or when the agent runs without an
        arbitrating scheduler, or when no container's request grows: a change that takes no
        room (a shrink, a limits-only change) cannot race a new pod for capacity, and the
        scheduler's arbiter, which compares requests, would never be asked to approve it.
        """
        if self.ctx.config.admit_without_scheduler or not requests_grow(w.allocated, desired):
            return True
        for cond in (w.pod.get("status") or {}).get("conditions") or ():
            if (
                cond.get("type") == "PodResizeScheduled"
                and cond.get("status") == "True"
                and cond.get("observedGeneration") == w.generation
            ):
                return True
        return False

    def _retry(self, w: PodWorker) -> float:
        w.resize_backoff = RESIZE_RETRY.next(w.resize_backoff)
        return w.resize_backoff

    async def resize(self, w: PodWorker) -> float | None:
        """Bring allocations and cgroups to the spec's resources; returns a retry delay."""
        w.awaiting_approval = None
        if w.stopping or w.failed_init or w.phase() in TERMINAL:
            return None
        desired = desired_allocs(w.pod)
        names = w.resizable()
        changed = [
            n for n in names if sizing_of(desired.get(n, {})) != sizing_of(w.allocated.get(n, {}))
        ]
        unapplied = [
            n
            for n in names
            if sizing_of(w.actual.get(n, {})) != sizing_of(w.allocated.get(n, {}))
            and w.containers[n].state == "running"
        ]
        generation = w.generation
        if not changed and not unapplied:
            # Nothing outstanding as of this generation: no resize is pending or in progress,
            # whoever said so for an older one (a reverted resize leaves none behind).
            w.resize_conditions = _settled(generation)
            w.resize_backoff = None
            return None
        restarts: list[str] = []
        if changed:
            if not self.approved(w, desired):
                w.awaiting_approval = generation
                return None
            new_allocs = dict(w.allocated)
            for n in changed:
                new_allocs[n] = desired.get(n, {})
            request = pod_allocated_requests(w.pod, new_allocs)
            allocatable = self.ledger.allocatable()
            fit = fits_allocatable(request, self.ledger.used(exclude=w.uid), allocatable)
            if not fit.fits:
                infeasible = fit.never_fits
                reason = "Infeasible" if infeasible else "Deferred"
                message = fit.message
                if infeasible:
                    name = fit.reason.removeprefix("OutOf")
                    idx = 0 if name == "cpu" else 1
                    message = (
                        f"Node didn't have enough capacity: {name}, requested: {request[idx]}, "
                        f"capacity: {allocatable[idx]}"
                    )
                w.resize_conditions = {
                    "PodResizePending": present(generation, "True", reason, message),
                    "PodResizeInProgress": absent(generation),
                }
                if w.last_resize_event != (generation, reason):
                    w.last_resize_event = (generation, reason)
                    w.pending_events.append((f"Resize{reason}", message, True))
                return None if infeasible else self._retry(w)
            old_allocs = w.allocated
            w.allocated = new_allocs
            self.ctx.save(w)  # allocate before actuating: a crash now re-applies on restart
            restart_all = pod_annotation(w.pod, RESIZE_POLICY) == "Restart"
            restarts = [
                n
                for n in changed
                if w.containers[n].state == "running"
                and restart_needed(
                    w.container_spec(n),
                    sizing_of(old_allocs.get(n, {})),
                    sizing_of(new_allocs[n]),
                    restart_all=restart_all,
                )
            ]
            started = "Pod resize started: " + _summary(w, changed)
            w.pending_events.append(("ResizeStarted", started, False))
        w.resize_conditions = {
            "PodResizePending": absent(generation),
            "PodResizeInProgress": present(generation, "True"),
        }
        if restarts:
            await self.publish(w)
            w.restart_for_resize.update(restarts)
            for n in restarts:
                w.resume[n] = asyncio.Event()
                w.started[n] = asyncio.Event()
            for n in restarts:
                if n in w.procs:
                    self.ctx.event(
                        w,
                        "Killing",
                        f"Container {n} resize requires restart",
                        field_path=w.field_path(n),
                    )
            stops = [
                self.ctx.runtime.stop(w.procs[n], grace_period=w.grace_period())
                for n in restarts
                if n in w.procs
            ]
            await asyncio.gather(*stops, return_exceptions=True)
        before = {n: sizing_of(w.actual.get(n, {})).limits_memory for n in names}
        try:
            await self.write_cgroups(w)
        except CgroupWriteError as exc:
            message = f"resize of {w.key} could not be applied: {exc}"
            w.resize_conditions = {
                "PodResizePending": absent(generation),
                "PodResizeInProgress": present(generation, "True", "Error", message),
            }
            if w.last_resize_event != (generation, "Error", str(exc)):
                w.last_resize_event = (generation, "Error", str(exc))
                w.pending_events.append(("ResizeError", message, True))
            return self._retry(w)
        finally:
            for n in restarts:
                w.resume[n].set()
        for n in restarts:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(w.started[n].wait(), 60)
        for n in names:
            # A running container now runs at its allocation; one not running (waiting in
            # back-off, say) will start with it, and upstream reports that as its resources.
            w.actual[n] = w.allocated.get(n, {})
        raised = any(
            _below(before[n], sizing_of(w.allocated.get(n, {})).limits_memory) for n in names
        )
        if raised and self.on_memory_raised is not None:
            self.on_memory_raised(w)
        self.ctx.save(w)
        w.resize_conditions = _settled(generation)
        w.resize_backoff = None
        w.last_resize_event = None
        completed = "Pod resize completed: " + _summary(w, names)
        w.pending_events.append(("ResizeCompleted", completed, False))
        self.ledger.retry_deferred()
        return None

    async def write_cgroups(self, w: PodWorker) -> None:
        """Apply the allocations in the safe order. Writes take microseconds and run on the
        loop, except when a memory limit goes down: the kernel then reclaims synchronously
        before it answers, so those plans run in a thread."""
        async with w.cg_lock:
            plan, current = self._plan(w)
            shrinks_memory = any(
                _below(step.resources.memory_limit_bytes, current[step.path].memory_limit_bytes)
                for step in plan
            )
            if shrinks_memory:
                await asyncio.to_thread(self._apply, plan)
            else:
                self._apply(plan)

    def _apply(self, plan: list[CgroupWrite]) -> None:
        for step in plan:
            self.ctx.driver.update(step.path, step.resources)

    def _plan(self, w: PodWorker) -> tuple[list[CgroupWrite], dict[str, CgroupResources]]:
        driver, paths = self.ctx.driver, self.ctx.paths
        pod_path = paths.pod(w.uid)
        pod_new = driver.normalize(pod_cgroup(w.pod, w.allocated))
        pod_old = driver.read(pod_path)
        current = {pod_path: pod_old}
        containers = []
        for n in w.resizable():
            path = paths.container(w.uid, n)
            try:
                old = driver.read(path)
            except CgroupError:
                continue  # not started yet: created with its allocation when it starts
            current[path] = old
            containers.append((path, old, driver.normalize(container_cgroup(w.allocated[n]))))
        return plan_resize(pod_path, pod_old, pod_new, containers), current


def _settled(generation: int | None) -> dict[str, Decision]:
    return {"PodResizePending": absent(generation), "PodResizeInProgress": absent(generation)}


def _summary(w: PodWorker, names: list[str]) -> str:
    containers = [{"name": n, "resources": w.allocated.get(n, {})} for n in names]
    body = {"containers": containers, "generation": w.generation}
    return orjson.dumps(body).decode()


def _below(new: int | None, old: int | None) -> bool:
    """Whether memory limit ``new`` is lower than ``old`` (None is unlimited)."""
    return new is not None and (old is None or new < old)
