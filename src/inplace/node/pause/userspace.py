"""No writable cgroups: a userspace monitor SIGSTOPs a container as its memory nears the limit.

Best effort, and documented as such: nothing in the kernel enforces the limit on such a node
(the ``none`` driver records it), so the monitor samples each armed container's memory (the
resident set of its processes, as the ``none`` driver measures usage) every
:data:`SAMPLE_EVERY` seconds and, at :func:`~inplace.node.cgroups.base.pause_threshold` of the
limit, SIGSTOPs the container's process groups (every group of its processes but the shim's,
which only waits). An allocation faster than the sampling overshoots the limit before it is
stopped; a process that leaves its process group is stopped only through its own group.
A resize sends SIGCONT (the next sample stops them again if the limit is still too small);
a timed-out pause SIGKILLs them and counts an OOM kill (:meth:`NoneDriver.record_oom_kill`),
so the container is reported ``OOMKilled`` as it would have been.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..cgroups.base import CgroupError, pause_threshold
from ..cgroups.none import NoneDriver
from ..context import NodeContext
from ..worker import PodWorker
from .base import Wake

__all__ = ["SAMPLE_EVERY", "SigstopPause", "process_groups"]

log = logging.getLogger(__name__)

SAMPLE_EVERY: Final = 0.05
"""Seconds between two samples of the armed containers' memory."""


def process_groups(pids: Sequence[int]) -> list[int]:
    """The process groups of ``pids``, except session leaders' own (the shim's): those are
    what the monitor stops, continues and kills."""
    groups: list[int] = []
    for pid in pids:
        try:
            pgid, sid = os.getpgid(pid), os.getsid(pid)
        except ProcessLookupError:
            continue
        if pgid != sid and pgid not in groups:
            groups.append(pgid)
    return groups


@dataclass
class _Armed:
    w: PodWorker
    container: str
    path: str
    stopped: list[int] | None = None
    """The process groups SIGSTOPped (None while running)."""


class SigstopPause:
    name = "sigstop"
    how = "SIGSTOP from the node agent (no writable cgroups: best effort, memory polled)"

    def __init__(self, ctx: NodeContext, driver: NoneDriver, wake: Wake) -> None:
        self.ctx = ctx
        self.driver = driver
        self.wake = wake
        self._armed: dict[str, _Armed] = {}
        self._task: asyncio.Task[None] | None = None

    def arm(self, w: PodWorker, container: str) -> None:
        path = self.ctx.paths.container(w.uid, container)
        current = self._armed.get(path)
        if current is not None and current.w is w:
            return
        self._armed[path] = _Armed(w, container, path)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._monitor(), name="memory-pause-monitor")

    async def _monitor(self) -> None:
        while self._armed:
            try:
                over = await asyncio.to_thread(self._sample, list(self._armed.values()))
            except Exception:  # a sampling failure must not end the monitor
                log.exception("memory pause monitor")
                over = []
            for armed, limit in over:
                if self._stop(armed, limit):
                    self.wake(armed.w)
            await asyncio.sleep(SAMPLE_EVERY)

    def _sample(self, armed: list[_Armed]) -> list[tuple[_Armed, int]]:
        """The running containers at their threshold, with the limit they were measured
        against (read in a thread: psutil walks their processes)."""
        over = []
        for a in armed:
            if a.stopped is not None or a.w.stopping:
                continue
            try:
                limit = self.driver.read(a.path).memory_limit_bytes
                if limit is None:
                    continue
                if self.driver.usage(a.path).memory_usage_bytes >= pause_threshold(limit):
                    over.append((a, limit))
            except (CgroupError, OSError):
                continue
        return over

    def _stop(self, a: _Armed, limit: int) -> bool:
        """SIGSTOP the container's groups, on the loop, unless a resize (or the end of the
        pod) came between the sample and now; whether it was stopped."""
        if self._armed.get(a.path) is not a or a.stopped is not None or a.w.stopping:
            return False
        try:
            if self.driver.read(a.path).memory_limit_bytes != limit:
                return False
            groups = process_groups(self.driver.pids(a.path))
        except (CgroupError, OSError):
            return False
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGSTOP)
        a.stopped = groups
        return True

    def _signal(self, a: _Armed, sig: signal.Signals) -> None:
        groups = set(a.stopped or ())
        with contextlib.suppress(CgroupError, OSError):
            groups.update(process_groups(self.driver.pids(a.path)))
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)

    def _of(self, w: PodWorker) -> list[_Armed]:
        return [a for a in self._armed.values() if a.w is w]

    def disarm(self, w: PodWorker) -> None:
        for a in self._of(w):
            del self._armed[a.path]
            if a.stopped is not None:
                self._signal(a, signal.SIGCONT)

    def armed(self, w: PodWorker, container: str) -> bool:
        a = self._armed.get(self.ctx.paths.container(w.uid, container))
        return a is not None and a.w is w

    def parked(self, w: PodWorker, container: str) -> bool:
        a = self._armed.get(self.ctx.paths.container(w.uid, container))
        return a is not None and a.w is w and a.stopped is not None

    def resume(self, w: PodWorker) -> None:
        for a in self._of(w):
            if a.stopped is not None:
                self._signal(a, signal.SIGCONT)
                a.stopped = None

    def give_up(self, w: PodWorker, containers: Sequence[str]) -> None:
        for a in self._of(w):
            if a.container not in containers:
                continue
            del self._armed[a.path]  # re-armed when the container starts again
            with contextlib.suppress(CgroupError):
                self.driver.record_oom_kill(a.path)
            self._signal(a, signal.SIGKILL)

    def close(self) -> None:
        """Stopped containers stay stopped, as frozen and parked ones do on the other setups:
        the next agent re-arms them and finds them over their threshold again."""
        if self._task is not None:
            self._task.cancel()
        self._armed.clear()
