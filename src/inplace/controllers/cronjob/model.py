"""The CronJob controller's decisions, pure: upstream's ``pkg/controller/cronjob`` (v1.36
``cronjob_controllerv2.go`` and ``utils.go``) without the API calls.

From a CronJob, its Jobs and the time: which Jobs leave the ``active`` list, the
``lastSuccessfulTime``, which finished Jobs the history limits delete
(:func:`history_to_delete`), and what the schedule asks for now (:func:`decide`): the most
recent unmet schedule time, too many missed starts, ``startingDeadlineSeconds``, the
concurrency policy, the Job to create and the delay to the next schedule time.

Times are aware datetimes. Upstream reads every time stamp in the controller manager's
local zone and evaluates a schedule without ``spec.timeZone`` there; here that zone is UTC
unless the controller manager's ``TZ`` names another (:func:`local_zone`).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

from inplace.api.cron import Schedule, ScheduleError, go_quote, load_location, parse_schedule
from inplace.api.timestamps import parse_rfc3339, rfc3339

from ..pods import controller_ref

__all__ = [
    "NEXT_SCHEDULE_DELTA",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "TOO_MANY_MISSED",
    "CreateJob",
    "Decision",
    "Event",
    "JobsView",
    "Missed",
    "decide",
    "history_to_delete",
    "job_from_template",
    "job_name",
    "local_zone",
    "most_recent_schedule_time",
    "next_schedule_delay",
    "observe_jobs",
]

Obj = dict[str, Any]

SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""The scheduled time of a Job the controller created, RFC 3339 in the CronJob's zone."""

NEXT_SCHEDULE_DELTA: Final = timedelta(milliseconds=100)
"""Added to every requeue, upstream's margin for clock skew."""

TOO_MANY_MISSED: Final = 100
"""More missed schedules than this is upstream's ``TooManyMissedTimes``."""

NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


class Missed(enum.Enum):
    NONE = "none"
    FEW = "few"
    MANY = "many"


def local_zone(environ: Mapping[str, str]) -> tzinfo:
    """The controller manager's zone: ``TZ`` (Go's reading: a leading ``:`` dropped, empty
    is UTC), else UTC, where upstream would read ``/etc/localtime``."""
    name = environ.get("TZ")
    if not name:
        return UTC
    try:
        zone = load_location(name.removeprefix(":"))
    except ScheduleError:
        return UTC
    return zone if zone is not None else UTC


# -- reading the objects ---------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _time(value: Any, zone: tzinfo) -> datetime | None:
    """A ``metav1.Time`` as upstream holds it: in the local zone."""
    if not value:
        return None
    try:
        return parse_rfc3339(str(value)).astimezone(zone)
    except ValueError:
        return None


def finished_condition(job: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` when that condition is True (upstream ``FinishedCondition``)."""
    for cond in _status(job).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def _in_active(cronjob: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in _status(cronjob).get("active") or ())


def job_ref(job: Mapping[str, Any]) -> Obj:
    """The ``status.active`` entry for ``job`` (upstream's ``ref.GetReference``)."""
    meta = _meta(job)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "resourceVersion": meta.get("resourceVersion"),
        "uid": meta.get("uid"),
    }


# -- the Jobs a sync sees ---------------------------------------------------------------------


@dataclass
class JobsView:
    """What the CronJob's Jobs say, before anything is asked of the API server."""

    active: list[Obj]
    """``status.active`` with the finished Jobs removed."""
    last_successful_time: str | None
    events: list[Event] = field(default_factory=list)
    unexpected: list[Obj] = field(default_factory=list)
    """Unfinished Jobs it controls that are not in its active list: upstream reads the
    CronJob again before calling one ``UnexpectedJob``."""
    unlisted: list[Obj] = field(default_factory=list)
    """Active entries whose Job the cache does not hold: upstream reads each (404: gone)."""


def observe_jobs(cronjob: Mapping[str, Any], jobs: Iterable[Mapping[str, Any]]) -> JobsView:
    """The first half of upstream's ``syncCronJob``: finished Jobs leave ``active``
    (``SawCompletedJob``), the latest completion is ``lastSuccessfulTime``."""
    status = _status(cronjob)
    active = [dict(ref) for ref in status.get("active") or ()]
    last_success = status.get("lastSuccessfulTime")
    view = JobsView(active=active, last_successful_time=last_success)
    children: set[str] = set()
    for job in jobs:
        uid = _uid(job)
        children.add(uid)
        found = _in_active(cronjob, uid)
        finished = finished_condition(job)
        if not found and finished is None:
            view.unexpected.append(dict(job))
            continue
        if finished is None:
            continue
        if found:
            view.active = [ref for ref in view.active if ref.get("uid") != uid]
            view.events.append(
                Event(
                    NORMAL,
                    "SawCompletedJob",
                    f"Saw completed job: {_meta(job).get('name')}, condition: {finished}",
                )
            )
        if finished == "Complete":
            completion = _status(job).get("completionTime")
            latest = view.last_successful_time
            if latest is None or (completion and parse_rfc3339(completion) > parse_rfc3339(latest)):
                view.last_successful_time = completion
    view.unlisted = [ref for ref in view.active if ref.get("uid") not in children]
    return view


def history_to_delete(cronjob: Mapping[str, Any], jobs: Iterable[Mapping[str, Any]]) -> list[Obj]:
    """Upstream's ``cleanupFinishedJobs``: beyond ``successfulJobsHistoryLimit`` and
    ``failedJobsHistoryLimit``, the finished Jobs that started first (no start time last,
    then by name)."""
    spec = _spec(cronjob)
    successful: list[Mapping[str, Any]] = []
    failed: list[Mapping[str, Any]] = []
    for job in jobs:
        finished = finished_condition(job)
        if finished == "Complete":
            successful.append(job)
        elif finished == "Failed":
            failed.append(job)
    doomed: list[Obj] = []
    for limit, group in (
        (spec.get("successfulJobsHistoryLimit"), successful),
        (spec.get("failedJobsHistoryLimit"), failed),
    ):
        if limit is None or len(group) <= int(limit):
            continue
        ordered = sorted(group, key=_start_order)
        doomed.extend(dict(job) for job in ordered[: len(group) - int(limit)])
    return doomed


def _start_order(job: Mapping[str, Any]) -> tuple[bool, datetime, str]:
    """upstream's ``byJobStartTime``."""
    start = _time(_status(job).get("startTime"), UTC)
    name = str(_meta(job).get("name") or "")
    if start is None:
        return (True, datetime.min.replace(tzinfo=UTC), name)
    return (False, start, name)


# -- the schedule -----------------------------------------------------------------------------


def format_schedule(cronjob: Mapping[str, Any]) -> tuple[str, Event | None]:
    """Upstream's ``formatSchedule``: ``TZ=<spec.timeZone> <schedule>``; a ``TZ`` written in
    the schedule itself is kept, with the ``UnsupportedSchedule`` warning."""
    spec = _spec(cronjob)
    schedule = str(spec.get("schedule") or "")
    if "TZ" in schedule:
        return schedule, Event(
            WARNING,
            "UnsupportedSchedule",
            f"CRON_TZ or TZ used in schedule {go_quote(schedule)} is not officially supported, "
            "see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ "
            "for more details",
        )
    zone = spec.get("timeZone")
    if zone is not None:
        try:
            load_location(str(zone))
        except ScheduleError:
            return schedule, None
        return f"TZ={zone} {schedule}", None
    return schedule, None


def most_recent_schedule_time(
    cronjob: Mapping[str, Any],
    now: datetime,
    schedule: Schedule,
    *,
    include_starting_deadline: bool,
) -> tuple[datetime, datetime | None, Missed, str | None]:
    """Upstream's ``mostRecentScheduleTime``: the time counted from (last schedule time, else
    creation), the most recent schedule time not after ``now`` (None: none since), how many
    were missed, and an error for a schedule that never comes round (``30 2 *``: 30 February).

    ``now`` is in the controller's zone; so are the times read from the object.
    """
    zone = now.tzinfo
    assert zone is not None
    earliest = _time(_meta(cronjob).get("creationTimestamp"), zone) or now
    last = _time(_status(cronjob).get("lastScheduleTime"), zone)
    if last is not None:
        earliest = last
    deadline = _spec(cronjob).get("startingDeadlineSeconds")
    if include_starting_deadline and deadline is not None:
        scheduling_deadline = now - timedelta(seconds=int(deadline))
        if scheduling_deadline > earliest:
            earliest = scheduling_deadline
    never = "time difference between two schedules is less than 1 second"
    t1 = schedule.next_after(earliest)
    if t1 is None:  # Go's zero time: never after earliest
        return earliest, None, Missed.NONE, never
    if now < t1:
        return earliest, None, Missed.NONE, None
    t2 = schedule.next_after(t1)
    if t2 is None:
        return earliest, None, Missed.NONE, never
    if now < t2:
        return earliest, t1, Missed.NONE, None
    between = round((t2 - t1).total_seconds())
    if between < 1:
        return earliest, None, Missed.NONE, never
    elapsed = int((now - t1).total_seconds())
    missed_count = elapsed // between + 1
    # Back one interval more than the count says, and let the schedule find the real times
    # (for schedules whose intervals differ, such as "30 6-16/4 * * 1-5").
    most_recent: datetime | None = None
    t: datetime | None = t1 + timedelta(seconds=(missed_count - 2) * between)
    while True:
        assert t is not None
        t = schedule.next_after(t)
        if t is None or t > now:
            break
        most_recent = t
    missed = Missed.MANY if missed_count > TOO_MANY_MISSED else Missed.FEW
    return earliest, most_recent, missed, None


def next_schedule_delay(
    cronjob: Mapping[str, Any], now: datetime, schedule: Schedule
) -> float | None:
    """Upstream's ``nextScheduleTimeDuration``: seconds until the next schedule time after
    the most recent one (plus :data:`NEXT_SCHEDULE_DELTA`); None if there is none."""
    earliest, most_recent, missed, error = most_recent_schedule_time(
        cronjob, now, schedule, include_starting_deadline=False
    )
    if error is not None:
        most_recent = now
    elif most_recent is None:
        most_recent = earliest if missed is Missed.NONE else now
    following = schedule.next_after(most_recent)
    if following is None:
        return None
    return (following + NEXT_SCHEDULE_DELTA - now).total_seconds()


def job_name(cronjob: Mapping[str, Any], scheduled: datetime) -> str:
    """``<cronjob>-<scheduled time in minutes since the epoch>``, one name per schedule time."""
    return f"{_meta(cronjob).get('name')}-{int(scheduled.timestamp()) // 60}"


def job_from_template(cronjob: Mapping[str, Any], scheduled: datetime) -> Obj:
    """Upstream's ``getJobFromTemplate2``: the template's labels, annotations and spec, the
    scheduled-time annotation (in ``spec.timeZone``, else UTC), owned by the CronJob."""
    template = _spec(cronjob).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    zone = load_location(str(_spec(cronjob).get("timeZone") or "")) or UTC
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _go_rfc3339(scheduled.astimezone(zone))
    metadata: Obj = {
        "name": job_name(cronjob, scheduled),
        "namespace": _meta(cronjob).get("namespace"),
        "annotations": annotations,
        "ownerReferences": [
            controller_ref({**cronjob, "apiVersion": "batch/v1", "kind": "CronJob"})
        ],
    }
    labels = template_meta.get("labels")
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def _go_rfc3339(t: datetime) -> str:
    """Go's ``time.RFC3339``: ``Z`` for a zero offset, else ``±hh:mm``."""
    text = t.replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _rfc1123z(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


# -- what the schedule asks for now -------------------------------------------------------------


@dataclass(frozen=True)
class CreateJob:
    job: Obj
    scheduled: datetime
    replace: tuple[Obj, ...]
    """Active Jobs to delete first (``concurrencyPolicy: Replace``)."""
    requeue_after: float | None
    """The delay once the Job is created and recorded as ``lastScheduleTime``."""


@dataclass(frozen=True)
class Decision:
    events: tuple[Event, ...] = ()
    create: CreateJob | None = None
    requeue_after: float | None = None
    """When to look again if nothing is created (None: at the next change only)."""


def decide(cronjob: Mapping[str, Any], active: list[Obj], now: datetime) -> Decision:
    """The second half of upstream's ``syncCronJob``, for a CronJob whose active list is
    ``active`` (after :func:`observe_jobs` and the history clean-up) at ``now`` (in the
    controller's zone)."""
    meta, spec = _meta(cronjob), _spec(cronjob)
    if meta.get("deletionTimestamp"):
        return Decision()
    zone_name = spec.get("timeZone")
    if zone_name is not None:
        try:
            load_location(str(zone_name))
        except ScheduleError as err:
            return Decision(
                (
                    Event(
                        WARNING,
                        "UnknownTimeZone",
                        f"invalid timeZone: {go_quote(str(zone_name))}: {err}",
                    ),
                )
            )
    if spec.get("suspend"):
        return Decision()
    events: list[Event] = []
    text, unsupported = format_schedule(cronjob)
    if unsupported is not None:
        events.append(unsupported)
    try:
        schedule = parse_schedule(text)
    except ScheduleError as err:
        schedule_text = str(spec.get("schedule") or "")
        events.append(
            Event(
                WARNING,
                "UnparseableSchedule",
                f"unparseable schedule: {go_quote(schedule_text)} : {err}",
            )
        )
        return Decision(tuple(events))
    view = {**cronjob, "status": {**_status(cronjob), "active": active}}
    _, scheduled, missed, error = most_recent_schedule_time(
        view, now, schedule, include_starting_deadline=True
    )
    if scheduled is not None and missed is Missed.MANY:
        events.append(
            Event(
                WARNING,
                "TooManyMissedTimes",
                "too many missed start times. "
                "Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            )
        )
    if scheduled is None:
        if error is not None:
            events.append(
                Event(
                    WARNING,
                    "InvalidSchedule",
                    f"invalid schedule: {spec.get('schedule')} : {error}",
                )
            )
            return Decision(tuple(events))
        return Decision(tuple(events), requeue_after=next_schedule_delay(view, now, schedule))
    requeue = next_schedule_delay(view, now, schedule)
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
        events.append(
            Event(
                WARNING,
                "MissSchedule",
                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}",
            )
        )
        return Decision(tuple(events), requeue_after=requeue)
    name = job_name(cronjob, scheduled)
    last = _time(_status(cronjob).get("lastScheduleTime"), UTC)
    if any(ref.get("name") == name for ref in active) or last == scheduled:
        return Decision(tuple(events), requeue_after=requeue)
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and active:
        events.append(
            Event(
                NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running "
                "and concurrency policy is Forbid",
            )
        )
        return Decision(tuple(events), requeue_after=requeue)
    replace = tuple(dict(ref) for ref in active) if policy == "Replace" else ()
    scheduled_view = {**view, "status": {**_status(view), "lastScheduleTime": rfc3339(scheduled)}}
    return Decision(
        tuple(events),
        create=CreateJob(
            job=job_from_template(cronjob, scheduled),
            scheduled=scheduled,
            replace=replace,
            requeue_after=next_schedule_delay(scheduled_view, now, schedule),
        ),
    )
