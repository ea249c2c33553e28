"""cgroup drivers for the node agent: ``v1``, ``v2`` and ``none`` behind one protocol.

:func:`detect_driver` picks the strongest one this machine allows:

1. ``v1`` when ``/sys/fs/cgroup/memory`` is a cgroup v1 memory hierarchy we can write (root);
2. ``v2`` when ``/sys/fs/cgroup`` is cgroup2 offering the ``memory`` and ``cpu`` controllers
   and is writable;
3. ``none`` otherwise (limits recorded, not enforced; usage from process walks).

v1 is preferred over v2 on hybrid machines because only v1 can truly pause a task at its
memory limit (``memory.oom_control``); see :mod:`.v2` for how v2 emulates it.
:mod:`.mapping` holds kubelet's conversions from Kubernetes requests/limits to cgroup values.
"""

from __future__ import annotations

import os

from .base import (
    DEFAULT_CPU_PERIOD_US,
    DEFAULT_CPU_SHARES,
    CgroupDriver,
    CgroupError,
    CgroupNotFound,
    CgroupResources,
    CgroupUnsupported,
    CgroupUsage,
    CgroupWriteError,
    Mount,
    parse_mountinfo,
    parse_proc_cgroup,
    read_mountinfo,
    read_proc_cgroup,
)
from .mapping import (
    ContainerSizing,
    container_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    pod_resources,
    shares_to_weight,
    weight_to_shares,
)
from .none import NoneDriver
from .v1 import V1Driver, v1_mounts
from .v2 import OOM_PAUSE_MECHANISM, V2Driver

__all__ = [
    "DEFAULT_CPU_PERIOD_US",
    "DEFAULT_CPU_SHARES",
    "OOM_PAUSE_MECHANISM",
    "CgroupDriver",
    "CgroupError",
    "CgroupNotFound",
    "CgroupResources",
    "CgroupUnsupported",
    "CgroupUsage",
    "CgroupWriteError",
    "ContainerSizing",
    "Mount",
    "NoneDriver",
    "V1Driver",
    "V2Driver",
    "container_resources",
    "detect_driver",
    "milli_cpu_to_quota",
    "milli_cpu_to_shares",
    "parse_mountinfo",
    "parse_proc_cgroup",
    "pod_resources",
    "read_mountinfo",
    "read_proc_cgroup",
    "shares_to_weight",
    "v1_mounts",
    "weight_to_shares",
]

_V2_MOUNT = "/sys/fs/cgroup"
_V1_MEMORY = "/sys/fs/cgroup/memory"


def detect_driver(root_name: str = "inplace", *, mounts: list[Mount] | None = None) -> CgroupDriver:
    """The best driver for this machine, rooted at ``root_name`` (see the module docstring)."""
    if mounts is None:
        try:
            mounts = read_mountinfo()
        except OSError:
            mounts = []
    by_point = {m.mount_point: m for m in mounts}
    root = os.geteuid() == 0

    v1_memory = by_point.get(_V1_MEMORY)
    if (
        root
        and v1_memory is not None
        and v1_memory.fs_type == "cgroup"
        and "memory" in v1_memory.super_options
        and os.access(_V1_MEMORY, os.W_OK)
    ):
        try:
            return V1Driver(root_name, mounts=v1_mounts(mounts))
        except CgroupUnsupported:
            pass

    unified = by_point.get(_V2_MOUNT)
    if unified is not None and unified.fs_type == "cgroup2" and os.access(_V2_MOUNT, os.W_OK):
        try:
            with open(os.path.join(_V2_MOUNT, "cgroup.controllers")) as fh:
                available = fh.read().split()
        except OSError:
            available = []
        if "memory" in available and "cpu" in available:
            return V2Driver(_V2_MOUNT, root_name)

    return NoneDriver()
