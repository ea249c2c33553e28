"""The node's ledger: what its admitted pods hold, and the order deferred resizes retry in.

The ledger is the agent's own record (allocations, not usage): a new pod is admitted and a
resize is applied only if it fits what the others hold, as kubelet's admission does. When
room appears (a pod ended, shrank or went away) the deferred resizes are reconsidered at
once, in DESIGN.md's order, which is the kubelet's (the work queue is FIFO and each fit
check is atomic on the loop, so the first in line gets the room first). As the kubelet's
``retryPendingResizes``, an ``Infeasible`` resize is not retried: only a new resize of that
pod is looked at again.
"""

from __future__ import annotations

from .context import NodeContext
from .model import PendingResize, desired_allocs, pod_allocated_requests, retry_order

__all__ = ["Ledger"]


class Ledger:
    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    def allocatable(self) -> tuple[int, int]:
        return (self.ctx.config.cpu_milli, self.ctx.config.memory_bytes)

    def used(self, *, exclude: str | None = None) -> tuple[int, int]:
        """(milli-CPU, bytes) the admitted pods hold, but ``exclude`` (a uid)."""
        cpu = mem = 0
        for w in self.ctx.workers.values():
            if w.uid == exclude or not w.holds_room():
                continue
            c, m = w.ledger()
            cpu += c
            mem += m
        return cpu, mem

    def active_pods(self) -> int:
        return sum(1 for w in self.ctx.workers.values() if w.holds_room())

    def deferred_order(self) -> list[str]:
        """The keys of the pods whose resize waits for room, first to be retried first."""
        pending = []
        for w in self.ctx.workers.values():
            decision = w.resize_conditions.get("PodResizePending")
            if decision is None or decision.condition is None:
                continue
            if decision.condition.get("reason") == "Infeasible":
                continue
            resizable = set(w.resizable())
            desired = dict(w.allocated)
            desired.update((n, a) for n, a in desired_allocs(w.pod).items() if n in resizable)
            old_cpu, old_mem = pod_allocated_requests(w.pod, w.allocated)
            new_cpu, new_mem = pod_allocated_requests(w.pod, desired)
            increases = new_cpu > old_cpu or new_mem > old_mem
            current = {
                c.get("type"): c for c in (w.pod.get("status") or {}).get("conditions") or ()
            }
            pending.append(
                PendingResize(
                    key=w.key,
                    increases=increases,
                    priority=int(w.spec.get("priority") or 0),
                    guaranteed=(w.pod.get("status") or {}).get("qosClass") == "Guaranteed",
                    pending_since=(current.get("PodResizePending") or {}).get(
                        "lastTransitionTime", ""
                    ),
                )
            )
        return retry_order(pending)

    def retry_deferred(self) -> None:
        """Room may have appeared: reconcile the deferred resizes now, in order."""
        for key in self.deferred_order():
            self.ctx.queue.add(key)
