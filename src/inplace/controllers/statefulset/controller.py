"""The StatefulSet controller (upstream's ``pkg/controller/statefulset``): being written."""

from __future__ import annotations

from ..base import Context, QueueController

__all__ = ["StatefulSetController"]


class StatefulSetController(QueueController):
    name = "statefulset-controller"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
