"""The CronJob controller (upstream's ``pkg/controller/cronjob``, ``cronjob_controllerv2.go``).

One key per CronJob, requeued for its next schedule time. A sync reads the CronJob and the
Jobs it controls from the shared informers, deletes finished Jobs beyond the history limits,
drops finished and vanished Jobs from ``status.active``, records ``lastSuccessfulTime``, and
then does what :func:`.model.decide` says: nothing (suspended, deleting, not yet time,
missed its ``startingDeadlineSeconds``, a ``Forbid`` Job still running), or create the Job of
the most recent schedule time (named ``<cronjob>-<minutes since the epoch>``, so a sync
repeated after a crash cannot make it twice), after deleting the active ones under
``Replace``. ``status`` is written through the one status loop (:mod:`inplace.client.status`)
as the changes this sync made, applied again to a fresh read if another write got there
first.

The wall clock is ``Context.now`` (tests move it); schedules without ``spec.timeZone`` run in
the controller manager's zone (:func:`.model.local_zone`: UTC unless ``TZ`` says otherwise).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from inplace.api.conditions import StatusPatch
from inplace.api.cron import ScheduleError, parse_schedule
from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.client import (
    CRONJOBS,
    JOBS,
    APIAlreadyExistsError,
    APIError,
    APINotFoundError,
    key_of,
)
from inplace.client.status import write_status

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key
from ..pods import controller_of, uid_of, with_type
from . import model as m

__all__ = ["CronJobController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass
class StatusChanges:
    """What one sync changed in ``status``, to apply to whatever the server holds."""

    removed: set[str] = field(default_factory=set)
    """uids that left ``active``."""
    added: list[Obj] = field(default_factory=list)
    last_schedule_time: str | None = None
    last_successful_time: str | None = None

    def remove(self, uid: str) -> None:
        self.removed.add(uid)
        self.added = [ref for ref in self.added if ref.get("uid") != uid]

    def add(self, ref: Obj) -> None:
        self.removed.discard(str(ref.get("uid")))
        if all(existing.get("uid") != ref.get("uid") for existing in self.added):
            self.added.append(ref)

    def apply(self, cronjob: Mapping[str, Any]) -> StatusPatch | None:
        """``cronjob``'s whole status with these changes made (None: it holds them)."""
        status = cronjob.get("status") or {}
        current = list(status.get("active") or ())
        active = [ref for ref in current if ref.get("uid") not in self.removed]
        active += [ref for ref in self.added if all(a.get("uid") != ref.get("uid") for a in active)]
        last_schedule = self.last_schedule_time or status.get("lastScheduleTime")
        last_success = status.get("lastSuccessfulTime")
        if self.last_successful_time and (
            not last_success
            or parse_rfc3339(self.last_successful_time) > parse_rfc3339(last_success)
        ):
            last_success = self.last_successful_time
        if (
            active == current
            and last_schedule == status.get("lastScheduleTime")
            and last_success == status.get("lastSuccessfulTime")
        ):
            return None
        new_status = {
            key: value
            for key, value in status.items()
            if key not in ("active", "lastScheduleTime", "lastSuccessfulTime")
        }
        if active:
            new_status["active"] = active
        if last_schedule:
            new_status["lastScheduleTime"] = last_schedule
        if last_success:
            new_status["lastSuccessfulTime"] = last_success
        return StatusPatch(new_status, guarded=True)

    def __bool__(self) -> bool:
        return bool(
            self.removed or self.added or self.last_schedule_time or self.last_successful_time
        )


def _error_text(exc: APIError) -> str:
    return exc.message or str(exc)


class CronJobController(QueueController):
    name = "cronjob-controller"
    workers = 5  # upstream's --concurrent-cron-job-syncs

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.cronjobs = ctx.informer(CRONJOBS)
        self.jobs = ctx.informer(JOBS)
        self.recorder = ctx.recorder(self.name)
        self.zone = ctx.options.get("local_zone") or m.local_zone(os.environ)
        self.cronjobs.add_handler(
            lambda cj: self.enqueue(key_of(cj)),
            self._cronjob_updated,
            lambda cj: self.enqueue(key_of(cj)),
        )
        self.jobs.add_handler(self._job_added, self._job_updated, self._job_deleted)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.now(), self.zone)

    # -- handlers ------------------------------------------------------------------------

    def _cronjob_updated(self, old: Obj, new: Obj) -> None:
        """A new schedule or zone requeues for its next time; anything else, now."""
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if old_spec.get("schedule") == new_spec.get("schedule") and old_spec.get(
            "timeZone"
        ) == new_spec.get("timeZone"):
            self.enqueue(key_of(new))
            return
        text, _ = m.format_schedule(new)
        try:
            schedule = parse_schedule(text)
        except ScheduleError:
            self.recorder.event(
                with_type(new, CRONJOBS),
                "Warning",
                "UnParseableCronJobSchedule",
                f"unparseable schedule for cronjob: {new_spec.get('schedule')}",
            )
            return
        delay = m.next_schedule_delay(new, self.now(), schedule)
        if delay is None:
            return
        self.queue.add_after(key_of(new), max(0.0, delay))

    def _owner_key(self, job: Mapping[str, Any], ref: Mapping[str, Any] | None) -> str | None:
        """The key of the CronJob ``ref`` names, if it is in the cache with that uid."""
        return controller_key(job, "CronJob", self.cronjobs, ref) if ref is not None else None

    def _job_added(self, job: Obj) -> None:
        key = self._owner_key(job, controller_of(job))
        if key is not None:
            self.enqueue(key)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get(
            "resourceVersion"
        ):
            return
        old_ref, new_ref = controller_of(old), controller_of(new)
        if old_ref != new_ref:
            old_key = self._owner_key(old, old_ref)
            if old_key is not None:
                self.enqueue(old_key)
        key = self._owner_key(new, new_ref)
        if key is not None:
            self.enqueue(key)

    def _job_deleted(self, job: Obj) -> None:
        self._job_added(job)

    # -- reconcile -------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        cached = self.cronjobs.get(key)
        if cached is None:
            return None
        cronjob = with_type(cached, CRONJOBS)
        namespace = (cronjob.get("metadata") or {}).get("namespace") or ""
        name = (cronjob.get("metadata") or {}).get("name")
        # Upstream looks only at the controller reference's name (a renamed or recreated
        # CronJob sees the Jobs of its namesake, as there).
        jobs = [
            job
            for job in self.jobs.by_index(NAMESPACE_INDEX, namespace)
            if (ref := controller_of(job)) is not None and ref.get("name") == name
        ]
        changes = StatusChanges()
        failure: BaseException | None = None
        requeue: float | None = None
        try:
            active = await self._clean_up_history(cronjob, jobs, changes)
            active = await self._observe(cronjob, active, jobs, changes)
            requeue = await self._act(cronjob, active, changes)
        except APIError as exc:
            failure = exc
        if changes:
            await self._write_status(cronjob, changes)
        if failure is not None:
            raise failure
        return None if requeue is None else max(0.0, requeue)

    async def _delete_job(
        self, cronjob: Obj, job: Mapping[str, Any], changes: StatusChanges
    ) -> bool:
        """Upstream's ``deleteJob``: the Job (its pods follow in the background), then its
        entry in ``active``."""
        meta = job.get("metadata") or {}
        try:
            await self.client.delete(
                JOBS, meta["name"], namespace=meta.get("namespace"), propagation_policy="Background"
            )
        except APIError as exc:
            self.recorder.event(
                cronjob, "Warning", "FailedDelete", f"Deleted job: {_error_text(exc)}"
            )
            log.warning("%s: deleting job %s: %s", self.name, meta.get("name"), exc)
            return False
        changes.remove(str(meta.get("uid")))
        self.recorder.event(
            cronjob, "Normal", "SuccessfulDelete", f"Deleted job {meta.get('name')}"
        )
        return True

    async def _clean_up_history(
        self, cronjob: Obj, jobs: list[Obj], changes: StatusChanges
    ) -> list[Obj]:
        for job in m.history_to_delete(cronjob, jobs):
            await self._delete_job(cronjob, job, changes)
        return [
            ref
            for ref in (cronjob.get("status") or {}).get("active") or ()
            if ref.get("uid") not in changes.removed
        ]

    async def _observe(
        self, cronjob: Obj, active: list[Obj], jobs: list[Obj], changes: StatusChanges
    ) -> list[Obj]:
        """Finished Jobs out of ``active``, unknown ones reported, vanished ones dropped."""
        namespace = cronjob["metadata"].get("namespace")
        view = m.observe_jobs(
            {**cronjob, "status": {**(cronjob.get("status") or {}), "active": active}}, jobs
        )
        for event in view.events:
            self.recorder.event(cronjob, event.type, event.reason, event.message)
        for ref in active:
            if all(kept.get("uid") != ref.get("uid") for kept in view.active):
                changes.remove(str(ref.get("uid")))
        if view.last_successful_time != (cronjob.get("status") or {}).get("lastSuccessfulTime"):
            changes.last_successful_time = view.last_successful_time
        active = view.active
        if view.unexpected:
            live = await self.client.get(CRONJOBS, cronjob["metadata"]["name"], namespace=namespace)
            live_active = {
                ref.get("uid"): ref for ref in (live.get("status") or {}).get("active") or ()
            }
            for job in view.unexpected:
                recorded = live_active.get(uid_of(job))
                if recorded is not None:
                    # Recorded by a write this cache has not seen yet.
                    active.append(dict(recorded))
                    continue
                self.recorder.event(
                    cronjob,
                    "Warning",
                    "UnexpectedJob",
                    "Saw a job that the controller did not create or forgot: "
                    + str(job["metadata"]["name"]),
                )
        for ref in view.unlisted:
            try:
                await self.client.get(
                    JOBS, str(ref.get("name")), namespace=ref.get("namespace") or namespace
                )
            except APINotFoundError:
                self.recorder.event(
                    cronjob, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}"
                )
                changes.remove(str(ref.get("uid")))
                active = [a for a in active if a.get("uid") != ref.get("uid")]
        return active

    async def _act(self, cronjob: Obj, active: list[Obj], changes: StatusChanges) -> float | None:
        decision = m.decide(cronjob, active, self.now())
        for event in decision.events:
            self.recorder.event(cronjob, event.type, event.reason, event.message)
        create = decision.create
        if create is None:
            return decision.requeue_after
        namespace = cronjob["metadata"].get("namespace")
        for ref in create.replace:
            try:
                job = await self.client.get(
                    JOBS, str(ref.get("name")), namespace=ref.get("namespace") or namespace
                )
            except APIError as exc:
                self.recorder.event(cronjob, "Warning", "FailedGet", f"Get job: {_error_text(exc)}")
                raise
            if not await self._delete_job(cronjob, job, changes):
                raise APIError(
                    500, "InternalError", f"could not replace job {namespace}/{ref.get('name')}"
                )
        try:
            created = await self.client.create(JOBS, create.job, namespace=namespace)
        except APIAlreadyExistsError:
            existing = await self.client.get(
                JOBS, create.job["metadata"]["name"], namespace=namespace
            )
            owner = controller_of(existing)
            if owner is None or owner.get("uid") != uid_of(cronjob):
                return None  # another actor's Job: it keeps the status
            if any(ref.get("uid") == uid_of(existing) for ref in active):
                return None
            log.info("%s: job %s already exists", self.name, create.job["metadata"]["name"])
            created = existing
        except APIError as exc:
            if not _namespace_terminating(exc):
                self.recorder.event(
                    cronjob, "Warning", "FailedCreate", f"Error creating job: {_error_text(exc)}"
                )
            raise
        else:
            self.recorder.event(
                cronjob, "Normal", "SuccessfulCreate", f"Created job {created['metadata']['name']}"
            )
        changes.add(m.job_ref(created))
        changes.last_schedule_time = rfc3339(create.scheduled)
        return create.requeue_after

    async def _write_status(self, cronjob: Obj, changes: StatusChanges) -> None:
        """Upstream's ``UpdateStatus`` (a PUT of ``cronjobs/status``, the verb its role
        grants), through the status loop: on a conflict the changes are applied again to a
        fresh read."""
        meta = cronjob["metadata"]
        seen: list[Mapping[str, Any]] = [cronjob]

        def compute(current: Mapping[str, Any]) -> StatusPatch | None:
            seen[0] = current
            return changes.apply(current)

        async def send(body: dict[str, Any]) -> dict[str, Any]:
            whole = {**with_type(dict(seen[0]), CRONJOBS), "status": body["status"]}
            return await self.client.update(
                CRONJOBS, whole, namespace=meta.get("namespace"), subresource="status"
            )

        async def reread() -> dict[str, Any]:
            return await self.client.get(CRONJOBS, meta["name"], namespace=meta.get("namespace"))

        await write_status(cronjob, compute, send=send, reread=reread)


def _namespace_terminating(exc: APIError) -> bool:
    causes = (exc.details or {}).get("causes") or ()
    return any(cause.get("reason") == "NamespaceTerminating" for cause in causes)
