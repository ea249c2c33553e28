"""Restore from checkpoints: a SIGKILLed agent is harmless.

Before its first reconcile, a new agent reads every checkpoint (:mod:`.checkpoint`) and
re-adopts the processes they name (:meth:`~inplace.node.runtime.ProcessRuntime.adopt`
checks the PID's start time, so a recycled PID is never mistaken for the container). A
container that cannot be found any more is reported ``ContainerStatusUnknown`` (exit 137),
as upstream's kubelet does; one that was in back-off restarts now. Checkpoints of pods that
are gone or being deleted are reaped: their processes stopped, cgroup and checkpoint removed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from typing import Any

from .cgroups.base import CgroupError
from .checkpoint import PodCheckpoint
from .context import NodeContext
from .lifecycle import Lifecycle
from .model import NO_ALLOC, container_cgroup, rfc3339
from .pause import MemoryPause, wants_memory_pause
from .worker import PodWorker, pod_meta

__all__ = ["restore"]

log = logging.getLogger(__name__)


async def restore(
    ctx: NodeContext,
    lifecycle: Lifecycle,
    pause: MemoryPause,
    pods: Iterable[dict[str, Any]],
) -> None:
    """Re-adopt the pods of the checkpoints (``pods``: this node's pods in the cache)."""
    by_uid = {pod_meta(p).get("uid"): p for p in pods}
    for cp in ctx.checkpoints.load_all():
        pod = by_uid.get(cp.uid)
        if pod is None or pod_meta(pod).get("deletionTimestamp"):
            await _reap_orphan(ctx, lifecycle, cp)
            if pod is not None:
                await ctx.actions.confirm_deletion(cp)
            continue
        w = PodWorker.for_pod(pod, allocated=cp.allocated)
        ctx.add_worker(w)
        _apply_checkpoint(ctx, pause, w, cp)
        lifecycle.start(w)


def _apply_checkpoint(
    ctx: NodeContext, pause: MemoryPause, w: PodWorker, cp: PodCheckpoint
) -> None:
    if cp.actual is not None:
        w.actual = dict(cp.actual)
    w.initialized = cp.initialized
    w.start_time = cp.start_time
    for name, cc in cp.containers.items():
        cs = w.containers.get(name)
        if cs is None:
            continue
        cs.restart_count = cc.restart_count
        cs.started_at = cc.started_at
        cs.last_state = cc.last_state
        cs.user = cc.user
        cs.state = "waiting" if cc.state == "running" else cc.state  # type: ignore[assignment]
        cs.exit_code, cs.reason, cs.finished_at = cc.exit_code, cc.reason, cc.finished_at
        if cc.state == "waiting" and cc.last_state:
            cs.restart_count += 1  # it was in back-off: the restart happens now
        if not (cc.state == "running" and cc.pid and cc.start_time and cc.log_path):
            continue
        proc = ctx.runtime.adopt(cc.pid, cc.start_time, cc.log_path)
        if proc is None:
            cs.state, cs.reason, cs.exit_code = "terminated", "ContainerStatusUnknown", 137
            cs.message = "The container could not be located when the agent restarted"
            cs.finished_at = rfc3339()
            continue
        path = ctx.paths.container(w.uid, name)
        if not ctx.driver.enforces_limits:  # none: membership is in memory
            with contextlib.suppress(CgroupError, OSError):
                ctx.driver.create(path, container_cgroup(w.allocated.get(name, NO_ALLOC)))
                ctx.driver.add_process(path, proc.pid)
        w.procs[name] = proc
        if wants_memory_pause(w):
            pause.arm(w, name)
        cs.state, cs.pid, cs.reason = "running", proc.pid, ""
        w.started_mono[name] = time.monotonic()
        log.info("re-adopted %s/%s pid %d", w.key, name, proc.pid)
    # Something of it runs, or its namespaces are pinned: its sandbox is there (the pod's
    # task finds it so again), so PodReadyToStartContainers does not flap on a restart.
    w.sandbox_ready = bool(w.procs) or ctx.sandboxes.exists(w.uid)


async def _reap_orphan(ctx: NodeContext, lifecycle: Lifecycle, cp: PodCheckpoint) -> None:
    for cc in cp.containers.values():
        if cc.pid and cc.start_time and cc.log_path and cc.state == "running":
            proc = ctx.runtime.adopt(cc.pid, cc.start_time, cc.log_path)
            if proc is not None:
                await ctx.runtime.stop(proc, grace_period=0)
    await lifecycle.remove_cgroup(cp.uid)
    await lifecycle.remove_sandbox(cp.uid)
    ctx.checkpoints.remove(cp.uid)
