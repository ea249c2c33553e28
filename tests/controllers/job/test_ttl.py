"""The TTL-after-finished controller: a finished Job is deleted with its pods after its TTL."""

from __future__ import annotations

from inplace.client import JOBS, APINotFoundError
from inplace.controllers.job.ttl import expires_in
from tests.controllers.conftest import Harness
from tests.controllers.job.test_controller import get, has, job, kubelet
from tests.poll import await_until

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def test_expires_in() -> None:
    done = {
        "spec": {"ttlSecondsAfterFinished": 30},
        "status": {
            "conditions": [
                {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]
        },
    }
    assert expires_in(done, T0 + 10) == 20
    assert expires_in({"spec": {"ttlSecondsAfterFinished": 30}, "status": {}}, T0) is None
    assert expires_in({"spec": {}, "status": done["status"]}, T0) is None


async def test_ttl_after_finished_deletes_the_job(harness: Harness) -> None:
    client = harness.client
    await harness.start("job,ttl-after-finished,garbagecollector")
    async with kubelet(client, "short", "Succeeded"):
        await client.create(JOBS, job("short", ttlSecondsAfterFinished=1))
        await await_until(lambda: has(client, "short", "Complete"))

        async def deleted() -> bool:
            try:
                await get(client, "short")
            except APINotFoundError:
                return True
            return False

        await await_until(deleted, timeout=30, what="the Job deleted after its TTL")
    await await_until(lambda: _none(harness, "job-name=short"), what="its pods collected")


async def _none(harness: Harness, selector: str) -> bool:
    return not await harness.pods(selector=selector)
