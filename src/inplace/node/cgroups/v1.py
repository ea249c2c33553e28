"""cgroup v1 driver: one hierarchy per controller (or several co-mounted, e.g. ``cpu,cpuacct``).

Controllers used: ``memory``, ``cpu``, ``cpuacct`` (required) and ``freezer``, ``pids``
(optional: their methods raise :class:`CgroupUnsupported` when absent). Mount points come from
``/proc/self/mountinfo``, so separate (``/sys/fs/cgroup/cpu`` + ``/sys/fs/cgroup/cpuacct``)
and co-mounted (``/sys/fs/cgroup/cpu,cpuacct``) layouts both work; a co-mounted directory is
created, written and removed once.

Kernel behaviour this driver relies on (checked on this machine's kernel, see
``tests/node/test_cgroups_v1.py``):

* ``memory.limit_in_bytes`` below current usage: the kernel reclaims synchronously and answers
  ``EBUSY`` if usage is still above the new limit. Reported as :class:`CgroupWriteError`;
  nothing is killed, and the old limit stays.
* ``memory.oom_control`` = 1 parks tasks that hit the limit (``under_oom 1``) instead of
  killing them; raising the limit wakes them. The ``oom_kill`` line (kernels ≥ 4.13) counts
  OOM kills; without it :meth:`V1Driver.oom_kill_count` returns 0.
* OOM notification: an eventfd registered through ``cgroup.event_control`` as
  ``"<eventfd> <fd of memory.oom_control>"``. It fires when the cgroup goes under OOM (at once
  if it already is) and once more when the cgroup is removed, so a reader re-checks
  :meth:`V1Driver.under_oom` rather than trusting the wake-up alone.
* CFS quotas are hierarchical: a child's quota/period may not exceed its parent's (``EINVAL``).
  The caller orders writes (grow the parent first, shrink it last).
* A frozen (``freezer.state`` FROZEN) task cannot act on any signal, not even SIGKILL, until
  thawed.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterable, Mapping

from .base import (
    DEFAULT_CPU_SHARES,
    CgroupError,
    CgroupNotFound,
    CgroupResources,
    CgroupUnsupported,
    CgroupUsage,
    CgroupWriteError,
    Mount,
    join_path,
    page_round_down,
    parse_flat_keyed,
    read_mountinfo,
    read_proc_cgroup,
    read_text,
    rmdir_cgroup,
    tree_pids,
    write_text,
)
from .mapping import MAX_SHARES, MIN_SHARES

__all__ = ["CONTROLLERS", "REQUIRED_CONTROLLERS", "UNLIMITED_MEMORY", "V1Driver", "v1_mounts"]

CONTROLLERS = ("memory", "cpu", "cpuacct", "freezer", "pids")
REQUIRED_CONTROLLERS = ("memory", "cpu", "cpuacct")

_UNLIMITED_MEMORY_FLOOR = 1 << 62
"""v1 reports "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages)."""
UNLIMITED_MEMORY = page_round_down(2**63 - 1)
"""What ``memory.limit_in_bytes`` reads without a limit (PAGE_COUNTER_MAX, ``LONG_MAX`` over the
page size, pages): :meth:`V1Driver.read` says None for it, a kubelet reports the number."""


def v1_mounts(mounts: Iterable[Mount] | None = None) -> dict[str, str]:
    """Controller → mount point of every cgroup v1 hierarchy we use (first mount wins)."""
    out: dict[str, str] = {}
    for m in read_mountinfo() if mounts is None else mounts:
        if m.fs_type != "cgroup":
            continue
        for opt in m.super_options:
            if opt in CONTROLLERS and opt not in out:
                out[opt] = m.mount_point
    return out


class V1Driver:
    """cgroup v1 driver rooted at ``<mount>/<root_name>`` in every controller."""

    name = "v1"
    enforces_limits = True

    def __init__(self, root_name: str = "inplace", *, mounts: Mapping[str, str] | None = None):
        mounts = dict(v1_mounts() if mounts is None else mounts)
        missing = [c for c in REQUIRED_CONTROLLERS if c not in mounts]
        if missing:
            raise CgroupUnsupported(f"cgroup v1 controllers not mounted: {', '.join(missing)}")
        self.root_name = root_name
        self._base = {c: join_path(mounts[c], root_name) for c in CONTROLLERS if c in mounts}

    # -- paths ---------------------------------------------------------------------------

    def _dir(self, controller: str, path: str) -> str:
        base = self._base.get(controller)
        if base is None:
            raise CgroupUnsupported(f"cgroup v1 controller {controller!r} is not mounted")
        return join_path(base, path)

    def _file(self, controller: str, path: str, name: str) -> str:
        return os.path.join(self._dir(controller, path), name)

    def _dirs(self, path: str) -> list[str]:
        """One directory per distinct hierarchy (co-mounted controllers share one)."""
        seen: list[str] = []
        for c in CONTROLLERS:
            if c in self._base:
                d = self._dir(c, path)
                if d not in seen:
                    seen.append(d)
        return seen

    def controller_dir(self, controller: str, path: str) -> str:
        """The absolute directory of ``path`` in ``controller``'s hierarchy."""
        return self._dir(controller, path)

    # -- lifecycle -----------------------------------------------------------------------

    def create(self, path: str, resources: CgroupResources) -> None:
        for d in self._dirs(path):
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as exc:
                raise CgroupWriteError(d, "", exc.errno or errno.EIO, action=f"mkdir {d}") from exc
        self.update(path, resources)

    def remove(self, path: str) -> None:
        for d in self._dirs(path):
            if not os.path.isdir(d):
                continue
            for dirpath, _, _ in os.walk(d, topdown=False):
                rmdir_cgroup(dirpath)

    # -- limits --------------------------------------------------------------------------

    def _write_if_changed(self, controller: str, path: str, name: str, value: str) -> None:
        f = self._file(controller, path, name)
        if read_text(f).strip() != value:
            write_text(f, value)

    def update(self, path: str, resources: CgroupResources) -> None:
        shares = resources.cpu_shares if resources.cpu_shares is not None else DEFAULT_CPU_SHARES
        self._write_if_changed("cpu", path, "cpu.shares", str(shares))
        period = str(resources.cpu_period_us)
        if resources.cpu_quota_unlimited:
            # Lift the quota before touching the period: any period is valid without one.
            self._write_if_changed("cpu", path, "cpu.cfs_quota_us", "-1")
            self._write_if_changed("cpu", path, "cpu.cfs_period_us", period)
        else:
            self._write_if_changed("cpu", path, "cpu.cfs_period_us", period)
            self._write_if_changed("cpu", path, "cpu.cfs_quota_us", str(resources.cpu_quota_us))

        current = self._memory_limit(path)
        wanted = resources.memory_limit_bytes
        if wanted is None:
            if current is not None:
                write_text(self._file("memory", path, "memory.limit_in_bytes"), "-1")
        elif current is None or current != page_round_down(wanted):
            # The kernel reclaims here if usage > wanted, then succeeds or answers EBUSY.
            write_text(self._file("memory", path, "memory.limit_in_bytes"), str(wanted))

        if "pids" in self._base:
            pids = "max" if resources.pids_max is None else str(resources.pids_max)
            self._write_if_changed("pids", path, "pids.max", pids)

    def _memory_limit(self, path: str) -> int | None:
        value = int(read_text(self._file("memory", path, "memory.limit_in_bytes")))
        return None if value >= _UNLIMITED_MEMORY_FLOOR else value

    def read(self, path: str) -> CgroupResources:
        quota = int(read_text(self._file("cpu", path, "cpu.cfs_quota_us")))
        pids_max: int | None = None
        if "pids" in self._base:
            raw = read_text(self._file("pids", path, "pids.max")).strip()
            pids_max = None if raw == "max" else int(raw)
        return CgroupResources(
            cpu_shares=int(read_text(self._file("cpu", path, "cpu.shares"))),
            cpu_quota_us=None if quota < 0 else quota,
            cpu_period_us=int(read_text(self._file("cpu", path, "cpu.cfs_period_us"))),
            memory_limit_bytes=self._memory_limit(path),
            pids_max=pids_max,
        )

    def normalize(self, resources: CgroupResources) -> CgroupResources:
        shares = resources.cpu_shares if resources.cpu_shares is not None else DEFAULT_CPU_SHARES
        memory = resources.memory_limit_bytes
        return CgroupResources(
            cpu_shares=max(MIN_SHARES, min(MAX_SHARES, shares)),
            cpu_quota_us=None if resources.cpu_quota_unlimited else resources.cpu_quota_us,
            cpu_period_us=resources.cpu_period_us,
            memory_limit_bytes=None if memory is None else page_round_down(memory),
            pids_max=resources.pids_max if "pids" in self._base else None,
        )

    # -- processes -----------------------------------------------------------------------

    def add_process(self, path: str, pid: int) -> None:
        for d in self._dirs(path):
            write_text(os.path.join(d, "cgroup.procs"), str(pid))

    def pids(self, path: str) -> list[int]:
        text = read_text(self._file("memory", path, "cgroup.procs"))
        return sorted(int(x) for x in text.split())

    def pids_below(self, path: str) -> list[int]:
        return tree_pids(self._dirs(path))

    def usage(self, path: str) -> CgroupUsage:
        usage = int(read_text(self._file("memory", path, "memory.usage_in_bytes")))
        stat = parse_flat_keyed(read_text(self._file("memory", path, "memory.stat")))
        inactive_file = stat.get("total_inactive_file", stat.get("inactive_file", 0))
        return CgroupUsage(
            cpu_usage_ns=int(read_text(self._file("cpuacct", path, "cpuacct.usage"))),
            memory_usage_bytes=usage,
            memory_working_set_bytes=max(0, usage - inactive_file),
        )

    def cgroup_paths_of(self, pid: int) -> dict[str, str]:
        return read_proc_cgroup(pid)

    # -- OOM -----------------------------------------------------------------------------

    def _oom_control(self, path: str) -> dict[str, int]:
        return parse_flat_keyed(read_text(self._file("memory", path, "memory.oom_control")))

    def set_oom_kill_disable(self, path: str, disabled: bool) -> None:
        """``memory.oom_control`` = 1: tasks at the limit sleep (``under_oom``) until the limit
        is raised or usage drops; they are never killed by the memcg OOM killer."""
        wanted = 1 if disabled else 0
        if self._oom_control(path).get("oom_kill_disable") != wanted:
            write_text(self._file("memory", path, "memory.oom_control"), str(wanted))

    def under_oom(self, path: str) -> bool:
        return self._oom_control(path).get("under_oom", 0) == 1

    def oom_kill_count(self, path: str) -> int:
        return self._oom_control(path).get("oom_kill", 0)

    def open_oom_notifier(self, path: str) -> int:
        """Register an eventfd for ``memory.oom_control`` and return it (non-blocking, close on
        exec). Reading it yields an 8-byte counter; usable with ``loop.add_reader``."""
        efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            control = self._file("memory", path, "memory.oom_control")
            try:
                cfd = os.open(control, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError as exc:
                raise CgroupNotFound(f"{control} does not exist") from exc
            try:
                write_text(self._file("memory", path, "cgroup.event_control"), f"{efd} {cfd}")
            finally:
                # The kernel keeps what it needs; the registration lives as long as the eventfd.
                os.close(cfd)
        except BaseException:
            os.close(efd)
            raise
        return efd

    # -- freezer -------------------------------------------------------------------------

    def freeze(self, path: str) -> None:
        """Write FROZEN and wait (≤ ~2 s) until the kernel reports FROZEN, not FREEZING."""
        state = self._file("freezer", path, "freezer.state")
        deadline = time.monotonic() + 2.0
        while True:
            write_text(state, "FROZEN")
            if read_text(state).strip() == "FROZEN":
                return
            if time.monotonic() > deadline:
                raise CgroupError(f"{state}: tasks did not freeze (still FREEZING)")
            time.sleep(0.005)

    def thaw(self, path: str) -> None:
        write_text(self._file("freezer", path, "freezer.state"), "THAWED")

    def freezer_state(self, path: str) -> str:
        """``THAWED``, ``FREEZING`` or ``FROZEN``."""
        return read_text(self._file("freezer", path, "freezer.state")).strip()
