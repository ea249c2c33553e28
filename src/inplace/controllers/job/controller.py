"""The Job controller (upstream's ``pkg/controller/job``, v1.33 behaviour).

Pods are created with the ``batch.kubernetes.io/job-tracking`` finalizer; a finished pod is
first recorded in ``status.uncountedTerminatedPods``, then its finalizer is removed, then it
moves into the ``succeeded``/``failed`` counters. So every pod is counted exactly once, even
when the controller dies between two of those writes, and a finished pod cannot vanish (be
garbage-collected) before it was counted.

``parallelism``, ``completions`` (NonIndexed and Indexed, with
``batch.kubernetes.io/job-completion-index`` on each pod and ``status.completedIndexes``),
``backoffLimit`` (with the 10 s doubling back-off before a new pod), ``activeDeadlineSeconds``,
the pod failure policy, ``suspend``; the interim ``FailureTarget``/``SuccessCriteriaMet``
conditions become ``Failed``/``Complete`` once no pod is terminating, as upstream does since
v1.31. The template's resources may change (validation allows nothing else): new pods get
them, running pods are resized in place by the workload-resize controller.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.client import (
    JOBS,
    PODS,
    APIError,
    APINotFoundError,
    key_of,
)

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key
from ..expectations import Expectations
from ..pods import (
    Ownership,
    PodControl,
    controller_of,
    deletion_order,
    is_active,
    is_ready,
    is_terminating,
    lifecycle_signature,
    pod_from_template,
    selector_of,
    uid_of,
    with_type,
)
from ..replicaset import slow_start_batches
from . import model as m

__all__ = ["MAX_POD_CREATE_DELETE_PER_SYNC", "JobController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MAX_POD_CREATE_DELETE_PER_SYNC = 500
_INDEX_LABEL = m.COMPLETION_INDEX


def _has_finalizer(pod: Mapping[str, Any]) -> bool:
    return m.TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def _remove_finalizer_patch() -> Obj:
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [m.TRACKING_FINALIZER]}}


class JobController(QueueController):
    name = "job-controller"
    workers = 5

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.jobs = ctx.informer(JOBS)
        self.pods = ctx.informer(PODS)
        self.recorder = ctx.recorder(self.name)
        self.pod_control = PodControl(self.client, self.recorder)
        self.expectations = Expectations(ctx.clock.monotonic)
        self.finalizers_pending: dict[str, set[str]] = {}
        """Job key → uids of pods whose finalizer removal was sent, not yet observed."""
        self.backoff: dict[str, m.BackoffRecord] = {}
        self.orphans: set[str] = set()
        self.jobs.add_handler(
            lambda j: self.enqueue(key_of(j)),
            self._job_updated,
            self._job_deleted,
        )
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)

    # -- handlers ------------------------------------------------------------------------

    def _job_updated(self, old: Obj, new: Obj) -> None:
        key = key_of(new)
        self.enqueue(key)
        deadline = (new.get("spec") or {}).get("activeDeadlineSeconds")
        start = (new.get("status") or {}).get("startTime")
        if (
            deadline is not None
            and start
            and deadline != (old.get("spec") or {}).get("activeDeadlineSeconds")
        ):
            try:
                passed = self.ctx.now() - parse_rfc3339(start).timestamp()
            except ValueError:
                return
            self.queue.add_after(key, max(0.0, float(deadline) - passed))

    def _job_deleted(self, job: Obj) -> None:
        key = key_of(job)
        self.expectations.forget(key)
        self.finalizers_pending.pop(key, None)
        self.backoff.pop(key, None)
        # Pods of a deleted Job must not keep their tracking finalizer forever.
        for pod in self.pods.by_index(NAMESPACE_INDEX, job["metadata"].get("namespace") or ""):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") == uid_of(job) and _has_finalizer(pod):
                self.orphans.add(key_of(pod))
                self.queue.add(f"pod:{key_of(pod)}")

    def _job_key(self, pod: Mapping[str, Any]) -> str | None:
        return controller_key(pod, "Job", self.jobs)

    def _pod_added(self, pod: Obj) -> None:
        key = self._job_key(pod)
        if key is None:
            ref = controller_of(pod)
            if ref is not None and ref.get("kind") == "Job" and _has_finalizer(pod):
                self.queue.add(f"pod:{key_of(pod)}")
            return
        if is_terminating(pod):
            self.expectations.deletion_observed(key)
        else:
            self.expectations.creation_observed(key)
        self.enqueue(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if lifecycle_signature(old) == lifecycle_signature(new):
            return  # e.g. a resize: nothing the Job counts changed
        key = self._job_key(new)
        if key is None:
            return
        if is_terminating(new) and not is_terminating(old):
            self.expectations.deletion_observed(key)
        if not _has_finalizer(new):
            pending = self.finalizers_pending.get(key)
            if pending is not None:
                pending.discard(uid_of(new))
        self.enqueue(key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._job_key(pod)
        if key is None:
            return
        if not is_terminating(pod):
            self.expectations.deletion_observed(key)
        pending = self.finalizers_pending.get(key)
        if pending is not None:
            pending.discard(uid_of(pod))
        self.enqueue(key)

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        if key.startswith("pod:"):
            await self._sync_orphan_pod(key[4:])
            return None
        cached = self.jobs.get(key)
        if cached is None:
            self.expectations.forget(key)
            self.backoff.pop(key, None)
            return None
        if m.is_finished(cached):
            self.backoff.pop(key, None)
            return None
        return await _JobSync(self, key, with_type(copy.deepcopy(cached), JOBS)).run()

    async def _sync_orphan_pod(self, pod_key: str) -> None:
        """Remove the tracking finalizer from a pod whose Job is gone or finished."""
        pod = self.pods.get(pod_key)
        if pod is None or not _has_finalizer(pod):
            return
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "Job":
            job = self.jobs.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
            if job is not None and uid_of(job) == ref.get("uid") and not m.is_finished(job):
                return
        try:
            await self.pod_control.patch(pod, _remove_finalizer_patch())
        except APINotFoundError:
            pass


class _JobSync:
    """One ``syncJob``."""

    def __init__(self, ctl: JobController, key: str, job: Obj) -> None:
        self.ctl = ctl
        self.client = ctl.client
        self.key = key
        self.job = job
        self.now = ctl.ctx.now()
        self.now_text = rfc3339(self.now)
        self.requeue: float | None = None

    def _later(self, delay: float) -> None:
        delay = max(delay, 0.0)
        self.requeue = delay if self.requeue is None else min(self.requeue, delay)

    async def run(self) -> float | None:
        job, ctl = self.job, self.ctl
        status = job.setdefault("status", {})
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        uncounted_succeeded = set(uncounted.get("succeeded") or [])
        uncounted_failed = set(uncounted.get("failed") or [])
        satisfied = ctl.expectations.satisfied(self.key)
        pods = await self._claim()
        expected_rm = set(ctl.finalizers_pending.get(self.key, set()))
        active_pods = [p for p in pods if is_active(p)]
        terminating = sum(
            1
            for p in pods
            if is_terminating(p)
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        ready = sum(1 for p in active_pods if is_ready(p))
        indexed = m.is_indexed(job)
        total = m.completions(job)

        def valid(pod: Mapping[str, Any]) -> bool:
            if not indexed:
                return True
            index = m.completion_index(pod)
            return index is not None and total is not None and index < total

        def new_finished(uncounted_set: set[str], failed: bool) -> list[Obj]:
            out = []
            for p in pods:
                uid = uid_of(p)
                if not _has_finalizer(p) or uid in uncounted_set or uid in expected_rm:
                    continue
                if not valid(p):
                    continue
                phase = (p.get("status") or {}).get("phase")
                if m.is_pod_failed(p, job) if failed else phase == "Succeeded":
                    out.append(p)
            return out

        new_succeeded = new_finished(uncounted_succeeded, False)
        new_failed = new_finished(uncounted_failed, True)
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        counted_new_failed = sum(1 for p in new_failed if m.match_pod_failure_policy(policy, p)[1])
        succeeded = (
            int(status.get("succeeded") or 0) + len(new_succeeded) + len(uncounted_succeeded)
        )
        failed = int(status.get("failed") or 0) + counted_new_failed + len(uncounted_failed)
        if not status.get("startTime") and not m.is_suspended(job):
            status["startTime"] = self.now_text
        backoff = m.new_backoff_record(
            ctl.backoff.get(self.key, m.BackoffRecord()), new_succeeded, new_failed
        )
        spec = job.get("spec") or {}
        finished: Obj | None = None
        conditions = status.get("conditions") or []
        met = m.find_condition(conditions, m.SUCCESS_CRITERIA_MET)
        if met is not None and met.get("status") == "True":
            finished = dict(met)
        if finished is None:
            target = m.find_condition(conditions, m.FAILURE_TARGET)
            if target is not None and target.get("status") == "True":
                finished = m.new_condition(
                    m.FAILED,
                    "True",
                    str(target.get("reason")),
                    str(target.get("message")),
                    self.now_text,
                )
            else:
                for p in pods:
                    if m.is_pod_failed(p, job):
                        message = m.match_pod_failure_policy(policy, p)[0]
                        if message is not None:
                            finished = m.new_condition(
                                m.FAILURE_TARGET,
                                "True",
                                m.REASON_POD_FAILURE_POLICY,
                                message,
                                self.now_text,
                            )
                            break
        if finished is None:
            if failed > int(spec.get("backoffLimit") or 0) or m.past_backoff_limit_on_failure(
                job, pods
            ):
                finished = m.new_condition(
                    m.FAILURE_TARGET,
                    "True",
                    m.REASON_BACKOFF_LIMIT,
                    "Job has reached the specified backoff limit",
                    self.now_text,
                )
            elif self._past_deadline():
                finished = m.new_condition(
                    m.FAILURE_TARGET,
                    "True",
                    m.REASON_DEADLINE,
                    "Job was active longer than specified deadline",
                    self.now_text,
                )
            elif spec.get("activeDeadlineSeconds") is not None and not m.is_suspended(job):
                self._later(self._deadline_remaining())
        succeeded_indexes: list[int] = []
        prev_succeeded_indexes: list[int] = []
        if indexed and total is not None:
            prev_succeeded_indexes = m.parse_indexes(status.get("completedIndexes"), total)
            succeeded_indexes = sorted(
                set(prev_succeeded_indexes)
                | {
                    i
                    for p in pods
                    if (p.get("status") or {}).get("phase") == "Succeeded"
                    and (i := m.completion_index(p)) is not None
                    and i < total
                }
            )
            succeeded = len(succeeded_indexes)
        active = len(active_pods)
        suspend_changed = False
        manage_error: BaseException | None = None
        if finished is not None:
            deleted, deleted_ready = await self._delete_active(active_pods, keep_finalizer=True)
            if deleted != active or not satisfied:
                finished = None
            active -= deleted
            terminating += deleted
            ready -= deleted_ready
        else:
            manage_called = False
            if satisfied and not is_terminating(job):
                try:
                    active, terminating, ready = await self._manage(
                        active_pods, succeeded, succeeded_indexes, terminating, ready, backoff
                    )
                except APIError as exc:
                    manage_error = exc
                manage_called = True
            if total is None:
                complete = succeeded > 0 and active == 0
            else:
                complete = succeeded >= total and active == 0
            if complete:
                finished = m.new_condition(
                    m.SUCCESS_CRITERIA_MET,
                    "True",
                    m.REASON_COMPLETIONS_REACHED,
                    "Reached expected number of succeeded pods",
                    self.now_text,
                )
            elif manage_called:
                if m.is_suspended(job):
                    status["conditions"], suspend_changed = m.ensure_condition(
                        status.get("conditions") or [],
                        m.SUSPENDED,
                        "True",
                        "JobSuspended",
                        "Job suspended",
                        self.now_text,
                    )
                    if suspend_changed:
                        ctl.recorder.event(job, "Normal", "Suspended", "Job suspended")
                else:
                    status["conditions"], suspend_changed = m.ensure_condition(
                        status.get("conditions") or [],
                        m.SUSPENDED,
                        "False",
                        "JobResumed",
                        "Job resumed",
                        self.now_text,
                    )
                    if suspend_changed:
                        ctl.recorder.event(job, "Normal", "Resumed", "Job resumed")
                        status["startTime"] = self.now_text
        needs_flush = (
            suspend_changed
            or active != int(status.get("active") or 0)
            or ready != status.get("ready")
            or terminating != status.get("terminating")
        )
        status["active"] = active
        status["ready"] = ready
        status["terminating"] = terminating
        await self._track(
            pods,
            finished,
            needs_flush,
            backoff,
            indexed,
            prev_succeeded_indexes,
            succeeded_indexes,
            terminating,
        )
        if manage_error is not None:
            raise manage_error
        return self.requeue

    # -- pieces ------------------------------------------------------------------------------

    async def _claim(self) -> list[Obj]:
        job = self.job
        namespace = job["metadata"].get("namespace") or ""

        async def can_adopt() -> bool:
            try:
                fresh = await self.client.get(JOBS, job["metadata"]["name"], namespace=namespace)
            except APINotFoundError:
                return False
            return uid_of(fresh) == uid_of(job) and not is_terminating(fresh)

        ownership = Ownership(
            self.client,
            PODS,
            job,
            selector_of(job),
            can_adopt=can_adopt,
            adopt_finalizers=(m.TRACKING_FINALIZER,),
        )
        return await ownership.claim(self.ctl.pods.by_index(NAMESPACE_INDEX, namespace))

    def _past_deadline(self) -> bool:
        spec = self.job.get("spec") or {}
        if spec.get("activeDeadlineSeconds") is None or m.is_suspended(self.job):
            return False
        return self._deadline_remaining() <= 0

    def _deadline_remaining(self) -> float:
        spec = self.job.get("spec") or {}
        start = (self.job.get("status") or {}).get("startTime")
        try:
            started = parse_rfc3339(str(start)).timestamp() if start else self.now
        except ValueError:
            started = self.now
        return float(spec.get("activeDeadlineSeconds") or 0) - (self.now - started)

    async def _delete_active(self, pods: list[Obj], *, keep_finalizer: bool) -> tuple[int, int]:
        """Delete pods; with ``keep_finalizer`` (the Job failed) they are then counted as
        failed, without (suspend, too many pods) the finalizer goes first so they are not."""

        async def one(pod: Obj) -> None:
            if not keep_finalizer and _has_finalizer(pod):
                await self.ctl.pod_control.patch(pod, _remove_finalizer_patch())
            await self.ctl.pod_control.delete(self.job, pod)

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        deleted = ready = 0
        error: BaseException | None = None
        for pod, result in zip(pods, results, strict=True):
            if result is None or isinstance(result, APINotFoundError):
                deleted += 1
                ready += int(is_ready(pod))
            elif isinstance(result, BaseException):
                if not keep_finalizer:
                    self.ctl.expectations.deletion_observed(self.key)
                error = error or result
        if error is not None and not isinstance(error, APIError):
            raise error
        return deleted, ready

    async def _manage(
        self,
        active_pods: list[Obj],
        succeeded: int,
        succeeded_indexes: list[int],
        terminating: int,
        ready: int,
        backoff: m.BackoffRecord,
    ) -> tuple[int, int, int]:
        """``manageJob``: delete extra pods or create missing ones; (active, terminating,
        ready) afterwards."""
        job, ctl = self.job, self.ctl
        active = len(active_pods)
        if m.is_suspended(job):
            ctl.expectations.expect_deletion_count(self.key, active)
            deleted, deleted_ready = await self._delete_active(
                deletion_order(active_pods), keep_finalizer=False
            )
            return active - deleted, terminating + deleted, ready - deleted_ready
        want = m.want_active(job, active, succeeded)
        remove = self._pods_to_remove(active_pods, max(0, active - want))
        if remove:
            remove = remove[:MAX_POD_CREATE_DELETE_PER_SYNC]
            ctl.expectations.expect_deletion_count(self.key, len(remove))
            deleted, deleted_ready = await self._delete_active(remove, keep_finalizer=False)
            return active - deleted, terminating + deleted, ready - deleted_ready
        held = terminating if m.only_replace_failed(job) else 0
        diff = want - held - active
        if diff <= 0:
            return active, terminating, ready
        wait = m.remaining_backoff(backoff, self.now)
        if wait > 0:
            self._later(max(wait, 1.0))
            return active, terminating, ready
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int] = []
        total = m.completions(job)
        if m.is_indexed(job) and total is not None:
            running = [i for p in active_pods if (i := m.completion_index(p)) is not None]
            indexes = m.first_pending_indexes(succeeded_indexes, running, diff, total)
            diff = len(indexes)
            if diff == 0:
                return active, terminating, ready
        ctl.expectations.expect_creations(self.key, diff)
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        if m.is_indexed(job):
            _add_index_env(template)
        created = 0
        error: APIError | ConnectionError | None = None
        remaining = diff
        for size in slow_start_batches(diff):
            batch_indexes, indexes = indexes[:size], indexes[size:]
            pods = [
                self._pod(template, batch_indexes[i] if batch_indexes else None)
                for i in range(size)
            ]
            results = await asyncio.gather(
                *(ctl.pod_control.create(job, pod) for pod in pods), return_exceptions=True
            )
            failed = 0
            for result in results:
                # A create the API server never answered is not expected either (as the
                # ReplicaSet controller: PodControl already sent it again for minutes).
                if isinstance(result, (APIError, ConnectionError)):
                    error, failed = result, failed + 1
                elif isinstance(result, BaseException):
                    raise result
                else:
                    created += 1
            remaining -= size
            if failed:
                ctl.expectations.lower_creations(self.key, failed + remaining)
                break
        if error is not None:
            raise error
        return active + created, terminating, ready

    def _pods_to_remove(self, active_pods: list[Obj], at_least: int) -> list[Obj]:
        """``activePodsForRemoval``: duplicate or out-of-range indexes first, then by
        upstream's deletion order."""
        remove: list[Obj] = []
        left = list(active_pods)
        total = m.completions(self.job)
        if m.is_indexed(self.job) and total is not None:
            seen: set[int] = set()
            left = []
            for pod in deletion_order(active_pods)[::-1]:
                index = m.completion_index(pod)
                if index is None or index >= total or index in seen:
                    remove.append(pod)
                else:
                    seen.add(index)
                    left.append(pod)
        if len(remove) < at_least:
            remove.extend(deletion_order(left)[: at_least - len(remove)])
        return remove

    def _pod(self, template: Obj, index: int | None) -> Obj:
        job = self.job
        name = job["metadata"]["name"]
        if index is None:
            return pod_from_template(template, job, extra_finalizers=(m.TRACKING_FINALIZER,))
        indexed = copy.deepcopy(template)
        meta = indexed.setdefault("metadata", {})
        meta.setdefault("annotations", {})[m.COMPLETION_INDEX] = str(index)
        meta.setdefault("labels", {})[_INDEX_LABEL] = str(index)
        indexed.setdefault("spec", {})["hostname"] = f"{name}-{index}"
        return pod_from_template(
            indexed,
            job,
            generate_name=f"{name}-{index}-",
            extra_finalizers=(m.TRACKING_FINALIZER,),
        )

    async def _track(
        self,
        pods: list[Obj],
        finished: Obj | None,
        needs_flush: bool,
        backoff: m.BackoffRecord,
        indexed: bool,
        prev_succeeded_indexes: list[int],
        succeeded_indexes: list[int],
        terminating: int,
    ) -> None:
        """``trackJobStatusAndRemoveFinalizers``: record finished pods as uncounted, remove
        their finalizers, move them into the counters, then finish the Job if it is done."""
        job, ctl = self.job, self.ctl
        status = job["status"]
        uncounted = status["uncountedTerminatedPods"]
        expected_rm = ctl.finalizers_pending.setdefault(self.key, set())
        with_finalizer = {
            uid_of(p) for p in pods if _has_finalizer(p) and uid_of(p) not in expected_rm
        }
        needs_flush = _clean_uncounted(status, with_finalizer) or needs_flush
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        total = m.completions(job) or 0
        to_release: list[Obj] = []
        new_indexes: list[int] = []
        uncounted_failed = set(uncounted.get("failed") or [])
        uncounted_succeeded = set(uncounted.get("succeeded") or [])
        for pod in pods:
            uid = uid_of(pod)
            if not _has_finalizer(pod) or uid in expected_rm:
                continue
            failed = m.is_pod_failed(pod, job)
            phase = (pod.get("status") or {}).get("phase")
            if not (is_terminating(job) or finished is not None or phase == "Succeeded" or failed):
                continue
            to_release.append(pod)
            index = m.completion_index(pod)
            if phase == "Succeeded" and uid not in uncounted_failed:
                if indexed:
                    if index is not None and index < total and index not in prev_succeeded_indexes:
                        new_indexes.append(index)
                        needs_flush = True
                elif uid not in uncounted_succeeded:
                    uncounted.setdefault("succeeded", []).append(uid)
                    uncounted_succeeded.add(uid)
                    needs_flush = True
            elif (
                (failed or (finished is not None and finished["type"] != m.SUCCESS_CRITERIA_MET))
                and uid not in uncounted_failed
                and (not indexed or (index is not None and index < total))
                and m.match_pod_failure_policy(policy, pod)[1]
            ):
                uncounted.setdefault("failed", []).append(uid)
                uncounted_failed.add(uid)
                needs_flush = True
            if (
                len(new_indexes) + len(uncounted_succeeded) + len(uncounted_failed)
                >= m.MAX_UNCOUNTED_PODS
            ):
                break
        if indexed:
            text = m.format_indexes([*succeeded_indexes, *new_indexes])
            if text != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["completedIndexes"] = text
            status["succeeded"] = len(m.parse_indexes(text, total))
        if finished is not None and finished["type"] == m.FAILURE_TARGET:
            if m.find_condition(status.get("conditions") or [], m.FAILURE_TARGET) is None:
                status["conditions"] = [*(status.get("conditions") or []), finished]
                needs_flush = True
            finished = m.new_condition(
                m.FAILED, "True", finished["reason"], finished["message"], self.now_text
            )
        if finished is not None and finished["type"] == m.SUCCESS_CRITERIA_MET:
            if m.find_condition(status.get("conditions") or [], m.SUCCESS_CRITERIA_MET) is None:
                status["conditions"] = [*(status.get("conditions") or []), finished]
                needs_flush = True
            finished = m.new_condition(
                m.COMPLETE, "True", finished["reason"], finished["message"], self.now_text
            )
        if needs_flush:
            await self._write_status()
            ctl.backoff[self.key] = backoff
            needs_flush = False
        if to_release:
            removed = await self._release(to_release)
            with_finalizer -= removed
            if _clean_uncounted(self.job["status"], with_finalizer):
                needs_flush = True
        job = self.job
        status = job["status"]
        if (
            finished is not None
            and not (
                (status.get("uncountedTerminatedPods") or {}).get("succeeded")
                or (status.get("uncountedTerminatedPods") or {}).get("failed")
            )
            and terminating == 0
        ):
            status["conditions"], _ = m.ensure_condition(
                status.get("conditions") or [],
                finished["type"],
                "True",
                finished["reason"],
                finished["message"],
                self.now_text,
            )
            if finished["type"] == m.COMPLETE:
                status["completionTime"] = self.now_text
            await self._write_status()
            if finished["type"] == m.COMPLETE:
                ctl.recorder.event(job, "Normal", "Completed", "Job completed")
            else:
                ctl.recorder.event(job, "Warning", finished["reason"], finished["message"])
            return
        if needs_flush:
            await self._write_status()

    async def _release(self, pods: list[Obj]) -> set[str]:
        """Remove the tracking finalizer; returns the uids for which it is gone."""
        expected = self.ctl.finalizers_pending.setdefault(self.key, set())
        for pod in pods:
            expected.add(uid_of(pod))

        async def one(pod: Obj) -> None:
            await self.ctl.pod_control.patch(pod, _remove_finalizer_patch())

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        removed: set[str] = set()
        for pod, result in zip(pods, results, strict=True):
            if result is None or isinstance(result, APINotFoundError):
                removed.add(uid_of(pod))
            else:
                expected.discard(uid_of(pod))
        return removed

    async def _write_status(self) -> None:
        updated: Obj = await self.client.update(JOBS, self.job, subresource="status")
        updated = with_type(updated, JOBS)
        updated.setdefault("status", {}).setdefault("uncountedTerminatedPods", {})
        self.job = updated


def _clean_uncounted(status: Obj, with_finalizer: set[str]) -> bool:
    """``cleanUncountedPodsWithoutFinalizers``: uncounted pods whose finalizer is gone move
    into the counters."""
    uncounted = status.setdefault("uncountedTerminatedPods", {})
    changed = False
    for name, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        uids = list(uncounted.get(name) or [])
        kept = [u for u in uids if u in with_finalizer]
        if len(kept) != len(uids):
            changed = True
            status[counter] = int(status.get(counter) or 0) + len(uids) - len(kept)
            if kept:
                uncounted[name] = kept
            else:
                uncounted.pop(name, None)
    return changed


def _add_index_env(template: Obj) -> None:
    """``addCompletionIndexEnvVariables``: ``JOB_COMPLETION_INDEX`` from the annotation."""
    spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if any(e.get("name") == m.COMPLETION_INDEX_ENV for e in env):
                continue
            env.append(
                {
                    "name": m.COMPLETION_INDEX_ENV,
                    "valueFrom": {
                        "fieldRef": {
                            "apiVersion": "v1",
                            "fieldPath": f"metadata.annotations['{m.COMPLETION_INDEX}']",
                        }
                    },
                }
            )
