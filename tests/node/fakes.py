"""A node agent without a server: fake pods (the informer's cache) and fake actions.

:class:`FakeCluster` is both the agent's :class:`~inplace.node.agent.PodSource` and its
:class:`~inplace.node.actions.NodeActions`: status patches are applied to the pods it keeps
with the API server's own strategic merge (so conditions merge by type exactly as they would
on a server), deletions remove the pod, events are recorded. :func:`fake_agent` builds a real
:class:`~inplace.node.agent.NodeAgent` over it with the simulated runtime and the ``none``
cgroup driver; tests drive ``agent.reconcile(key)`` themselves.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inplace.client import APIConflictError, APINotFoundError, Client, ClusterConfig, key_of
from inplace.client.events import ObjectRef
from inplace.client.status import ComputeStatus, write_status
from inplace.node.actions import PodRef
from inplace.node.agent import AgentConfig, NodeAgent
from inplace.node.cgroups import NoneDriver
from inplace.node.runtime import ExitStatus, RunningProcess
from inplace.node.simulated import SimulatedRuntime
from inplace.registry.kinds import REGISTRY
from inplace.registry.patch import apply_strategic_merge_patch
from inplace.registry.patchmeta import schema_for_kind
from tests.poll import await_until

_POD = REGISTRY.by_kind("", "Pod")
assert _POD is not None
_POD_SCHEMA = schema_for_kind(_POD)
assert _POD_SCHEMA is not None

NODE = "fake-node"


@dataclass
class Event:
    key: str
    type: str
    reason: str
    message: str
    field_path: str = ""


@dataclass
class FakeCluster:
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    status_patches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deletions: list[tuple[str, str]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    revision: int = 1
    conflicts: int = 0

    # -- the pod source ----------------------------------------------------------------------

    def put(self, pod: dict[str, Any]) -> dict[str, Any]:
        """Store ``pod`` as a watch event would deliver it (a new resourceVersion)."""
        self.revision += 1
        pod = copy.deepcopy(pod)
        pod.setdefault("metadata", {})["resourceVersion"] = str(self.revision)
        self.pods[key_of(pod)] = pod
        return pod

    def get(self, key: str) -> dict[str, Any] | None:
        return self.pods.get(key)

    def list(self) -> list[dict[str, Any]]:
        return list(self.pods.values())

    def add_handler(
        self,
        on_add: Callable[[dict[str, Any]], None] | None = None,
        on_update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        on_delete: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        pass

    async def wait_synced(self) -> None:
        pass

    async def run(self) -> None:
        pass

    def stop(self) -> None:
        pass

    # -- the actions -------------------------------------------------------------------------

    async def write_pod_status(
        self, pod: PodRef, current: Mapping[str, Any], compute: ComputeStatus
    ) -> dict[str, Any] | None:
        key = f"{pod.namespace}/{pod.name}"

        async def send(body: dict[str, Any]) -> dict[str, Any]:
            return self.patch_status(key, body)

        async def reread() -> dict[str, Any]:
            stored = self.pods.get(key)
            if stored is None:
                raise APINotFoundError(404, "NotFound", f'pods "{pod.name}" not found')
            return copy.deepcopy(stored)

        return await write_status(current, compute, send=send, reread=reread)

    def patch_status(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        """What the API server does with a strategic merge patch of pods/NAME/status,
        including the resourceVersion precondition a patch may carry."""
        stored = self.pods.get(key)
        if stored is None:
            raise APINotFoundError(404, "NotFound", f'pods "{key}" not found')
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != stored["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise APIConflictError(409, "Conflict", "the object has been modified")
        self.status_patches.append((key, copy.deepcopy(body["status"])))
        patch = {"status": body["status"]}
        return self.put(apply_strategic_merge_patch(stored, patch, _POD_SCHEMA))

    async def confirm_deletion(self, pod: PodRef) -> None:
        key = f"{pod.namespace}/{pod.name}"
        self.deletions.append((key, pod.uid))
        current = self.pods.get(key)
        if current is not None and current["metadata"]["uid"] == pod.uid:
            del self.pods[key]

    def event(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        key = f"{ref.namespace}/{ref.name}"
        self.events.append(Event(key, type_, reason, message, ref.field_path))

    def reasons(self, key: str) -> list[str]:
        return [e.reason for e in self.events if e.key == key]

    # -- reading -----------------------------------------------------------------------------

    def condition(self, key: str, ctype: str) -> dict[str, Any] | None:
        for cond in (self.pods[key].get("status") or {}).get("conditions") or ():
            if cond.get("type") == ctype:
                return dict(cond)
        return None


class RecordingRuntime(SimulatedRuntime):
    """The simulated runtime, remembering which containers were stopped and with what grace."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped: list[tuple[int, float]] = []

    async def stop(self, proc: RunningProcess, *, grace_period: float) -> ExitStatus:
        self.stopped.append((proc.pid, grace_period))
        return await super().stop(proc, grace_period=grace_period)


def fake_agent(
    cluster: FakeCluster,
    tmp_path: Path,
    *,
    cpu_milli: int = 2000,
    memory: int = 2 << 30,
    runtime: RecordingRuntime | None = None,
    admit_without_scheduler: bool = False,
) -> NodeAgent:
    """A real agent whose API calls all go to ``cluster`` (its client points nowhere);
    agents given the same ``tmp_path`` and ``runtime`` share checkpoints and containers, as
    an agent and its successor on one node do. ``admit_without_scheduler``: the agent
    approves resizes on its own ledger, as the kubelet does (``inplace node
    --admit-without-scheduler``)."""
    config = AgentConfig(
        node_name=NODE,
        cpu_milli=cpu_milli,
        memory_bytes=memory,
        data_dir=tmp_path / "data",
        log_root=tmp_path / "logs",
        admit_without_scheduler=admit_without_scheduler,
    )
    unreachable = Client(ClusterConfig(server="http://127.0.0.1:9"))
    return NodeAgent(
        unreachable,
        config,
        driver=NoneDriver(),
        runtime=runtime if runtime is not None else RecordingRuntime(),
        informer=cluster,
        actions=cluster,
    )


def pod(
    name: str,
    *,
    cpu: str = "250m",
    memory: str = "64Mi",
    generation: int = 1,
    uid: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod bound to the fake node, with one container ``main``."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid or f"uid-{name}",
            "generation": generation,
        },
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"cpu": cpu, "memory": memory},
                    },
                }
            ],
        },
        "status": {"phase": "Pending", "conditions": conditions or []},
    }
    return body


@contextlib.asynccontextmanager
async def running_agent(
    tmp_path: Path,
    *,
    runtime: RecordingRuntime | None = None,
    admit_without_scheduler: bool = False,
    **sizes: int,
) -> AsyncIterator[tuple[FakeCluster, NodeAgent]]:
    """A fake cluster and its agent; the agent's pod tasks are cancelled afterwards."""
    cluster = FakeCluster()
    agent = fake_agent(
        cluster,
        tmp_path,
        runtime=runtime,
        admit_without_scheduler=admit_without_scheduler,
        **sizes,
    )
    try:
        yield cluster, agent
    finally:
        agent.queue.shutdown()
        for w in list(agent.workers.values()):
            if w.task is not None:
                w.task.cancel()
                with contextlib.suppress(BaseException):
                    await w.task


async def admit_running(cluster: FakeCluster, agent: NodeAgent, body: dict[str, Any]) -> str:
    """Put the pod, let the agent admit and start it, write its status; its key."""
    key = key_of(cluster.put(body))
    await agent.reconcile(key)
    worker = agent.ctx.worker_for(key)
    assert worker is not None, f"{key} was not admitted"
    await await_until(lambda: worker.containers["main"].state == "running", what="running")
    await agent.reconcile(key)
    return key
