"""The resize arbiter: every resize is a "delta pod" decided against the same node cache
that places new pods, so a resize and a new pod can never both claim the same room.

For a pod whose desired resources differ from its allocated ones (the node agent reports
``status.containerStatuses[].allocatedResources``; a pod without them is not resizing), the
arbiter computes ``delta = target - committed`` (target: ``max(desired, allocated, actual)``;
committed: what the pod holds now) and runs the resource filter for the delta against the
node's *committed* room (:mod:`inplace.scheduler.cache`). The verdict is a pure function of
the facts (:func:`decide`), the decision matrix:

==========================  ==========================================================
fits                        approve: ``PodResizeScheduled=True`` (``observedGeneration``)
lower-priority pods can go  preempt them (Eviction API, budgets respected first)
``InPlacePreferred`` + owner evict the pod (Eviction API) so its owner recreates it with
  + fits another node        the new size; a budget's 429 → ``Deferred`` naming it
``InPlacePreferred``, no     as ``InPlaceOnly``, and the message says the pod was not
  owner                      evicted because nothing would recreate it
``InPlaceOnly`` / ``Restart`` ``PodResizePending`` ``Infeasible`` (larger than the node's
                             allocatable) or ``Deferred`` (fits an emptier node)
==========================  ==========================================================

Decisions are taken node by node, in order: resizes that do not grow first, then higher
priority, then Guaranteed before Burstable, then longest waiting. Retries are event-driven
(:meth:`ResizeArbiter.node_changed` when a pod on the node goes away or shrinks or the node
grows; :meth:`ResizeArbiter.budget_changed` when a budget that blocked an eviction allows one
again) with exponential back-off (1 s doubling to 5 min) on the injected clock as the
fallback. Every decision is a condition and an event; a repeated identical verdict writes
nothing.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inplace.api.annotations import IN_PLACE_PREFERRED
from inplace.api.backoff import RESIZE_RETRY
from inplace.api.conditions import absent, present
from inplace.api.resources import GUARANTEED
from inplace.client import (
    APIError,
    APINotFoundError,
    APITooManyRequestsError,
    Clock,
    LoopClock,
    WorkQueue,
    run_workers,
)

from .actions import ClusterActions
from .cache import NodeCache, PodEntry
from .framework import PodInfo
from .metrics import SchedulerMetrics
from .plugins.resources import Insufficient, fit_reasons, format_cpu, format_memory
from .preemption import Candidate, DisruptionBudgets, evict_victims, select_victims

__all__ = [
    "BACKOFF_INITIAL",
    "BACKOFF_MAX",
    "Decision",
    "ResizeArbiter",
    "Verdict",
    "decide",
    "resize_order_key",
]

log = logging.getLogger(__name__)

BACKOFF_INITIAL = RESIZE_RETRY.initial
BACKOFF_MAX = RESIZE_RETRY.maximum


class Decision(enum.Enum):
    APPROVE = "approved"
    PREEMPT = "preempted"
    EVICT = "evicted"
    DEFER = "deferred"
    INFEASIBLE = "infeasible"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    message: str = ""
    victims: tuple[Candidate, ...] = ()


def _describe(reasons: list[Insufficient]) -> str:
    return "; ".join(str(r) for r in reasons)


def decide(
    *,
    reasons: list[Insufficient],
    infeasible: str,
    victims: tuple[Candidate, ...] | None,
    policy: str,
    has_owner: bool,
    fits_elsewhere: bool,
) -> Verdict:
    """The decision matrix (module docstring). ``reasons`` empty means the delta fits;
    ``infeasible`` is a non-empty explanation when the target exceeds the node's allocatable;
    ``victims`` are the preemption victims that would make it fit (None: preemption cannot
    help)."""
    if not reasons:
        return Verdict(Decision.APPROVE, "resize approved by the scheduler")
    if not infeasible and victims:
        names = ", ".join(v.key for v in victims)
        return Verdict(
            Decision.PREEMPT,
            f"preempting lower-priority pods to make room: {names}",
            victims,
        )
    note = ""
    if policy == IN_PLACE_PREFERRED:
        if has_owner and fits_elsewhere:
            return Verdict(
                Decision.EVICT,
                "Node didn't have enough resources for the resize "
                f"({_describe(reasons)}); evicting the pod so that its owner recreates it "
                "with the new size on a node where it fits (resize policy InPlacePreferred)",
            )
        if not has_owner:
            note = (
                "; resize policy InPlacePreferred, but the pod has no owner to recreate it, "
                "so it is not evicted (treated as InPlaceOnly)"
            )
        else:
            note = "; resize policy InPlacePreferred, but no node has room for the new size"
    if infeasible:
        return Verdict(Decision.INFEASIBLE, infeasible + note)
    return Verdict(Decision.DEFER, f"Node didn't have enough resources: {_describe(reasons)}{note}")


def resize_order_key(pod: PodInfo, delta: tuple[int, int], since: float) -> tuple[Any, ...]:
    """Non-increasing first, then higher priority, then Guaranteed, then longest waiting."""
    growing = delta[0] > 0 or delta[1] > 0
    return (growing, -pod.priority, pod.qos != GUARANTEED, since)


@dataclass(slots=True)
class _Waiting:
    generation: int
    since: float
    attempts: int = 0
    last: tuple[Decision, str] | None = None
    blocked_by: str = ""
    """The budget (``namespace/name``) whose 429 keeps it waiting."""


@dataclass(slots=True)
class _Plan:
    info: PodInfo
    verdict: Verdict
    generation: int
    changed: bool
    victims: list[PodEntry] = field(default_factory=list)


class ResizeArbiter:
    """Decides resizes node by node from the scheduler's :class:`NodeCache`."""

    def __init__(
        self,
        cache: NodeCache,
        actions: ClusterActions,
        *,
        metrics: SchedulerMetrics | None = None,
        clock: Clock | None = None,
        budgets: Callable[[], DisruptionBudgets] = lambda: DisruptionBudgets(()),
        on_room_freed: Callable[[str], None] | None = None,
    ) -> None:
        self.cache = cache
        self.actions = actions
        self.metrics = metrics
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.budgets = budgets
        self.on_room_freed = on_room_freed
        self.queue: WorkQueue[str] = WorkQueue(clock=self.clock, name="resize")
        self.waiting: dict[str, _Waiting] = {}
        self.approved: dict[str, int] = {}
        """Pod key → generation approved (until the informer shows the condition)."""
        self.infeasible: dict[str, int] = {}
        """Pod key → generation decided Infeasible: its new size is never charged to the
        node, not even while the condition saying so is on its way (see
        :meth:`NodeCache.release_resize`)."""
        self.decisions = 0

    # -- events ------------------------------------------------------------------------------

    def is_approved(self, info: PodInfo) -> bool:
        return self.approved.get(info.key) == info.generation

    def is_infeasible(self, info: PodInfo) -> bool:
        return self.infeasible.get(info.key) == info.generation

    def pod_changed(self, info: PodInfo) -> None:
        """A bound pod was added or updated (after the cache was updated)."""
        key = info.key
        if not info.bound or info.terminal or not info.resizing:
            self.forget(key)
            return
        if info.resize_approved_generation == info.generation or self.is_approved(info):
            self.waiting.pop(key, None)
            return
        state = self.waiting.get(key)
        if state is None or state.generation != info.generation:
            self.waiting[key] = _Waiting(info.generation, self.clock.monotonic())
            self.queue.add(info.node_name)

    def forget(self, key: str) -> None:
        self.waiting.pop(key, None)
        self.approved.pop(key, None)
        self.infeasible.pop(key, None)

    def node_changed(self, node: str) -> None:
        """Something on ``node`` freed room (a pod left or shrank, allocatable rose)."""
        if any(
            self.cache.pods.get(k, None) is not None and self.cache.pods[k].node == node
            for k in self.waiting
        ):
            self.queue.add(node)

    def budget_changed(self, budget_key: str) -> None:
        """A budget now allows more disruptions: retry the resizes its 429 blocked."""
        for key, state in self.waiting.items():
            if state.blocked_by == budget_key:
                entry = self.cache.pods.get(key)
                if entry is not None:
                    self.queue.add(entry.node)

    # -- deciding ----------------------------------------------------------------------------

    def _fits_elsewhere(self, info: PodInfo, node: str) -> bool:
        room_cpu = self.cache.alloc_cpu - self.cache.req_cpu
        room_mem = self.cache.alloc_mem - self.cache.req_mem
        ok = self.cache.valid & ~self.cache.unschedulable
        ok &= room_cpu >= info.target_cpu
        ok &= room_mem >= info.target_memory
        if info.ephemeral_storage > 0:
            ok &= self.cache.free_storage >= info.ephemeral_storage
        slot = self.cache.slot(node)
        if slot is not None:
            ok[slot] = False
        return bool(np.any(ok))

    def evaluate(self, node: str) -> list[_Plan]:
        """Decide every waiting resize on ``node``, charging approvals to the cache at once
        (synchronously: no other decision or placement can interleave)."""
        slot = self.cache.slot(node)
        if slot is None:
            return []
        pending: list[tuple[tuple[Any, ...], PodEntry, tuple[int, int]]] = []
        for entry in self.cache.pods_on(node):
            info = entry.info
            state = self.waiting.get(info.key)
            if state is None or not info.resize_pending or self.is_approved(info):
                continue
            if entry.victim or info.deleting or info.terminal:
                continue
            delta = (info.target_cpu - entry.com_cpu, info.target_memory - entry.com_mem)
            pending.append((resize_order_key(info, delta, state.since), entry, delta))
        pending.sort(key=lambda t: t[0])
        plans: list[_Plan] = []
        budgets: DisruptionBudgets | None = None
        for _, entry, delta in pending:
            info = entry.info
            state = self.waiting[info.key]
            free_cpu, free_mem = self.cache.committed_free(slot)
            reasons = fit_reasons(delta[0], delta[1], free_cpu, free_mem, pods=0)
            alloc_cpu, alloc_mem = int(self.cache.alloc_cpu[slot]), int(self.cache.alloc_mem[slot])
            infeasible = ""
            if info.target_cpu > alloc_cpu:
                infeasible = (
                    f"Node didn't have enough capacity: cpu, requested: "
                    f"{format_cpu(info.target_cpu)}, capacity: {format_cpu(alloc_cpu)}"
                )
            elif info.target_memory > alloc_mem:
                infeasible = (
                    f"Node didn't have enough capacity: memory, requested: "
                    f"{format_memory(info.target_memory)}, capacity: {format_memory(alloc_mem)}"
                )
            victims: tuple[Candidate, ...] | None = None
            if reasons and not infeasible and self._lower_priority_exists(info):
                if budgets is None:
                    budgets = self.budgets()
                victims = self._victims(info, node, delta, (free_cpu, free_mem), budgets)
            verdict = decide(
                reasons=reasons,
                infeasible=infeasible,
                victims=victims,
                policy=info.resize_policy,
                has_owner=info.has_owner,
                fits_elsewhere=(
                    info.resize_policy == IN_PLACE_PREFERRED
                    and info.has_owner
                    and self._fits_elsewhere(info, node)
                ),
            )
            plan = _Plan(
                info, verdict, info.generation, (verdict.decision, verdict.message) != state.last
            )
            if verdict.decision is Decision.APPROVE:
                self.cache.approve_resize(info.key, info.target_cpu, info.target_memory)
                self.approved[info.key] = info.generation
                del self.waiting[info.key]
            elif verdict.decision is Decision.INFEASIBLE:
                self.infeasible[info.key] = info.generation
                if self.cache.release_resize(info.key) and self.on_room_freed is not None:
                    self.on_room_freed(node)
            elif verdict.decision is Decision.PREEMPT:
                for victim in verdict.victims:
                    ventry = self.cache.pods.get(victim.key)
                    if ventry is not None:
                        ventry.victim = True
                        plan.victims.append(ventry)
            state.last = (verdict.decision, verdict.message)
            plans.append(plan)
        return plans

    def _lower_priority_exists(self, info: PodInfo) -> bool:
        return any(p < info.priority for p in self.cache.priorities)

    def _victims(
        self,
        info: PodInfo,
        node: str,
        delta: tuple[int, int],
        room: tuple[int, int],
        budgets: DisruptionBudgets,
    ) -> tuple[Candidate, ...] | None:
        others = [
            (e.info, e.com_cpu, e.com_mem)
            for e in self.cache.pods_on(node)
            if e.info.key != info.key and not e.victim and e.info.priority < info.priority
        ]
        if not others:
            return None
        found = select_victims(
            node,
            preemptor_priority=info.priority,
            need=(delta[0], delta[1], 0, 0),
            room=(room[0], room[1], 1 << 30, 1 << 62),
            pods=budgets.candidates(others),
        )
        if found is None or not found.pods:
            return None
        return found.pods

    # -- acting ------------------------------------------------------------------------------

    async def reconcile(self, node: str) -> float | None:
        plans = self.evaluate(node)
        # Every decision was taken (and charged to the cache) synchronously above; the writes
        # that carry them out are independent, so they go out together: a workload resizing
        # many pods on one node waits one round trip, not one per pod.
        delays = await asyncio.gather(*(self._execute(plan) for plan in plans))
        retries = [d for d in delays if d is not None]
        return min(retries) if retries else None

    def _backoff(self, key: str) -> float | None:
        state = self.waiting.get(key)
        if state is None:
            return None
        delay = RESIZE_RETRY.after(state.attempts)
        state.attempts += 1
        return delay

    def _count(self, decision: Decision) -> None:
        self.decisions += 1
        if self.metrics is not None:
            self.metrics.decision(decision.value)

    async def _execute(self, plan: _Plan) -> float | None:
        info, verdict = plan.info, plan.verdict
        decision = verdict.decision
        if decision is Decision.APPROVE:
            self._count(decision)
            # PodResizePending, if the arbiter wrote one, is cleared by the node agent when it
            # allocates the resize (as upstream's kubelet clears it): it sees the condition
            # by the same watch event that brings the approval, and no write on this path
            # has to be a compare-and-swap against the agent's own.
            approval = {"PodResizeScheduled": present(plan.generation, "True", "", verdict.message)}
            try:
                await self.actions.write_status(info, conditions=approval)
            except APINotFoundError:
                self.forget(info.key)
            except (APIError, ConnectionError) as exc:
                log.warning("approving the resize of %s failed: %s", info.key, exc)
                self.approved.pop(info.key, None)
                self.waiting[info.key] = _Waiting(plan.generation, self.clock.monotonic())
                return self._backoff(info.key)
            return None
        if decision is Decision.PREEMPT:
            if plan.changed:
                self._count(decision)
                await self._pending(plan, "Deferred", "ResizeDeferred")
            await self._preempt(plan)
            return self._backoff(info.key)
        if decision is Decision.EVICT:
            return await self._evict(plan)
        written = True
        if plan.changed:
            self._count(decision)
            if decision is Decision.INFEASIBLE:
                written = await self._pending(plan, "Infeasible", "ResizeInfeasible")
            else:
                written = await self._pending(plan, "Deferred", "ResizeDeferred")
        if decision is Decision.INFEASIBLE and written:
            return None  # retried when the node grows or the pod is resized again
        return self._backoff(info.key)

    async def _pending(self, plan: _Plan, reason: str, event: str, message: str = "") -> bool:
        """Write PodResizePending; False when the write failed, so the decision is written
        again on the next round (the pod itself may never change again to trigger one)."""
        text = message or plan.verdict.message
        pending = {
            "PodResizePending": present(plan.generation, "True", reason, text),
            "PodResizeScheduled": absent(plan.generation),
        }
        try:
            await self.actions.write_status(plan.info, conditions=pending)
        except APINotFoundError:
            self.forget(plan.info.key)
            return True
        except (APIError, ConnectionError) as exc:
            log.warning("marking the resize of %s %s failed: %s", plan.info.key, reason, exc)
            state = self.waiting.get(plan.info.key)
            if state is not None:
                state.last = None
            return False
        self.actions.event(plan.info, "Warning", event, text)
        return True

    async def _preempt(self, plan: _Plan) -> None:
        await evict_victims(
            self.actions,
            plan.info,
            plan.info.node_name,
            plan.victims,
            {v.key for v in plan.verdict.victims if v.violates_budget},
            f" to make room for the resize of {plan.info.key}",
        )

    async def _evict(self, plan: _Plan) -> float | None:
        info = plan.info
        state = self.waiting.get(info.key)
        try:
            await self.actions.evict(info)
        except APITooManyRequestsError as exc:
            budget = _budget_name(exc)
            key = f"{info.namespace}/{budget}" if budget else ""
            text = (
                f"{plan.verdict.message.split(';')[0]}; eviction refused: "
                f"PodDisruptionBudget {budget or '(unknown)'} allows no disruption now "
                f"({exc.message})"
            )
            if state is not None:
                state.blocked_by = key
                changed = state.last != (Decision.DEFER, text)
                state.last = (Decision.DEFER, text)
            else:
                changed = True
            if changed:
                self._count(Decision.DEFER)
                await self._pending(plan, "Deferred", "ResizeDeferred", text)
            return self._backoff(info.key)
        except APINotFoundError:
            self.forget(info.key)
            return None
        except (APIError, ConnectionError) as exc:
            log.warning("evicting %s for its resize failed: %s", info.key, exc)
            return self._backoff(info.key)
        self._count(Decision.EVICT)
        self.actions.event(info, "Normal", "ResizeEvicted", plan.verdict.message)
        self.forget(info.key)
        return None

    async def run(self, workers: int = 4) -> None:
        await run_workers(self.queue, self.reconcile, workers)


def _budget_name(exc: APIError) -> str:
    details: Mapping[str, Any] = exc.details or {}
    name = details.get("name")
    if isinstance(name, str) and name:
        return name
    for cause in details.get("causes") or ():
        message = str(cause.get("message") or "")
        if message.startswith("The disruption budget "):
            return message.split()[3]
    return ""
