"""The scheduler: places pods and arbitrates every resize from one node cache.

Public surface: :class:`Scheduler` and :class:`SchedulerConfig` (the component),
:class:`ResizeArbiter` and :func:`decide` (the resize decision matrix), the framework
(:class:`Framework`, :class:`Status`, :class:`Code`, :class:`PodInfo`, :func:`pod_info`),
:class:`NodeCache`, :class:`SchedulingQueue`, and ``main`` (``inplace scheduler``).
"""

from .arbiter import Decision, ResizeArbiter, Verdict, decide
from .cache import NodeCache
from .framework import Code, CycleState, Framework, PodInfo, Status, pod_info
from .queue import SchedulingQueue
from .scheduler import Scheduler, SchedulerConfig

__all__ = [
    "Code",
    "CycleState",
    "Decision",
    "Framework",
    "NodeCache",
    "PodInfo",
    "ResizeArbiter",
    "Scheduler",
    "SchedulerConfig",
    "SchedulingQueue",
    "Status",
    "Verdict",
    "decide",
    "pod_info",
]
