"""The node agent in-process against an in-process API server, with the ``none`` cgroup driver.

Runs real (tiny) processes, no root needed. What the cgroup v1 path adds (real limits, the
kernel refusing a memory shrink) is covered end to end in ``tests/e2e/test_node_agent.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.apiserver.nodemetrics import NodeMetricsProvider
from inplace.client import (
    EVENTS,
    LEASES,
    NODES,
    PODS,
    APINotFoundError,
    Client,
    ClusterConfig,
)
from inplace.node.agent import AgentConfig, NodeAgent
from inplace.node.cgroups import CgroupResources, CgroupWriteError, NoneDriver
from tests.conftest import InProcessServer, reap_mounts
from tests.poll import await_until

NODE = "n1"


@dataclass
class Harness:
    server: InProcessServer
    admin: Client
    node_client: Client
    config: AgentConfig
    agent: NodeAgent
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def restart_agent(self, *, kill: bool) -> None:
        """Stop the agent (``kill``: as SIGKILL would, nothing cleaned up) and start a new one
        with the same data dir."""
        if kill:
            self.task.cancel()
        else:
            self.stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self.stop = asyncio.Event()
        self.agent = NodeAgent(self.node_client, self.config, driver=NoneDriver())
        self.task = asyncio.create_task(self.agent.run(self.stop))


def _client(server: InProcessServer, token: str) -> Client:
    return Client(ClusterConfig(server=server.url, token=token))


@pytest.fixture
async def harness(apiserver: InProcessServer, tmp_path: Path) -> AsyncIterator[Harness]:
    node_token = apiserver.tokens.token_for(f"system:node:{NODE}", ("system:nodes",))
    admin = _client(apiserver, apiserver.token)
    node_client = _client(apiserver, node_token)
    config = AgentConfig(
        node_name=NODE,
        cpu_milli=1000,
        memory_bytes=2**30,
        data_dir=tmp_path / "node",
        log_root=tmp_path / "logs",
        admit_without_scheduler=True,
        usage_every=0.2,
    )
    stop = asyncio.Event()
    agent = NodeAgent(node_client, config, driver=NoneDriver())
    task = asyncio.create_task(agent.run(stop))
    h = Harness(apiserver, admin, node_client, config, agent, stop, task)
    try:
        await await_until(lambda: get_node(h), what="node registered")
        yield h
    finally:
        pids = [p.pid for w in h.agent.workers.values() for p in w.procs.values()]
        h.stop.set()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(h.task, 10)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        await admin.close()
        await node_client.close()
        reap_mounts(tmp_path)


async def get_node(h: Harness) -> dict[str, Any] | None:
    try:
        return await h.admin.get(NODES, NODE)
    except APINotFoundError:
        return None


def pod_body(
    name: str,
    command: list[str],
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    restart_policy: str = "Always",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 2,
            "containers": [
                {
                    "name": "main",
                    "image": "test",
                    "command": command,
                    "resources": {
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"cpu": cpu, "memory": memory},
                    },
                }
            ],
            **spec,
        },
    }


SLEEP = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    "import os,time; print('pid', os.getpid(), flush=True); time.sleep(600)",
]


async def get_pod(h: Harness, name: str) -> dict[str, Any]:
    return await h.admin.get(PODS, name, namespace="default")


async def running_pod(h: Harness, name: str) -> dict[str, Any] | None:
    pod = await get_pod(h, name)
    statuses = pod.get("status", {}).get("containerStatuses") or []
    if (
        pod["status"].get("phase") == "Running"
        and statuses
        and all("running" in s["state"] for s in statuses)
    ):
        return pod
    return None


def main_status(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["status"]["containerStatuses"][0])


def pid_of(pod: dict[str, Any]) -> int:
    return int(main_status(pod)["containerID"].removeprefix("inplace://"))


async def delete_and_wait(h: Harness, name: str) -> None:
    await h.admin.delete(PODS, name, namespace="default")

    async def gone() -> bool:
        try:
            await get_pod(h, name)
        except APINotFoundError:
            return True
        return False

    await await_until(gone, what=f"{name} deleted")


# -- tests -----------------------------------------------------------------------------------


async def test_registers_node_and_lease(harness: Harness) -> None:
    node = await harness.admin.get(NODES, NODE)
    # The agent reports 1048576Ki; the API server stores it as upstream does: 1Gi.
    allocatable = dict(node["status"]["allocatable"])
    assert allocatable.pop("ephemeral-storage")  # its data dir's filesystem (test_registration)
    assert allocatable == {"cpu": "1", "memory": "1Gi", "pods": "110"}
    assert node["metadata"]["annotations"]["inplace.dev/limits-enforced"] == "false"
    limits = next(c for c in node["status"]["conditions"] if c["type"] == "LimitsEnforced")
    assert limits["status"] == "False" and "NOT enforced" in limits["message"]
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["lastHeartbeatTime"]
    lease = await await_until(lambda: _lease(harness), what="lease created")
    assert lease["spec"]["holderIdentity"] == NODE
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


async def _lease(h: Harness) -> dict[str, Any] | None:
    try:
        return await h.admin.get(LEASES, NODE, namespace="kube-node-lease")
    except APINotFoundError:
        return None


async def test_runs_resizes_readopts_and_deletes(harness: Harness, tmp_path: Path) -> None:
    h = harness
    await h.admin.create(PODS, pod_body("app", SLEEP))
    pod = await await_until(lambda: running_pod(h, "app"), what="app Running")
    pid = pid_of(pod)
    status = main_status(pod)
    assert status["restartCount"] == 0
    assert status["allocatedResources"] == {"cpu": "100m", "memory": "64Mi"}
    uid = pod["metadata"]["uid"]
    log = tmp_path / "logs" / f"default_app_{uid}" / "main" / "0.log"
    # as root the container has its own PID namespace: it is PID 2 there (its init is 1)
    printed = "pid 2" if os.geteuid() == 0 else f"pid {pid}"
    await await_until(lambda: log.exists() and printed in log.read_text(), what="log written")

    # Resize: recorded (none driver), PID kept, events posted.
    want = {
        "requests": {"cpu": "200m", "memory": "128Mi"},
        "limits": {"cpu": "200m", "memory": "128Mi"},
    }
    await h.admin.patch(
        PODS,
        "app",
        {"spec": {"containers": [{"name": "main", "resources": want}]}},
        namespace="default",
        subresource="resize",
        patch_type="strategic",
    )

    async def resized() -> dict[str, Any] | None:
        pod = await get_pod(h, "app")
        return pod if main_status(pod).get("resources") == want else None

    pod = await await_until(resized, what="resize applied")
    assert pid_of(pod) == pid and main_status(pod)["restartCount"] == 0
    assert not [c for c in pod["status"]["conditions"] if c["type"].startswith("PodResize")]
    reasons = await await_until(
        lambda: _event_reasons(h, "app", {"ResizeStarted", "ResizeCompleted"}), what="resize events"
    )
    assert {"ResizeStarted", "ResizeCompleted"} <= reasons

    # A resize larger than the node: Deferred with the admission message, as the kubelet
    # 1.36 says without an arbitrating scheduler (its resource fit, lifecycle/predicate.go,
    # has no separate capacity check; allocation_manager_test.go: "Request CPU increase
    # beyond node capacity - expect Deferred").
    big = {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}}
    await h.admin.patch(
        PODS,
        "app",
        {"spec": {"containers": [{"name": "main", "resources": big}]}},
        namespace="default",
        subresource="resize",
        patch_type="strategic",
    )

    async def deferred() -> dict[str, Any] | None:
        pod = await get_pod(h, "app")
        for c in pod["status"].get("conditions") or ():
            if c["type"] == "PodResizePending" and c.get("reason") == "Deferred":
                return c
        return None

    cond = await await_until(deferred, what="PodResizePending Deferred")
    assert cond["message"] == (
        "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 1000"
    )
    assert cond["observedGeneration"] == (await get_pod(h, "app"))["metadata"]["generation"]
    assert cond["lastProbeTime"] and cond["lastTransitionTime"]

    # The agent dies as if SIGKILLed and comes back: same process, same restart count.
    await h.restart_agent(kill=True)
    assert psutil.Process(pid).is_running()
    await await_until(lambda: h.agent.workers, what="re-adopted")
    worker = next(iter(h.agent.workers.values()))
    assert worker.procs["main"].pid == pid
    await h.admin.patch(
        PODS,
        "app",
        {"spec": {"containers": [{"name": "main", "resources": want}]}},
        namespace="default",
        subresource="resize",
        patch_type="strategic",
    )

    async def settled() -> dict[str, Any] | None:
        pod = await get_pod(h, "app")
        conds = [c for c in pod["status"]["conditions"] if c["type"].startswith("PodResize")]
        return pod if not conds and pod["status"]["phase"] == "Running" else None

    pod = await await_until(settled, what="pending cleared after restart")
    assert pid_of(pod) == pid and main_status(pod)["restartCount"] == 0

    # Graceful deletion: SIGTERM, then the agent confirms with gracePeriodSeconds=0.
    await delete_and_wait(h, "app")
    await await_until(lambda: not _alive(pid), what="process stopped")
    assert not list((tmp_path / "node" / "checkpoints").glob("*.json"))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def _event_reasons(h: Harness, name: str, want: set[str]) -> set[str] | None:
    events = await h.admin.list(EVENTS, namespace="default")
    reasons = {e["reason"] for e in events["items"] if e["involvedObject"]["name"] == name}
    return reasons if want <= reasons else None


async def test_exit_while_agent_is_down_is_reaped_with_its_code(harness: Harness) -> None:
    h = harness
    await h.admin.create(PODS, pod_body("job", SLEEP, restart_policy="Never"))
    pod = await await_until(lambda: running_pod(h, "job"), what="job Running")
    pid = pid_of(pod)
    h.task.cancel()  # the agent "dies"
    with contextlib.suppress(asyncio.CancelledError):
        await h.task
    os.kill(pid, signal.SIGTERM)
    await await_until(lambda: not _alive(pid), what="workload exited")
    h.stop = asyncio.Event()
    h.agent = NodeAgent(h.node_client, h.config, driver=NoneDriver())
    h.task = asyncio.create_task(h.agent.run(h.stop))

    async def failed() -> dict[str, Any] | None:
        pod = await get_pod(h, "job")
        return pod if pod["status"].get("phase") == "Failed" else None

    pod = await await_until(failed, what="job Failed")
    term = main_status(pod)["state"]["terminated"]
    assert term["exitCode"] == 143 and term["signal"] == 15 and term["reason"] == "Error"
    assert main_status(pod)["restartCount"] == 0
    await delete_and_wait(h, "job")


async def test_rejects_a_pod_that_does_not_fit(harness: Harness) -> None:
    h = harness
    await h.admin.create(PODS, pod_body("huge", SLEEP, memory="2Gi"))

    async def failed() -> dict[str, Any] | None:
        pod = await get_pod(h, "huge")
        return pod if pod["status"].get("phase") == "Failed" else None

    pod = await await_until(failed, what="huge rejected")
    assert pod["status"]["reason"] == "OutOfmemory"
    assert pod["status"]["message"] == (
        "Pod was rejected: Node didn't have enough resource: memory, requested: "
        f"{2 * 2**30}, used: 0, capacity: {2**30}"
    )


async def test_crash_loop_backoff_and_init_containers(harness: Harness) -> None:
    h = harness
    body = pod_body(
        "crashy", [sys.executable, "-I", "-S", "-c", "print('boom'); raise SystemExit(3)"]
    )
    body["spec"]["initContainers"] = [
        {"name": "init", "image": "test", "command": [sys.executable, "-I", "-S", "-c", "pass"]},
    ]
    await h.admin.create(PODS, body)

    async def backing_off() -> dict[str, Any] | None:
        pod = await get_pod(h, "crashy")
        state = main_status(pod)["state"] if pod["status"].get("containerStatuses") else {}
        return pod if state.get("waiting", {}).get("reason") == "CrashLoopBackOff" else None

    pod = await await_until(backing_off, what="CrashLoopBackOff")
    status = main_status(pod)
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=main pod=crashy_default("
    )
    init = pod["status"]["initContainerStatuses"][0]
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert pod["status"]["phase"] == "Running"
    await delete_and_wait(h, "crashy")


async def test_usage_summary_and_metrics_provider(harness: Harness) -> None:
    h = harness
    await h.admin.create(PODS, pod_body("busy", SLEEP))
    await await_until(lambda: running_pod(h, "busy"), what="busy Running")
    await await_until(lambda: h.agent.sampler.latest(), what="a usage sample")

    async def nodes() -> list[dict[str, Any]]:
        return [await h.admin.get(NODES, NODE)]

    provider = NodeMetricsProvider(nodes, ttl=0)
    pods = await await_until(lambda: provider("PodMetrics", "default"), what="pod metrics")
    assert pods[0]["metadata"]["name"] == "busy"
    assert pods[0]["containers"][0]["name"] == "main"
    assert pods[0]["containers"][0]["usage"]["memory"].endswith("Ki")
    assert await provider("PodMetrics", "elsewhere") == []
    node_metrics = await await_until(lambda: provider("NodeMetrics", None), what="node metrics")
    assert node_metrics[0]["metadata"]["name"] == NODE
    assert node_metrics[0]["usage"]["cpu"].endswith("n")
    await delete_and_wait(h, "busy")


async def test_deferred_resize_goes_through_when_room_appears(harness: Harness) -> None:
    h = harness
    await h.admin.create(PODS, pod_body("small", SLEEP, cpu="300m"))
    await h.admin.create(PODS, pod_body("filler", SLEEP, cpu="600m"))
    await await_until(lambda: running_pod(h, "small"), what="small Running")
    await await_until(lambda: running_pod(h, "filler"), what="filler Running")
    want = {
        "requests": {"cpu": "600m", "memory": "64Mi"},
        "limits": {"cpu": "600m", "memory": "64Mi"},
    }
    body = {"spec": {"containers": [{"name": "main", "resources": want}]}}
    await h.admin.patch(
        PODS, "small", body, namespace="default", subresource="resize", patch_type="strategic"
    )

    async def deferred() -> dict[str, Any] | None:
        pod = await get_pod(h, "small")
        for c in pod["status"].get("conditions") or ():
            if c["type"] == "PodResizePending" and c.get("reason") == "Deferred":
                return c
        return None

    cond = await await_until(deferred, what="Deferred")
    assert cond["message"] == (
        "Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000"
    )
    assert await await_until(lambda: _event_reasons(h, "small", {"ResizeDeferred"}), what="event")
    # Room appears: the filler goes away, and the deferred resize is retried at once (not on
    # its back-off timer, which would also get there).
    await delete_and_wait(h, "filler")

    async def applied() -> dict[str, Any] | None:
        pod = await get_pod(h, "small")
        conds = [c for c in pod["status"]["conditions"] if c["type"].startswith("PodResize")]
        return pod if not conds and main_status(pod).get("resources") == want else None

    pod = await await_until(applied, what="deferred resize applied")
    assert main_status(pod)["restartCount"] == 0
    await delete_and_wait(h, "small")


class FlakyDriver(NoneDriver):
    """Refuses to create the first pod cgroup, as a full or broken hierarchy would."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    def create(self, path: str, resources: CgroupResources) -> None:
        if "/pod" in f"/{path}" and self.refused == 0:
            self.refused += 1
            raise CgroupWriteError(path + "/memory.limit_in_bytes", "1", errno.ENOSPC)
        super().create(path, resources)


async def test_a_pod_that_could_not_be_created_says_so_and_is_retried(harness: Harness) -> None:
    h = harness
    driver = FlakyDriver()
    h.stop.set()
    with contextlib.suppress(asyncio.CancelledError):
        await h.task
    h.stop = asyncio.Event()
    h.agent = NodeAgent(h.node_client, h.config, driver=driver)
    h.task = asyncio.create_task(h.agent.run(h.stop))
    await h.admin.create(PODS, pod_body("flaky", SLEEP))

    async def said_so() -> dict[str, Any] | None:
        pod = await get_pod(h, "flaky")
        statuses = pod.get("status", {}).get("containerStatuses") or []
        waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return pod if waiting.get("reason") == "CreateContainerError" else None

    failing = await await_until(said_so, what="CreateContainerError reported")
    assert "ENOSPC" in main_status(failing)["state"]["waiting"]["message"]
    pod = await await_until(lambda: running_pod(h, "flaky"), what="flaky running after the retry")
    assert main_status(pod)["restartCount"] == 0
    assert driver.refused == 1
    await delete_and_wait(h, "flaky")
