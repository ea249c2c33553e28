"""cgroup v1: the kernel parks the tasks itself (``memory.oom_control``).

``oom_kill_disable`` = 1 on the container's cgroup and on the pod's (whose limit, the sum of
the containers', is hit as soon as a lone container's is): a task that cannot be charged
sleeps in the kernel (``under_oom 1``) instead of being killed, and wakes when a resize
raises the limit. An eventfd per cgroup (``cgroup.event_control``) tells the agent at once.
A cgroup counts as parked while ``under_oom`` reads 1 *and* the eventfd fired since the
last resize: right after a resize raises the limit the kernel has woken the sleepers but
they may not have run yet (``under_oom`` drops when they do), so the flag alone would report
a pause that is over; a task that is still short re-enters the wait and fires the eventfd.
Giving up writes ``oom_kill_disable`` = 0: the kernel wakes the sleepers, and those still
over the limit meet its OOM killer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence

from ..cgroups.base import CgroupError
from ..context import NodeContext
from ..worker import PodWorker
from .base import Wake

__all__ = ["OomControlPause"]

log = logging.getLogger(__name__)


class OomControlPause:
    name = "oom-control"
    how = "cgroup v1 memory.oom_control"

    def __init__(self, ctx: NodeContext, wake: Wake) -> None:
        self.ctx = ctx
        self.wake = wake
        self._notified: set[str] = set()
        """Cgroups whose eventfd fired since the last resize."""

    def _targets(self, w: PodWorker, container: str) -> tuple[str, str]:
        return self.ctx.paths.pod(w.uid), self.ctx.paths.container(w.uid, container)

    def arm(self, w: PodWorker, container: str) -> None:
        driver = self.ctx.driver
        for target in self._targets(w, container):
            if target in w.oom_fds:
                continue
            try:
                driver.set_oom_kill_disable(target, True)
                fd = driver.open_oom_notifier(target)
            except (CgroupError, OSError) as exc:
                log.warning("%s/%s: memory pause not available: %s", w.key, container, exc)
                return
            w.oom_fds[target] = fd
            asyncio.get_running_loop().add_reader(fd, self._on_oom, w, fd, target)

    def _on_oom(self, w: PodWorker, fd: int, target: str) -> None:
        with contextlib.suppress(OSError):
            os.read(fd, 8)
        self._notified.add(target)
        self.wake(w)

    def _close(self, w: PodWorker, target: str) -> None:
        self._notified.discard(target)
        fd = w.oom_fds.pop(target, None)
        if fd is None:
            return
        asyncio.get_running_loop().remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def disarm(self, w: PodWorker) -> None:
        for target in list(w.oom_fds):
            self._close(w, target)

    def armed(self, w: PodWorker, container: str) -> bool:
        return self.ctx.paths.container(w.uid, container) in w.oom_fds

    def _under_oom(self, path: str) -> bool:
        if path not in self._notified:
            return False
        with contextlib.suppress(CgroupError, OSError):
            return self.ctx.driver.under_oom(path)
        return False

    def parked(self, w: PodWorker, container: str) -> bool:
        pod, path = self._targets(w, container)
        return self.armed(w, container) and (self._under_oom(pod) or self._under_oom(path))

    def resume(self, w: PodWorker) -> None:
        """Raising ``memory.limit_in_bytes`` wakes the sleepers; what is still parked after
        this resize is what notifies again."""
        for target in w.oom_fds:
            self._notified.discard(target)

    def give_up(self, w: PodWorker, containers: Sequence[str]) -> None:
        pod = self.ctx.paths.pod(w.uid)
        for target in [pod, *(self.ctx.paths.container(w.uid, c) for c in containers)]:
            self._close(w, target)  # re-armed (and re-registered) if the container restarts
            try:
                self.ctx.driver.set_oom_kill_disable(target, False)
            except (CgroupError, OSError) as exc:
                log.warning("%s: could not re-enable the OOM killer on %s: %s", w.key, target, exc)

    def close(self) -> None:
        pass
