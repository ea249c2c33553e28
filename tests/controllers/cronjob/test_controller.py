"""The CronJob controller against the in-process API server, with its clocks in the test's
hands: the wall clock it reads schedules by and the work queue's clock move together, so a
requeue for the next minute fires when the test moves time past it, not a minute later.
No Job controller runs: the test finishes Jobs itself through ``jobs/status``."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.client import CRONJOBS, EVENTS, JOBS, Client, ClusterConfig
from inplace.controllers.base import Context, SharedInformers
from inplace.controllers.cronjob import model as m
from inplace.controllers.cronjob.controller import CronJobController
from tests.conftest import InProcessServer
from tests.fakeclock import FakeClock
from tests.poll import await_until


@dataclass
class Clocks:
    wall: float
    queue: FakeClock

    def now(self) -> float:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.queue.advance(seconds)

    def to_next_minute(self, past: float = 1.0) -> None:
        """Move to ``past`` seconds after the next whole minute."""
        self.advance(60 - self.wall % 60 + past)


@dataclass
class Bed:
    client: Client
    clocks: Clocks
    controller: CronJobController

    async def create(self, name: str, schedule: str = "*/1 * * * *", **spec: Any) -> dict[str, Any]:
        return await self.client.create(
            CRONJOBS, cronjob(name, schedule, **spec), namespace="default"
        )

    async def get(self, name: str) -> dict[str, Any]:
        return await self.client.get(CRONJOBS, name, namespace="default")

    async def jobs(self, owner: str) -> list[dict[str, Any]]:
        items = (await self.client.list(JOBS, namespace="default"))["items"]
        return sorted(
            (
                j
                for j in items
                if any(r["name"] == owner for r in j["metadata"].get("ownerReferences") or ())
            ),
            key=lambda j: j["metadata"]["name"],
        )

    async def events(self, name: str, reason: str) -> list[str]:
        items = (await self.client.list(EVENTS, namespace="default"))["items"]
        return [
            e["message"]
            for e in items
            if e["involvedObject"].get("name") == name and e["reason"] == reason
        ]

    async def finish(self, job: dict[str, Any], kind: str = "Complete") -> None:
        """Play the Job controller: the Job finished now (by the test's clock)."""
        now = rfc3339(self.clocks.wall)
        status: dict[str, Any] = {
            "startTime": now,
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now},
            ],
        }
        if kind == "Complete":
            status["completionTime"] = now
            status["succeeded"] = 1
            status["conditions"].insert(
                0, {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now}
            )
        else:
            status["failed"] = 1
            status["conditions"].insert(
                0, {"type": "FailureTarget", "status": "True", "lastTransitionTime": now}
            )
        await self.client.patch(
            JOBS,
            job["metadata"]["name"],
            {"status": status},
            namespace="default",
            subresource="status",
        )


def cronjob(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"app": name}, "annotations": {"note": "from the template"}},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    }
                },
            },
            **spec,
        },
    }


@pytest.fixture
async def bed(apiserver: InProcessServer) -> AsyncIterator[Bed]:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        clocks = Clocks(time.time(), FakeClock())
        informers = SharedInformers(client)
        ctx = Context(client, informers, clock=clocks.queue, now=clocks.now)
        controller = CronJobController(ctx)
        informers.start()
        task: asyncio.Task[None] | None = None
        try:
            await informers.wait_synced()
            for recorder in ctx.recorders.values():
                recorder.start()
            task = asyncio.create_task(controller.run())
            yield Bed(client, clocks, controller)
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for recorder in ctx.recorders.values():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(recorder.flush(), 2.0)
                await recorder.stop()
            await informers.stop()


async def until_jobs(bed: Bed, owner: str, count: int) -> list[dict[str, Any]]:
    async def enough() -> list[dict[str, Any]] | None:
        jobs = await bed.jobs(owner)
        return jobs if len(jobs) == count else None

    result: list[dict[str, Any]] = await await_until(enough, what=f"{count} jobs of {owner}")
    return result


async def until_event(bed: Bed, name: str, reason: str, count: int = 1) -> list[str]:
    async def seen() -> list[str] | None:
        messages = await bed.events(name, reason)
        return messages if len(messages) >= count else None

    result: list[str] = await await_until(seen, what=f"{reason} on {name}")
    return result


async def test_a_job_at_each_schedule_time(bed: Bed) -> None:
    created = await bed.create("tick")
    # Nothing before the first schedule time after creation.
    await asyncio.sleep(0.2)
    assert await bed.jobs("tick") == []
    bed.clocks.to_next_minute()
    [job] = await until_jobs(bed, "tick", 1)
    scheduled = datetime.fromtimestamp(bed.clocks.wall - bed.clocks.wall % 60, UTC)
    meta = job["metadata"]
    assert meta["name"] == f"tick-{int(scheduled.timestamp()) // 60}"
    assert meta["labels"]["app"] == "tick"
    assert meta["annotations"]["note"] == "from the template"
    assert meta["annotations"][m.SCHEDULED_TIMESTAMP_ANNOTATION] == rfc3339(scheduled)
    [owner] = meta["ownerReferences"]
    assert owner["kind"] == "CronJob" and owner["uid"] == created["metadata"]["uid"]
    assert owner["controller"] is True
    assert await until_event(bed, "tick", "SuccessfulCreate") == [f"Created job {meta['name']}"]

    async def recorded() -> dict[str, Any] | None:
        status = (await bed.get("tick")).get("status") or {}
        return status if status.get("active") else None

    status = await await_until(recorded, what="active job recorded")
    assert [a["name"] for a in status["active"]] == [meta["name"]]
    assert status["active"][0]["uid"] == meta["uid"]
    assert parse_rfc3339(status["lastScheduleTime"]) == scheduled

    # The Job completes: it leaves the active list, and its completion is the last success.
    await bed.finish(job)

    async def done() -> dict[str, Any] | None:
        status = (await bed.get("tick")).get("status") or {}
        return status if not status.get("active") and status.get("lastSuccessfulTime") else None

    status = await await_until(done, what="success recorded")
    assert status["lastSuccessfulTime"] == rfc3339(bed.clocks.wall)
    assert await until_event(bed, "tick", "SawCompletedJob") == [
        f"Saw completed job: {meta['name']}, condition: Complete"
    ]

    # The next minute, the next Job.
    bed.clocks.to_next_minute()
    jobs = await until_jobs(bed, "tick", 2)
    assert jobs[0]["metadata"]["name"] == meta["name"]


async def test_history_limits_delete_the_oldest_finished_jobs(bed: Bed) -> None:
    await bed.create("trim", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1)
    names = []
    for outcome in ("Complete", "Failed", "Complete", "Failed"):
        bed.clocks.to_next_minute()
        name = f"trim-{int(bed.clocks.wall // 60)}"
        names.append(name)

        async def made(name: str = name) -> dict[str, Any] | None:
            return next((j for j in await bed.jobs("trim") if j["metadata"]["name"] == name), None)

        await bed.finish(await await_until(made, what=f"job {name}"), outcome)

        async def seen_finished(name: str = name) -> bool:
            active = ((await bed.get("trim")).get("status") or {}).get("active") or ()
            return all(a["name"] != name for a in active)

        await await_until(seen_finished, what=f"{name} out of the active list")

    async def trimmed() -> list[str] | None:
        left = sorted(j["metadata"]["name"] for j in await bed.jobs("trim"))
        return left if left == sorted(names[2:]) else None

    await await_until(trimmed, what="one success and one failure kept")
    deleted = await until_event(bed, "trim", "SuccessfulDelete", count=2)
    assert sorted(deleted) == sorted(f"Deleted job {n}" for n in names[:2])


async def test_forbid_waits_for_the_running_job(bed: Bed) -> None:
    await bed.create("alone", concurrencyPolicy="Forbid")
    bed.clocks.to_next_minute()
    [first] = await until_jobs(bed, "alone", 1)

    async def recorded() -> bool:
        return bool(((await bed.get("alone")).get("status") or {}).get("active"))

    await await_until(recorded, what="first job active")
    bed.clocks.to_next_minute()
    assert await until_event(bed, "alone", "JobAlreadyActive") == [
        "Not starting job because prior execution is running and concurrency policy is Forbid"
    ]
    assert [j["metadata"]["name"] for j in await bed.jobs("alone")] == [first["metadata"]["name"]]


async def test_replace_deletes_the_running_job(bed: Bed) -> None:
    await bed.create("fresh", concurrencyPolicy="Replace")
    bed.clocks.to_next_minute()
    [first] = await until_jobs(bed, "fresh", 1)

    async def active() -> list[str]:
        return [
            a["name"] for a in ((await bed.get("fresh")).get("status") or {}).get("active") or ()
        ]

    await await_until(active, what="first job active")
    bed.clocks.to_next_minute()

    async def replaced() -> list[str] | None:
        names = await active()
        return names if names and names != [first["metadata"]["name"]] else None

    [second] = await await_until(replaced, what="second job active alone")
    # The first is gone (or going: the garbage collector is not running here).
    remaining = [
        j for j in await bed.jobs("fresh") if j["metadata"]["name"] == first["metadata"]["name"]
    ]
    assert all(j["metadata"].get("deletionTimestamp") for j in remaining)
    assert second != first["metadata"]["name"]
    assert await until_event(bed, "fresh", "SuccessfulDelete") == [
        f"Deleted job {first['metadata']['name']}"
    ]


async def test_suspended_creates_nothing_and_resumes_with_the_latest_time(bed: Bed) -> None:
    await bed.create("pause", suspend=True)
    for _ in range(3):
        bed.clocks.to_next_minute()
        await asyncio.sleep(0.1)
    assert await bed.jobs("pause") == []
    # Resumed: one Job, for the most recent schedule time only.
    await bed.client.patch(CRONJOBS, "pause", {"spec": {"suspend": False}}, namespace="default")
    [job] = await until_jobs(bed, "pause", 1)
    latest = int(bed.clocks.wall // 60)
    assert job["metadata"]["name"] == f"pause-{latest}"


async def test_a_missed_time_past_its_starting_deadline_is_skipped(bed: Bed) -> None:
    await bed.create("late", suspend=True, startingDeadlineSeconds=10)
    bed.clocks.to_next_minute(past=30)
    await bed.client.patch(CRONJOBS, "late", {"spec": {"suspend": False}}, namespace="default")
    await asyncio.sleep(0.3)
    assert await bed.jobs("late") == []
    bed.clocks.to_next_minute(past=2)
    await until_jobs(bed, "late", 1)


async def test_too_many_missed_start_times(bed: Bed) -> None:
    await bed.create("wedged", suspend=True)
    bed.clocks.advance(150 * 60)
    await bed.client.patch(CRONJOBS, "wedged", {"spec": {"suspend": False}}, namespace="default")
    assert await until_event(bed, "wedged", "TooManyMissedTimes") == [
        "too many missed start times. "
        "Set or decrease .spec.startingDeadlineSeconds or check clock skew"
    ]
    await until_jobs(bed, "wedged", 1)


async def test_a_job_it_did_not_create_is_reported(bed: Bed) -> None:
    """What ``kubectl create job --from=cronjob/x`` makes: upstream warns UnexpectedJob."""
    owner = await bed.create("manual", suspend=True)
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "manual-1",
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "CronJob",
                    "name": "manual",
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": owner["spec"]["jobTemplate"]["spec"],
    }
    await bed.client.create(JOBS, body, namespace="default")
    assert await until_event(bed, "manual", "UnexpectedJob") == [
        "Saw a job that the controller did not create or forgot: manual-1"
    ]


async def test_an_active_job_that_went_missing_is_dropped(bed: Bed) -> None:
    current = await bed.create("lost", suspend=True)
    current["status"] = {
        "active": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "lost-1",
                "namespace": "default",
                "uid": "gone",
            }
        ]
    }
    await bed.client.update(CRONJOBS, current, namespace="default", subresource="status")
    assert await until_event(bed, "lost", "MissingJob") == ["Active job went missing: lost-1"]

    async def dropped() -> bool:
        return not ((await bed.get("lost")).get("status") or {}).get("active")

    await await_until(dropped, what="missing job dropped from active")


async def test_a_schedule_in_its_time_zone(bed: Bed) -> None:
    """``0 * * * *`` in Asia/Kolkata (+05:30) runs at half past the UTC hour."""
    await bed.create("kolkata", "0 * * * *", timeZone="Asia/Kolkata")
    wall = bed.clocks.wall
    next_half_hour = wall - wall % 1800 + 1800
    if int(next_half_hour) % 3600 == 0:
        next_half_hour += 1800
    bed.clocks.advance(next_half_hour - wall + 1)
    [job] = await until_jobs(bed, "kolkata", 1)
    stamp = job["metadata"]["annotations"][m.SCHEDULED_TIMESTAMP_ANNOTATION]
    assert stamp.endswith(":00:00+05:30")
    assert parse_rfc3339(stamp).timestamp() == next_half_hour


async def test_a_new_schedule_takes_effect(bed: Bed) -> None:
    await bed.create("hourly", "0 0 1 1 *")
    await bed.client.patch(
        CRONJOBS, "hourly", {"spec": {"schedule": "*/1 * * * *"}}, namespace="default"
    )
    await asyncio.sleep(0.2)
    bed.clocks.to_next_minute()
    await until_jobs(bed, "hourly", 1)
