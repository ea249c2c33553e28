"""The DaemonSet controller (upstream's ``pkg/controller/daemon``): one pod per eligible node.

Work in progress: this first version only registers itself so the controller manager can
start; the reconcile lands with the pure model beside it.
"""

from __future__ import annotations

from inplace.client import DAEMONSETS, key_of

from ..base import Context, QueueController

__all__ = ["DaemonSetController"]


class DaemonSetController(QueueController):
    name = "daemonset-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.daemon_sets = ctx.informer(DAEMONSETS)
        self.daemon_sets.add_handler(
            lambda ds: self.enqueue(key_of(ds)),
            lambda old, new: self.enqueue(key_of(new)),
            lambda ds: self.enqueue(key_of(ds)),
        )

    async def reconcile(self, key: str) -> float | None:
        return None
