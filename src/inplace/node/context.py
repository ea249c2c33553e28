"""What every part of a node agent shares: its settings, cgroups, runtime, actions,
checkpoints, cgroup paths, sandboxes, its pod workers and its work queue.

The parts (:mod:`.lifecycle`, :mod:`.resize`, :mod:`.pause`, :mod:`.ledger`,
:mod:`.status`, :mod:`.restore`) each take the one :class:`NodeContext` of their agent
instead of a reference to the agent, so each can be built and tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inplace.api.containerlogs import container_log_dir
from inplace.client import WorkQueue
from inplace.client.events import ObjectRef

from .actions import NodeActions, PodRef
from .cgroups.base import CgroupDriver
from .checkpoint import CheckpointStore
from .config import AgentConfig
from .sandbox import PodSandboxes
from .volumes.payload import ObjectReader
from .worker import PodWorker, WorkloadRuntime

__all__ = ["NodeContext", "NodePaths"]


@dataclass(frozen=True)
class NodePaths:
    """Where a node keeps its pods' cgroups (relative to the driver's root) and logs."""

    config: AgentConfig

    @property
    def node(self) -> str:
        return self.config.node_name

    def pod(self, uid: str) -> str:
        return f"{self.node}/pod{uid}"

    def container(self, uid: str, container: str) -> str:
        return f"{self.node}/pod{uid}/{container}"

    def log(self, w: PodWorker, container: str, restart_count: int) -> str:
        directory = container_log_dir(self.config.log_root, w.namespace, w.name, w.uid, container)
        return str(directory / f"{restart_count}.log")


@dataclass
class NodeContext:
    """One node agent's shared state (see the module docstring)."""

    config: AgentConfig
    driver: CgroupDriver
    runtime: WorkloadRuntime
    actions: NodeActions
    checkpoints: CheckpointStore
    queue: WorkQueue[str]
    paths: NodePaths
    sandboxes: PodSandboxes
    """The pods' mount namespaces, volumes and launches (:mod:`.sandbox`)."""
    objects: ObjectReader | None = None
    """The ConfigMaps and Secrets the node's pods reference (volumes, environment); None in
    tests that need none."""
    service_env: dict[str, str] = field(default_factory=dict)
    """The ``kubernetes`` Service's variables every container gets (:mod:`.env`): the API
    server's address as this agent reaches it; empty in tests."""
    workers: dict[str, PodWorker] = field(default_factory=dict)
    """uid → worker."""
    by_key: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` → uid."""

    def add_worker(self, w: PodWorker) -> None:
        self.workers[w.uid] = w
        self.by_key[w.key] = w.uid

    def remove_worker(self, w: PodWorker) -> None:
        self.workers.pop(w.uid, None)
        if self.by_key.get(w.key) == w.uid:
            del self.by_key[w.key]

    def worker_for(self, key: str) -> PodWorker | None:
        uid = self.by_key.get(key)
        return self.workers.get(uid) if uid else None

    def save(self, w: PodWorker) -> None:
        """Checkpoint the worker (unless it is being torn down)."""
        if not w.stopping:
            self.checkpoints.save(w.checkpoint())

    def notify(self, w: PodWorker) -> None:
        """Something about the pod changed: reconcile it (its status) soon."""
        if not w.stopping:
            self.queue.add(w.key)

    def event(
        self,
        pod: PodRef,
        reason: str,
        message: str,
        *,
        warning: bool = False,
        field_path: str = "",
    ) -> None:
        """An event about the pod, or about one of its containers (``field_path``)."""
        ref = ObjectRef(pod.namespace, pod.name, pod.uid, field_path=field_path)
        self.actions.event(ref, "Warning" if warning else "Normal", reason, message)
