"""The TTL-after-finished controller: delete a finished Job ``ttlSecondsAfterFinished`` after
it finished (upstream's ``pkg/controller/ttlafterfinished``), with foreground propagation so
its pods go first. The Job is read fresh before deleting, so a TTL extended meanwhile wins.
"""

from __future__ import annotations

import logging
from typing import Any

from inplace.client import JOBS, APIConflictError, APINotFoundError, key_of

from ..base import Context, QueueController
from ..pods import is_terminating, uid_of
from . import model as m

__all__ = ["TTLAfterFinishedController", "expires_in"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def expires_in(job: Obj, now: float) -> float | None:
    """Seconds until ``job`` may be deleted (<= 0: now), or None if it never expires."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or is_terminating(job):
        return None
    finished = m.finish_time(job)
    if finished is None:
        return None
    return finished + float(ttl) - now


class TTLAfterFinishedController(QueueController):
    name = "ttl-after-finished-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.jobs = ctx.informer(JOBS)
        self.jobs.add_handler(self._changed, lambda old, new: self._changed(new), None)

    def _changed(self, job: Obj) -> None:
        if expires_in(job, self.ctx.now()) is not None:
            self.enqueue(key_of(job))

    async def reconcile(self, key: str) -> float | None:
        job = self.jobs.get(key)
        if job is None:
            return None
        left = expires_in(job, self.ctx.now())
        if left is None:
            return None
        if left > 0:
            return left
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        try:
            fresh = await self.client.get(JOBS, name, namespace=namespace)
        except APINotFoundError:
            return None
        left = expires_in(fresh, self.ctx.now())
        if left is None:
            return None
        if left > 0:
            return left
        log.info("deleting job %s: ttlSecondsAfterFinished expired", key)
        try:
            await self.client.delete(
                JOBS,
                name,
                namespace=namespace,
                propagation_policy="Foreground",
                preconditions={"uid": uid_of(fresh)},
            )
        except (APINotFoundError, APIConflictError):
            pass
        return None
