"""The node agent: registers its Node, heartbeats a Lease, runs and resizes the pods bound to it.

Shape (upstream kubelet's, in miniature):

* **One informer** on pods with ``fieldSelector=spec.nodeName=<node>``. Its handlers only
  enqueue the pod's ``namespace/name``; a :class:`~inplace.client.WorkQueue` hands each key to
  one worker at a time, and :meth:`NodeAgent.reconcile` re-reads the pod from the cache. There
  is no periodic sync: a resize is actuated when its watch event arrives.
* **One :class:`PodWorker` per admitted pod** (by uid) holds what the agent knows: allocations,
  container states, processes. Its lifecycle task runs init containers in order, then one
  supervisor task per container (start, wait, restart with CrashLoopBackOff). Whenever the
  state changes it enqueues the pod's key, and ``reconcile`` writes the status with one
  merge PATCH of ``pods/NAME/status`` carrying only the fields that changed.
* **Resize** (:meth:`NodeAgent._resize`): desired (spec) vs allocated (checkpointed). The agent
  acts when the scheduler approved the generation (``PodResizeScheduled``) or when it runs with
  ``admit_without_scheduler``; it re-checks the fit on its own ledger, then writes the cgroups
  in the safe order from :func:`~inplace.node.model.plan_resize`.
* **Checkpoints** (:mod:`inplace.node.checkpoint`) make a SIGKILLed agent harmless: the next
  one re-adopts the processes before it serves any pod.
* **Memory pause** (pod annotation ``inplace.dev/oom-kill-disable: "true"``, cgroup v1): the
  tasks park at the limit instead of being OOM-killed, an eventfd wakes the agent, which sets
  condition ``MemoryPaused``; raising the limit by resize lets them go on.
* **Usage** (:mod:`inplace.node.stats`) is sampled from cgroups every few seconds and served
  on 127.0.0.1 for ``metrics.k8s.io`` (:mod:`inplace.apiserver.nodemetrics`).
* The runtime, informer, stats endpoint and usage source are injectable, which is how one
  process serves many simulated nodes (:mod:`inplace.node.simulated`).
* The agent talks to the API server only through :mod:`inplace.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from inplace.api.annotations import OOM_KILL_DISABLE, RESIZE_POLICY
from inplace.api.backoff import RESIZE_RETRY
from inplace.client import (
    EVENTS,
    PODS,
    APIConflictError,
    APIError,
    APINotFoundError,
    Client,
    Informer,
    WorkQueue,
    key_of,
    run_workers,
)

from .cgroups.base import (
    CgroupDriver,
    CgroupError,
    CgroupResources,
    CgroupUnsupported,
    CgroupWriteError,
)
from .cgroups.mapping import ContainerSizing, milli_cpu_to_quota, milli_cpu_to_shares
from .checkpoint import CheckpointStore, ContainerCheckpoint, PodCheckpoint
from .model import (
    Alloc,
    CgroupWrite,
    ContainerState,
    PendingResize,
    admission_check,
    container_cgroup,
    crash_backoff,
    desired_allocs,
    fits_allocatable,
    merge_conditions,
    plan_resize,
    pod_allocated_requests,
    pod_cgroup,
    pod_phase,
    requests_grow,
    restart_needed,
    retry_order,
    rfc3339,
    sizing_of,
)
from .registration import KUBELET_VERSION, RUNTIME_VERSION, NodeRegistration
from .runtime import ExitStatus, ProcessRuntime, ProcessSpec, ProcessStartError, RunningProcess
from .stats import ContainerRef, StatsServer, UsageSampler

__all__ = [
    "KUBELET_VERSION",
    "RUNTIME_VERSION",
    "AgentConfig",
    "NodeAgent",
    "PodWorker",
    "status_patch",
]

log = logging.getLogger(__name__)

RESIZE_POLICY_ANNOTATION: Final = RESIZE_POLICY
OOM_KILL_DISABLE_ANNOTATION: Final = OOM_KILL_DISABLE
_TERMINAL: Final = ("Succeeded", "Failed")
#: How soon a pod whose containers could not be created is tried again.
_CREATE_RETRY: Final = 1.0
_DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class AgentConfig:
    """Settings of one node agent."""

    node_name: str
    """The Node's name (also the Lease's)."""
    cpu_milli: int
    """Allocatable CPU in milli-cores (capacity equals allocatable: no reservations)."""
    memory_bytes: int
    """Allocatable memory in bytes."""
    data_dir: Path
    """Checkpoints live in ``data_dir/checkpoints``."""
    log_root: Path
    """Container logs: ``log_root/<namespace>_<pod>_<uid>/<container>/<restartCount>.log``."""
    max_pods: int = 110
    admit_without_scheduler: bool = False
    """Approve resizes on the agent's own ledger, as upstream's kubelet does without an
    arbitrating scheduler."""
    http_host: str = "127.0.0.1"
    http_port: int = 0
    """Port of the stats endpoint (0: pick one; published in ``daemonEndpoints``)."""
    lease_duration: int = 40
    lease_renew_every: float = 10.0
    node_status_every: float = 20.0
    usage_every: float = 5.0
    usage_history: float = 900.0
    workers: int = 16
    labels: dict[str, str] = field(default_factory=dict)
    """Extra Node labels (e.g. ``inplace.dev/simulated``)."""


@dataclass
class PodWorker:
    """Everything the agent knows about one admitted pod."""

    uid: str
    namespace: str
    name: str
    pod: dict[str, Any]
    allocated: dict[str, Alloc]
    actual: dict[str, Alloc]
    containers: dict[str, ContainerState]
    procs: dict[str, RunningProcess] = field(default_factory=dict)
    initialized: bool = False
    failed_init: bool = False
    start_time: str | None = None
    task: asyncio.Task[None] | None = None
    stopping: bool = False
    finishing: bool = False
    """The app containers ended for good; sidecars are being stopped, not restarted."""
    cg_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    resize_conditions: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    resize_backoff: float | None = None
    last_resize_event: tuple[Any, ...] | None = None
    restart_for_resize: set[str] = field(default_factory=set)
    resume: dict[str, asyncio.Event] = field(default_factory=dict)
    started: dict[str, asyncio.Event] = field(default_factory=dict)
    started_mono: dict[str, float] = field(default_factory=dict)
    _ledger: tuple[dict[str, Alloc], tuple[int, int]] | None = None
    pending_events: list[tuple[str, str, bool]] = field(default_factory=list)
    oom_fds: dict[str, int] = field(default_factory=dict)
    """cgroup path → eventfd that fires when the cgroup goes under OOM (memory pause)."""
    memory_paused: list[str] = field(default_factory=list)
    """(reason, message, warning) to post once the status is written."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.pod.get("spec") or {}
        return spec

    def container_spec(self, name: str) -> dict[str, Any]:
        for c in [*(self.spec.get("initContainers") or ()), *(self.spec.get("containers") or ())]:
            if c["name"] == name:
                return dict(c)
        raise KeyError(name)

    def ledger(self) -> tuple[int, int]:
        """What the pod holds on the node (cached until ``allocated`` is replaced)."""
        cached = self._ledger
        if cached is None or cached[0] is not self.allocated:
            cached = self._ledger = (
                self.allocated,
                pod_allocated_requests(self.pod, self.allocated),
            )
        return cached[1]

    def phase(self) -> str:
        app = [self.containers[c["name"]] for c in self.spec.get("containers") or ()]
        return pod_phase(
            app,
            self.spec.get("restartPolicy", "Always"),
            initialized=self.initialized,
            failed_init=self.failed_init,
        )

    def checkpoint(self) -> PodCheckpoint:
        containers = {}
        for name, cs in self.containers.items():
            proc = self.procs.get(name)
            containers[name] = ContainerCheckpoint(
                pid=proc.pid if proc else None,
                start_time=proc.start_time if proc else None,
                log_path=proc.log_path if proc else None,
                restart_count=cs.restart_count,
                started_at=cs.started_at,
                state=cs.state,
                exit_code=cs.exit_code,
                reason=cs.reason,
                finished_at=cs.finished_at,
                last_state=cs.last_state,
            )
        return PodCheckpoint(
            uid=self.uid,
            namespace=self.namespace,
            name=self.name,
            allocated=self.allocated,
            actual=self.actual if self.actual != self.allocated else None,
            containers=containers,
            initialized=self.initialized,
            start_time=self.start_time,
        )


class WorkloadRuntime(Protocol):
    """What the agent needs from a runtime: :class:`ProcessRuntime` (real processes) or
    :class:`inplace.node.simulated.SimulatedRuntime` (none)."""

    async def start(self, spec: ProcessSpec) -> RunningProcess: ...

    async def wait(self, proc: RunningProcess) -> ExitStatus: ...

    async def stop(self, proc: RunningProcess, *, grace_period: float) -> ExitStatus: ...

    def adopt(self, pid: int, start_time: float, log_path: str) -> RunningProcess | None: ...


UsageSource = Callable[[PodWorker, str], tuple[int, int]]
"""(worker, container) → (CPU nano-cores, memory bytes), for nodes whose usage is simulated."""


def _meta(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = pod.get("metadata") or {}
    return meta


class NodeAgent:
    """One node (see the module docstring). ``await agent.run(stop)`` until ``stop`` is set."""

    def __init__(
        self,
        client: Client,
        config: AgentConfig,
        *,
        driver: CgroupDriver,
        runtime: WorkloadRuntime | None = None,
        informer: Informer | None = None,
        stats: StatsServer | None = None,
        usage: UsageSource | None = None,
    ) -> None:
        """``runtime``, ``informer`` (shared, run by the caller, filtered here by node),
        ``stats`` (shared endpoint) and ``usage`` (usage per container instead of cgroup
        readings) let one process serve many simulated nodes (:mod:`.simulated`)."""
        self.client = client
        self.config = config
        self.driver = driver
        self.runtime: WorkloadRuntime = runtime if runtime is not None else ProcessRuntime(driver)
        self.usage_source = usage
        self.checkpoints = CheckpointStore(config.data_dir / "checkpoints")
        self.node_path = config.node_name
        self.workers: dict[str, PodWorker] = {}
        """uid → worker."""
        self.by_key: dict[str, str] = {}
        """``namespace/name`` → uid."""
        self.queue: WorkQueue[str] = WorkQueue(name=f"node-{config.node_name}")
        self._own_informer = informer is None
        self.informer = (
            informer
            if informer is not None  # an empty Informer is falsy (it has a length)
            else Informer(client, PODS, field_selector=f"spec.nodeName={config.node_name}")
        )
        self.sampler = UsageSampler(
            driver, node_path=self.node_path, history_seconds=config.usage_history
        )
        self._own_stats = stats is None
        if stats is None:
            stats = StatsServer(
                self.sampler, config.node_name, host=config.http_host, port=config.http_port
            )
        else:
            stats.add(config.node_name, self.sampler)
        self.stats = stats
        self._background: set[asyncio.Task[Any]] = set()
        self._rejected: set[str] = set()
        self.registration = NodeRegistration(client, config, driver, lambda: self.stats.port)

    # -- paths -------------------------------------------------------------------------------

    def pod_path(self, uid: str) -> str:
        return f"{self.node_path}/pod{uid}"

    def container_path(self, uid: str, container: str) -> str:
        return f"{self.node_path}/pod{uid}/{container}"

    def log_path(self, w: PodWorker, container: str, restart_count: int) -> str:
        return str(
            self.config.log_root
            / f"{w.namespace}_{w.name}_{w.uid}"
            / container
            / f"{restart_count}.log"
        )

    # -- running -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Register, re-adopt, serve pods until ``stop``; workloads are left running."""
        node_cgroup = CgroupResources(
            cpu_shares=milli_cpu_to_shares(self.config.cpu_milli),
            cpu_quota_us=milli_cpu_to_quota(self.config.cpu_milli),
            memory_limit_bytes=self.config.memory_bytes,
        )
        await asyncio.to_thread(self.driver.create, self.node_path, node_cgroup)
        if self._own_stats:
            await self.stats.start()
        await self.registration.register()
        tasks: list[asyncio.Task[Any]] = []
        if self._own_informer:
            tasks.append(asyncio.create_task(self.informer.run(), name="pod-informer"))
        try:
            synced = asyncio.ensure_future(self.informer.wait_synced())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
            for fut in (synced, stopped):
                fut.cancel()
            if stop.is_set():
                return
            await self.restore()
            self.informer.add_handler(self._on_add, self._on_update, self._on_delete)
            tasks += [
                asyncio.create_task(run_workers(self.queue, self.reconcile, self.config.workers)),
                asyncio.create_task(self.registration.lease_loop()),
                asyncio.create_task(self.registration.status_loop()),
                asyncio.create_task(self._usage_loop()),
            ]
            await stop.wait()
        finally:
            self.queue.shutdown()
            if self._own_informer:
                self.informer.stop()
            for w in list(self.workers.values()):
                if w.task is not None:
                    w.task.cancel()
            for task in [*tasks, *self._background]:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self._own_stats:
                await self.stats.stop()
            if not self.workers:  # nothing runs here: leave no empty node cgroup behind
                with contextlib.suppress(CgroupError, OSError):
                    await asyncio.to_thread(self.driver.remove, self.node_path)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def mine(self, pod: Mapping[str, Any] | None) -> bool:
        return pod is not None and (pod.get("spec") or {}).get("nodeName") == self.config.node_name

    def _on_add(self, pod: dict[str, Any]) -> None:
        if self.mine(pod):
            self.queue.add(key_of(pod))

    def _on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.mine(new):
            self.queue.add(key_of(new))

    def _on_delete(self, pod: dict[str, Any]) -> None:
        if self.mine(pod):
            self.queue.add(key_of(pod))

    def notify(self, w: PodWorker) -> None:
        if not w.stopping:
            self.queue.add(w.key)

    # -- usage -------------------------------------------------------------------------------

    def container_refs(self) -> list[ContainerRef]:
        refs = []
        for w in self.workers.values():
            for name, cs in w.containers.items():
                if cs.state == "running":
                    refs.append(
                        ContainerRef(
                            w.namespace, w.name, w.uid, name, self.container_path(w.uid, name)
                        )
                    )
        return refs

    async def _usage_loop(self) -> None:
        while True:
            refs = self.container_refs()
            try:
                if self.usage_source is not None:
                    self.sampler.record(
                        [
                            (ref, *self.usage_source(self.workers[ref.uid], ref.container))
                            for ref in refs
                            if ref.uid in self.workers
                        ]
                    )
                else:
                    await asyncio.to_thread(self.sampler.sample, refs)
            except Exception:  # a sampling failure must not stop the agent
                log.exception("usage sampling failed")
            await asyncio.sleep(self.config.usage_every)

    # -- events ------------------------------------------------------------------------------

    def event(self, w: PodWorker, reason: str, message: str, *, warning: bool = False) -> None:
        """Post an Event about the pod (fire and forget)."""
        now = rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{w.name}.{uuid.uuid4().hex[:16]}", "namespace": w.namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": w.name,
                "namespace": w.namespace,
                "uid": w.uid,
            },
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": "kubelet", "host": self.config.node_name},
            "reportingComponent": "kubelet",
            "reportingInstance": self.config.node_name,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "eventTime": None,
            "count": 1,
        }

        async def post() -> None:
            try:
                await self.client.create(EVENTS, body, namespace=w.namespace)
            except APIError as exc:
                log.warning("event %s for %s: %s", reason, w.key, exc)

        self._spawn(post())

    # -- the ledger --------------------------------------------------------------------------

    def allocatable(self) -> tuple[int, int]:
        return (self.config.cpu_milli, self.config.memory_bytes)

    def used(self, *, exclude: str | None = None) -> tuple[int, int]:
        cpu = mem = 0
        for w in self.workers.values():
            if w.uid == exclude or w.stopping or w.phase() in _TERMINAL:
                continue
            c, m = w.ledger()
            cpu += c
            mem += m
        return cpu, mem

    def active_pods(self) -> int:
        return sum(
            1 for w in self.workers.values() if not w.stopping and w.phase() not in _TERMINAL
        )

    def _retry_deferred(self) -> None:
        """Room may have appeared (a pod ended or shrank): reconsider the deferred resizes at
        once, in DESIGN.md's order (the queue is FIFO and each fit check is atomic on the
        loop, so the first in line gets the room first)."""
        pending = []
        for w in self.workers.values():
            cond = w.resize_conditions.get("PodResizePending")
            if not cond:
                continue
            desired = desired_allocs(w.pod)
            increases = any(
                _more(sizing_of(desired.get(n, {})), sizing_of(w.allocated.get(n, {})))
                for n in self._resizable(w)
            )
            current = {
                c.get("type"): c for c in (w.pod.get("status") or {}).get("conditions") or ()
            }
            pending.append(
                PendingResize(
                    key=w.key,
                    increases=increases,
                    priority=int(w.spec.get("priority") or 0),
                    guaranteed=(w.pod.get("status") or {}).get("qosClass") == "Guaranteed",
                    pending_since=(current.get("PodResizePending") or {}).get(
                        "lastTransitionTime", ""
                    ),
                )
            )
        for key in retry_order(pending):
            self.queue.add(key)

    # -- restore -----------------------------------------------------------------------------

    async def restore(self) -> None:
        """Re-adopt the pods of the checkpoints (before any pod is reconciled)."""
        by_uid = {_meta(p).get("uid"): p for p in self.informer.list() if self.mine(p)}
        for cp in self.checkpoints.load_all():
            pod = by_uid.get(cp.uid)
            if pod is None or _meta(pod).get("deletionTimestamp"):
                await self._reap_orphan(cp)
                if pod is not None:
                    await self._confirm_delete(cp.namespace, cp.name, cp.uid)
                continue
            w = self._new_worker(pod, allocated=cp.allocated)
            if cp.actual is not None:
                w.actual = dict(cp.actual)
            w.initialized = cp.initialized
            w.start_time = cp.start_time
            for name, cc in cp.containers.items():
                cs = w.containers.get(name)
                if cs is None:
                    continue
                cs.restart_count = cc.restart_count
                cs.started_at = cc.started_at
                cs.last_state = cc.last_state
                cs.state = "waiting" if cc.state == "running" else cc.state  # type: ignore[assignment]
                cs.exit_code, cs.reason, cs.finished_at = cc.exit_code, cc.reason, cc.finished_at
                if cc.state == "waiting" and cc.last_state:
                    cs.restart_count += 1  # it was in back-off: the restart happens now
                if cc.state == "running" and cc.pid and cc.start_time and cc.log_path:
                    proc = self.runtime.adopt(cc.pid, cc.start_time, cc.log_path)
                    if proc is not None:
                        if not self.driver.enforces_limits:  # none: membership is in memory
                            with contextlib.suppress(CgroupError, OSError):
                                path = self.container_path(w.uid, name)
                                self.driver.create(
                                    path, container_cgroup(w.allocated.get(name, {}))
                                )
                                self.driver.add_process(path, proc.pid)
                        w.procs[name] = proc
                        if _annotation(pod, OOM_KILL_DISABLE_ANNOTATION) == "true":
                            self._arm_memory_pause(w, name, self.container_path(w.uid, name))
                        cs.state, cs.pid, cs.reason = "running", proc.pid, ""
                        w.started_mono[name] = time.monotonic()
                        log.info("re-adopted %s/%s pid %d", w.key, name, proc.pid)
                    else:
                        cs.state, cs.reason, cs.exit_code = (
                            "terminated",
                            "ContainerStatusUnknown",
                            137,
                        )
                        cs.message = "The container could not be located when the agent restarted"
                        cs.finished_at = rfc3339()
            self._start_worker(w)

    async def _reap_orphan(self, cp: PodCheckpoint) -> None:
        for cc in cp.containers.values():
            if cc.pid and cc.start_time and cc.log_path and cc.state == "running":
                proc = self.runtime.adopt(cc.pid, cc.start_time, cc.log_path)
                if proc is not None:
                    await self.runtime.stop(proc, grace_period=0)
        await self._remove_cgroup(cp.uid)
        self.checkpoints.remove(cp.uid)

    async def _remove_cgroup(self, uid: str) -> None:
        for _ in range(50):
            try:
                await asyncio.to_thread(self.driver.remove, self.pod_path(uid))
                return
            except CgroupError:
                await asyncio.sleep(0.1)
        log.warning("could not remove cgroup %s", self.pod_path(uid))

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        pod = self.informer.get(key)
        if not self.mine(pod):
            pod = None
        uid = self.by_key.get(key)
        w = self.workers.get(uid) if uid else None
        if pod is None:
            if w is not None:
                await self._terminate(w, grace=0.0, confirm=False)
            return None
        meta = _meta(pod)
        if w is not None and w.uid != meta.get("uid"):
            await self._terminate(w, grace=0.0, confirm=False)
            w = None
        if meta.get("deletionTimestamp"):
            if w is not None:
                grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                await self._terminate(w, grace=grace, confirm=True)
            else:
                await self._confirm_delete(meta["namespace"], meta["name"], meta["uid"])
            return None
        if w is None:
            phase = (pod.get("status") or {}).get("phase")
            if phase in _TERMINAL or meta["uid"] in self._rejected:
                return None
            w = await self._admit(pod)
            if w is None:
                return None
        w.pod = pod
        try:
            requeue = await self._resize(w)
            await self.sync_status(w)
        finally:
            # Events go out after the status write: they are informational, and posting them
            # first would put two API calls ahead of the status on the resize latency path.
            self.flush_events(w)
        return requeue

    def flush_events(self, w: PodWorker) -> None:
        events, w.pending_events = w.pending_events, []
        for reason, message, warning in events:
            self.event(w, reason, message, warning=warning)

    def _new_worker(self, pod: dict[str, Any], *, allocated: dict[str, Alloc]) -> PodWorker:
        meta = _meta(pod)
        spec = pod.get("spec") or {}
        containers: dict[str, ContainerState] = {}
        for c in spec.get("initContainers") or ():
            containers[c["name"]] = ContainerState(
                c["name"],
                image=c.get("image", ""),
                init=True,
                sidecar=c.get("restartPolicy") == "Always",
                reason="PodInitializing",
            )
        for c in spec.get("containers") or ():
            containers[c["name"]] = ContainerState(c["name"], image=c.get("image", ""))
        if spec.get("initContainers"):
            for c in spec.get("containers") or ():
                containers[c["name"]].reason = "PodInitializing"
        w = PodWorker(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            pod=pod,
            allocated={k: v for k, v in allocated.items()},
            actual={k: v for k, v in allocated.items()},
            containers=containers,
        )
        self.workers[w.uid] = w
        self.by_key[w.key] = w.uid
        return w

    async def _admit(self, pod: dict[str, Any]) -> PodWorker | None:
        meta = _meta(pod)
        allocs = desired_allocs(pod)
        request = pod_allocated_requests(pod, allocs)
        fit = admission_check(
            request,
            self.used(),
            self.allocatable(),
            pods_running=self.active_pods(),
            max_pods=self.config.max_pods,
        )
        if not fit.fits:
            self._rejected.add(meta["uid"])
            log.info("rejecting %s: %s", key_of(pod), fit.message)
            message = f"Pod was rejected: {fit.message}"
            status = {
                "phase": "Failed",
                "reason": fit.reason,
                "message": message,
                "startTime": rfc3339(),
            }
            await self._patch_status(meta["namespace"], meta["name"], status)
            ref = PodWorker(
                uid=meta["uid"],
                namespace=meta["namespace"],
                name=meta["name"],
                pod={},
                allocated={},
                actual={},
                containers={},
            )
            self.event(ref, fit.reason, message, warning=True)
            return None
        w = self._new_worker(pod, allocated=allocs)
        w.start_time = rfc3339()
        self.checkpoints.save(w.checkpoint())
        self._start_worker(w)
        return w

    def _start_worker(self, w: PodWorker) -> None:
        w.task = asyncio.create_task(self._lifecycle(w), name=f"pod-{w.key}")

    async def _patch_status(self, ns: str, name: str, status: dict[str, Any]) -> None:
        try:
            await self.client.patch(
                PODS, name, {"status": status}, namespace=ns, subresource="status"
            )
        except APINotFoundError:
            pass

    async def _confirm_delete(self, ns: str, name: str, uid: str) -> None:
        try:
            await self.client.delete(
                PODS, name, namespace=ns, grace_period_seconds=0, preconditions={"uid": uid}
            )
        except (APINotFoundError, APIConflictError):
            pass

    async def _terminate(self, w: PodWorker, *, grace: float, confirm: bool) -> None:
        """Stop every container (SIGTERM, grace, SIGKILL), clean up, confirm the deletion."""
        if not w.stopping:
            w.stopping = True
            if w.task is not None:
                w.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await w.task
            stops = [self.runtime.stop(p, grace_period=grace) for p in w.procs.values()]
            results = await asyncio.gather(*stops, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("stopping a container of %s: %s", w.key, result)
            self._disarm_memory_pause(w)
            await self._remove_cgroup(w.uid)
            self.checkpoints.remove(w.uid)
            self.workers.pop(w.uid, None)
            if self.by_key.get(w.key) == w.uid:
                del self.by_key[w.key]
            self._retry_deferred()
        if confirm:
            await self._confirm_delete(w.namespace, w.name, w.uid)

    # -- lifecycle ---------------------------------------------------------------------------

    async def _lifecycle(self, w: PodWorker) -> None:
        try:
            pod_cg = pod_cgroup(w.pod, w.allocated)
            async with w.cg_lock:
                await asyncio.to_thread(self._ensure_cgroup, self.pod_path(w.uid), pod_cg)
            init = list(w.spec.get("initContainers") or ())
            policy = w.spec.get("restartPolicy", "Always")
            sidecars: list[asyncio.Task[None]] = []
            if not w.initialized:
                for c in init:
                    cs = w.containers[c["name"]]
                    if cs.sidecar:
                        w.started[c["name"]] = asyncio.Event()
                        sidecars.append(
                            asyncio.create_task(self._supervise(w, c["name"], "Always"))
                        )
                        await w.started[c["name"]].wait()
                        continue
                    if cs.state == "terminated" and cs.exit_code == 0:
                        continue
                    if not await self._run_init(w, c["name"], policy):
                        w.failed_init = True
                        await self._stop_sidecars(w, sidecars)
                        self.save(w)
                        self.notify(w)
                        self._retry_deferred()
                        return
                w.initialized = True
                self.save(w)
                self.notify(w)
            else:
                for c in init:
                    if w.containers[c["name"]].sidecar:
                        sidecars.append(
                            asyncio.create_task(self._supervise(w, c["name"], "Always"))
                        )
            app = [
                asyncio.create_task(self._supervise(w, c["name"], policy))
                for c in w.spec.get("containers") or ()
            ]
            try:
                await asyncio.gather(*app)
                await self._stop_sidecars(w, sidecars)
            finally:
                for task in [*app, *sidecars]:
                    task.cancel()
            self._retry_deferred()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("pod %s lifecycle failed", w.key)
            self._lifecycle_failed(w, exc)

    def _lifecycle_failed(self, w: PodWorker, exc: Exception) -> None:
        """Say on the pod what went wrong, as kubelet does for a container it could not
        create, and try again later if nothing of the pod is running (with something
        running, starting over could run a container twice)."""
        message = f"{type(exc).__name__}: {exc}"
        waiting = [cs for cs in w.containers.values() if cs.state == "waiting"]
        for cs in waiting:
            cs.reason, cs.message = "CreateContainerError", message
        self.event(w, "Failed", f"Error: {message}", warning=True)
        self.notify(w)
        if not w.stopping and not any(cs.state == "running" for cs in w.containers.values()):
            asyncio.get_running_loop().call_later(_CREATE_RETRY, self._retry_lifecycle, w)

    def _retry_lifecycle(self, w: PodWorker) -> None:
        if not w.stopping and self.workers.get(w.uid) is w:
            self._start_worker(w)

    async def _stop_sidecars(self, w: PodWorker, sidecars: list[asyncio.Task[None]]) -> None:
        """The app containers are done for good: stop the sidecars, last started first."""
        w.finishing = True
        for c in reversed(w.spec.get("initContainers") or ()):
            proc = w.procs.get(c["name"])
            if proc is not None and w.containers[c["name"]].sidecar:
                await self.runtime.stop(proc, grace_period=self._grace(w))
        await asyncio.gather(*sidecars, return_exceptions=True)

    def _ensure_cgroup(self, path: str, resources: CgroupResources) -> None:
        self.driver.create(path, resources)

    def save(self, w: PodWorker) -> None:
        if not w.stopping:
            self.checkpoints.save(w.checkpoint())

    async def _run_init(self, w: PodWorker, name: str, policy: str) -> bool:
        """Run a regular init container to success; False if it failed for good."""
        while True:
            await self._run_once(w, name)
            cs = w.containers[name]
            if cs.exit_code == 0:
                return True
            if policy == "Never":
                return False
            await self._backoff(w, name)

    async def _run_once(self, w: PodWorker, name: str) -> None:
        proc = w.procs.get(name)
        if proc is None:
            proc = await self._start_container(w, name)
            if proc is None:
                return
        status = await self.runtime.wait(proc)
        cs = w.containers[name]
        cs.state = "terminated"
        cs.exit_code = status.exit_code
        cs.signal = status.signal
        if status.oom_killed:
            cs.reason = "OOMKilled"
        elif status.unknown:
            cs.reason = "ContainerStatusUnknown"
        else:
            cs.reason = "Completed" if status.exit_code == 0 else "Error"
        cs.message = ""
        cs.finished_at = rfc3339(status.finished_at)
        w.procs.pop(name, None)
        self.save(w)
        self.notify(w)

    async def _backoff(self, w: PodWorker, name: str) -> None:
        """Wait out CrashLoopBackOff (if any) before restarting ``name``, then count the
        restart: ``restartCount`` grows when the new instance starts, as upstream's does."""
        cs = w.containers[name]
        ran_for = time.monotonic() - w.started_mono.get(name, time.monotonic())
        cs.backoff = crash_backoff(cs.backoff, ran_for)
        cs.last_state = {
            "terminated": cs.status(allocated=None, actual=None)["state"]["terminated"]
        }
        if cs.backoff > 0:
            cs.state, cs.reason = "waiting", "CrashLoopBackOff"
            cs.message = (
                f"back-off {int(cs.backoff)}s restarting failed container={name} "
                f"pod={w.name}_{w.namespace}({w.uid})"
            )
            self.save(w)
            self.notify(w)
            await asyncio.sleep(cs.backoff)
        cs.restart_count += 1

    async def _supervise(self, w: PodWorker, name: str, policy: str) -> None:
        cs = w.containers[name]
        restored_end = cs.state == "terminated" and name not in w.procs
        while True:
            if not restored_end:
                await self._run_once(w, name)
            restored_end = False
            if w.stopping or w.finishing:
                return
            if name in w.restart_for_resize:
                w.restart_for_resize.discard(name)
                cs.last_state = {
                    "terminated": cs.status(allocated=None, actual=None)["state"]["terminated"]
                }
                cs.state, cs.reason, cs.message = "waiting", "ContainerCreating", ""
                cs.restart_count += 1
                self.save(w)
                event = w.resume.setdefault(name, asyncio.Event())
                await event.wait()
                continue
            if policy == "Never" or (policy == "OnFailure" and cs.exit_code == 0):
                return
            await self._backoff(w, name)

    def _container_env(self, w: PodWorker, c: Mapping[str, Any]) -> dict[str, str]:
        env = {"PATH": _DEFAULT_PATH, "HOSTNAME": w.name}
        fields = {
            "metadata.name": w.name,
            "metadata.namespace": w.namespace,
            "metadata.uid": w.uid,
            "spec.nodeName": self.config.node_name,
            "status.podIP": "127.0.0.1",
            "status.hostIP": "127.0.0.1",
        }
        for item in c.get("env") or ():
            name = item.get("name")
            if not name:
                continue
            if "value" in item:
                env[name] = str(item["value"])
            else:
                ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
                if ref in fields:
                    env[name] = fields[ref]
        return env

    async def _start_container(self, w: PodWorker, name: str) -> RunningProcess | None:
        c = w.container_spec(name)
        cs = w.containers[name]
        command = [*(c.get("command") or ()), *(c.get("args") or ())]
        path = self.container_path(w.uid, name)
        log_path = self.log_path(w, name, cs.restart_count)
        try:
            if not command:
                raise ProcessStartError(
                    "no command specified: inplace runs host processes and does not pull images"
                )
            async with w.cg_lock:
                alloc = w.allocated.get(name, {})
                await asyncio.to_thread(self._ensure_cgroup, path, container_cgroup(alloc))
                w.actual[name] = alloc
                if _annotation(w.pod, OOM_KILL_DISABLE_ANNOTATION) == "true":
                    self._arm_memory_pause(w, name, path)
            proc = await self.runtime.start(
                ProcessSpec(
                    command=[str(x) for x in command],
                    env=self._container_env(w, c),
                    working_dir=c.get("workingDir") or None,
                    log_path=log_path,
                    cgroup_path=path,
                )
            )
        except (ProcessStartError, CgroupError, OSError) as exc:
            code = getattr(exc, "exit_code", None)
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            with open(log_path, "a") as fh:
                fh.write(f"inplace: cannot start container {name}: {exc}\n")
            cs.state, cs.reason, cs.message = "terminated", "StartError", str(exc)
            cs.exit_code = code if code is not None else 128
            cs.started_at = cs.finished_at = rfc3339()
            cs.pid = None
            self.save(w)
            self.notify(w)
            return None
        w.procs[name] = proc
        cs.state, cs.reason, cs.message = "running", "", ""
        cs.pid, cs.started_at = proc.pid, rfc3339()
        cs.exit_code = cs.signal = None
        w.started_mono[name] = time.monotonic()
        self.save(w)
        self.notify(w)
        if name in w.started:
            w.started[name].set()
        return proc

    # -- memory pause ------------------------------------------------------------------------

    def _arm_memory_pause(self, w: PodWorker, name: str, path: str) -> None:
        """Pause instead of OOM-kill at the memory limit (pod annotation
        ``inplace.dev/oom-kill-disable: "true"``): cgroup v1 ``memory.oom_control`` = 1 on the
        container's cgroup and on the pod's (whose limit, the sum of the containers', is hit
        as soon as a lone container's is) parks the tasks, and an eventfd per cgroup tells
        the agent at once (no polling); the pod then gets condition ``MemoryPaused`` and an
        event, and a resize that raises the limit wakes it. Other drivers: not available yet
        (logged), the container is OOM-killed as usual."""
        for target in (self.pod_path(w.uid), path):
            if target in w.oom_fds:
                continue
            try:
                if self.driver.name != "v1":
                    raise CgroupUnsupported(f"memory pause needs cgroup v1, not {self.driver.name}")
                self.driver.set_oom_kill_disable(target, True)
                fd = self.driver.open_oom_notifier(target)
            except (CgroupError, OSError) as exc:
                log.warning("%s/%s: memory pause not available: %s", w.key, name, exc)
                return
            w.oom_fds[target] = fd
            asyncio.get_running_loop().add_reader(fd, self._on_oom, w, fd)

    def _on_oom(self, w: PodWorker, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.read(fd, 8)
        self.queue.add(w.key)

    def _disarm_memory_pause(self, w: PodWorker) -> None:
        loop = asyncio.get_running_loop()
        for fd in w.oom_fds.values():
            loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        w.oom_fds.clear()

    def _check_memory_pause(self, w: PodWorker) -> dict[str, Any] | None:
        """The ``MemoryPaused`` condition (None when no container is parked); posts the
        ``MemoryPaused`` event when a container becomes parked."""

        def under_oom(path: str) -> bool:
            with contextlib.suppress(CgroupError, OSError):
                return self.driver.under_oom(path)
            return False

        pod_paused = under_oom(self.pod_path(w.uid))
        paused = [
            name
            for name, cs in w.containers.items()
            if cs.state == "running"
            and self.container_path(w.uid, name) in w.oom_fds
            and (pod_paused or under_oom(self.container_path(w.uid, name)))
        ]
        if paused != w.memory_paused:
            fresh = [n for n in paused if n not in w.memory_paused]
            if fresh:
                message = (
                    f"containers {fresh} reached their memory limit and are paused (not killed) "
                    "until the limit is raised"
                )
                w.pending_events.append(("MemoryPaused", message, True))
            w.memory_paused = paused
        if not paused:
            return None
        return {
            "status": "True",
            "reason": "MemoryLimitReached",
            "message": f"containers paused at their memory limit: [{' '.join(paused)}]",
        }

    # -- resize ------------------------------------------------------------------------------

    def _resizable(self, w: PodWorker) -> list[str]:
        names = [c["name"] for c in w.spec.get("containers") or ()]
        names += [
            c["name"]
            for c in w.spec.get("initContainers") or ()
            if c.get("restartPolicy") == "Always"
        ]
        return names

    def _approved(self, w: PodWorker, desired: Mapping[str, Alloc]) -> bool:
        """May the agent apply the desired resources now?

        Yes when the scheduler approved this generation, or when the agent runs without an
        arbitrating scheduler, or when no container's request grows: a change that takes no
        room (a shrink, a limits-only change) cannot race a new pod for capacity, and the
        scheduler's arbiter, which compares requests, would never be asked to approve it.
        """
        if self.config.admit_without_scheduler or not requests_grow(w.allocated, desired):
            return True
        generation = _meta(w.pod).get("generation")
        for cond in (w.pod.get("status") or {}).get("conditions") or ():
            if (
                cond.get("type") == "PodResizeScheduled"
                and cond.get("status") == "True"
                and cond.get("observedGeneration") == generation
            ):
                return True
        return False

    def _resize_retry(self, w: PodWorker) -> float:
        w.resize_backoff = RESIZE_RETRY.next(w.resize_backoff)
        return w.resize_backoff

    async def _resize(self, w: PodWorker) -> float | None:
        """Bring allocations and cgroups to the spec's resources; returns a retry delay."""
        if w.stopping or w.failed_init or w.phase() in _TERMINAL:
            return None
        desired = desired_allocs(w.pod)
        names = self._resizable(w)
        changed = [
            n for n in names if sizing_of(desired.get(n, {})) != sizing_of(w.allocated.get(n, {}))
        ]
        unapplied = [
            n
            for n in names
            if sizing_of(w.actual.get(n, {})) != sizing_of(w.allocated.get(n, {}))
            and w.containers[n].state == "running"
        ]
        generation = _meta(w.pod).get("generation")
        if not changed and not unapplied:
            if any(w.resize_conditions.values()):
                w.resize_conditions = {"PodResizePending": None, "PodResizeInProgress": None}
            w.resize_backoff = None
            return None
        if changed:
            if not self._approved(w, desired):
                return None
            new_allocs = dict(w.allocated)
            for n in changed:
                new_allocs[n] = desired.get(n, {})
            request = pod_allocated_requests(w.pod, new_allocs)
            fit = fits_allocatable(request, self.used(exclude=w.uid), self.allocatable())
            if not fit.fits:
                infeasible = fit.never_fits
                reason = "Infeasible" if infeasible else "Deferred"
                message = fit.message
                if infeasible:
                    name = fit.reason.removeprefix("OutOf")
                    idx = 0 if name == "cpu" else 1
                    message = (
                        f"Node didn't have enough capacity: {name}, requested: {request[idx]}, "
                        f"capacity: {self.allocatable()[idx]}"
                    )
                w.resize_conditions = {
                    "PodResizePending": {
                        "status": "True",
                        "reason": reason,
                        "message": message,
                        "observedGeneration": generation,
                    },
                    "PodResizeInProgress": None,
                }
                if w.last_resize_event != (generation, reason):
                    w.last_resize_event = (generation, reason)
                    w.pending_events.append((f"Resize{reason}", message, True))
                return None if infeasible else self._resize_retry(w)
            old_allocs = w.allocated
            w.allocated = new_allocs
            self.save(w)  # allocate before actuating: a crash now re-applies on restart
            restart_all = (_meta(w.pod).get("annotations") or {}).get(
                RESIZE_POLICY_ANNOTATION
            ) == "Restart"
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
            started = "Pod resize started: " + self._resize_summary(w, changed)
            w.pending_events.append(("ResizeStarted", started, False))
        else:
            restarts = []
        w.resize_conditions = {
            "PodResizePending": None,
            "PodResizeInProgress": {"status": "True", "observedGeneration": generation},
        }
        if restarts:
            await self.sync_status(w)
            self.flush_events(w)
            w.restart_for_resize.update(restarts)
            for n in restarts:
                w.resume[n] = asyncio.Event()
                w.started[n] = asyncio.Event()
            stops = [
                self.runtime.stop(w.procs[n], grace_period=self._grace(w))
                for n in restarts
                if n in w.procs
            ]
            await asyncio.gather(*stops, return_exceptions=True)
        try:
            await self._write_cgroups(w)
        except CgroupWriteError as exc:
            message = f"resize of {w.key} could not be applied: {exc}"
            w.resize_conditions = {
                "PodResizePending": None,
                "PodResizeInProgress": {
                    "status": "True",
                    "reason": "Error",
                    "message": message,
                    "observedGeneration": generation,
                },
            }
            if w.last_resize_event != (generation, "Error", str(exc)):
                w.last_resize_event = (generation, "Error", str(exc))
                w.pending_events.append(("ResizeError", message, True))
            return self._resize_retry(w)
        finally:
            for n in restarts:
                w.resume[n].set()
        for n in restarts:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(w.started[n].wait(), 60)
        for n in names:
            if w.containers[n].state == "running":
                w.actual[n] = w.allocated.get(n, {})
        self.save(w)
        w.resize_conditions = {"PodResizePending": None, "PodResizeInProgress": None}
        w.resize_backoff = None
        w.last_resize_event = None
        completed = "Pod resize completed: " + self._resize_summary(w, names)
        w.pending_events.append(("ResizeCompleted", completed, False))
        self._retry_deferred()
        return None

    def _grace(self, w: PodWorker) -> float:
        return float(w.spec.get("terminationGracePeriodSeconds", 30))

    def _resize_summary(self, w: PodWorker, names: list[str]) -> str:
        containers = [{"name": n, "resources": w.allocated.get(n, {})} for n in names]
        body = {"containers": containers, "generation": _meta(w.pod).get("generation")}
        return orjson.dumps(body).decode()

    async def _write_cgroups(self, w: PodWorker) -> None:
        """Apply the allocations in the safe order. Writes take microseconds and run on the
        loop, except when a memory limit goes down: the kernel then reclaims synchronously
        before it answers, so those plans run in a thread."""
        async with w.cg_lock:
            plan, current = self._plan_cgroups(w)
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
            self.driver.update(step.path, step.resources)

    def _plan_cgroups(self, w: PodWorker) -> tuple[list[CgroupWrite], dict[str, CgroupResources]]:
        pod_path = self.pod_path(w.uid)
        pod_new = self.driver.normalize(pod_cgroup(w.pod, w.allocated))
        pod_old = self.driver.read(pod_path)
        current = {pod_path: pod_old}
        containers = []
        for n in self._resizable(w):
            path = self.container_path(w.uid, n)
            try:
                old = self.driver.read(path)
            except CgroupError:
                continue  # not started yet: created with its allocation when it starts
            current[path] = old
            containers.append((path, old, self.driver.normalize(container_cgroup(w.allocated[n]))))
        return plan_resize(pod_path, pod_old, pod_new, containers), current

    # -- status ------------------------------------------------------------------------------

    def build_status(self, w: PodWorker) -> dict[str, Any]:
        now = rfc3339()
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
        wanted.update(w.resize_conditions)
        if w.oom_fds or w.memory_paused:
            wanted["MemoryPaused"] = self._check_memory_pause(w)
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": merge_conditions(current.get("conditions") or [], wanted, now),
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "startTime": w.start_time,
            "containerStatuses": [
                c.status(allocated=w.allocated.get(c.name), actual=w.actual.get(c.name))
                for c in app
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

    async def sync_status(self, w: PodWorker) -> None:
        """One strategic merge PATCH of pods/NAME/status with what differs from the cache.

        Conditions merge by type (upstream's patch strategy), so only the agent's own
        conditions that changed are sent and a scheduler's ``PodResizeScheduled`` written in
        between is never overwritten; a removed condition is a ``$patch: delete`` item."""
        if w.stopping:
            return
        patch = status_patch(w.pod.get("status") or {}, self.build_status(w))
        if not patch:
            return
        try:
            updated = await self.client.patch(
                PODS,
                w.name,
                {"status": patch},
                namespace=w.namespace,
                subresource="status",
                patch_type="strategic",
            )
        except APINotFoundError:
            return
        if _meta(updated).get("uid") == w.uid:
            w.pod = updated


def status_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The strategic merge patch that turns ``current`` into ``wanted`` (fields the agent
    owns only; conditions by type, with stale keys nulled and removed types deleted)."""
    patch = {k: v for k, v in wanted.items() if k != "conditions" and current.get(k) != v}
    old = {c.get("type"): c for c in current.get("conditions") or ()}
    new = {c["type"]: c for c in wanted.get("conditions") or ()}
    items: list[dict[str, Any]] = []
    for ctype, cond in new.items():
        before = old.get(ctype)
        if before != cond:
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


def _more(new: ContainerSizing, old: ContainerSizing) -> bool:
    """Whether ``new`` requests more CPU or memory than ``old``."""
    return (
        new.effective_requests_cpu > old.effective_requests_cpu
        or new.effective_requests_memory > old.effective_requests_memory
    )


def _annotation(pod: Mapping[str, Any], name: str) -> str | None:
    value = (_meta(pod).get("annotations") or {}).get(name)
    return value if isinstance(value, str) else None


def _below(new: int | None, old: int | None) -> bool:
    """Whether memory limit ``new`` is lower than ``old`` (None is unlimited)."""
    return new is not None and (old is None or new < old)
