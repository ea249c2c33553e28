"""Resize actuation: bring a pod's allocations and cgroups to its spec's resources.

Desired (spec) vs allocated (checkpointed). The agent acts when the scheduler approved the
generation (``PodResizeScheduled``), when it runs with ``admit_without_scheduler``, or when
no request grows; it re-checks the fit on its own ledger (``PodResizePending`` otherwise:
``Deferred``, or with the scheduler's arbiter ``Infeasible`` when larger than the node),
allocates (checkpoint first: a crash now re-applies on restart), restarts the containers
whose ``resizePolicy`` says so, and writes the cgroups in the safe order from
:func:`~inplace.node.model.plan_resize`. A memory limit below what the cgroup uses (the
kernel would refuse it: ``EBUSY`` on v1) is refused before any cgroup is written, as the
kubelet refuses it
(:meth:`Resizer.memory_refusal`); that, or a write the kernel refuses all the same (usage
grew meanwhile), leaves ``PodResizeInProgress`` with reason ``Error`` and is retried with
back-off. Conditions and events are reported as the kubelet 1.36 reports them
(:meth:`Resizer.resize`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from inplace.api.annotations import RESIZE_POLICY, RESTART
from inplace.api.backoff import RESIZE_RETRY
from inplace.api.conditions import Decision, absent, present

from .cgroups.base import CgroupDriver, CgroupError, CgroupResources, CgroupWriteError
from .cgroups.mapping import ContainerSizing
from .context import NodeContext
from .ledger import Ledger
from .model import (
    NO_ALLOC,
    Alloc,
    CgroupWrite,
    FitResult,
    MemoryShrink,
    container_cgroup,
    desired_allocs,
    fits_allocatable,
    memory_decrease_error,
    plan_resize,
    pod_allocated_requests,
    pod_cgroup,
    requests_grow,
    resize_message,
    restart_needed,
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
        """Bring allocations and cgroups to the spec's resources; returns a retry delay.

        The conditions and events are the kubelet's (``handlePodResourcesResize`` in
        ``pkg/kubelet/allocation/allocation_manager.go``, ``SyncPod`` in ``kubelet.go``):
        a resize that fits is allocated (``PodResizePending`` cleared, a new
        ``PodResizeInProgress`` stamped with this generation, ``ResizeStarted``); one that
        does not is ``PodResizePending`` (``ResizeDeferred``/``ResizeInfeasible`` when its
        reason or generation is new), which leaves a previous allocation still being applied
        in progress; a write the kernel refuses is ``PodResizeInProgress`` reason ``Error``
        (``ResizeError`` when the condition changes; it keeps the generation of its
        allocation); and ``PodResizeInProgress`` is cleared, with ``ResizeCompleted``, once
        what runs is what is allocated.

        The steps: what changed (each container's quantities parsed once, into
        :class:`_Sizes`), approval, the plan (:meth:`_allocate`: fit, allocation, which
        containers restart), then the actuation (:meth:`_actuate`: restarts, cgroup
        writes, the new actual resources).
        """
        w.awaiting_approval = None
        self._backfill(w)
        if w.stopping or w.failed_init or w.phase() in TERMINAL:
            # A pod that is over reports no resize (the kubelet's determinePodResizeStatus).
            w.resize_conditions = _settled(w.generation)
            w.resize_backoff = None
            return None
        desired = desired_allocs(w.pod)
        sizes = _Sizes.of(w, desired)
        changed = sizes.changed()
        if changed and not self.approved(w, desired):
            w.awaiting_approval = w.generation
            return None
        step = self._allocate(w, desired, sizes, changed)
        if not step.allocated_now and not sizes.unapplied(w):
            self._settle(w, step.pending, step.progress)
            return self._delay(w, step.waits)
        return await self._actuate(w, sizes, step)

    def _allocate(
        self, w: PodWorker, desired: Mapping[str, Alloc], sizes: _Sizes, changed: list[str]
    ) -> _Allocation:
        """The plan: whether the changed containers fit beside the node's other pods; if so
        they are allocated (checkpointed before anything is actuated: a crash then re-applies
        on restart) and the containers whose resize policy asks for it are chosen to
        restart; if not, ``PodResizePending`` says why."""
        generation = w.generation
        # desired is allocated (a reverted resize too) unless refused below
        step = _Allocation(absent(generation), w.resize_conditions.get("PodResizeInProgress"))
        if not changed:
            return step
        new_allocs = dict(w.allocated)
        for n in changed:
            new_allocs[n] = desired.get(n, NO_ALLOC)
        request = pod_allocated_requests(w.pod, new_allocs)
        allocatable = self.ledger.allocatable()
        fit = fits_allocatable(request, self.ledger.used(exclude=w.uid), allocatable)
        if not fit.fits:
            step.pending = self._refused(w, fit, request, allocatable)
            step.waits = (step.pending.condition or {}).get("reason") != "Infeasible"
            return step
        w.allocated = new_allocs
        self.ctx.save(w)
        step.allocated_now = True
        # A new allocation starts a new PodResizeInProgress: this generation, and no error left
        # from the previous one.
        step.progress = present(generation, "True", probed=True)
        started = resize_message("Pod resize started", w.pod, generation)
        w.pending_events.append(("ResizeStarted", started, False))
        restart_all = pod_annotation(w.pod, RESIZE_POLICY) == RESTART
        step.restarts = [
            n
            for n in changed
            if w.containers[n].state == "running"
            and restart_needed(
                w.container_spec(n), sizes.allocated[n], sizes.desired[n], restart_all=restart_all
            )
        ]
        sizes.allocate(changed)
        return step

    async def _actuate(self, w: PodWorker, sizes: _Sizes, step: _Allocation) -> float | None:
        """Apply the allocation: stop the containers that restart for it, write the cgroups
        in the safe order, let the restarted ones start at their new size, and record what
        runs now. A write the kernel refuses leaves ``PodResizeInProgress`` reason
        ``Error`` and a retry delay."""
        progress = step.progress
        if progress is None or not progress.exists:
            progress = present(w.generation, "True", probed=True)
        w.resize_conditions = {"PodResizePending": step.pending, "PodResizeInProgress": progress}
        if step.restarts:
            await self._stop_for_restart(w, step.restarts)
        try:
            refused = await self.memory_refusal(w, sizes, step.restarts)
            if refused is not None:
                return self._failed(w, progress, refused)
            await self.write_cgroups(w)
        except CgroupWriteError as exc:
            return self._failed(w, progress, f"resize of {w.key} could not be applied: {exc}")
        finally:
            for n in step.restarts:
                w.resume[n].set()
        for n in step.restarts:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(w.started[n].wait(), 60)
        for n in sizes.names:
            # A running container now runs at its allocation; one not running (waiting in
            # back-off, say) will start with it, and upstream reports that as its resources.
            w.actual[n] = w.allocated.get(n, NO_ALLOC)
        if sizes.memory_raised() and self.on_memory_raised is not None:
            self.on_memory_raised(w)
        self.ctx.save(w)
        self._settle(w, step.pending, progress)
        self.ledger.retry_deferred()
        return self._delay(w, step.waits)

    async def _stop_for_restart(self, w: PodWorker, restarts: list[str]) -> None:
        """Publish the resize, then stop the containers it restarts; each waits on its
        ``resume`` event to start again once the cgroups are written."""
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

    async def memory_refusal(self, w: PodWorker, sizes: _Sizes, restarts: list[str]) -> str | None:
        """Why the allocation must not be written now, in the kubelet's words, or None: a
        memory limit it lowers (the pod's, or a running container's that is not restarted
        for it) at or below what that cgroup uses (:func:`~inplace.node.model.
        memory_decrease_error`, the kubelet's check before it touches a cgroup). Nothing is
        read (the resize's latency path) unless a limit goes down by what the agent applied
        last; then the pod cgroup's limit and the usages."""
        driver, paths = self.ctx.driver, self.ctx.paths
        pod_path = paths.pod(w.uid)
        pod_desired = pod_cgroup(w.pod, w.allocated).memory_limit_bytes
        names = [
            n
            for n in sizes.names
            if n not in restarts and w.containers[n].state == "running" and n in w.procs
        ]
        containers = [
            MemoryShrink(n, sizes.allocated[n].limits_memory, sizes.actual[n].limits_memory, None)
            for n in names
        ]
        applied = pod_cgroup(w.pod, w.actual).memory_limit_bytes
        if not MemoryShrink("", pod_desired, applied, None).decreasing and not any(
            c.decreasing for c in containers
        ):
            return None

        def read() -> tuple[MemoryShrink, list[MemoryShrink]]:
            current = driver.read(pod_path).memory_limit_bytes
            pod = MemoryShrink("", pod_desired, current, None)
            if not pod.decreasing and not any(c.decreasing for c in containers):
                return pod, containers
            pod = dataclasses.replace(pod, usage=_memory_usage(driver, pod_path))
            used = [
                dataclasses.replace(c, usage=_memory_usage(driver, paths.container(w.uid, c.name)))
                if c.decreasing
                else c
                for c in containers
            ]
            return pod, used

        try:  # a few files of the cgroup fs: microseconds, on the loop as the writes are
            pod, used = read()
        except CgroupError:
            return None  # not there to read: the writes will say what is wrong
        return memory_decrease_error(pod, used)

    def _failed(self, w: PodWorker, progress: Decision, message: str) -> float:
        """A resize that could not be applied (``message`` says why): ``PodResizeInProgress``
        reason ``Error``, with the generation of the allocation being applied, and its event
        only when the condition changes (as the kubelet reports it); a retry delay."""
        error = present(progress.generation, "True", "Error", message, probed=True)
        if error.condition != progress.condition:
            text = resize_message(
                "Pod resize error", w.pod, progress.generation, allocated=w.allocated, error=message
            )
            w.pending_events.append(("ResizeError", text, True))
        w.resize_conditions["PodResizeInProgress"] = error
        return self._retry(w)

    def _backfill(self, w: PodWorker) -> None:
        """Seed the agent's resize decisions from the pod's stored conditions, once per
        worker (an agent that restarted finds them there), as the kubelet's
        ``BackfillPodResizeConditions``: a ``PodResizeInProgress`` keeps its generation and
        error, and an event is not repeated for a decision already reported.
        ``PodResizePending`` is the agent's alone only without the scheduler's arbiter."""
        if w.resize_backfilled:
            return
        w.resize_backfilled = True
        types = {"PodResizeInProgress"}
        if self.ctx.config.admit_without_scheduler:
            types.add("PodResizePending")
        for cond in (w.pod.get("status") or {}).get("conditions") or ():
            ctype = cond.get("type")
            if ctype not in types or ctype in w.resize_conditions or cond.get("status") != "True":
                continue
            generation = cond.get("observedGeneration")
            w.resize_conditions[ctype] = present(
                generation if isinstance(generation, int) else None,
                "True",
                cond.get("reason") or "",
                cond.get("message") or "",
                probed=True,
            )

    def _refused(
        self,
        w: PodWorker,
        fit: FitResult,
        request: tuple[int, int],
        allocatable: tuple[int, int],
    ) -> Decision:
        """``PodResizePending`` for a resize that does not fit, and its event when the
        reason or the generation is new (the kubelet's ``SetPodResizePendingCondition``).

        As the kubelet 1.36 does, every shortfall is ``Deferred`` with the admission
        message (``Node didn't have enough resource: cpu, requested: R, used: U, capacity:
        C``, ``pkg/kubelet/lifecycle/predicate.go``), even one larger than the node: its
        resource fit has no separate capacity check (``Infeasible`` is only for what the
        node can never do, such as a static CPU manager's Guaranteed pods). With the
        scheduler's arbiter, a resize larger than the node is ``Infeasible``, as the arbiter
        says (DESIGN.md). The event is ``Pod resize REASON: {…}``, REASON the admission's
        (``OutOfcpu``) or ``Infeasible``."""
        generation = w.generation
        if fit.never_fits and not self.ctx.config.admit_without_scheduler:
            reason = cause = "Infeasible"
            name = fit.reason.removeprefix("OutOf")
            idx = 0 if name == "cpu" else 1
            message = (
                f"Node didn't have enough capacity: {name}, requested: {request[idx]}, "
                f"capacity: {allocatable[idx]}"
            )
        else:
            reason, cause, message = "Deferred", fit.reason, fit.message
        previous = w.resize_conditions.get("PodResizePending")
        if (
            previous is None
            or previous.condition is None
            or previous.condition.get("reason") != reason
            or previous.generation != generation
        ):
            text = resize_message(f"Pod resize {cause}", w.pod, generation, error=message)
            w.pending_events.append((f"Resize{reason}", text, True))
        return present(generation, "True", reason, message, probed=True)

    def _settle(self, w: PodWorker, pending: Decision, progress: Decision | None) -> None:
        """What runs is what is allocated: ``PodResizeInProgress`` is cleared, with
        ``ResizeCompleted`` for the generation it was stamped with if there was one."""
        if progress is not None and progress.exists:
            text = resize_message(
                "Pod resize completed", w.pod, progress.generation, allocated=w.allocated
            )
            w.pending_events.append(("ResizeCompleted", text, False))
        w.resize_conditions = {
            "PodResizePending": pending,
            "PodResizeInProgress": absent(w.generation),
        }

    def _delay(self, w: PodWorker, waits: bool) -> float | None:
        """The retry delay of a resize that waits for room (None: nothing waits)."""
        if waits:
            return self._retry(w)
        w.resize_backoff = None
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


def _memory_usage(driver: CgroupDriver, path: str) -> int | None:
    """The cgroup's ``memory.usage_in_bytes`` (what the kubelet's stats call ``UsageBytes``),
    None when it cannot be read."""
    try:
        return driver.usage(path).memory_usage_bytes
    except (CgroupError, OSError, ValueError):
        return None


def _settled(generation: int | None) -> dict[str, Decision]:
    return {"PodResizePending": absent(generation), "PodResizeInProgress": absent(generation)}


def _below(new: int | None, old: int | None) -> bool:
    """Whether memory limit ``new`` is lower than ``old`` (None is unlimited)."""
    return new is not None and (old is None or new < old)


@dataclass
class _Allocation:
    """What the plan step decided: the two conditions, whether it allocated now, whether the
    resize waits for room, and which containers restart for it."""

    pending: Decision
    progress: Decision | None
    allocated_now: bool = False
    waits: bool = False
    restarts: list[str] = field(default_factory=list)


@dataclass
class _Sizes:
    """Each resizable container's desired, allocated and running sizes, parsed from their
    quantities once per resize and reused by every step."""

    names: list[str]
    desired: dict[str, ContainerSizing]
    allocated: dict[str, ContainerSizing]
    actual: dict[str, ContainerSizing]

    @classmethod
    def of(cls, w: PodWorker, desired: Mapping[str, Alloc]) -> _Sizes:
        names = w.resizable()
        return cls(
            names,
            {n: desired.get(n, NO_ALLOC).sizing for n in names},
            {n: w.allocated.get(n, NO_ALLOC).sizing for n in names},
            {n: w.actual.get(n, NO_ALLOC).sizing for n in names},
        )

    def changed(self) -> list[str]:
        """The containers whose desired size is not their allocation."""
        return [n for n in self.names if self.desired[n] != self.allocated[n]]

    def allocate(self, names: list[str]) -> None:
        """These containers are now allocated their desired size."""
        for n in names:
            self.allocated[n] = self.desired[n]

    def unapplied(self, w: PodWorker) -> list[str]:
        """Running containers whose cgroups are not at their allocation yet."""
        return [
            n
            for n in self.names
            if self.actual[n] != self.allocated[n] and w.containers[n].state == "running"
        ]

    def memory_raised(self) -> bool:
        """Whether applying the allocation raised some container's memory limit."""
        return any(
            _below(self.actual[n].limits_memory, self.allocated[n].limits_memory)
            for n in self.names
        )
