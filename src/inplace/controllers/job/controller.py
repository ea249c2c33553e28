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

import copy
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.timestamps import parse_rfc3339
from inplace.client import (
    JOBS,
    PODS,
    APINotFoundError,
    key_of,
)

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key
from ..expectations import Expectations
from ..pods import (
    PodControl,
    controller_of,
    is_terminating,
    lifecycle_signature,
    uid_of,
    with_type,
)
from . import model as m
from .sync import MAX_POD_CREATE_DELETE_PER_SYNC, JobSync, has_finalizer, remove_finalizer_patch

__all__ = ["MAX_POD_CREATE_DELETE_PER_SYNC", "JobController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


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
            if ref is not None and ref.get("uid") == uid_of(job) and has_finalizer(pod):
                self.orphans.add(key_of(pod))
                self.queue.add(f"pod:{key_of(pod)}")

    def _job_key(self, pod: Mapping[str, Any]) -> str | None:
        return controller_key(pod, "Job", self.jobs)

    def _pod_added(self, pod: Obj) -> None:
        key = self._job_key(pod)
        if key is None:
            ref = controller_of(pod)
            if ref is not None and ref.get("kind") == "Job" and has_finalizer(pod):
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
        if not has_finalizer(new):
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
        return await JobSync(self, key, with_type(copy.deepcopy(cached), JOBS)).run()

    async def _sync_orphan_pod(self, pod_key: str) -> None:
        """Remove the tracking finalizer from a pod whose Job is gone or finished."""
        pod = self.pods.get(pod_key)
        if pod is None or not has_finalizer(pod):
            return
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "Job":
            job = self.jobs.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
            if job is not None and uid_of(job) == ref.get("uid") and not m.is_finished(job):
                return
        try:
            await self.pod_control.patch(pod, remove_finalizer_patch())
        except APINotFoundError:
            pass
