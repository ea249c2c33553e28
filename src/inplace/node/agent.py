"""The node agent: registers its Node, heartbeats a Lease, runs and resizes the pods bound to it.

Shape (upstream kubelet's, in miniature), one module per concern:

* **Informer wiring and workers** (here): one informer on pods with
  ``fieldSelector=spec.nodeName=<node>``. Its handlers only enqueue the pod's
  ``namespace/name``; a :class:`~inplace.client.WorkQueue` hands each key to one worker at a
  time, and :meth:`NodeAgent.reconcile` re-reads the pod from the cache: admit it, resize
  it, delete it, and write its status. There is no periodic sync: a resize is actuated when
  its watch event arrives.
* **One** :class:`~inplace.node.worker.PodWorker` **per admitted pod** (by uid) holds what
  the agent knows: allocations, container states, processes.
* **Lifecycle** (:mod:`.lifecycle`): init containers, one supervisor per container,
  restart policies and CrashLoopBackOff, graceful termination.
* **Resize** (:mod:`.resize`): desired vs allocated, approval, the fit on the node's
  **ledger** (:mod:`.ledger`), the cgroup writes in the safe order.
* **Memory pause** (:mod:`.pause`): park at the memory limit instead of an OOM kill.
* **Status** (:mod:`.status`): upstream's ``PodStatus``, written as one strategic merge
  PATCH of ``pods/NAME/status`` carrying only what changed.
* **Restore** (:mod:`.restore`) from checkpoints (:mod:`.checkpoint`) makes a SIGKILLed
  agent harmless: the next one re-adopts the processes before it serves any pod.
* **Usage** (:mod:`.stats`) is sampled from cgroups every few seconds and served on the
  agent's endpoint (``--address``, plain HTTP or HTTPS with a client certificate) for
  ``metrics.k8s.io`` (:mod:`inplace.apiserver.nodemetrics`); the same server takes
  ``kubectl exec`` (:mod:`.streaming`) and ``kubectl logs`` (:mod:`.containerlogs`) from the
  API server, as a kubelet's does.
* Every API call about pods goes through :class:`~inplace.node.actions.NodeActions` (tests
  fake it); the runtime, informer, stats endpoint and usage source are injectable, which is
  how one process serves many simulated nodes (:mod:`.simulated`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from inplace.api.conditions import KUBELET, StatusPatch, status_update
from inplace.client import PODS, Client, Informer, WorkQueue, key_of, run_workers

from .actions import ClientActions, NodeActions
from .cgroups.base import CgroupDriver, CgroupError, CgroupResources
from .cgroups.mapping import milli_cpu_to_shares
from .checkpoint import CheckpointStore
from .config import AgentConfig
from .containerlogs import ContainerLogServer, PodLogs
from .context import NodeContext, NodePaths
from .env import api_server_env
from .execproc import ExecTarget
from .ledger import Ledger
from .lifecycle import Lifecycle
from .model import (
    admission_check,
    approval_hold,
    arbiter_decided,
    desired_allocs,
    pod_allocated_requests,
    rfc3339,
)
from .pause import MemoryPause
from .registration import KUBELET_VERSION, RUNTIME_VERSION, NodeRegistration
from .resize import Resizer
from .restore import restore
from .runtime import ProcessRuntime
from .sandbox import NoSandboxes, PodSandboxes, SandboxError
from .spares import Spares, Zygote
from .stats import ContainerRef, StatsServer, UsageSampler, endpoint_ssl_context
from .status import StatusWriter
from .streaming import StreamingServer, TargetError
from .tokens import TokenManager
from .volumes.manager import VolumeManager
from .volumes.objects import APIClaims, WatchedObjects
from .worker import TERMINAL, PodWorker, UsageSource, WorkloadRuntime, pod_meta

__all__ = [
    "KUBELET_VERSION",
    "RUNTIME_VERSION",
    "AgentConfig",
    "NodeAgent",
    "PodSource",
    "PodWorker",
]

log = logging.getLogger(__name__)


class PodSource(Protocol):
    """The pods the agent sees: an :class:`~inplace.client.Informer` (tests may fake one)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def list(self) -> list[dict[str, Any]]: ...

    def add_handler(
        self,
        on_add: Callable[[dict[str, Any]], None] | None = None,
        on_update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        on_delete: Callable[[dict[str, Any]], None] | None = None,
    ) -> None: ...

    async def wait_synced(self) -> None: ...

    async def run(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class _Rejected:
    """A pod the agent refused to admit (the subject of its event)."""

    namespace: str
    name: str
    uid: str


class NodeAgent:
    """One node (see the module docstring). ``await agent.run(stop)`` until ``stop`` is set."""

    def __init__(
        self,
        client: Client,
        config: AgentConfig,
        *,
        driver: CgroupDriver,
        runtime: WorkloadRuntime | None = None,
        informer: PodSource | None = None,
        stats: StatsServer | None = None,
        usage: UsageSource | None = None,
        actions: NodeActions | None = None,
    ) -> None:
        """``runtime``, ``informer`` (shared, run by the caller, filtered here by node),
        ``stats`` (shared endpoint) and ``usage`` (usage per container instead of cgroup
        readings) let one process serve many simulated nodes (:mod:`.simulated`);
        ``actions`` replaces the API calls about pods (tests)."""
        self.client = client
        self.config = config
        self.driver = driver
        self._own_actions = actions is None
        self._client_actions = ClientActions(client, config.node_name)
        self.objects = WatchedObjects(client, self._objects_changed)
        self.tokens = TokenManager(client, self._objects_changed)
        volumes = VolumeManager(
            config.data_dir,
            self.objects,
            APIClaims(client),
            node_memory=config.memory_bytes,
            node_cpu_milli=config.cpu_milli,
            tokens=self.tokens,
        )
        #: The node's spare shim (a pod's sandbox tool starts warm) and its shim zygote (a
        #: container's shim is forked from it: warm, and sharing its pages).
        self.spares = Spares(keep=1)
        self.zygote = Zygote()
        self.ctx = NodeContext(
            config=config,
            driver=driver,
            runtime=runtime
            if runtime is not None
            else ProcessRuntime(driver, self.spares, self.zygote),
            actions=actions if actions is not None else self._client_actions,
            checkpoints=CheckpointStore(config.data_dir / "checkpoints"),
            queue=WorkQueue(name=f"node-{config.node_name}"),
            paths=NodePaths(config),
            sandboxes=PodSandboxes(config, volumes, spares=self.spares)
            if runtime is None
            else NoSandboxes(config, volumes),
            objects=self.objects,
            service_env=api_server_env(client.config.server),
        )
        self.ledger = Ledger(self.ctx)
        self.pause = MemoryPause(self.ctx, processes=runtime is None)
        self.status = StatusWriter(self.ctx, self.pause)
        self.lifecycle = Lifecycle(self.ctx, self.pause, self.ledger)
        self.resizer = Resizer(
            self.ctx, self.ledger, self.status.publish, on_memory_raised=self.pause.resumed
        )
        self.usage_source = usage
        self._own_informer = informer is None
        self.informer: PodSource = (
            informer
            if informer is not None  # an empty Informer is falsy (it has a length)
            else Informer(client, PODS, field_selector=f"spec.nodeName={config.node_name}")
        )
        self.sampler = UsageSampler(
            driver, node_path=self.ctx.paths.node, history_seconds=config.usage_history
        )
        self._own_stats = stats is None
        if stats is None:
            stats = StatsServer(
                self.sampler,
                config.node_name,
                host=config.http_host,
                port=config.http_port,
                ssl_context=endpoint_ssl_context(config),
            )
        else:
            stats.add(config.node_name, self.sampler)
        self.stats = stats
        if self._own_stats and runtime is None:  # a real node: processes to exec into
            token = client.config.bearer_token
            streaming = StreamingServer(driver, self.exec_target, token)
            logs = ContainerLogServer(config.log_root, self.pod_logs, token)
            for method, path, handler in [*streaming.routes(), *logs.routes()]:
                stats.add_route(method, path, handler)
        self._rejected: set[str] = set()
        self.registration = NodeRegistration(
            client, config, driver, lambda: self.stats.port, memory_pause=self.pause.name
        )

    @property
    def workers(self) -> dict[str, PodWorker]:
        """uid → worker."""
        return self.ctx.workers

    @property
    def queue(self) -> WorkQueue[str]:
        return self.ctx.queue

    # -- running -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Register, re-adopt, serve pods until ``stop``; workloads are left running."""
        node_path = self.ctx.paths.node
        # As upstream's kubepods cgroup: CPU by shares only. A CFS quota here would cap every
        # pod's limit at the node's allocatable (v1 quotas are hierarchical: EINVAL), while
        # upstream lets a limit exceed it.
        node_cgroup = CgroupResources(
            cpu_shares=milli_cpu_to_shares(self.config.cpu_milli),
            cpu_quota_us=None,
            memory_limit_bytes=self.config.memory_bytes,
        )
        await asyncio.to_thread(self.driver.create, node_path, node_cgroup)
        if self._own_stats:
            await self.stats.start()
        await self.registration.register()
        if self._own_actions:
            self._client_actions.start()
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
            for task in tasks:
                task.cancel()
            self.pause.close()
            self.spares.close()
            self.zygote.close()
            await self._client_actions.close()
            await self.objects.close()
            self.tokens.close()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self._own_stats:
                await self.stats.stop()
            if not self.workers:  # nothing runs here: leave no empty node cgroup behind
                with contextlib.suppress(CgroupError, OSError):
                    await asyncio.to_thread(self.driver.remove, node_path)
                with contextlib.suppress(SandboxError, OSError):
                    await self.ctx.sandboxes.release()

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

    def _objects_changed(self, namespace: str) -> None:
        """A ConfigMap or Secret a volume projects changed, or a token needs refreshing:
        rewrite that namespace's pods."""
        for w in list(self.workers.values()):
            if w.namespace == namespace:
                self.queue.add(w.key)

    async def restore(self) -> None:
        """Re-adopt the pods of the checkpoints (before any pod is reconciled)."""
        pods = [p for p in self.informer.list() if self.mine(p)]
        await restore(self.ctx, self.lifecycle, self.pause, pods)
        self.ctx.sandboxes.sweep_later()  # what an agent stopped mid-sweep left

    def exec_target(self, namespace: str, name: str, uid: str, container: str) -> ExecTarget:
        """Where ``kubectl exec`` runs: the container's running process and its cgroup
        (TargetError with kubelet's status and message otherwise)."""
        w = self.ctx.worker_for(f"{namespace}/{name}")
        if w is None or (uid and w.uid != uid):
            raise TargetError(404, "pod does not exist")
        state = w.containers.get(container)
        process = w.procs.get(container)
        if state is None or state.state != "running" or process is None:
            raise TargetError(500, f'container not found ("{container}")')
        return ExecTarget(process, self.ctx.paths.container(w.uid, container))

    def pod_logs(self, namespace: str, name: str) -> PodLogs | None:
        """What ``/containerLogs`` reads for the pod (:mod:`.containerlogs`): its worker's
        container states; a pod bound here but not admitted yet has none."""
        w = self.ctx.worker_for(f"{namespace}/{name}")
        if w is not None:
            names = frozenset(w.containers)

            def status(container: str) -> dict[str, Any] | None:
                cs = w.containers.get(container)
                return None if cs is None else cs.status(allocated=None, actual=None)

            return PodLogs(w.uid, names, status)
        pod = self.informer.get(f"{namespace}/{name}")
        if pod is None or not self.mine(pod):
            return None
        spec = pod.get("spec") or {}
        every = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        names = frozenset(c["name"] for c in every)
        return PodLogs(str(pod_meta(pod).get("uid", "")), names, lambda _: None)

    # -- usage -------------------------------------------------------------------------------

    def container_refs(self) -> list[ContainerRef]:
        refs = []
        for w in self.workers.values():
            for name, cs in w.containers.items():
                if cs.state == "running":
                    path = self.ctx.paths.container(w.uid, name)
                    refs.append(ContainerRef(w.namespace, w.name, w.uid, name, path))
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

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        """Bring the pod ``key`` (from the cache) and what runs for it together; returns a
        delay after which to look again (a deferred resize), or None."""
        pod = self.informer.get(key)
        if not self.mine(pod):
            pod = None
        w = self.ctx.worker_for(key)
        if pod is None:
            if w is not None:
                await self._terminate(w, grace=0.0, confirm=False)
            return None
        meta = pod_meta(pod)
        if w is not None and w.uid != meta.get("uid"):
            await self._terminate(w, grace=0.0, confirm=False)
            w = None
        if meta.get("deletionTimestamp"):
            if w is not None:
                grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                await self._terminate(w, grace=grace, confirm=True)
            else:
                await self.ctx.actions.confirm_deletion(
                    _Rejected(meta["namespace"], meta["name"], meta["uid"])
                )
            return None
        if w is None:
            phase = (pod.get("status") or {}).get("phase")
            if phase in TERMINAL or meta["uid"] in self._rejected:
                return None
            w = await self._admit(pod)
            if w is None:
                return None
        w.pod = pod
        w.observed_generation = w.generation
        try:
            requeue = await self.resizer.resize(w)
            hold = self._status_hold(w)
            if hold is None:
                await self.status.sync(w)
            else:
                requeue = hold if requeue is None else min(requeue, hold)
            self.pause.enforce_timeout(w)
            for error in await self.ctx.sandboxes.refresh(w.pod):
                self.ctx.event(w, "FailedMount", str(error), warning=True)
        finally:
            # Events go out after the status write: they are informational, and posting them
            # first would put two API calls ahead of the status on the resize latency path.
            self.status.flush_events(w)
        return requeue

    def _status_hold(self, w: PodWorker) -> float | None:
        """Seconds to hold back the status write of a pod whose growth waits for the
        scheduler's approval (:func:`~inplace.node.model.approval_hold`), or None."""
        generation = w.generation
        if w.awaiting_approval is None or w.awaiting_approval != generation:
            return None
        now = time.monotonic()
        seen, since = w.generation_seen
        if seen != generation:
            w.generation_seen = (generation, now)
            since = now
        return approval_hold(
            awaiting_approval=True,
            arbiter_decided=arbiter_decided(w.pod, generation),
            only_generation=lambda: self.status.reports_only_generation(w),
            waited=now - since,
            hold=self.config.approval_hold,
        )

    async def _admit(self, pod: dict[str, Any]) -> PodWorker | None:
        meta = pod_meta(pod)
        allocs = desired_allocs(pod)
        request = pod_allocated_requests(pod, allocs)
        fit = admission_check(
            request,
            self.ledger.used(),
            self.ledger.allocatable(),
            pods_running=self.ledger.active_pods(),
            max_pods=self.config.max_pods,
        )
        if not fit.fits:
            self._rejected.add(meta["uid"])
            log.info("rejecting %s: %s", key_of(pod), fit.message)
            message = f"Pod was rejected: {fit.message}"
            fields = {
                "phase": "Failed",
                "reason": fit.reason,
                "message": message,
                "startTime": rfc3339(),
                "observedGeneration": meta.get("generation"),
            }

            def compute(current: Mapping[str, Any]) -> StatusPatch | None:
                return status_update(current, writer=KUBELET, now=rfc3339(), fields=fields)

            ref = _Rejected(meta["namespace"], meta["name"], meta["uid"])
            await self.ctx.actions.write_pod_status(ref, pod, compute)
            self.ctx.event(ref, fit.reason, message, warning=True)
            return None
        w = PodWorker.for_pod(pod, allocated=allocs)
        self.ctx.add_worker(w)
        w.start_time = rfc3339()
        self.ctx.checkpoints.save(w.checkpoint())
        self.lifecycle.start(w)
        return w

    async def _terminate(self, w: PodWorker, *, grace: float, confirm: bool) -> None:
        """Stop every container (SIGTERM, grace, SIGKILL), clean up, confirm the deletion."""
        if not w.stopping:
            await self.lifecycle.stop(w, grace=grace)
            self.ctx.remove_worker(w)
            self.objects.keep_only({x.namespace for x in self.workers.values()})
            self.ledger.retry_deferred()
        if confirm:
            await self.ctx.actions.confirm_deletion(w)
