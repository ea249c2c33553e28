"""Memory pause: a pod that opts in (annotation ``inplace.dev/oom-kill-disable: "true"``) is
parked at its memory limit instead of being OOM-killed, and goes on when a resize raises it.

cgroup v1: ``memory.oom_control`` = 1 on the container's cgroup and on the pod's (whose
limit, the sum of the containers', is hit as soon as a lone container's is) parks the tasks,
and an eventfd per cgroup tells the agent at once (no polling); the pod then gets condition
``MemoryPaused`` and an event, and a resize that raises the limit wakes it. Other drivers:
not available yet (logged), the container is OOM-killed as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from inplace.api.annotations import OOM_KILL_DISABLE

from .cgroups.base import CgroupError, CgroupUnsupported
from .context import NodeContext
from .worker import PodWorker, pod_annotation

__all__ = ["MemoryPause", "wants_memory_pause"]

log = logging.getLogger(__name__)


def wants_memory_pause(w: PodWorker) -> bool:
    return pod_annotation(w.pod, OOM_KILL_DISABLE) == "true"


class MemoryPause:
    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    def arm(self, w: PodWorker, name: str) -> None:
        """Pause container ``name`` (and its pod) at the memory limit instead of killing it."""
        path = self.ctx.paths.container(w.uid, name)
        driver = self.ctx.driver
        for target in (self.ctx.paths.pod(w.uid), path):
            if target in w.oom_fds:
                continue
            try:
                if driver.name != "v1":
                    raise CgroupUnsupported(f"memory pause needs cgroup v1, not {driver.name}")
                driver.set_oom_kill_disable(target, True)
                fd = driver.open_oom_notifier(target)
            except (CgroupError, OSError) as exc:
                log.warning("%s/%s: memory pause not available: %s", w.key, name, exc)
                return
            w.oom_fds[target] = fd
            asyncio.get_running_loop().add_reader(fd, self._on_oom, w, fd)

    def _on_oom(self, w: PodWorker, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.read(fd, 8)
        self.ctx.queue.add(w.key)

    def disarm(self, w: PodWorker) -> None:
        loop = asyncio.get_running_loop()
        for fd in w.oom_fds.values():
            loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        w.oom_fds.clear()

    def watched(self, w: PodWorker) -> bool:
        """Whether the pod has a ``MemoryPaused`` condition to keep up to date."""
        return bool(w.oom_fds or w.memory_paused)

    def condition(self, w: PodWorker) -> dict[str, Any] | None:
        """The ``MemoryPaused`` condition (None when no container is parked); queues the
        ``MemoryPaused`` event when a container becomes parked."""
        driver, paths = self.ctx.driver, self.ctx.paths

        def under_oom(path: str) -> bool:
            with contextlib.suppress(CgroupError, OSError):
                return driver.under_oom(path)
            return False

        pod_paused = under_oom(paths.pod(w.uid))
        paused = [
            name
            for name, cs in w.containers.items()
            if cs.state == "running"
            and paths.container(w.uid, name) in w.oom_fds
            and (pod_paused or under_oom(paths.container(w.uid, name)))
        ]
        if paused != w.memory_paused:
            fresh = [n for n in paused if n not in w.memory_paused]
            if fresh:
                message = (
                    f"containers {fresh} reached their memory limit and are paused (not killed) "
                    "until the limit is raised"
                )
                w.pending_events.append(("MemoryPaused", message, True))
            w.memory_paused = paused
        if not paused:
            return None
        return {
            "status": "True",
            "reason": "MemoryLimitReached",
            "message": f"containers paused at their memory limit: [{' '.join(paused)}]",
        }
