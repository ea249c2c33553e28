"""The ``none`` driver: for machines without writable cgroups (not root, macOS, a container).

It keeps the same contract so the rest of the agent does not branch, but nothing is enforced
(``enforces_limits`` is False):

* resources are recorded in memory and read back as written;
* membership is the pids it was told about plus all their descendants (what a real cgroup
  would contain, since children inherit their parent's cgroup);
* usage is summed over those processes with psutil (CPU = user + system time, memory = RSS;
  there is no page cache accounting, so the working set equals usage);
* OOM: there is no memory limit, so the kernel never OOM-kills; ``set_oom_kill_disable`` is a
  recorded no-op, ``under_oom`` is False and ``open_oom_notifier`` raises
  :class:`CgroupUnsupported`. The node agent's userspace pause (``inplace.node.pause``: a
  monitor that SIGSTOPs a container's process groups as their memory nears the limit) kills
  a container whose pause timed out itself and counts it with :meth:`NoneDriver.record_oom_kill`,
  so ``oom_kill_count`` reports it as the kernel's counter would.
* freeze/thaw send SIGSTOP/SIGCONT to every member: best effort (a process can be caught
  between the listing and the signal, and SIGCONT also wakes a task stopped for other reasons).
"""

from __future__ import annotations

import os
import signal

import psutil

from .base import (
    CgroupNotFound,
    CgroupResources,
    CgroupUnsupported,
    CgroupUsage,
    join_path,
    read_proc_cgroup,
)

__all__ = ["NoneDriver"]


class NoneDriver:
    """Records instead of enforcing; measures usage by walking processes."""

    name = "none"
    enforces_limits = False

    def __init__(self) -> None:
        self._resources: dict[str, CgroupResources] = {}
        self._pids: dict[str, set[int]] = {}
        self._oom_kill_disabled: dict[str, bool] = {}
        self._oom_kills: dict[str, int] = {}

    @staticmethod
    def _key(path: str) -> str:
        key = path.strip("/")
        if key:
            join_path("", key)  # validates: no "..", no empty segments
        return key

    def _known(self, path: str) -> str:
        key = self._key(path)
        if key not in self._resources:
            raise CgroupNotFound(f"no cgroup {path!r} (none driver)")
        return key

    def _subtree(self, key: str) -> list[str]:
        prefix = key + "/" if key else ""
        return [k for k in self._resources if k == key or k.startswith(prefix)]

    def create(self, path: str, resources: CgroupResources) -> None:
        key = self._key(path)
        parts = key.split("/") if key else []
        for i in range(len(parts)):  # parents exist implicitly, as mkdir -p would make them
            parent = "/".join(parts[:i])
            self._resources.setdefault(parent, CgroupResources(cpu_shares=None, cpu_quota_us=None))
            self._pids.setdefault(parent, set())
        self._resources[key] = resources
        self._pids.setdefault(key, set())

    def update(self, path: str, resources: CgroupResources) -> None:
        self._resources[self._known(path)] = resources

    def read(self, path: str) -> CgroupResources:
        return self._resources[self._known(path)]

    def normalize(self, resources: CgroupResources) -> CgroupResources:
        return resources

    def add_process(self, path: str, pid: int) -> None:
        key = self._known(path)
        if not psutil.pid_exists(pid):
            raise ProcessLookupError(pid)
        for members in self._pids.values():  # a process is in exactly one cgroup
            members.discard(pid)
        self._pids[key].add(pid)

    def _members(self, key: str) -> list[psutil.Process]:
        """Live recorded processes of ``key`` and their descendants."""
        found: dict[int, psutil.Process] = {}
        for pid in list(self._pids.get(key, ())):
            try:
                p = psutil.Process(pid)
                if p.status() == psutil.STATUS_ZOMBIE:
                    raise psutil.NoSuchProcess(pid)
                found[pid] = p
                for child in p.children(recursive=True):
                    found.setdefault(child.pid, child)
            except psutil.Error:
                self._pids[key].discard(pid)
        return list(found.values())

    def pids(self, path: str) -> list[int]:
        return sorted(p.pid for p in self._members(self._known(path)))

    def pids_below(self, path: str) -> list[int]:
        key = self._key(path)
        return sorted({p.pid for k in self._subtree(key) for p in self._members(k)})

    def usage(self, path: str) -> CgroupUsage:
        key = self._known(path)
        cpu_s = 0.0
        rss = 0
        for k in self._subtree(key):
            for p in self._members(k):
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        cpu_s += t.user + t.system
                        rss += p.memory_info().rss
                except psutil.Error:
                    continue
        return CgroupUsage(
            cpu_usage_ns=int(cpu_s * 1e9),
            memory_usage_bytes=rss,
            memory_working_set_bytes=rss,
        )

    def remove(self, path: str) -> None:
        key = self._key(path)
        for k in self._subtree(key):
            self._resources.pop(k, None)
            self._pids.pop(k, None)
            self._oom_kill_disabled.pop(k, None)
            self._oom_kills.pop(k, None)

    def set_oom_kill_disable(self, path: str, disabled: bool) -> None:
        """Recorded only: without a memory limit there is nothing to be killed at."""
        self._oom_kill_disabled[self._known(path)] = disabled

    def under_oom(self, path: str) -> bool:
        self._known(path)
        return False

    def oom_kill_count(self, path: str) -> int:
        return self._oom_kills.get(self._known(path), 0)

    def record_oom_kill(self, path: str) -> None:
        """Count a kill made in userspace for being over the memory limit (the none driver's
        stand-in for the kernel's ``oom_kill`` counter)."""
        key = self._known(path)
        self._oom_kills[key] = self._oom_kills.get(key, 0) + 1

    def open_oom_notifier(self, path: str) -> int:
        raise CgroupUnsupported("the none driver has no memory limits, hence no OOM events")

    def _signal_all(self, path: str, sig: signal.Signals) -> None:
        key = self._known(path)
        for k in self._subtree(key):
            for p in self._members(k):
                try:
                    os.kill(p.pid, sig)
                except (ProcessLookupError, PermissionError):
                    continue

    def freeze(self, path: str) -> None:
        self._signal_all(path, signal.SIGSTOP)

    def thaw(self, path: str) -> None:
        self._signal_all(path, signal.SIGCONT)

    def cgroup_paths_of(self, pid: int) -> dict[str, str]:
        return read_proc_cgroup(pid)
