"""The scheduler: informers feed the queue and the node cache; one loop places pods.

A scheduling cycle (:meth:`Scheduler.schedule_one`) is synchronous — pre-filter, filter
(vector ops over every node), score a sample of the feasible nodes, reserve, *assume* the pod
on the chosen node in the cache — and never waits on the network. Binding (``pods/binding``)
runs in a background task; if it fails, the assumption is forgotten and the pod goes back to
the queue with back-off. The resize arbiter (:mod:`inplace.scheduler.arbiter`) decides
from the same cache in the same event loop, so a resize and a new pod never claim the same
room.

Informer handlers only update the cache and the queues: a bound pod is charged to its node
(its resize accounting value), a pending pod is queued, and the events that can help pods
waiting as unschedulable (a pod deleted, finished or shrunk; a node added, grown, relabelled,
untainted or made schedulable) move them back — no polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from inplace.api.conditions import present
from inplace.client import (
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODDISRUPTIONBUDGETS,
    PODS,
    STORAGECLASSES,
    APIError,
    Client,
    Clock,
    Informer,
    LoopClock,
    key_of,
)
from inplace.client.events import EventRecorder

from .actions import COMPONENT, ClientActions, ClusterActions
from .arbiter import ResizeArbiter
from .cache import NodeCache, PodEntry
from .framework import (
    DEFAULT_SCHEDULER_NAME,
    Code,
    CycleState,
    Framework,
    PodInfo,
    RequestsMemo,
    Status,
    pod_info,
    sample_size,
)
from .metrics import SchedulerMetrics
from .plugins import BIND_TIMEOUT_SECONDS, VolumeObjects, default_plugins
from .preemption import DisruptionBudgets, Victims, evict_victims, pick_node, select_victims
from .queue import QueuedPod, SchedulingQueue

__all__ = ["Scheduler", "SchedulerConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    """Pods whose ``spec.schedulerName`` is this are ours."""
    percentage_of_nodes_to_score: int = 0
    """0: upstream's adaptive percentage (50% minus 1% per 125 nodes, at least 5%)."""
    scoring: str = "LeastAllocated"
    """``LeastAllocated`` (spread) or ``MostAllocated`` (pack)."""
    bind_concurrency: int = 64
    """Bindings in flight at once."""
    arbiter_workers: int = 16
    """Resize decisions being written at once (one node is never decided twice at once)."""
    record_events: bool = True
    """Post ``Scheduled`` events (``FailedScheduling`` and resize events are always posted)."""
    pod_condition_updates: bool = True
    """Write ``PodScheduled=False`` with the reason when a pod fits nowhere, as upstream."""
    volume_bind_timeout: float = BIND_TIMEOUT_SECONDS
    """How long PreBind waits for a pod's ``WaitForFirstConsumer`` claims to be bound
    (upstream's ``bindTimeoutSeconds``)."""


class Scheduler:
    """Places pods and arbitrates resizes (see the module docstring).

    ``client`` may be None in tests that drive the handlers directly; then ``actions`` and a
    bind plugin must be given.
    """

    def __init__(
        self,
        client: Client | None,
        *,
        config: SchedulerConfig | None = None,
        clock: Clock | None = None,
        actions: ClusterActions | None = None,
        framework: Framework | None = None,
        metrics: SchedulerMetrics | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config or SchedulerConfig()
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.metrics = metrics or SchedulerMetrics()
        self.cache = NodeCache()
        self.queue = SchedulingQueue(clock=self.clock)
        self.metrics.watch_queue(
            lambda: self.queue.active_count,
            lambda: self.queue.backoff_count,
            lambda: self.queue.unschedulable_count,
        )
        self.volume_objects = VolumeObjects()
        self.framework = framework or Framework(
            default_plugins(
                client,
                scoring=self.config.scoring,
                volumes=self.volume_objects if client is not None else None,
                volume_bind_timeout=self.config.volume_bind_timeout,
            ),
            name=self.config.scheduler_name,
        )
        self.recorder: EventRecorder | None = None
        if actions is None:
            if client is None:
                raise ValueError("a Scheduler without a client needs actions")
            self.recorder = EventRecorder(client, component=COMPONENT)
            actions = ClientActions(client, self.recorder)
        self.actions = actions
        self.budget_objects: dict[str, Mapping[str, Any]] = {}
        self.arbiter = ResizeArbiter(
            self.cache,
            actions,
            metrics=self.metrics,
            clock=self.clock,
            budgets=self.budgets,
            on_room_freed=self._resize_released,
        )
        self._requests_memo: RequestsMemo = {}
        self.pending: dict[str, PodInfo] = {}
        """Pods we are responsible for that are not bound (from the informer)."""
        self.volume_objects.pod_pending = self.pending.__contains__
        self.rng = rng or random.Random()
        self._next_start = 0
        self._bind_sem = asyncio.Semaphore(self.config.bind_concurrency)
        self._bind_tasks: set[asyncio.Task[None]] = set()
        self._side_tasks: set[asyncio.Task[None]] = set()
        self.scheduled = 0
        self.bound = 0
        self.informers: list[Informer] = []

    # -- budgets -----------------------------------------------------------------------------

    def budgets(self) -> DisruptionBudgets:
        return DisruptionBudgets(self.budget_objects.values())

    # -- informer handlers -------------------------------------------------------------------

    def _responsible(self, info: PodInfo) -> bool:
        return info.scheduler_name == self.config.scheduler_name

    def on_pod_add(self, obj: Mapping[str, Any]) -> None:
        self._pod_seen(obj)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._pod_seen(new)

    def _pod_seen(self, obj: Mapping[str, Any]) -> None:
        info = pod_info(obj, memo=self._requests_memo)
        key = info.key
        if info.bound:
            if key in self.pending:
                del self.pending[key]
                self.queue.delete(key)
            self.cache.clear_nomination(key)
            if info.terminal:
                entry = self.cache.remove_pod(key)
                self.arbiter.forget(key)
                if entry is not None:
                    self._room_freed(entry.node)
                return
            previous = self.cache.add_pod(
                info,
                info.node_name,
                approved=self.arbiter.is_approved(info),
                infeasible=self.arbiter.is_infeasible(info),
            )
            if previous is not None and (info.cpu < previous[0] or info.memory < previous[1]):
                self._room_freed(info.node_name)
            self.arbiter.pod_changed(info)
            return
        if not self._responsible(info) or info.terminal or info.deleting:
            if self.pending.pop(key, None) is not None:
                self.queue.delete(key)
                self.volume_objects.changed()  # a PreBind wait for it gives up
            self.cache.clear_nomination(key)
            return
        self.pending[key] = info
        if info.nominated_node_name:
            self.cache.nominate(info, info.nominated_node_name)
        if self.cache.is_assumed(key):
            return  # placed; its binding has not been observed yet
        self.queue.add(info)

    def on_pod_delete(self, obj: Mapping[str, Any]) -> None:
        key = key_of(dict(obj))
        self._requests_memo.pop((obj.get("metadata") or {}).get("uid") or "", None)
        if self.pending.pop(key, None) is not None:
            self.volume_objects.changed()  # a PreBind wait for it gives up
        self.queue.delete(key)
        self.cache.clear_nomination(key)
        self.arbiter.forget(key)
        entry = self.cache.remove_pod(key)
        if entry is not None:
            self._room_freed(entry.node)

    def _resize_released(self, node: str) -> None:
        """A resize decided Infeasible stopped holding room on ``node``: pods waiting for
        room may fit now."""
        self.queue.move_all("PodRemovedOrShrunk")

    def _room_freed(self, node: str) -> None:
        self.queue.move_all("PodRemovedOrShrunk")
        self.arbiter.node_changed(node)

    def on_node_add(self, obj: Mapping[str, Any]) -> None:
        change = self.cache.upsert_node(obj)
        name = (obj.get("metadata") or {}).get("name") or ""
        if change.may_help:
            self.queue.move_all("NodeChanged")
        if change.grew:
            self.arbiter.node_changed(name)

    def on_node_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.on_node_add(new)

    def on_node_delete(self, obj: Mapping[str, Any]) -> None:
        self.cache.remove_node((obj.get("metadata") or {}).get("name") or "")

    def _volumes_changed(
        self, record: Callable[[Mapping[str, Any]], None], obj: Mapping[str, Any]
    ) -> None:
        """A claim, volume or class changed: pods waiting for a claim to bind may fit now."""
        record(obj)
        self.queue.move_all("PersistentVolumeClaimChanged")

    def on_budget_add(self, obj: Mapping[str, Any]) -> None:
        self.budget_objects[key_of(dict(obj))] = obj

    def on_budget_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        key = key_of(dict(new))
        self.budget_objects[key] = new
        before = int((old.get("status") or {}).get("disruptionsAllowed") or 0)
        after = int((new.get("status") or {}).get("disruptionsAllowed") or 0)
        if after > before:
            self.arbiter.budget_changed(key)
            self.queue.move_all("PodDisruptionBudgetChanged")

    def on_budget_delete(self, obj: Mapping[str, Any]) -> None:
        key = key_of(dict(obj))
        self.budget_objects.pop(key, None)
        self.arbiter.budget_changed(key)

    # -- one scheduling cycle ----------------------------------------------------------------

    def schedule_one(self, qp: QueuedPod) -> str | None:
        """One synchronous cycle for ``qp``; returns the node it was assumed on, or None.
        Binding is started in the background (``bind_tasks``)."""
        started = time.perf_counter()
        info = qp.info
        if info.bound or info.key not in self.pending:
            self.queue.done(info.key)
            return None
        state = CycleState()
        fw = self.framework
        status = fw.run_pre_filters(state, info, self.cache)
        if not status.ok:
            if status.code == Code.ERROR:
                self._failed(qp, status.message(), started, error=True)
            else:
                msg = f"0/{len(self.cache)} nodes are available: {status.message()}."
                self._failed(qp, msg, started)
            return None
        if len(self.cache) == 0:
            self._failed(qp, "no nodes available to schedule pods", started)
            return None
        mask = fw.feasible(state, info, self.cache)
        feasible = np.flatnonzero(mask)
        if len(feasible) == 0:
            diagnosis = fw.diagnose(state, info, self.cache)
            message = diagnosis.message()
            preemption = self._post_filter(info, diagnosis.unresolvable)
            if preemption:
                message = f"{message} preemption: {preemption}"
            self._failed(qp, message, started)
            return None
        n = sample_size(len(self.cache), self.config.percentage_of_nodes_to_score)
        if len(feasible) > n:
            start = self._next_start % len(feasible)
            sample = np.take(feasible, np.arange(start, start + n), mode="wrap")
            self._next_start = start + n
        else:
            sample = feasible
        if len(sample) == 1 or not fw.scores:
            best = int(sample[0])
        else:
            scores = fw.score(state, info, self.cache, sample)
            top = np.flatnonzero(scores == scores.max())
            best = int(sample[top[self.rng.randrange(len(top))] if len(top) > 1 else top[0]])
        node = self.cache.names[best]
        assert node is not None
        status = fw.reserve(state, info, node)
        if not status.ok:
            self._failed(qp, status.message(), started, error=status.code == Code.ERROR)
            return None
        self.cache.assume(info, node)
        self.cache.clear_nomination(info.key)
        self.queue.done(info.key)
        self.metrics.algorithm_duration.observe(time.perf_counter() - started)
        self.scheduled += 1
        task = asyncio.get_running_loop().create_task(self._bind(qp, node, state, started))
        self._bind_tasks.add(task)
        task.add_done_callback(self._bind_tasks.discard)
        return node

    async def _bind(self, qp: QueuedPod, node: str, state: CycleState, started: float) -> None:
        info = qp.info
        async with self._bind_sem:
            try:
                status = await self.framework.pre_bind(state, info, node)
                if status.ok:
                    status = await self.framework.bind(info, node)
            except Exception as exc:  # a plugin bug must not leak the assumption
                log.exception("binding %s to %s raised", info.key, node)
                status = Status.error(str(exc))
        if status.ok:
            self.bound += 1
            self.metrics.attempt("scheduled", time.perf_counter() - started)
            if self.config.record_events:
                self.actions.event(
                    info,
                    "Normal",
                    "Scheduled",
                    f"Successfully assigned {info.namespace}/{info.name} to {node}",
                )
            return
        self.cache.forget(info.key)
        self.framework.unreserve(state, info, node)
        self.metrics.attempt("error", time.perf_counter() - started)
        message = status.message()
        log.info("binding %s to %s failed: %s", info.key, node, message)
        current = self.pending.get(info.key)
        if current is not None and not current.bound:
            qp.info = current
            self.queue.add_backoff_detached(qp)
            # Upstream's handleSchedulingFailure: the event and the condition, reason
            # SchedulerError (a pod that is gone gets neither).
            self.actions.event(current, "Warning", "FailedScheduling", message)
            if self.config.pod_condition_updates:
                self._spawn(self._set_unschedulable(current, message, reason="SchedulerError"))
        self._room_freed(node)

    def _failed(self, qp: QueuedPod, message: str, started: float, *, error: bool = False) -> None:
        info = qp.info
        self.metrics.attempt("error" if error else "unschedulable", time.perf_counter() - started)
        if error:
            self.queue.add_backoff(qp)
        else:
            self.queue.add_unschedulable(qp, message)
        self.actions.event(info, "Warning", "FailedScheduling", message)
        if self.config.pod_condition_updates and not error:
            current = _pod_scheduled_message(info.obj)
            if current != message:
                self._spawn(self._set_unschedulable(info, message))

    async def _set_unschedulable(
        self, info: PodInfo, message: str, *, reason: str = "Unschedulable"
    ) -> None:
        unschedulable = {"PodScheduled": present(info.generation, "False", reason, message)}
        with contextlib.suppress(APIError, ConnectionError):
            await self.actions.write_status(info, conditions=unschedulable)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    # -- preemption (PostFilter) -------------------------------------------------------------

    def _post_filter(self, info: PodInfo, unresolvable: Any) -> str:
        """Try to make room for ``info`` by preempting lower-priority pods on one node.
        Returns the preemption part of the FailedScheduling message ("" if not tried)."""
        total = len(self.cache)
        if info.preemption_policy == "Never":
            return "not eligible due to preemptionPolicy=Never."
        if not any(p < info.priority for p in self.cache.priorities):
            return ""
        nominated = info.nominated_node_name
        if nominated and any(
            e.victim or e.info.deleting
            for e in self.cache.pods_on(nominated)
            if e.info.priority < info.priority
        ):
            return "waiting for the preempted pods to leave its nominated node."
        self.metrics.preemption_attempts.inc()
        candidates_mask = self.cache.valid.copy()
        if unresolvable is not None:
            candidates_mask &= ~unresolvable
        slots = np.flatnonzero(candidates_mask)
        limit = max(100, total // 10)
        if len(slots) > limit:
            start = self.rng.randrange(len(slots))
            slots = np.take(slots, np.arange(start, start + limit), mode="wrap")
        budgets = self.budgets()
        found: list[Victims] = []
        for slot in slots:
            node = self.cache.names[int(slot)]
            if node is None:
                continue
            others = [
                (e.info, e.cpu, e.mem)
                for e in self.cache.pods_on(node)
                if e.info.priority < info.priority and not e.victim and not e.assumed
            ]
            if not others:
                continue
            victims = select_victims(
                node,
                preemptor_priority=info.priority,
                need=(info.cpu, info.memory, 1, info.ephemeral_storage),
                room=self.cache.free(int(slot)),
                pods=budgets.candidates(others),
            )
            if victims is not None and victims.pods:
                found.append(victims)
        best = pick_node(found)
        if best is None:
            return (
                f"0/{total} nodes are available: "
                f"{total} No preemption victims found for incoming pod."
            )
        entries: list[PodEntry] = []
        for victim in best.pods:
            entry = self.cache.pods.get(victim.key)
            if entry is not None:
                entry.victim = True
                entries.append(entry)
        self.metrics.preemption_victims.observe(len(entries))
        self.cache.nominate(info, best.node)
        self._spawn(self._preempt(info, best, entries))
        return (
            f"preempting {len(entries)} lower-priority pod(s) on node {best.node}: "
            + ", ".join(v.key for v in best.pods)
            + "."
        )

    async def _preempt(self, preemptor: PodInfo, victims: Victims, entries: list[PodEntry]) -> None:
        with contextlib.suppress(APIError, ConnectionError):
            await self.actions.write_status(preemptor, fields={"nominatedNodeName": victims.node})
        violating = {v.key for v in victims.pods if v.violates_budget}
        await evict_victims(self.actions, preemptor, victims.node, entries, violating)

    # -- running -----------------------------------------------------------------------------

    async def schedule_loop(self) -> None:
        while True:
            qp = await self.queue.pop()
            try:
                self.schedule_one(qp)
            except Exception:
                log.exception("scheduling %s failed", qp.key)
                self.queue.add_backoff(qp)
            await asyncio.sleep(0)

    async def settle(self) -> None:
        """Wait for bindings and side tasks started so far (tests)."""
        while self._bind_tasks or self._side_tasks:
            await asyncio.gather(*self._bind_tasks, *self._side_tasks, return_exceptions=True)

    def start_informers(self) -> list[asyncio.Task[None]]:
        assert self.client is not None
        pods = Informer(self.client, PODS)
        pods.add_handler(self.on_pod_add, self.on_pod_update, self.on_pod_delete)
        nodes = Informer(self.client, NODES)
        nodes.add_handler(self.on_node_add, self.on_node_update, self.on_node_delete)
        budgets = Informer(self.client, PODDISRUPTIONBUDGETS)
        budgets.add_handler(self.on_budget_add, self.on_budget_update, self.on_budget_delete)
        claims = Informer(self.client, PERSISTENTVOLUMECLAIMS)
        claims.add_handler(
            lambda o: self._volumes_changed(self.volume_objects.set_claim, o),
            lambda old, new: self._volumes_changed(self.volume_objects.set_claim, new),
            lambda o: self._volumes_changed(self.volume_objects.drop_claim, o),
        )
        volumes = Informer(self.client, PERSISTENTVOLUMES)
        volumes.add_handler(
            lambda o: self._volumes_changed(self.volume_objects.set_volume, o),
            lambda old, new: self._volumes_changed(self.volume_objects.set_volume, new),
            lambda o: self._volumes_changed(self.volume_objects.drop_volume, o),
        )
        classes = Informer(self.client, STORAGECLASSES)
        classes.add_handler(
            lambda o: self._volumes_changed(self.volume_objects.set_class, o),
            lambda old, new: self._volumes_changed(self.volume_objects.set_class, new),
            lambda o: self._volumes_changed(self.volume_objects.drop_class, o),
        )
        self.informers = [nodes, budgets, claims, volumes, classes, pods]
        return [
            asyncio.create_task(i.run(), name=f"informer-{i.resource.plural}")
            for i in self.informers
        ]

    @property
    def synced(self) -> bool:
        return bool(self.informers) and all(i.has_synced for i in self.informers)

    async def run(self) -> None:
        """Run until cancelled: informers, then the scheduling loop and the arbiter."""
        tasks = self.start_informers()
        try:
            for informer in self.informers:
                await informer.wait_synced()
            log.info(
                "scheduler synced: %d nodes, %d pending pods", len(self.cache), len(self.pending)
            )
            if self.recorder is not None:
                self.recorder.start()
            tasks.append(asyncio.create_task(self.schedule_loop(), name="schedule-loop"))
            tasks.append(
                asyncio.create_task(
                    self.arbiter.run(self.config.arbiter_workers), name="resize-arbiter"
                )
            )
            await asyncio.gather(*tasks)
        finally:
            self.queue.close()
            self.arbiter.queue.shutdown()
            for informer in self.informers:
                informer.stop()
            for task in [*tasks, *self._bind_tasks, *self._side_tasks]:
                task.cancel()
            for task in [*tasks, *self._bind_tasks, *self._side_tasks]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.recorder is not None:
                await self.recorder.stop()


def _pod_scheduled_message(pod: Mapping[str, Any]) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or "")
    return None
