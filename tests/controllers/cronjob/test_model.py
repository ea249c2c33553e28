"""The CronJob controller's pure decisions, with upstream's own tables where it has them
(``pkg/controller/cronjob/utils_test.go``: TestMostRecentScheduleTime,
TestNextScheduleTimeDuration) and one row per decision of ``syncCronJob``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from inplace.api.cron import parse_schedule
from inplace.api.timestamps import rfc3339
from inplace.controllers.cronjob import model as m

TOP = datetime(2016, 5, 19, 10, 0, tzinfo=UTC)  # upstream's topOfTheHour, a Thursday


def at(delta: timedelta = timedelta(0)) -> datetime:
    return TOP + delta


def cronjob(
    schedule: str = "0 * * * *",
    *,
    created: datetime = TOP,
    last: datetime | None = None,
    active: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if last is not None:
        status["lastScheduleTime"] = rfc3339(last)
    if active:
        status["active"] = active
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "mycronjob",
            "namespace": "snazzycats",
            "uid": "1a2b3c",
            "creationTimestamp": rfc3339(created),
        },
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            },
            **spec,
        },
        "status": status,
    }


def job(
    name: str,
    *,
    uid: str | None = None,
    finished: str | None = None,
    started: datetime | None = None,
    completed: datetime | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
    if started:
        status["startTime"] = rfc3339(started)
    if completed:
        status["completionTime"] = rfc3339(completed)
    return {
        "metadata": {
            "name": name,
            "namespace": "snazzycats",
            "uid": uid or f"uid-{name}",
            "resourceVersion": "7",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "CronJob",
                    "name": "mycronjob",
                    "uid": "1a2b3c",
                    "controller": True,
                }
            ],
        },
        "status": status,
    }


def ref(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": name,
        "namespace": "snazzycats",
        "uid": f"uid-{name}",
    }


# -- mostRecentScheduleTime: upstream's table -----------------------------------------------------


@pytest.mark.parametrize(
    ("cj", "deadline", "now", "earliest", "recent", "missed"),
    [
        pytest.param(
            cronjob(), False, at(timedelta(seconds=30)), TOP, None, m.Missed.NONE, id="before next"
        ),
        pytest.param(
            cronjob(),
            False,
            at(timedelta(minutes=61)),
            TOP,
            at(timedelta(minutes=60)),
            m.Missed.NONE,
            id="just after next",
        ),
        pytest.param(
            cronjob(created=at(timedelta(seconds=10))),
            False,
            at(timedelta(minutes=301)),
            at(timedelta(seconds=10)),
            at(timedelta(minutes=300)),
            m.Missed.FEW,
            id="missed 5",
        ),
        pytest.param(
            cronjob("30 6-16/4 * * 1-5", last=at(timedelta(minutes=30))),
            False,
            at(timedelta(hours=24, minutes=31)),
            at(timedelta(minutes=30)),
            at(timedelta(hours=24, minutes=30)),
            m.Missed.FEW,
            id="complex schedule",
        ),
        pytest.param(
            cronjob("30 10,11,12 * * 1-5", last=at(timedelta(minutes=30))),
            False,
            at(timedelta(hours=30, minutes=30)),
            at(timedelta(minutes=30)),
            None,
            m.Missed.FEW,
            id="another complex schedule",
        ),
        pytest.param(
            cronjob("30 6-16/4 * * 1-5", last=at(timedelta(minutes=30))),
            False,
            at(timedelta(hours=96, minutes=31)),
            at(timedelta(minutes=30)),
            at(timedelta(hours=96, minutes=30)),
            m.Missed.FEW,
            id="longer diff",
        ),
        pytest.param(
            cronjob("30 6-16/4 * * 1-5"),
            False,
            at(timedelta(hours=24, minutes=31)),
            TOP,
            at(timedelta(hours=24, minutes=30)),
            m.Missed.FEW,
            id="shorter diff",
        ),
        pytest.param(
            cronjob(
                "@every 1h",
                created=at(timedelta(minutes=-59)),
                last=at(timedelta(minutes=1)),
                startingDeadlineSeconds=10,
            ),
            False,
            at(timedelta(days=7)),
            at(timedelta(minutes=1)),
            at(timedelta(days=6, hours=23, minutes=1)),
            m.Missed.MANY,
            id="@every",
        ),
        pytest.param(
            cronjob(last=TOP),
            False,
            at(timedelta(seconds=30)),
            TOP,
            None,
            m.Missed.NONE,
            id="last schedule time",
        ),
        pytest.param(
            cronjob("*/5 * * * *", last=at(timedelta(minutes=30))),
            False,
            at(timedelta(minutes=31)),
            at(timedelta(minutes=30)),
            None,
            m.Missed.NONE,
            id="last schedule time only",
        ),
        pytest.param(
            cronjob("*/5 * * * *", last=at(timedelta(minutes=30)), startingDeadlineSeconds=60),
            False,
            at(timedelta(minutes=31)),
            at(timedelta(minutes=30)),
            None,
            m.Missed.NONE,
            id="within starting deadline",
        ),
        pytest.param(
            cronjob("*/5 * * * *", last=at(timedelta(minutes=30)), startingDeadlineSeconds=60),
            True,
            at(timedelta(minutes=32)),
            at(timedelta(minutes=31)),
            None,
            m.Missed.NONE,
            id="outside starting deadline",
        ),
    ],
)
def test_most_recent_schedule_time(
    cj: dict[str, Any],
    deadline: bool,
    now: datetime,
    earliest: datetime,
    recent: datetime | None,
    missed: m.Missed,
) -> None:
    schedule = parse_schedule(cj["spec"]["schedule"])
    got = m.most_recent_schedule_time(cj, now, schedule, include_starting_deadline=deadline)
    assert got == (earliest, recent, missed, None)


def test_a_schedule_that_never_comes_is_an_error() -> None:
    """Upstream's "rogue cronjob": 31 February."""
    cj = cronjob("59 23 31 2 *", created=at(timedelta(seconds=10)))
    _, recent, _, error = m.most_recent_schedule_time(
        cj, at(timedelta(hours=1)), parse_schedule("59 23 31 2 *"), include_starting_deadline=False
    )
    assert recent is None
    assert error == "time difference between two schedules is less than 1 second"


@pytest.mark.parametrize(
    ("cj", "now", "delay"),
    [
        pytest.param(
            cronjob("30 6-16/4 * * 1-5", last=at(timedelta(minutes=30))),
            at(timedelta(hours=24, minutes=31)),
            timedelta(hours=3, minutes=59),
            id="skipping weekend",
        ),
        pytest.param(
            cronjob("30 10,11,12 * * 1-5", last=at(timedelta(minutes=30))),
            at(timedelta(hours=30, minutes=30)),
            timedelta(hours=66),
            id="another skipping weekend",
        ),
        pytest.param(
            cronjob("0 12 * * 4", last=at(timedelta(hours=2))),
            at(timedelta(days=19, hours=1, minutes=30)),
            timedelta(hours=48, minutes=30),
            id="weekly, missed two",
        ),
        pytest.param(
            cronjob("0 12 * * 5"), at(timedelta(hours=6)), timedelta(hours=20), id="no previous run"
        ),
    ],
)
def test_next_schedule_delay(cj: dict[str, Any], now: datetime, delay: timedelta) -> None:
    got = m.next_schedule_delay(cj, now, parse_schedule(cj["spec"]["schedule"]))
    assert got == pytest.approx((delay + m.NEXT_SCHEDULE_DELTA).total_seconds())


# -- the Jobs a sync sees -------------------------------------------------------------------------


def test_finished_jobs_leave_active_and_the_latest_success_is_recorded() -> None:
    cj = cronjob(active=[ref("done"), ref("failed"), ref("running")])
    cj["status"]["lastSuccessfulTime"] = rfc3339(at(timedelta(minutes=1)))
    jobs = [
        job("done", finished="Complete", completed=at(timedelta(minutes=5))),
        job("old", finished="Complete", completed=at(timedelta(minutes=2))),
        job("failed", finished="Failed"),
        job("running"),
    ]
    view = m.observe_jobs(cj, jobs)
    assert [r["name"] for r in view.active] == ["running"]
    assert view.last_successful_time == rfc3339(at(timedelta(minutes=5)))
    assert view.events == [
        m.Event("Normal", "SawCompletedJob", "Saw completed job: done, condition: Complete"),
        m.Event("Normal", "SawCompletedJob", "Saw completed job: failed, condition: Failed"),
    ]
    assert view.unexpected == [] and view.unlisted == []


def test_unknown_and_vanished_jobs_are_flagged_for_a_live_read() -> None:
    cj = cronjob(active=[ref("gone")])
    view = m.observe_jobs(cj, [job("manual-1"), job("finished-elsewhere", finished="Complete")])
    assert [j["metadata"]["name"] for j in view.unexpected] == ["manual-1"]
    assert [r["name"] for r in view.unlisted] == ["gone"]
    assert view.last_successful_time is None  # a success without completionTime records nothing


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        pytest.param({}, [], id="no limits"),
        pytest.param({"successfulJobsHistoryLimit": 1}, ["ok-1", "ok-2"], id="one success kept"),
        pytest.param({"successfulJobsHistoryLimit": 3}, [], id="under the limit"),
        pytest.param({"failedJobsHistoryLimit": 0}, ["bad-1"], id="no failures kept"),
        pytest.param(
            {"successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 0},
            ["ok-1", "ok-2", "ok-nostart", "bad-1"],
            id="nothing kept",
        ),
    ],
)
def test_history_to_delete(limits: dict[str, int], expected: list[str]) -> None:
    jobs = [
        job("ok-nostart", finished="Complete"),
        job("ok-2", finished="Complete", started=at(timedelta(minutes=2))),
        job("ok-1", finished="Complete", started=at(timedelta(minutes=1))),
        job("bad-1", finished="Failed", started=at(timedelta(minutes=1))),
        job("running", started=at()),
    ]
    deleted = m.history_to_delete(cronjob(**limits), jobs)
    # Oldest start first; a Job that never started counts as the newest.
    assert [j["metadata"]["name"] for j in deleted] == expected


# -- the Job made from the template ---------------------------------------------------------------


def test_job_from_template() -> None:
    scheduled = datetime(2016, 5, 19, 10, 0, tzinfo=UTC)
    made = m.job_from_template(cronjob(), scheduled)
    assert made["metadata"] == {
        "name": f"mycronjob-{int(scheduled.timestamp()) // 60}",
        "namespace": "snazzycats",
        "labels": {"a": "b"},
        "annotations": {"x": "y", m.SCHEDULED_TIMESTAMP_ANNOTATION: "2016-05-19T10:00:00Z"},
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": "mycronjob",
                "uid": "1a2b3c",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert made["spec"] == cronjob()["spec"]["jobTemplate"]["spec"]


def test_the_scheduled_time_annotation_is_in_the_cronjobs_zone() -> None:
    made = m.job_from_template(cronjob(timeZone="Asia/Kolkata"), TOP)
    assert (
        made["metadata"]["annotations"][m.SCHEDULED_TIMESTAMP_ANNOTATION]
        == "2016-05-19T15:30:00+05:30"
    )


@pytest.mark.parametrize(
    ("environ", "zone"),
    [
        ({}, UTC),
        ({"TZ": ""}, UTC),
        ({"TZ": "UTC"}, UTC),
        ({"TZ": "Europe/Berlin"}, ZoneInfo("Europe/Berlin")),
        ({"TZ": ":Europe/Berlin"}, ZoneInfo("Europe/Berlin")),
        ({"TZ": "Nowhere/Zone"}, UTC),
    ],
)
def test_local_zone(environ: dict[str, str], zone: object) -> None:
    assert m.local_zone(environ) == zone


def test_format_schedule() -> None:
    assert m.format_schedule(cronjob("0 * * * *")) == ("0 * * * *", None)
    assert m.format_schedule(cronjob("0 * * * *", timeZone="Asia/Tokyo")) == (
        "TZ=Asia/Tokyo 0 * * * *",
        None,
    )
    assert m.format_schedule(cronjob("0 * * * *", timeZone="Nowhere/Zone")) == ("0 * * * *", None)
    text, event = m.format_schedule(cronjob("TZ=UTC 0 * * * *"))
    assert text == "TZ=UTC 0 * * * *"
    assert event is not None and event.reason == "UnsupportedSchedule"
    assert event.message.startswith(
        'CRON_TZ or TZ used in schedule "TZ=UTC 0 * * * *" is not officially supported'
    )


# -- decide: one row per outcome of syncCronJob ---------------------------------------------------

JUST_AFTER = at(timedelta(hours=1, seconds=5))  # the 11:00 schedule time has come
HOUR_NAME = f"mycronjob-{int(at(timedelta(hours=1)).timestamp()) // 60}"


@pytest.mark.parametrize(
    ("cj", "active", "now", "reasons", "creates", "replaces", "requeue"),
    [
        pytest.param(
            cronjob(), [], at(timedelta(minutes=30)), [], False, [], 1800.1, id="not yet time"
        ),
        pytest.param(cronjob(), [], JUST_AFTER, [], True, [], 3595.1, id="time: create"),
        pytest.param(cronjob(suspend=True), [], JUST_AFTER, [], False, [], None, id="suspended"),
        pytest.param(
            cronjob(last=at(timedelta(hours=1))),
            [],
            JUST_AFTER,
            [],
            False,
            [],
            3595.1,
            id="already scheduled",
        ),
        pytest.param(
            cronjob(),
            [ref(HOUR_NAME)],
            JUST_AFTER,
            [],
            False,
            [],
            3595.1,
            id="already active by name",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Forbid"),
            [ref("earlier")],
            JUST_AFTER,
            ["JobAlreadyActive"],
            False,
            [],
            3595.1,
            id="forbid with one active",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Forbid"),
            [],
            JUST_AFTER,
            [],
            True,
            [],
            3595.1,
            id="forbid with none active",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Allow"),
            [ref("earlier")],
            JUST_AFTER,
            [],
            True,
            [],
            3595.1,
            id="allow with one active",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Replace"),
            [ref("earlier")],
            JUST_AFTER,
            [],
            True,
            ["earlier"],
            3595.1,
            id="replace with one active",
        ),
        pytest.param(
            cronjob(startingDeadlineSeconds=3),
            [],
            JUST_AFTER,
            [],
            False,
            [],
            3595.1,
            id="past the starting deadline: no unmet time",
        ),
        pytest.param(
            cronjob(startingDeadlineSeconds=10),
            [],
            JUST_AFTER,
            [],
            True,
            [],
            3595.1,
            id="within the starting deadline",
        ),
        pytest.param(
            cronjob("*/1 * * * *"),
            [],
            at(timedelta(hours=3, seconds=5)),
            ["TooManyMissedTimes"],
            True,
            [],
            55.1,
            id="too many missed",
        ),
        pytest.param(
            cronjob("not a schedule"),
            [],
            JUST_AFTER,
            ["UnparseableSchedule"],
            False,
            [],
            None,
            id="unparseable",
        ),
        pytest.param(
            cronjob("59 23 31 2 *"),
            [],
            JUST_AFTER,
            ["InvalidSchedule"],
            False,
            [],
            None,
            id="never comes",
        ),
        pytest.param(
            cronjob(timeZone="Nowhere/Zone"),
            [],
            JUST_AFTER,
            ["UnknownTimeZone"],
            False,
            [],
            None,
            id="unknown time zone",
        ),
        pytest.param(
            cronjob("TZ=UTC 0 * * * *"),
            [],
            JUST_AFTER,
            ["UnsupportedSchedule"],
            True,
            [],
            3595.1,
            id="TZ in the schedule",
        ),
        pytest.param(
            {**cronjob(), "metadata": {**cronjob()["metadata"], "deletionTimestamp": rfc3339(TOP)}},
            [],
            JUST_AFTER,
            [],
            False,
            [],
            None,
            id="being deleted",
        ),
    ],
)
def test_decide(
    cj: dict[str, Any],
    active: list[dict[str, Any]],
    now: datetime,
    reasons: list[str],
    creates: bool,
    replaces: list[str],
    requeue: float | None,
) -> None:
    decision = m.decide(cj, active, now)
    assert [e.reason for e in decision.events] == reasons
    assert (decision.create is not None) is creates
    if decision.create is not None:
        assert [r["name"] for r in decision.create.replace] == replaces
        assert decision.create.requeue_after == pytest.approx(requeue)
    elif requeue is None:
        assert decision.requeue_after is None
    else:
        assert decision.requeue_after == pytest.approx(requeue)


def test_decide_creates_the_job_of_the_most_recent_time() -> None:
    decision = m.decide(cronjob("*/1 * * * *"), [], at(timedelta(minutes=10, seconds=30)))
    assert decision.create is not None
    assert decision.create.scheduled == at(timedelta(minutes=10))
    assert decision.create.job["metadata"]["name"] == f"mycronjob-{int(TOP.timestamp()) // 60 + 10}"


def test_decide_messages() -> None:
    forbid = m.decide(cronjob(concurrencyPolicy="Forbid"), [ref("earlier")], JUST_AFTER)
    assert forbid.events == (
        m.Event(
            "Normal",
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid",
        ),
    )
    many = m.decide(cronjob("*/1 * * * *"), [], at(timedelta(hours=3)))
    assert many.events == (
        m.Event(
            "Warning",
            "TooManyMissedTimes",
            "too many missed start times. "
            "Set or decrease .spec.startingDeadlineSeconds or check clock skew",
        ),
    )
    bad = m.decide(cronjob("61 * * * *"), [], JUST_AFTER)
    assert bad.events == (
        m.Event(
            "Warning",
            "UnparseableSchedule",
            'unparseable schedule: "61 * * * *" : end of range (61) above maximum (59): 61',
        ),
    )
    zone = m.decide(cronjob(timeZone="Nowhere/Zone"), [], JUST_AFTER)
    assert zone.events == (
        m.Event(
            "Warning",
            "UnknownTimeZone",
            'invalid timeZone: "Nowhere/Zone": unknown time zone Nowhere/Zone',
        ),
    )
    never = m.decide(cronjob("59 23 31 2 *"), [], JUST_AFTER)
    assert never.events == (
        m.Event(
            "Warning",
            "InvalidSchedule",
            "invalid schedule: 59 23 31 2 * : "
            "time difference between two schedules is less than 1 second",
        ),
    )


def test_a_schedule_in_the_cronjobs_zone() -> None:
    """``0 9 * * *`` in Asia/Kolkata is 03:30 UTC, whatever the controller's zone."""
    cj = cronjob("0 9 * * *", timeZone="Asia/Kolkata", created=datetime(2024, 1, 1, tzinfo=UTC))
    now = datetime(2024, 1, 1, 3, 31, tzinfo=UTC).astimezone(ZoneInfo("America/New_York"))
    decision = m.decide(cj, [], now)
    assert decision.create is not None
    assert decision.create.scheduled == datetime(2024, 1, 1, 3, 30, tzinfo=UTC)
    annotation = decision.create.job["metadata"]["annotations"][m.SCHEDULED_TIMESTAMP_ANNOTATION]
    assert annotation == "2024-01-01T09:00:00+05:30"


def test_a_schedule_without_zone_runs_in_the_controllers_zone() -> None:
    cj = cronjob("0 9 * * *", created=datetime(2024, 1, 1, tzinfo=UTC))
    berlin = ZoneInfo("Europe/Berlin")
    decision = m.decide(cj, [], datetime(2024, 1, 1, 9, 1, tzinfo=berlin))
    assert decision.create is not None
    assert decision.create.scheduled == datetime(2024, 1, 1, 8, 0, tzinfo=UTC)
    # The annotation is in spec.timeZone, else UTC (upstream's LoadLocation("")).
    assert (
        decision.create.job["metadata"]["annotations"][m.SCHEDULED_TIMESTAMP_ANNOTATION]
        == "2024-01-01T08:00:00Z"
    )
