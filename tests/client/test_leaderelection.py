"""Leader election on a Lease against the real API server: one leader at a time, a standby
that takes over after the lease duration when the leader vanishes, at once when it releases,
and a leader that stops when it cannot renew."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from inplace.client import LEASES, Client, ClusterConfig
from inplace.client.leaderelection import LeaderElectionConfig, LeaderElector
from tests.conftest import InProcessServer
from tests.poll import await_until

LEASE = 1.5


def elector(
    client: Client,
    identity: str,
    *,
    lease_duration: float = LEASE,
    renew_deadline: float = 1.0,
    release_on_cancel: bool = True,
) -> LeaderElector:
    config = LeaderElectionConfig(
        "operator",
        "default",
        identity,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=0.2,
        release_on_cancel=release_on_cancel,
    )
    return LeaderElector(client, config)


async def holder(client: Client) -> str:
    lease = await client.get(LEASES, "operator", namespace="default")
    return str(lease["spec"].get("holderIdentity") or "")


def test_the_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderElectionConfig("x", "default", "a", lease_duration=1, renew_deadline=2)
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionConfig("x", "default", "")


async def test_one_leader_and_a_standby_that_takes_over(apiserver: InProcessServer) -> None:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        leading: list[str] = []

        def work(name: str) -> Callable[[], Coroutine[Any, Any, None]]:
            async def lead() -> None:
                leading.append(name)
                await asyncio.Event().wait()

            return lead

        a = elector(client, "a", release_on_cancel=False)
        b = elector(client, "b")
        run_a = asyncio.create_task(a.run(work("a")))
        await await_until(lambda: leading == ["a"], what="a leads")
        run_b = asyncio.create_task(b.run(work("b")))
        await asyncio.sleep(LEASE + 0.5)
        assert leading == ["a"] and not b.is_leader  # a renews: b waits
        lease = await client.get(LEASES, "operator", namespace="default")
        assert lease["spec"]["leaseTransitions"] == 0
        # a vanishes without releasing (as SIGKILL): b takes over after the lease duration.
        run_a.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run_a
        await await_until(lambda: leading == ["a", "b"], timeout=10, what="b takes over")
        assert await holder(client) == "b"
        lease = await client.get(LEASES, "operator", namespace="default")
        assert lease["spec"]["leaseTransitions"] == 1
        # b stops cleanly: it releases, and a new candidate acquires at once.
        run_b.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run_b
        assert await holder(client) == ""
        c = elector(client, "c", lease_duration=30.0, renew_deadline=20.0)
        run_c = asyncio.create_task(c.run(work("c")))
        await await_until(lambda: leading[-1] == "c", timeout=5, what="c acquires a released lease")
        run_c.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run_c


async def test_a_leader_that_cannot_renew_stops_leading(apiserver: InProcessServer) -> None:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        stopped = asyncio.Event()

        async def lead() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()

        a = elector(client, "a", release_on_cancel=False)
        run = asyncio.create_task(a.run(lead))
        await await_until(lambda: a.is_leader, what="a leads")
        # Someone else takes the Lease by force: a's renewals now fail their check.
        lease = await client.get(LEASES, "operator", namespace="default")
        lease["spec"]["holderIdentity"] = "usurper"
        lease["spec"]["leaseDurationSeconds"] = 3600
        await client.update(LEASES, lease, namespace="default")
        await asyncio.wait_for(run, timeout=10)  # run returns: leadership lost
        assert stopped.is_set() and not a.is_leader
        assert await holder(client) == "usurper"  # not released: it was not a's any more
