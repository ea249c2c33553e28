"""The Job controller against the API server, the test playing the kubelet: completions,
indexes, failures, the pod failure policy, suspend, deadlines, and exactly-once counting."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from inplace.client import JOBS, PODS, APINotFoundError, Client
from inplace.controllers.job import model as m
from tests.controllers.conftest import Harness, set_phase
from tests.poll import await_until


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                }
            },
            **spec,
        },
    }


@contextlib.asynccontextmanager
async def kubelet(
    client: Client, job_name: str, phase: str, *, exit_code: int | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Finish every new pod of ``job_name`` with ``phase``; yields what it saw."""
    seen: dict[str, Any] = {"created": set(), "max_active": 0, "active": set()}

    async def run() -> None:
        async for event in client.watch(
            PODS, namespace="default", resource_version=None, label_selector=f"job-name={job_name}"
        ):
            pod = event.object
            uid = pod["metadata"]["uid"]
            if event.type == "ADDED":
                seen["created"].add(uid)
                seen["active"].add(uid)
                seen["max_active"] = max(seen["max_active"], len(seen["active"]))
                await asyncio.sleep(0.05)
                with contextlib.suppress(APINotFoundError):
                    await set_phase(client, pod, phase, exit_code=exit_code)
            elif event.type == "DELETED" or pod["status"].get("phase") in ("Succeeded", "Failed"):
                seen["active"].discard(uid)

    task = asyncio.create_task(run())
    await asyncio.sleep(0.1)
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def get(client: Client, name: str) -> dict[str, Any]:
    return await client.get(JOBS, name, namespace="default")


def condition(j: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (j.get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            return dict(c)
    return None


async def has(client: Client, name: str, kind: str) -> bool:
    cond = condition(await get(client, name), kind)
    return cond is not None and cond["status"] == "True"


async def test_completions_with_parallelism_count_every_pod_once(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    async with kubelet(client, "count", "Succeeded") as seen:
        await client.create(JOBS, job("count", completions=5, parallelism=2))
        await await_until(lambda: has(client, "count", "Complete"), what="Complete")
    final = await get(client, "count")
    assert final["status"]["succeeded"] == 5
    assert final["status"].get("failed", 0) == 0
    assert final["status"]["completionTime"]
    assert condition(final, m.SUCCESS_CRITERIA_MET) is not None
    assert len(seen["created"]) == 5
    assert seen["max_active"] <= 2
    pods = await harness.pods(selector="job-name=count")
    assert all(m.TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in pods)
    labels = pods[0]["metadata"]["labels"]
    for key in ("job-name", "batch.kubernetes.io/job-name", "controller-uid"):
        assert key in labels


async def test_indexed_pods_carry_their_index(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    async with kubelet(client, "idx", "Succeeded"):
        await client.create(
            JOBS, job("idx", completions=3, parallelism=3, completionMode="Indexed")
        )
        await await_until(lambda: has(client, "idx", "Complete"), what="Complete")
    final = await get(client, "idx")
    assert final["status"]["completedIndexes"] == "0-2"
    assert final["status"]["succeeded"] == 3
    pods = await harness.pods(selector="job-name=idx")
    indexes = sorted(int(p["metadata"]["annotations"][m.COMPLETION_INDEX]) for p in pods)
    assert indexes == [0, 1, 2]
    for pod in pods:
        index = pod["metadata"]["annotations"][m.COMPLETION_INDEX]
        assert pod["metadata"]["labels"][m.COMPLETION_INDEX] == index
        assert pod["spec"]["hostname"] == f"idx-{index}"
        assert pod["metadata"]["name"].startswith(f"idx-{index}-")
        env = pod["spec"]["containers"][0]["env"]
        assert env[0]["name"] == "JOB_COMPLETION_INDEX"


async def test_backoff_limit_fails_the_job(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    async with kubelet(client, "flaky", "Failed"):
        await client.create(JOBS, job("flaky", backoffLimit=0))
        await await_until(lambda: has(client, "flaky", "Failed"), what="Failed")
    final = await get(client, "flaky")
    failed = condition(final, "Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    assert condition(final, "FailureTarget") is not None
    assert final["status"]["failed"] == 1


async def test_pod_failure_policy_fails_the_job_on_an_exit_code(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    policy = {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        ]
    }
    async with kubelet(client, "policy", "Failed", exit_code=42):
        await client.create(JOBS, job("policy", backoffLimit=6, podFailurePolicy=policy))
        await await_until(lambda: has(client, "policy", "Failed"), what="Failed")
    failed = condition(await get(client, "policy"), "Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert "failed with exit code 42 matching FailJob rule at index 0" in failed["message"]


async def test_suspend_and_resume(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    await client.create(JOBS, job("nap", suspend=True, parallelism=2, completions=2))
    await await_until(lambda: has(client, "nap", "Suspended"), what="Suspended")
    assert await harness.pods(selector="job-name=nap") == []
    await client.patch(JOBS, "nap", {"spec": {"suspend": False}}, namespace="default")

    async def running() -> bool:
        return len(await harness.pods(selector="job-name=nap")) == 2

    await await_until(running, what="2 pods once resumed")

    async def resumed() -> bool:
        cond = condition(await get(client, "nap"), "Suspended")
        return cond is not None and (cond["status"], cond["reason"]) == ("False", "JobResumed")

    await await_until(resumed, what="Suspended=False JobResumed")
    await client.patch(JOBS, "nap", {"spec": {"suspend": True}}, namespace="default")

    async def emptied() -> bool:
        return not await harness.pods(selector="job-name=nap")

    await await_until(emptied, what="pods removed when suspended again")
    await await_until(lambda: has(client, "nap", "Suspended"))
    assert (await get(client, "nap"))["status"].get("failed", 0) == 0


async def test_active_deadline(harness: Harness) -> None:
    client = harness.client
    await harness.start("job")
    await client.create(JOBS, job("late", activeDeadlineSeconds=1))
    await await_until(lambda: has(client, "late", "Failed"), timeout=30, what="Failed")
    failed = condition(await get(client, "late"), "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert failed["message"] == "Job was active longer than specified deadline"
    assert not await harness.pods(selector="job-name=late")
