"""The node's heartbeat (Lease and Node status) outlives an API server that is away; the
Node's resources are a kubelet's (ephemeral storage included)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from inplace.api.quantity import Quantity
from inplace.client import LEASES, APINotFoundError, Client, ClusterConfig
from inplace.node.cgroups.none import NoneDriver
from inplace.node.config import AgentConfig
from inplace.node.registration import (
    LEASE_NAMESPACE,
    NodeRegistration,
    allocatable_ephemeral_storage,
    ephemeral_storage,
)
from tests.conftest import InProcessServer, free_port
from tests.poll import await_until


async def test_lease_loop_survives_an_api_server_that_is_down(
    apiserver: InProcessServer, tmp_path: Path
) -> None:
    """Found by the chaos storm: a renewal that met a refused connection (APIConnectionError
    is not an APIError) ended the loop, so one API server restart left the node's Lease
    unrenewed for good, and the node lifecycle controller would have evicted its pods."""
    config = AgentConfig(
        node_name="n1",
        cpu_milli=1000,
        memory_bytes=1 << 30,
        data_dir=tmp_path / "data",
        log_root=tmp_path / "logs",
        lease_renew_every=0.05,
        node_status_every=0.05,
    )
    nowhere = ClusterConfig(server=f"http://127.0.0.1:{free_port()}", token=apiserver.token)
    async with (
        Client(nowhere) as down,
        Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as up,
    ):
        registration = NodeRegistration(down, config, NoneDriver(), lambda: 0)
        loops = [
            asyncio.create_task(registration.lease_loop()),
            asyncio.create_task(registration.status_loop()),
        ]
        try:
            await asyncio.sleep(0.3)  # several renewals meet a refused connection
            assert not any(loop.done() for loop in loops)
            registration.client = up  # the API server is back
            await registration.register()

            async def renewed() -> bool:
                try:
                    lease = await up.get(LEASES, "n1", namespace=LEASE_NAMESPACE)
                except APINotFoundError:
                    return False
                return bool(lease["spec"]["renewTime"])

            await await_until(renewed, what="lease renewed once the server is back")
        finally:
            for loop in loops:
                loop.cancel()
            await asyncio.gather(*loops, return_exceptions=True)


def _registration(data_dir: Path) -> NodeRegistration:
    config = AgentConfig(
        node_name="n1",
        cpu_milli=2000,
        memory_bytes=2 << 30,
        data_dir=data_dir,
        log_root=data_dir / "logs",
    )
    client = Client(ClusterConfig(server=f"http://127.0.0.1:{free_port()}"))  # never used
    return NodeRegistration(client, config, NoneDriver(), lambda: 0)


def test_ephemeral_storage_is_the_data_dirs_filesystem(tmp_path: Path) -> None:
    """Without it, a pod requesting ephemeral-storage stays Pending under kube-scheduler
    ("Insufficient ephemeral-storage"): a kubelet reports the filesystem of its root dir."""
    status = _registration(tmp_path).node_object()["status"]
    fs = os.statvfs(tmp_path)
    size = fs.f_blocks * fs.f_frsize
    capacity = Quantity.parse(status["capacity"]["ephemeral-storage"]).value()
    allocatable = Quantity.parse(status["allocatable"]["ephemeral-storage"]).value()
    assert capacity == size
    assert allocatable == allocatable_ephemeral_storage(size) < size
    # the other resources keep no reservation
    for name in ("cpu", "memory", "pods"):
        assert status["allocatable"][name] == status["capacity"][name]


def test_a_data_dir_not_made_yet_counts_as_its_parent(tmp_path: Path) -> None:
    fs = os.statvfs(tmp_path)
    capacity, _ = ephemeral_storage(tmp_path / "not" / "yet")
    assert capacity == fs.f_blocks * fs.f_frsize


def test_allocatable_is_capacity_less_the_kubelets_hard_eviction_threshold() -> None:
    """A real kubelet's node status (defaults: no reservations, nodefs.available<10%):
    capacity 18446032Ki, allocatable 16999863064 (the threshold is Go's float32 10%, so a
    plain ``capacity // 10`` would be 28 bytes off)."""
    assert allocatable_ephemeral_storage(18446032 * 1024) == 16999863064
    assert allocatable_ephemeral_storage(0) == 0
