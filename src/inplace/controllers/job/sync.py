"""One sync of a Job (upstream's ``syncJob``), as its steps: observe the pods, decide whether
the Job is finished, delete what is still active or create and remove pods, then record the
finished pods through the tracking finalizer (``trackJobStatusAndRemoveFinalizers``).

:class:`JobSync` is built by the controller for each key it reconciles and lives for that
one sync.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.client import (
    JOBS,
    PODS,
    APIError,
    APINotFoundError,
)

from ..base import NAMESPACE_INDEX
from ..pods import (
    Ownership,
    deletion_order,
    is_active,
    is_ready,
    is_terminating,
    pod_from_template,
    selector_of,
    uid_of,
    with_type,
)
from ..replicaset import slow_start_batches
from . import model as m

if TYPE_CHECKING:
    from .controller import JobController

__all__ = ["MAX_POD_CREATE_DELETE_PER_SYNC", "JobSync", "has_finalizer", "remove_finalizer_patch"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MAX_POD_CREATE_DELETE_PER_SYNC = 500
_INDEX_LABEL = m.COMPLETION_INDEX


def has_finalizer(pod: Mapping[str, Any]) -> bool:
    return m.TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def remove_finalizer_patch() -> Obj:
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [m.TRACKING_FINALIZER]}}


@dataclass
class _Observed:
    """What one sync counted of a Job's pods (the counts change as the sync acts)."""

    pods: list[Obj]
    active_pods: list[Obj]
    indexed: bool
    total: int | None
    active: int
    terminating: int
    ready: int
    succeeded: int
    failed: int
    backoff: m.BackoffRecord


class JobSync:
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
        """``syncJob`` as its steps: observe the pods, decide whether the Job is finished,
        then either delete what is still active or create and remove pods, and write it all
        down through the finalizer tracking."""
        satisfied = self.ctl.expectations.satisfied(self.key)
        seen = await self._observe()
        finished = self._finish_condition(seen)
        prev_indexes, succeeded_indexes = self._succeeded_indexes(seen)
        manage_error: BaseException | None = None
        suspend_changed = False
        if finished is not None:
            deleted, deleted_ready = await self._delete_active(
                seen.active_pods, keep_finalizer=True
            )
            if deleted != seen.active or not satisfied:
                finished = None
            seen.active -= deleted
            seen.terminating += deleted
            seen.ready -= deleted_ready
        else:
            manage_called = False
            if satisfied and not is_terminating(self.job):
                try:
                    seen.active, seen.terminating, seen.ready = await self._manage(
                        seen.active_pods,
                        seen.succeeded,
                        succeeded_indexes,
                        seen.terminating,
                        seen.ready,
                        seen.backoff,
                    )
                except APIError as exc:
                    manage_error = exc
                manage_called = True
            finished = self._complete_condition(seen)
            if finished is None and manage_called:
                suspend_changed = self._suspend_condition()
        status = self.job["status"]
        needs_flush = (
            suspend_changed
            or seen.active != int(status.get("active") or 0)
            or seen.ready != status.get("ready")
            or seen.terminating != status.get("terminating")
        )
        status["active"] = seen.active
        status["ready"] = seen.ready
        status["terminating"] = seen.terminating
        await self._track(
            seen.pods,
            finished,
            needs_flush,
            seen.backoff,
            seen.indexed,
            prev_indexes,
            succeeded_indexes,
            seen.terminating,
        )
        if manage_error is not None:
            raise manage_error
        return self.requeue

    # -- the steps of a sync -----------------------------------------------------------------

    async def _observe(self) -> _Observed:
        """The Job's pods as counted at the start of a sync: active, terminating, ready, the
        finished pods not yet counted, and the counters they will make."""
        job, ctl = self.job, self.ctl
        status = job.setdefault("status", {})
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        uncounted_succeeded = set(uncounted.get("succeeded") or [])
        uncounted_failed = set(uncounted.get("failed") or [])
        pods = await self._claim()
        expected_rm = set(ctl.finalizers_pending.get(self.key, set()))
        active_pods = [p for p in pods if is_active(p)]
        terminating = sum(
            1
            for p in pods
            if is_terminating(p)
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
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
                if not has_finalizer(p) or uid in uncounted_set or uid in expected_rm:
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
        if not status.get("startTime") and not m.is_suspended(job):
            status["startTime"] = self.now_text
        return _Observed(
            pods=pods,
            active_pods=active_pods,
            indexed=indexed,
            total=total,
            active=len(active_pods),
            terminating=terminating,
            ready=sum(1 for p in active_pods if is_ready(p)),
            succeeded=int(status.get("succeeded") or 0)
            + len(new_succeeded)
            + len(uncounted_succeeded),
            failed=int(status.get("failed") or 0) + counted_new_failed + len(uncounted_failed),
            backoff=m.new_backoff_record(
                ctl.backoff.get(self.key, m.BackoffRecord()), new_succeeded, new_failed
            ),
        )

    def _finish_condition(self, seen: _Observed) -> Obj | None:
        """The condition that finishes the Job before any pod is managed: success criteria
        already met, a failure target (set before, or from the pod failure policy), the
        back-off limit or the active deadline. None while it runs on (a deadline still ahead
        is scheduled)."""
        job = self.job
        status, spec = job["status"], job.get("spec") or {}
        conditions = status.get("conditions") or []
        met = m.find_condition(conditions, m.SUCCESS_CRITERIA_MET)
        if met is not None and met.get("status") == "True":
            return dict(met)
        target = m.find_condition(conditions, m.FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            return m.new_condition(
                m.FAILED,
                "True",
                str(target.get("reason")),
                str(target.get("message")),
                self.now_text,
            )
        policy = spec.get("podFailurePolicy")
        for p in seen.pods:
            if m.is_pod_failed(p, job):
                message = m.match_pod_failure_policy(policy, p)[0]
                if message is not None:
                    return m.new_condition(
                        m.FAILURE_TARGET,
                        "True",
                        m.REASON_POD_FAILURE_POLICY,
                        message,
                        self.now_text,
                    )
        if seen.failed > int(spec.get("backoffLimit") or 0) or m.past_backoff_limit_on_failure(
            job, seen.pods
        ):
            return m.new_condition(
                m.FAILURE_TARGET,
                "True",
                m.REASON_BACKOFF_LIMIT,
                "Job has reached the specified backoff limit",
                self.now_text,
            )
        if self._past_deadline():
            return m.new_condition(
                m.FAILURE_TARGET,
                "True",
                m.REASON_DEADLINE,
                "Job was active longer than specified deadline",
                self.now_text,
            )
        if spec.get("activeDeadlineSeconds") is not None and not m.is_suspended(job):
            self._later(self._deadline_remaining())
        return None

    def _succeeded_indexes(self, seen: _Observed) -> tuple[list[int], list[int]]:
        """An Indexed Job's completed indexes before and after this sync (empty lists for a
        NonIndexed one); the succeeded count becomes the number of completed indexes."""
        if not seen.indexed or seen.total is None:
            return [], []
        total = seen.total
        previous = m.parse_indexes(self.job["status"].get("completedIndexes"), total)
        now = sorted(
            set(previous)
            | {
                i
                for p in seen.pods
                if (p.get("status") or {}).get("phase") == "Succeeded"
                and (i := m.completion_index(p)) is not None
                and i < total
            }
        )
        seen.succeeded = len(now)
        return previous, now

    def _complete_condition(self, seen: _Observed) -> Obj | None:
        """``SuccessCriteriaMet`` once enough pods succeeded and none is active."""
        if seen.total is None:
            complete = seen.succeeded > 0 and seen.active == 0
        else:
            complete = seen.succeeded >= seen.total and seen.active == 0
        if not complete:
            return None
        return m.new_condition(
            m.SUCCESS_CRITERIA_MET,
            "True",
            m.REASON_COMPLETIONS_REACHED,
            "Reached expected number of succeeded pods",
            self.now_text,
        )

    def _suspend_condition(self) -> bool:
        """Keep the ``Suspended`` condition in step with ``spec.suspend`` (an event when it
        flips; a resumed Job starts its clock again). Whether it changed."""
        job, status = self.job, self.job["status"]
        if m.is_suspended(job):
            status["conditions"], changed = m.ensure_condition(
                status.get("conditions") or [],
                m.SUSPENDED,
                "True",
                "JobSuspended",
                "Job suspended",
                self.now_text,
            )
            if changed:
                self.ctl.recorder.event(job, "Normal", "Suspended", "Job suspended")
            return changed
        status["conditions"], changed = m.ensure_condition(
            status.get("conditions") or [],
            m.SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            self.now_text,
        )
        if changed:
            self.ctl.recorder.event(job, "Normal", "Resumed", "Job resumed")
            status["startTime"] = self.now_text
        return changed

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
            if not keep_finalizer and has_finalizer(pod):
                await self.ctl.pod_control.patch(pod, remove_finalizer_patch())
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
            uid_of(p) for p in pods if has_finalizer(p) and uid_of(p) not in expected_rm
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
            if not has_finalizer(pod) or uid in expected_rm:
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
            await self.ctl.pod_control.patch(pod, remove_finalizer_patch())

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
