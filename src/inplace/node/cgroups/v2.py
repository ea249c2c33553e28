"""cgroup v2 driver: the unified hierarchy, or a plain directory tree standing in for it.

Files: ``cpu.weight`` (from shares, see :func:`~.mapping.shares_to_weight`), ``cpu.max``
(``"max <period>"`` or ``"<quota> <period>"``), ``memory.max``, ``memory.high``,
``memory.current``, ``memory.stat`` (``inactive_file``), ``cpu.stat`` (``usage_usec``),
``memory.events`` (``oom_kill``), ``cgroup.freeze``, ``pids.max``, ``cgroup.procs``; creating a
cgroup enables ``+cpu +memory +pids`` in ``cgroup.subtree_control`` of every ancestor from the
mount root down (v2 only lets a cgroup use a controller its parent delegates).

The mount root is a constructor argument, so tests run the driver against a directory of plain
files (``plain_files=True``: interface files are created on first write, ``cgroup.procs``
appends, and ``remove`` deletes files before ``rmdir``). Nothing else in the driver depends on
the kernel's magic.

**Pause instead of OOM-kill.** v2 has no ``oom_control``. In *pause mode*
(:meth:`V2Driver.set_oom_kill_disable`) ``memory.max`` stays the limit, the kernel's hard
backstop, and ``memory.high`` is set just under it (:func:`~.base.pause_threshold`): above
``memory.high`` the kernel throttles the tasks (reclaim, then sleeps) and counts ``high`` in
``memory.events``. The node agent watches that file through inotify and writes
``cgroup.freeze`` = 1, which parks the tasks before ``memory.max`` is reached; a resize raises
both files (``memory.max`` first when growing) and the agent thaws. Giving up (a pause
timeout) lifts ``memory.high`` and thaws: a task that needs more than ``memory.max`` is then
OOM-killed by the kernel, as it would have been. The mode lives in the files themselves
(``memory.high`` set while ``memory.max`` is a limit), so an agent restart loses nothing.
Weaker than v1: between crossing ``memory.high`` and the freeze the tasks run, throttled;
an allocation fast enough to cross the margin in that time reaches ``memory.max``.
:data:`OOM_PAUSE_MECHANISM` is logged when it is first turned on.
"""

from __future__ import annotations

import errno
import logging
import os

from .base import (
    DEFAULT_CPU_SHARES,
    CgroupNotFound,
    CgroupResources,
    CgroupUsage,
    CgroupWriteError,
    join_path,
    page_round_down,
    parse_flat_keyed,
    pause_threshold,
    read_proc_cgroup,
    read_text,
    rmdir_cgroup,
    tree_pids,
    write_text,
)
from .mapping import shares_to_weight, weight_to_shares

__all__ = ["OOM_PAUSE_MECHANISM", "V2Driver"]

log = logging.getLogger(__name__)

WANTED_CONTROLLERS = ("cpu", "memory", "pids")

_KERNEL_FILES = {
    "memory.current": "0\n",
    "memory.high": "max\n",
    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
    "memory.stat": "anon 0\nfile 0\ninactive_file 0\n",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
    "cgroup.freeze": "0\n",
    "cgroup.events": "populated 0\nfrozen 0\n",
}
"""What a new cgroup's read-only (or kernel-maintained) files say, for plain directory trees."""

OOM_PAUSE_MECHANISM = (
    "cgroup v2 has no memory.oom_control: pausing at the memory limit is memory.high just "
    "under memory.max (throttle) plus cgroup.freeze when memory.events reports 'high'"
)


class V2Driver:
    """cgroup v2 driver rooted at ``<mount>/<root_name>``."""

    name = "v2"
    enforces_limits = True

    def __init__(
        self,
        mount: str = "/sys/fs/cgroup",
        root_name: str = "inplace",
        *,
        plain_files: bool = False,
    ) -> None:
        self.mount = mount
        self.root_name = root_name
        self.plain_files = plain_files
        self._base = join_path(mount, root_name)
        self._pause_logged = False
        try:
            available = read_text(os.path.join(mount, "cgroup.controllers")).split()
        except CgroupNotFound:
            available = list(WANTED_CONTROLLERS)
        self._controllers = [c for c in WANTED_CONTROLLERS if c in available]

    # -- paths and io --------------------------------------------------------------------

    def _dir(self, path: str) -> str:
        return join_path(self._base, path)

    def _file(self, path: str, name: str) -> str:
        return os.path.join(self._dir(path), name)

    def _read(self, path: str, name: str) -> str:
        return read_text(self._file(path, name)).strip()

    def _write(self, path: str, name: str, value: str) -> None:
        write_text(self._file(path, name), value, create=self.plain_files)

    def _write_if_changed(self, path: str, name: str, value: str) -> None:
        f = self._file(path, name)
        missing = self.plain_files and not os.path.exists(f)
        if missing or read_text(f).strip() != value:
            self._write(path, name, value)

    def controller_dir(self, path: str) -> str:
        """The absolute directory of ``path``."""
        return self._dir(path)

    # -- lifecycle -----------------------------------------------------------------------

    def create(self, path: str, resources: CgroupResources) -> None:
        leaf = self._dir(path)
        try:
            os.makedirs(leaf, exist_ok=True)
        except OSError as exc:
            raise CgroupWriteError(
                leaf, "", exc.errno or errno.EIO, action=f"mkdir {leaf}"
            ) from exc
        self._enable_controllers(leaf)
        if self.plain_files:
            self._seed_kernel_files(path)
        self.update(path, resources)

    def _seed_kernel_files(self, path: str) -> None:
        """On a plain directory tree, the files the kernel makes at ``mkdir`` (as it would:
        zero counters, no limits), so a reader or a watcher finds them before anything is
        written. Never on cgroupfs."""
        for name, text in _KERNEL_FILES.items():
            f = self._file(path, name)
            if not os.path.exists(f):
                write_text(f, text, create=True)

    def _enable_controllers(self, leaf: str) -> None:
        """Delegate our controllers along the way from the mount root to ``leaf``'s parent."""
        wanted = " ".join(f"+{c}" for c in self._controllers)
        if not wanted:
            return
        rel = os.path.relpath(os.path.dirname(leaf), self.mount)
        current = self.mount
        ancestors = [current]
        if rel != ".":
            for part in rel.split(os.sep):
                current = os.path.join(current, part)
                ancestors.append(current)
        for d in ancestors:
            f = os.path.join(d, "cgroup.subtree_control")
            try:
                enabled = set(read_text(f).split())
            except CgroupNotFound:
                if not self.plain_files:
                    raise
                enabled = set()
            if not set(self._controllers) <= enabled:
                write_text(f, wanted, create=self.plain_files)

    def remove(self, path: str) -> None:
        d = self._dir(path)
        if not os.path.isdir(d):
            return
        for dirpath, _, files in os.walk(d, topdown=False):
            if self.plain_files:
                for name in files:
                    os.unlink(os.path.join(dirpath, name))
            rmdir_cgroup(dirpath)

    # -- limits --------------------------------------------------------------------------

    def _pause_mode(self, path: str) -> bool:
        """True when :meth:`set_oom_kill_disable` put ``memory.high`` under ``memory.max``."""
        try:
            return (
                self._read(path, "memory.high") != "max" and self._read(path, "memory.max") != "max"
            )
        except CgroupNotFound:
            return False

    def update(self, path: str, resources: CgroupResources) -> None:
        shares = resources.cpu_shares if resources.cpu_shares is not None else DEFAULT_CPU_SHARES
        self._write_if_changed(path, "cpu.weight", str(shares_to_weight(shares)))
        quota = "max" if resources.cpu_quota_unlimited else str(resources.cpu_quota_us)
        self._write_if_changed(path, "cpu.max", f"{quota} {resources.cpu_period_us}")
        memory = "max"
        if resources.memory_limit_bytes is not None:
            memory = str(page_round_down(resources.memory_limit_bytes))
        if self._pause_mode(path):
            high = "max" if memory == "max" else str(pause_threshold(int(memory)))
            old = self._read(path, "memory.max")
            if memory == "max" or old == "max" or int(memory) >= int(old):
                # Growing: the hard limit first, so memory.high never exceeds it.
                self._write_if_changed(path, "memory.max", memory)
                self._write_if_changed(path, "memory.high", high)
            else:
                self._write_if_changed(path, "memory.high", high)
                self._write_if_changed(path, "memory.max", memory)
        else:
            self._write_if_changed(path, "memory.max", memory)
        if "pids" in self._controllers:
            pids = "max" if resources.pids_max is None else str(resources.pids_max)
            self._write_if_changed(path, "pids.max", pids)

    def read(self, path: str) -> CgroupResources:
        quota_s, period_s = self._read(path, "cpu.max").split()
        memory_s = self._read(path, "memory.max")
        pids_max: int | None = None
        if "pids" in self._controllers:
            raw = self._read(path, "pids.max")
            pids_max = None if raw == "max" else int(raw)
        return CgroupResources(
            cpu_shares=weight_to_shares(int(self._read(path, "cpu.weight"))),
            cpu_quota_us=None if quota_s == "max" else int(quota_s),
            cpu_period_us=int(period_s),
            memory_limit_bytes=None if memory_s == "max" else int(memory_s),
            pids_max=pids_max,
        )

    def normalize(self, resources: CgroupResources) -> CgroupResources:
        shares = resources.cpu_shares if resources.cpu_shares is not None else DEFAULT_CPU_SHARES
        memory = resources.memory_limit_bytes
        return CgroupResources(
            cpu_shares=weight_to_shares(shares_to_weight(shares)),
            cpu_quota_us=None if resources.cpu_quota_unlimited else resources.cpu_quota_us,
            cpu_period_us=resources.cpu_period_us,
            memory_limit_bytes=None if memory is None else page_round_down(memory),
            pids_max=resources.pids_max if "pids" in self._controllers else None,
        )

    # -- processes -----------------------------------------------------------------------

    def add_process(self, path: str, pid: int) -> None:
        write_text(
            self._file(path, "cgroup.procs"),
            str(pid),
            create=self.plain_files,
            append=self.plain_files,
        )

    def pids(self, path: str) -> list[int]:
        try:
            text = self._read(path, "cgroup.procs")
        except CgroupNotFound:
            if self.plain_files and os.path.isdir(self._dir(path)):
                return []
            raise
        return sorted({int(x) for x in text.split()})

    def pids_below(self, path: str) -> list[int]:
        return tree_pids([self._dir(path)])

    def usage(self, path: str) -> CgroupUsage:
        usage = int(self._read(path, "memory.current"))
        stat = parse_flat_keyed(self._read(path, "memory.stat"))
        cpu = parse_flat_keyed(self._read(path, "cpu.stat"))
        return CgroupUsage(
            cpu_usage_ns=cpu.get("usage_usec", 0) * 1000,
            memory_usage_bytes=usage,
            memory_working_set_bytes=max(0, usage - stat.get("inactive_file", 0)),
        )

    def cgroup_paths_of(self, pid: int) -> dict[str, str]:
        return read_proc_cgroup(pid)

    # -- OOM -----------------------------------------------------------------------------

    def memory_events(self, path: str) -> dict[str, int]:
        """``memory.events``: ``low``, ``high``, ``max``, ``oom``, ``oom_kill`` counters."""
        return parse_flat_keyed(self._read(path, "memory.events"))

    def events_file(self, path: str) -> str:
        """The absolute path of ``memory.events`` (what the agent watches with inotify)."""
        return self._file(path, "memory.events")

    def set_oom_kill_disable(self, path: str, disabled: bool) -> None:
        """Pause mode on: ``memory.high`` just under ``memory.max`` (nothing to do without a
        limit); off: ``memory.high`` lifted. See the module docstring."""
        if disabled:
            limit = self._read(path, "memory.max")
            if limit == "max":
                return  # no limit: nothing to pause at
            if not self._pause_logged:
                log.info("%s", OOM_PAUSE_MECHANISM)
                self._pause_logged = True
            self._write_if_changed(path, "memory.high", str(pause_threshold(int(limit))))
        else:
            self._write_if_changed(path, "memory.high", "max")

    def under_oom(self, path: str) -> bool:
        """In pause mode, and frozen (the agent freezes a cgroup whose usage reached
        ``memory.high``; nothing else freezes a pod's cgroup while it runs)."""
        return self._pause_mode(path) and self.frozen(path)

    def oom_kill_count(self, path: str) -> int:
        return self.memory_events(path).get("oom_kill", 0)

    def open_oom_notifier(self, path: str) -> int:
        """An fd on ``memory.events``. v2 notifies a change of that file with POLLPRI (and
        POLLERR) and with an inotify ``IN_MODIFY`` event; the node agent uses the latter
        (:mod:`inplace.node.inotify`, :meth:`events_file`), one inotify instance for all its
        cgroups. Plain ``loop.add_reader`` on this fd is not suitable: it always polls
        readable."""
        f = self._file(path, "memory.events")
        try:
            return os.open(f, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise CgroupNotFound(f"{f} does not exist") from exc

    # -- freezer -------------------------------------------------------------------------

    def freeze(self, path: str) -> None:
        self._write(path, "cgroup.freeze", "1")

    def thaw(self, path: str) -> None:
        self._write(path, "cgroup.freeze", "0")

    def frozen(self, path: str) -> bool:
        """Whether ``cgroup.freeze`` asks for the cgroup to be frozen (the kernel reports
        the moment every task is parked as ``frozen 1`` in ``cgroup.events``)."""
        try:
            return self._read(path, "cgroup.freeze") == "1"
        except CgroupNotFound:
            return False
