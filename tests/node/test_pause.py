"""Pause instead of OOM-kill, the same test logic on every cgroup setup.

A real node agent (real processes, real sandboxes) against an in-process API server, once per
way of pausing:

* ``cgroup-v1``: the kernel's ``memory.oom_control`` (this machine's memory controller);
* ``cgroup-v2-fake``: ``memory.high`` + inotify + ``cgroup.freeze`` on the plain directory
  tree the v2 driver tests use, with :class:`~tests.node.fakekernel.FakeKernel` playing the
  kernel's part on the real processes;
* ``cgroup-v2-kernel``: the same on the kernel's own unified hierarchy, where it offers a
  writable memory controller (the skip reason says why not when it does not);
* ``userspace``: no writable cgroups, the SIGSTOP monitor.

Each test body is written once and says what a user sees: the workload is parked (not
killed), the pod says ``MemoryPaused``, a resize lets the same process finish; a pause that
times out is an OOM kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.client import EVENTS, NODES, PODS, Client, ClusterConfig
from inplace.node.agent import AgentConfig, NodeAgent
from inplace.node.cgroups import CgroupDriver, NoneDriver, V1Driver, V2Driver
from inplace.node.cgroups.base import Mount, read_mountinfo
from inplace.node.model import Alloc
from inplace.node.pause import next_step
from tests.conftest import InProcessServer, reap_mounts
from tests.node.conftest import V1_SKIP_REASON, v1_available
from tests.node.fakekernel import FakeKernel
from tests.poll import await_until

NODE = "pause-node"
Mi = 2**20


@dataclass
class Rig:
    """One way of pausing: its driver, the node label it leads to, and how to see, from
    outside the agent, that a container's tasks are parked."""

    mechanism: str
    driver: CgroupDriver
    parked: Callable[[int, str], bool]
    """(workload pid, container cgroup path) → parked now."""


def _stopped(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    return False


def v2_kernel_mount(mounts: list[Mount] | None = None) -> tuple[str | None, str]:
    """A cgroup2 mount whose memory controller we can use, or None and why not."""
    mounts = read_mountinfo() if mounts is None else mounts
    unified = [m.mount_point for m in mounts if m.fs_type == "cgroup2"]
    if not unified:
        return None, "the kernel has no cgroup v2 hierarchy mounted"
    for point in unified:
        try:
            controllers = Path(point, "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if "memory" in controllers and os.access(point, os.W_OK):
            return point, ""
        shown = " ".join(controllers) or "none"
        v1_memory = any(m.fs_type == "cgroup" and "memory" in m.super_options for m in mounts)
        bound = " (memory is bound to the cgroup v1 hierarchy)" if v1_memory else ""
        reason = (
            f"the kernel offers no writable cgroup v2 memory controller: {point} has "
            f"controllers [{shown}]{bound}"
        )
    return None, reason


def _kill_tree(root: Path) -> None:
    for procs in root.rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            for word in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(word), signal.SIGKILL)


@pytest.fixture(params=["cgroup-v1", "cgroup-v2-fake", "cgroup-v2-kernel", "userspace"])
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    kind = request.param
    if kind == "cgroup-v1":
        if not v1_available():
            pytest.skip(V1_SKIP_REASON)
        v1: V1Driver = request.getfixturevalue("v1_driver")  # reaps its root afterwards
        yield Rig("oom-control", v1, lambda _pid, path: v1.under_oom(path))
    elif kind == "cgroup-v2-fake":
        root = tmp_path / "cgroupfs"
        root.mkdir()
        (root / "cgroup.controllers").write_text("cpu memory pids\n")
        (root / "cgroup.subtree_control").write_text("")
        v2 = V2Driver(str(root), "inplace", plain_files=True)
        kernel = FakeKernel(root).start()
        try:
            yield Rig("freeze", v2, lambda pid, path: v2.frozen(path) and _stopped(pid))
        finally:
            kernel.stop()
            _kill_tree(root)
    elif kind == "cgroup-v2-kernel":
        mount, why = v2_kernel_mount()
        if mount is None:
            pytest.skip(why)
        real = V2Driver(mount, f"inplace-test-{uuid.uuid4().hex[:10]}")
        try:
            yield Rig("freeze", real, lambda _pid, path: real.under_oom(path))
        finally:
            _kill_tree(Path(real.controller_dir("")))
            with contextlib.suppress(Exception):
                real.remove("")
    else:
        yield Rig("sigstop", NoneDriver(), lambda pid, _path: _stopped(pid))


@dataclass
class Node:
    admin: Client
    agent: NodeAgent
    logs: Path

    def container_path(self, pod: dict[str, Any]) -> str:
        return self.agent.ctx.paths.container(pod["metadata"]["uid"], "main")

    def log(self, pod: dict[str, Any]) -> str:
        meta = pod["metadata"]
        path = self.logs / f"default_{meta['name']}_{meta['uid']}" / "main" / "0.log"
        return path.read_text() if path.exists() else ""


@pytest.fixture
async def node(apiserver: InProcessServer, rig: Rig, tmp_path: Path) -> AsyncIterator[Node]:
    node_token = apiserver.tokens.token_for(f"system:node:{NODE}", ("system:nodes",))
    admin = Client(ClusterConfig(server=apiserver.url, token=apiserver.token))
    node_client = Client(ClusterConfig(server=apiserver.url, token=node_token))
    config = AgentConfig(
        node_name=NODE,
        cpu_milli=2000,
        memory_bytes=2 << 30,
        data_dir=tmp_path / "node",
        log_root=tmp_path / "logs",
        admit_without_scheduler=True,
        usage_every=1.0,
    )
    agent = NodeAgent(node_client, config, driver=rig.driver)
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    try:
        yield Node(admin, agent, tmp_path / "logs")
    finally:
        pids = [p.pid for w in agent.workers.values() for p in w.procs.values()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        stop.set()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, 15)
        await admin.close()
        await node_client.close()
        reap_mounts(tmp_path)


# The workload: 1 MiB every 40 ms up to 160 MiB, then done. Its limit is 100Mi: it reaches it
# about four seconds in. Gentle enough for a sampling monitor on a loaded machine: the pause
# threshold sits ~3 MiB under the limit, so a monitor (or the fake kernel's thread) has ~120 ms
# to see it before the hard limit.
SPIKE = """\
import os, time
print("pid", os.getpid(), flush=True)
chunks = []
for _ in range(160):
    chunks.append(bytearray(b"\\x01") * (1 << 20))
    time.sleep(0.04)
print("allocated", len(chunks), "MiB", flush=True)
"""


def spiky_pod(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"inplace.dev/oom-kill-disable": "true", **annotations},
        },
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": [sys.executable, "-I", "-S", "-c", SPIKE],
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "100Mi"},
                        "limits": {"cpu": "500m", "memory": "100Mi"},
                    },
                }
            ],
        },
    }


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in pod["status"].get("conditions") or ():
        if cond["type"] == ctype:
            return dict(cond)
    return None


def main_status(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["status"]["containerStatuses"][0])


async def get_pod(node: Node, name: str) -> dict[str, Any]:
    return await node.admin.get(PODS, name, namespace="default")


async def paused_pod(node: Node, name: str) -> dict[str, Any] | None:
    pod = await get_pod(node, name)
    cond = condition(pod, "MemoryPaused")
    return pod if cond and cond["status"] == "True" else None


async def event_reasons(node: Node, name: str) -> list[str]:
    events = await node.admin.list(EVENTS, namespace="default")
    return [e["reason"] for e in events["items"] if e["involvedObject"]["name"] == name]


async def test_paused_not_killed_then_a_resize_lets_the_same_process_finish(
    node: Node, rig: Rig
) -> None:
    await node.admin.create(PODS, spiky_pod("spiky"), namespace="default")
    pod = await await_until(lambda: paused_pod(node, "spiky"), what="MemoryPaused", timeout=60)
    pid = int(main_status(pod)["containerID"].removeprefix("inplace://"))
    path = node.container_path(pod)

    # Parked, not killed, and the pod says so, naming the node's mechanism.
    await await_until(lambda: rig.parked(pid, path), what="the workload parked")
    assert psutil.pid_exists(pid)
    assert "allocated" not in node.log(pod)
    cond = condition(pod, "MemoryPaused")
    assert cond is not None and cond["reason"] == "MemoryLimitReached"
    assert cond["message"].startswith("containers [main] paused at their memory limit")
    assert node.agent.pause.mechanism.how in cond["message"]
    assert "waiting for a resize that raises the limit" in cond["message"]
    status = main_status(pod)
    assert status["restartCount"] == 0 and "running" in status["state"]
    n = await node.admin.get(NODES, NODE)
    assert n["metadata"]["labels"]["inplace.dev/memory-pause"] == rig.mechanism
    await await_until(
        lambda: _has(event_reasons(node, "spiky"), "MemoryPaused"), what="MemoryPaused event"
    )

    # A resize raises the limit: the same process goes on and finishes.
    want = {
        "requests": {"cpu": "500m", "memory": "300Mi"},
        "limits": {"cpu": "500m", "memory": "300Mi"},
    }
    await node.admin.patch(
        PODS,
        "spiky",
        {"spec": {"containers": [{"name": "main", "resources": want}]}},
        namespace="default",
        subresource="resize",
        patch_type="strategic",
    )

    async def finished() -> dict[str, Any] | None:
        pod = await get_pod(node, "spiky")
        return pod if pod["status"].get("phase") == "Succeeded" else None

    pod = await await_until(finished, what="the workload finished", timeout=60)
    status = main_status(pod)
    assert status["restartCount"] == 0
    assert status["state"]["terminated"]["reason"] == "Completed"
    assert status["state"]["terminated"]["exitCode"] == 0
    assert status["resources"] == want
    assert condition(pod, "MemoryPaused") is None
    printed = "pid 2\n" if os.geteuid() == 0 else f"pid {pid}\n"  # its own PID namespace
    assert printed in node.log(pod) and "allocated 160 MiB" in node.log(pod)


async def test_a_pause_that_times_out_is_an_oom_kill(node: Node, rig: Rig) -> None:
    body = spiky_pod("stuck", **{"inplace.dev/pause-timeout": "1s"})
    await node.admin.create(PODS, body, namespace="default")
    pod = await await_until(lambda: paused_pod(node, "stuck"), what="MemoryPaused", timeout=60)
    cond = condition(pod, "MemoryPaused")
    assert cond is not None and "OOM-killed at" in cond["message"]
    assert "inplace.dev/pause-timeout: 1s" in cond["message"]

    async def failed() -> dict[str, Any] | None:
        pod = await get_pod(node, "stuck")
        return pod if pod["status"].get("phase") == "Failed" else None

    pod = await await_until(failed, what="OOM-killed after the timeout", timeout=60)
    terminated = main_status(pod)["state"]["terminated"]
    assert terminated["reason"] == "OOMKilled"
    assert terminated["exitCode"] == 137
    assert condition(pod, "MemoryPaused") is None
    assert "allocated" not in node.log(pod)
    await await_until(
        lambda: _has(event_reasons(node, "stuck"), "MemoryPauseTimeout"), what="timeout event"
    )


async def _has(reasons: Any, reason: str) -> bool:
    return reason in await reasons


# -- what the condition says comes next (pure) ------------------------------------------------


def _pod(annotations: dict[str, str], limit: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations},
        "spec": {"containers": [{"name": "main", "resources": {"limits": {"memory": limit}}}]},
        "status": {"conditions": list(conditions)},
    }


HELD = {"main": Alloc(limits={"memory": "100Mi"})}


@pytest.mark.parametrize(
    ("pod", "says"),
    [
        (_pod({}, "100Mi"), "waiting for a resize that raises the limit"),
        (_pod({}, "200Mi"), "a resize that raises the limit was asked for"),
        (
            _pod(
                {},
                "200Mi",
                {
                    "type": "PodResizePending",
                    "status": "True",
                    "reason": "Deferred",
                    "message": "Node didn't have enough resource: memory",
                },
            ),
            "the resize that raises the limit is pending (Deferred): "
            "Node didn't have enough resource: memory",
        ),
        (
            _pod({}, "200Mi", {"type": "PodResizeInProgress", "status": "True"}),
            "the resize that raises the limit is in progress",
        ),
        (
            _pod({"inplace.dev/memory-max": "100Mi"}, "100Mi"),
            "inplace.dev/memory-max (100Mi) is reached: no automatic resize will raise it",
        ),
        (
            _pod({"inplace.dev/memory-max": "1Gi"}, "100Mi"),
            "waiting for a resize that raises the limit",
        ),
    ],
)
def test_next_step(pod: dict[str, Any], says: str) -> None:
    assert next_step(pod, ["main"], HELD) == says
