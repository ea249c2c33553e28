"""What the agent knows about one admitted pod (:class:`PodWorker`), and the runtime it needs.

A worker is plain state: the pod as last seen, its allocations, its containers' states and
processes, and the flags and events its lifecycle, resize and status parts exchange. The
parts (:mod:`.lifecycle`, :mod:`.resize`, :mod:`.pause`, :mod:`.status`) act on it; it
performs no I/O of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from inplace.api.conditions import Decision

from .checkpoint import ContainerCheckpoint, PodCheckpoint
from .model import Alloc, pod_allocated_requests
from .runtime import ExitStatus, ProcessSpec, RunningProcess
from .status_model import ContainerState, pod_phase

__all__ = [
    "TERMINAL",
    "PodWorker",
    "UsageSource",
    "WorkloadRuntime",
    "pod_annotation",
    "pod_meta",
]

TERMINAL: Final = ("Succeeded", "Failed")
"""Pod phases after which nothing runs and nothing is held on the node."""


def pod_meta(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = pod.get("metadata") or {}
    return meta


def pod_annotation(pod: Mapping[str, Any], name: str) -> str | None:
    value = (pod_meta(pod).get("annotations") or {}).get(name)
    return value if isinstance(value, str) else None


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
    sandbox_ready: bool = False
    """The pod's sandbox (volumes, namespaces) is set up: containers can start
    (``PodReadyToStartContainers``)."""
    start_time: str | None = None
    task: asyncio.Task[None] | None = None
    stopping: bool = False
    finishing: bool = False
    """The app containers ended for good; sidecars are being stopped, not restarted."""
    cg_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    resize_conditions: dict[str, Decision] = field(default_factory=dict)
    """The agent's latest decisions on ``PodResizePending``/``PodResizeInProgress``, each for
    the generation it was made for (so it never overrides a newer one, see
    :mod:`inplace.api.conditions`)."""
    observed_generation: int | None = None
    """The pod generation the agent last acted on (``status.observedGeneration``)."""
    awaiting_approval: int | None = None
    """The generation whose growth waits for the scheduler's approval (set by the resizer)."""
    generation_seen: tuple[int | None, float] = (None, 0.0)
    """(generation, monotonic time the agent first saw it): how long a status write that
    only reports it has been held (:func:`~inplace.node.model.approval_hold`)."""
    resize_backoff: float | None = None
    resize_backfilled: bool = False
    """Whether ``resize_conditions`` were seeded from the pod's stored conditions (once, as
    the kubelet's ``BackfillPodResizeConditions`` does for the pods it finds on start)."""
    restart_for_resize: set[str] = field(default_factory=set)
    resume: dict[str, asyncio.Event] = field(default_factory=dict)
    started: dict[str, asyncio.Event] = field(default_factory=dict)
    started_mono: dict[str, float] = field(default_factory=dict)
    _ledger: tuple[dict[str, Alloc], tuple[int, int]] | None = None
    pending_events: list[tuple[str, str, bool]] = field(default_factory=list)
    """(reason, message, warning) to post once the status is written."""
    oom_fds: dict[str, int] = field(default_factory=dict)
    """cgroup path → eventfd that fires when the cgroup goes under OOM (memory pause)."""
    memory_paused: list[str] = field(default_factory=list)
    """The containers parked at their memory limit when the status was last built."""
    paused_since: float | None = None
    """Monotonic time the pod became paused (for ``inplace.dev/pause-timeout``)."""
    paused_at: float | None = None
    """Wall-clock time of the same moment (for the condition's message)."""
    pause_timer: asyncio.TimerHandle | None = None
    """Wakes the pod when its pause times out."""

    @classmethod
    def for_pod(cls, pod: dict[str, Any], *, allocated: Mapping[str, Alloc]) -> PodWorker:
        """A fresh worker: every container waiting (``PodInitializing`` behind init
        containers), ``allocated`` both allocated and actual."""
        meta = pod_meta(pod)
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
        return cls(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            pod=pod,
            allocated=dict(allocated),
            actual=dict(allocated),
            containers=containers,
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.pod.get("spec") or {}
        return spec

    @property
    def generation(self) -> int | None:
        generation = pod_meta(self.pod).get("generation")
        return generation if isinstance(generation, int) else None

    def container_spec(self, name: str) -> dict[str, Any]:
        for c in [*(self.spec.get("initContainers") or ()), *(self.spec.get("containers") or ())]:
            if c["name"] == name:
                return dict(c)
        raise KeyError(name)

    def field_path(self, container: str) -> str:
        """How an event names one container (kubelet's container reference)."""
        cs = self.containers.get(container)
        kind = "initContainers" if cs is not None and cs.init else "containers"
        return f"spec.{kind}{{{container}}}"

    def resizable(self) -> list[str]:
        """The containers a resize applies to: app containers and sidecars."""
        names = [c["name"] for c in self.spec.get("containers") or ()]
        names += [
            c["name"]
            for c in self.spec.get("initContainers") or ()
            if c.get("restartPolicy") == "Always"
        ]
        return names

    def grace_period(self) -> float:
        return float(self.spec.get("terminationGracePeriodSeconds", 30))

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

    def holds_room(self) -> bool:
        """Whether the pod counts on the node's ledger (not stopping, not terminal)."""
        return not self.stopping and self.phase() not in TERMINAL

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
                user=cs.user,
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
    """What the agent needs from a runtime: :class:`~inplace.node.runtime.ProcessRuntime`
    (real processes) or :class:`inplace.node.simulated.SimulatedRuntime` (none)."""

    async def start(self, spec: ProcessSpec) -> RunningProcess: ...

    async def wait(self, proc: RunningProcess) -> ExitStatus: ...

    async def stop(self, proc: RunningProcess, *, grace_period: float) -> ExitStatus: ...

    def adopt(self, pid: int, start_time: float, log_path: str) -> RunningProcess | None: ...


UsageSource = Callable[[PodWorker, str], tuple[int, int]]
"""(worker, container) → (CPU nano-cores, memory bytes), for nodes whose usage is simulated."""
