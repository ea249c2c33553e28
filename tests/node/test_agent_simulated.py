"""Simulated nodes: usage profiles, the process-less runtime, and many nodes in one process."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from inplace.api.quantity import Quantity
from inplace.apiserver.auth import SIMULATOR_USER
from inplace.apiserver.nodemetrics import NodeMetricsProvider
from inplace.client import (
    LEASES,
    NODES,
    PODS,
    APIConflictError,
    APINotFoundError,
    Client,
    ClusterConfig,
)
from inplace.node.agent import AgentConfig
from inplace.node.registration import ephemeral_storage
from inplace.node.runtime import ProcessSpec
from inplace.node.simulated import SimulatedRuntime, run_simulated
from tests.conftest import InProcessServer
from tests.poll import await_until

Mi = 2**20


async def test_simulated_runtime(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    log = tmp_path / "c" / "0.log"
    proc = await runtime.start(ProcessSpec(["java", "-jar", "x"], {}, None, str(log), "p"))
    assert "java -jar x" in log.read_text()
    waiter = asyncio.ensure_future(runtime.wait(proc))
    await asyncio.sleep(0)
    assert not waiter.done()
    status = await runtime.stop(proc, grace_period=30)
    assert (await waiter) == status and status.exit_code == 143
    adopted = runtime.adopt(proc.pid + 1, 1.0, str(log))
    assert adopted is not None and adopted.pid == proc.pid + 1


async def test_many_nodes_in_one_process(apiserver: InProcessServer, tmp_path: Path) -> None:
    token = apiserver.tokens.token_for(SIMULATOR_USER, ())
    base = AgentConfig(
        node_name="sim",
        cpu_milli=2000,
        memory_bytes=4 * 2**30,
        data_dir=tmp_path / "sim",
        log_root=tmp_path / "logs",
        admit_without_scheduler=True,
        usage_every=0.1,
    )
    stop = asyncio.Event()
    async with (
        Client(ClusterConfig(server=apiserver.url, token=token)) as sim,
        Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as admin,
    ):
        task = asyncio.create_task(run_simulated(sim, base, 3, stop))
        try:

            async def leases() -> bool:
                for i in (1, 2, 3):
                    try:
                        await admin.get(LEASES, f"sim-{i}", namespace="kube-node-lease")
                    except APINotFoundError:
                        return False
                return True

            await await_until(leases, what="three leases")
            node = await admin.get(NODES, "sim-2")
            assert node["metadata"]["labels"]["inplace.dev/simulated"] == "true"
            # ephemeral storage as a real agent reports it: the filesystem of its data dir
            capacity, allocatable = ephemeral_storage(base.data_dir / "sim-2")
            storage = {
                kind: Quantity.parse(node["status"][kind]["ephemeral-storage"]).value()
                for kind in ("capacity", "allocatable")
            }
            assert storage == {"capacity": capacity, "allocatable": allocatable}
            profile = json.dumps({"cpu": "300m", "memory": "200Mi"})
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "sp",
                    "namespace": "default",
                    "annotations": {"inplace.dev/usage-profile": profile},
                },
                "spec": {
                    "nodeName": "sim-2",
                    "containers": [
                        {
                            "name": "main",
                            "image": "app",
                            "command": ["app"],
                            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                        }
                    ],
                },
            }
            await admin.create(PODS, pod)

            async def running() -> dict[str, Any] | None:
                got = await admin.get(PODS, "sp", namespace="default")
                return got if got["status"].get("phase") == "Running" else None

            await await_until(running, what="simulated pod Running")
            # Resize: same admission and resize logic as a real node.
            big = {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}}
            body = {"spec": {"containers": [{"name": "main", "resources": big}]}}
            await admin.patch(
                PODS, "sp", body, namespace="default", subresource="resize", patch_type="strategic"
            )

            # Larger than the node: Deferred, as the kubelet 1.36 says without an
            # arbitrating scheduler (pkg/kubelet/allocation/allocation_manager_test.go).
            async def deferred() -> bool:
                got = await admin.get(PODS, "sp", namespace="default")
                return any(
                    c["type"] == "PodResizePending" and c.get("reason") == "Deferred"
                    for c in got["status"].get("conditions") or ()
                )

            await await_until(deferred, what="Deferred on a 2-CPU simulated node")

            async def nodes() -> list[dict[str, Any]]:
                return list((await admin.list(NODES))["items"])

            provider = NodeMetricsProvider(nodes, ttl=0)

            async def usage() -> list[dict[str, Any]] | None:
                items = await provider("PodMetrics", "default")
                return items if items and items[0]["containers"] else None

            metrics = await await_until(usage, what="simulated usage")
            assert metrics[0]["containers"][0]["usage"] == {
                "cpu": "300000000n",
                "memory": f"{200 * 1024}Ki",
            }
            node_usage = {
                m["metadata"]["name"]: m["usage"] for m in await provider("NodeMetrics", None)
            }
            assert node_usage["sim-2"]["cpu"] == "300000000n"
            assert node_usage["sim-1"]["cpu"] == "0n"
            for _ in range(20):  # a delete racing a status write answers 409
                try:
                    await admin.delete(PODS, "sp", namespace="default")
                    break
                except APIConflictError:
                    await asyncio.sleep(0.05)

            async def gone() -> bool:
                try:
                    await admin.get(PODS, "sp", namespace="default")
                except APINotFoundError:
                    return True
                return False

            await await_until(gone, what="simulated pod deleted")
        finally:
            stop.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)
