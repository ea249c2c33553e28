"""cgroup v2: ``memory.high`` just under ``memory.max`` throttles, ``cgroup.freeze`` parks.

v2 has no ``oom_control``. The driver's pause mode (:meth:`V2Driver.set_oom_kill_disable`)
keeps ``memory.max`` as the limit and puts ``memory.high`` just under it; crossing
``memory.high`` makes the kernel throttle the tasks and count a ``high`` event in
``memory.events``, whose change the agent sees through inotify (one instance for the node,
one watch per container). It then writes ``cgroup.freeze`` = 1, parking the tasks before
``memory.max`` is reached. A resize raises both files and :meth:`FreezePause.resume` thaws;
a timed-out pause lifts ``memory.high`` and thaws, so a task that needs more than
``memory.max`` is OOM-killed by the kernel as it would have been.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..cgroups.base import CgroupError
from ..cgroups.v2 import V2Driver
from ..context import NodeContext
from ..inotify import IN_IGNORED, IN_MODIFY, Inotify
from ..worker import PodWorker
from .base import Wake

__all__ = ["FreezePause"]

log = logging.getLogger(__name__)


@dataclass
class _Watch:
    w: PodWorker
    container: str
    path: str
    wd: int
    high: int
    """The ``high`` count already answered."""


class FreezePause:
    name = "freeze"
    how = "cgroup v2 memory.high (just under memory.max) and cgroup.freeze"

    def __init__(self, ctx: NodeContext, driver: V2Driver, wake: Wake) -> None:
        self.ctx = ctx
        self.driver = driver
        self.wake = wake
        self._inotify: Inotify | None = None
        self._by_path: dict[str, _Watch] = {}
        self._by_wd: dict[int, _Watch] = {}

    def _notifier(self) -> Inotify:
        if self._inotify is None:
            self._inotify = Inotify()
            asyncio.get_running_loop().add_reader(self._inotify.fd, self._on_events)
        return self._inotify

    def arm(self, w: PodWorker, container: str) -> None:
        path = self.ctx.paths.container(w.uid, container)
        try:
            self.driver.set_oom_kill_disable(path, True)
            if self.driver.read(path).memory_limit_bytes is None:
                return  # no limit: nothing to pause at
            high = self.driver.memory_events(path).get("high", 0)
            old = self._by_path.get(path)
            if old is not None and old.w is w:
                old.high = high
                return
            wd = self._notifier().add_watch(self.driver.events_file(path), IN_MODIFY)
        except (CgroupError, OSError) as exc:
            log.warning("%s/%s: memory pause not available: %s", w.key, container, exc)
            return
        watch = _Watch(w, container, path, wd, high)
        self._by_path[path] = watch
        self._by_wd[wd] = watch

    def _on_events(self) -> None:
        assert self._inotify is not None
        for wd, mask in self._inotify.read():
            watch = self._by_wd.get(wd)
            if watch is None:
                continue
            if mask & IN_IGNORED:  # the cgroup went away
                self._forget(watch, remove=False)
                continue
            self._check(watch)

    def _check(self, watch: _Watch) -> None:
        """``memory.events`` changed: a new ``high`` event parks the container."""
        try:
            high = self.driver.memory_events(watch.path).get("high", 0)
            if high <= watch.high:
                return
            watch.high = high
            if watch.w.stopping or self.driver.frozen(watch.path):
                return
            self.driver.freeze(watch.path)
        except (CgroupError, OSError) as exc:
            log.warning("%s/%s: could not freeze: %s", watch.w.key, watch.container, exc)
            return
        self.wake(watch.w)

    def _forget(self, watch: _Watch, *, remove: bool = True) -> None:
        self._by_path.pop(watch.path, None)
        self._by_wd.pop(watch.wd, None)
        if remove and self._inotify is not None:
            self._inotify.rm_watch(watch.wd)

    def _watches(self, w: PodWorker) -> list[_Watch]:
        return [x for x in self._by_path.values() if x.w is w]

    def disarm(self, w: PodWorker) -> None:
        for watch in self._watches(w):
            self._forget(watch)

    def armed(self, w: PodWorker, container: str) -> bool:
        watch = self._by_path.get(self.ctx.paths.container(w.uid, container))
        return watch is not None and watch.w is w

    def parked(self, w: PodWorker, container: str) -> bool:
        if not self.armed(w, container):
            return False
        with contextlib.suppress(CgroupError, OSError):
            return self.driver.frozen(self.ctx.paths.container(w.uid, container))
        return False

    def resume(self, w: PodWorker) -> None:
        for watch in self._watches(w):
            with contextlib.suppress(CgroupError, OSError):
                if self.driver.frozen(watch.path):
                    watch.high = self.driver.memory_events(watch.path).get("high", 0)
                    self.driver.thaw(watch.path)

    def give_up(self, w: PodWorker, containers: Sequence[str]) -> None:
        for watch in self._watches(w):
            if watch.container not in containers:
                continue
            self._forget(watch)  # re-armed when the container starts again
            try:
                self.driver.set_oom_kill_disable(watch.path, False)
                self.driver.thaw(watch.path)
            except (CgroupError, OSError) as exc:
                log.warning("%s/%s: could not end the pause: %s", w.key, watch.container, exc)

    def close(self) -> None:
        if self._inotify is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().remove_reader(self._inotify.fd)
            self._inotify.close()
            self._inotify = None
        self._by_path.clear()
        self._by_wd.clear()
