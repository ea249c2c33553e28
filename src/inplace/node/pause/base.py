"""What a way of pausing a container at its memory limit offers the node agent.

Three implementations, one per cgroup setup (:func:`inplace.node.pause.mechanism_for` picks):
:class:`~.v1.OomControlPause`, :class:`~.v2.FreezePause`, :class:`~.userspace.SigstopPause`;
and :class:`Unavailable` for nodes without processes. Each is told when a container starts
(:meth:`arm`) and ends (:meth:`disarm`), answers whether it is parked, and acts when the
limit was raised (:meth:`resume`) or the pause timed out (:meth:`give_up`). When a container
becomes parked it calls ``wake(worker)`` so the agent writes the pod's status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..worker import PodWorker

__all__ = ["PauseMechanism", "Unavailable", "Wake"]

Wake = Callable[[PodWorker], None]
"""Called when a container of the worker became parked (the agent then syncs its status)."""


class PauseMechanism(Protocol):
    name: str
    """The node label's value (``inplace.dev/memory-pause``)."""
    how: str
    """How it pauses, for the pod's ``MemoryPaused`` message."""

    def arm(self, w: PodWorker, container: str) -> None:
        """The container (just started, or re-adopted) pauses instead of being OOM-killed."""

    def disarm(self, w: PodWorker) -> None:
        """The pod is going away: stop watching its containers."""

    def armed(self, w: PodWorker, container: str) -> bool:
        """Whether :meth:`arm` took effect for the container."""

    def parked(self, w: PodWorker, container: str) -> bool:
        """Whether the container's tasks are parked at its memory limit now."""

    def resume(self, w: PodWorker) -> None:
        """A resize raised the pod's limits: let parked tasks run (they are parked again if
        the new limit is not enough)."""

    def give_up(self, w: PodWorker, containers: Sequence[str]) -> None:
        """The pause timed out: the containers meet the kernel's OOM killer as they would
        have without the pause (re-armed when they start again)."""

    def close(self) -> None:
        """The agent stops."""


class Unavailable:
    """Simulated nodes: no processes, nothing to pause."""

    name = "unavailable"
    how = "nothing (this node runs no processes)"

    def arm(self, w: PodWorker, container: str) -> None:
        pass

    def disarm(self, w: PodWorker) -> None:
        pass

    def armed(self, w: PodWorker, container: str) -> bool:
        return False

    def parked(self, w: PodWorker, container: str) -> bool:
        return False

    def resume(self, w: PodWorker) -> None:
        pass

    def give_up(self, w: PodWorker, containers: Sequence[str]) -> None:
        pass

    def close(self) -> None:
        pass
