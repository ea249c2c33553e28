"""The node's heartbeat (Lease and Node status) outlives an API server that is away."""

from __future__ import annotations

import asyncio
from pathlib import Path

from inplace.client import LEASES, APINotFoundError, Client, ClusterConfig
from inplace.node.cgroups.none import NoneDriver
from inplace.node.config import AgentConfig
from inplace.node.registration import LEASE_NAMESPACE, NodeRegistration
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
