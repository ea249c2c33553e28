"""Memory pause: a pod that opts in (``inplace.dev/oom-kill-disable: "true"``) is parked at its
memory limit instead of being OOM-killed, and goes on when a resize raises the limit.

How depends on the node (its label ``inplace.dev/memory-pause`` says which, and so does every
``MemoryPaused`` message): cgroup v1's ``memory.oom_control`` (:mod:`.v1`), cgroup v2's
``memory.high`` + ``cgroup.freeze`` (:mod:`.v2`), or, without writable cgroups, a userspace
monitor that SIGSTOPs the container (:mod:`.userspace`, best effort). :class:`MemoryPause`
is what the rest of the agent talks to, whatever the mechanism: it arms containers as they
start, builds the pod's ``MemoryPaused`` condition (which containers, how, and what happens
next: the resize asked for, why it waits, when the pause times out) and its event, resumes
the containers after a resize, and enforces ``inplace.dev/pause-timeout``: a pod still paused
that long is handed to the kernel's OOM killer as it would have been (``give_up``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from inplace.api.annotations import (
    MEMORY_MAX,
    OOM_KILL_DISABLE,
    PAUSE_TIMEOUT,
    parse_memory_max,
    parse_pause_timeout,
)
from inplace.api.conditions import find_condition
from inplace.api.memorypause import LIMIT_REACHED, paused_message
from inplace.api.timestamps import rfc3339

from ..cgroups.none import NoneDriver
from ..cgroups.v2 import V2Driver
from ..context import NodeContext
from ..model import NO_ALLOC, Alloc, desired_allocs
from ..worker import PodWorker, pod_annotation
from .base import PauseMechanism, Unavailable, Wake
from .userspace import SigstopPause
from .v1 import OomControlPause
from .v2 import FreezePause

__all__ = [
    "FreezePause",
    "MemoryPause",
    "OomControlPause",
    "PauseMechanism",
    "SigstopPause",
    "Unavailable",
    "mechanism_for",
    "next_step",
    "wants_memory_pause",
]

log = logging.getLogger(__name__)


def wants_memory_pause(w: PodWorker) -> bool:
    return pod_annotation(w.pod, OOM_KILL_DISABLE) == "true"


def mechanism_for(ctx: NodeContext, wake: Wake, *, processes: bool = True) -> PauseMechanism:
    """The way this node pauses: by its cgroup driver; nothing without ``processes``."""
    driver = ctx.driver
    if not processes:
        return Unavailable()
    if isinstance(driver, V2Driver):
        return FreezePause(ctx, driver, wake)
    if isinstance(driver, NoneDriver):
        return SigstopPause(ctx, driver, wake)
    if driver.name == "v1":
        return OomControlPause(ctx, wake)
    return Unavailable()


class MemoryPause:
    """The memory pause of one node agent (see the module docstring)."""

    def __init__(self, ctx: NodeContext, *, processes: bool = True) -> None:
        self.ctx = ctx
        self.mechanism = mechanism_for(ctx, self._wake, processes=processes)

    @property
    def name(self) -> str:
        return self.mechanism.name

    def _wake(self, w: PodWorker) -> None:
        self.ctx.queue.add(w.key)

    def arm(self, w: PodWorker, name: str) -> None:
        """Pause container ``name`` at its memory limit instead of killing it."""
        self.mechanism.arm(w, name)

    def disarm(self, w: PodWorker) -> None:
        self.mechanism.disarm(w)
        self._cancel_timer(w)

    def close(self) -> None:
        self.mechanism.close()

    def watched(self, w: PodWorker) -> bool:
        """Whether the pod has a ``MemoryPaused`` condition to keep up to date."""
        return bool(w.memory_paused) or any(self.mechanism.armed(w, n) for n in w.containers)

    def paused(self, w: PodWorker) -> list[str]:
        """The running containers parked now."""
        return [
            name
            for name, cs in w.containers.items()
            if cs.state == "running" and self.mechanism.parked(w, name)
        ]

    def resumed(self, w: PodWorker) -> None:
        """A resize was applied: parked containers go on (and a new pause starts a new clock)."""
        self.mechanism.resume(w)
        w.paused_since = None
        self._cancel_timer(w)

    # -- the timeout ---------------------------------------------------------------------

    def _timeout(self, w: PodWorker) -> float | None:
        value = pod_annotation(w.pod, PAUSE_TIMEOUT)
        if value is None:
            return None
        try:
            return parse_pause_timeout(value)
        except ValueError:
            return None  # validation refuses it; an old object may still carry one

    def _cancel_timer(self, w: PodWorker) -> None:
        if w.pause_timer is not None:
            w.pause_timer.cancel()
            w.pause_timer = None

    def enforce_timeout(self, w: PodWorker) -> None:
        """Hand the parked containers to the OOM killer once ``inplace.dev/pause-timeout``
        has passed since the pod was paused; otherwise make sure the pod is looked at then."""
        timeout = self._timeout(w)
        if w.paused_since is None or timeout is None:
            self._cancel_timer(w)
            return
        left = w.paused_since + timeout - time.monotonic()
        if left > 0:
            if w.pause_timer is None:
                loop = asyncio.get_running_loop()
                w.pause_timer = loop.call_later(left, self._wake, w)
            return
        paused = self.paused(w)
        self._cancel_timer(w)
        w.paused_since = None
        if not paused:
            return
        log.info("%s: paused for %s, giving up: %s", w.key, timeout, paused)
        self.mechanism.give_up(w, paused)
        w.pending_events.append(
            (
                "MemoryPauseTimeout",
                f"containers [{' '.join(paused)}] stayed paused at their memory limit for "
                f"{pod_annotation(w.pod, PAUSE_TIMEOUT)} ({PAUSE_TIMEOUT}): the OOM killer "
                "now acts as it would have without the pause",
                True,
            )
        )

    # -- the condition -------------------------------------------------------------------

    def condition(self, w: PodWorker) -> dict[str, Any] | None:
        """The ``MemoryPaused`` condition (None when no container is parked); queues the
        ``MemoryPaused`` event when a container becomes parked."""
        paused = self.paused(w)
        if paused != w.memory_paused:
            fresh = [n for n in paused if n not in w.memory_paused]
            if fresh:
                message = (
                    f"containers [{' '.join(fresh)}] reached their memory limit and are paused "
                    f"(not killed) by {self.mechanism.how} until the limit is raised"
                )
                w.pending_events.append(("MemoryPaused", message, True))
            w.memory_paused = paused
        if not paused:
            w.paused_since = None
            self._cancel_timer(w)
            return None
        if w.paused_since is None:
            w.paused_since = time.monotonic()
            w.paused_at = time.time()
        return {
            "status": "True",
            "reason": LIMIT_REACHED,
            "message": paused_message(paused, self.mechanism.how, *self._details(w, paused)),
        }

    def _details(self, w: PodWorker, paused: list[str]) -> list[str]:
        """What happens next, from what the pod says (pure but for the clock)."""
        details = [next_step(w.pod, paused, w.allocated)]
        timeout = self._timeout(w)
        if timeout is not None and w.paused_at is not None:
            details.append(
                f"OOM-killed at {rfc3339(w.paused_at + timeout)} if still paused "
                f"({PAUSE_TIMEOUT}: {pod_annotation(w.pod, PAUSE_TIMEOUT)})"
            )
        return details


def _condition(pod: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    cond = find_condition(pod, ctype)
    return cond if cond is not None and cond.get("status") == "True" else None


def next_step(pod: Mapping[str, Any], paused: list[str], allocated: Mapping[str, Alloc]) -> str:
    """The resize that would end the pause: pending (and why), asked for, or not yet."""
    pending = _condition(pod, "PodResizePending")
    if pending is not None:
        why = pending.get("message") or ""
        return f"the resize that raises the limit is pending ({pending.get('reason')}): {why}"
    if _condition(pod, "PodResizeInProgress") is not None:
        return "the resize that raises the limit is in progress"
    desired = desired_allocs(pod)
    wanted = {n: desired.get(n, NO_ALLOC).sizing.limits_memory for n in paused}
    for name in paused:
        held = allocated.get(name, NO_ALLOC).sizing.limits_memory
        asked = wanted[name]
        if asked is not None and held is not None and asked > held:
            return "a resize that raises the limit was asked for"
    cap = pod_annotation(pod, MEMORY_MAX)
    if cap is not None:
        try:
            ceiling = parse_memory_max(cap)
        except ValueError:
            return "waiting for a resize that raises the limit"
        if any(v is not None and v >= ceiling for v in wanted.values()):
            return f"{MEMORY_MAX} ({cap}) is reached: no automatic resize will raise it"
    return "waiting for a resize that raises the limit"
