"""The cgroup driver interface, its value types and error tree, and small shared helpers.

A driver owns one subtree (its *root*, e.g. ``inplace`` under every controller's mount) and
addresses cgroups by a path relative to that root, such as ``node-1/pod<uid>/<container>``;
``""`` is the root itself. Three drivers implement the same :class:`CgroupDriver` protocol:

* ``v1`` — the real cgroup v1 hierarchies (one mount per controller, or co-mounted);
* ``v2`` — the unified hierarchy (also usable on a plain directory tree, for tests);
* ``none`` — no writable cgroups at all: it remembers what it was asked and measures usage by
  walking processes; nothing is enforced.

Resources are *declarative*: :meth:`CgroupDriver.update` makes the cgroup match the whole
:class:`CgroupResources` value, and ``None`` means "no constraint" (kernel default weight,
unlimited quota, memory and pids), never "leave as it is". Drivers compare before writing, so
re-applying the same value is free and never trips the kernel's consistency checks.

Every method is synchronous: a cgroup file write takes microseconds. Callers on an event loop
wrap them in ``asyncio.to_thread`` where the kernel may block (a memory limit decrease makes
the kernel reclaim synchronously before it answers).
"""

from __future__ import annotations

import errno as errno_mod
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_CPU_PERIOD_US",
    "DEFAULT_CPU_SHARES",
    "CgroupDriver",
    "CgroupError",
    "CgroupNotFound",
    "CgroupResources",
    "CgroupUnsupported",
    "CgroupUsage",
    "CgroupWriteError",
    "Mount",
    "parse_mountinfo",
    "parse_proc_cgroup",
    "pause_threshold",
    "read_mountinfo",
    "read_proc_cgroup",
]

DEFAULT_CPU_PERIOD_US = 100_000
"""The kernel's (and kubelet's) default CFS period."""

DEFAULT_CPU_SHARES = 1024
"""What ``cpu_shares=None`` means: the kernel's default weight for a new cgroup."""


@dataclass(frozen=True)
class CgroupResources:
    """Desired (or read-back) limits of one cgroup, in the kernel's v1 units."""

    cpu_shares: int | None
    """Relative CPU weight (v1 ``cpu.shares``, 2..262144); v2 converts it to ``cpu.weight``.
    ``None`` means the kernel default (1024)."""
    cpu_quota_us: int | None
    """CFS quota per period in microseconds; ``None`` or ``-1`` means unlimited."""
    cpu_period_us: int = DEFAULT_CPU_PERIOD_US
    """CFS period in microseconds."""
    memory_limit_bytes: int | None = None
    """Hard memory limit; ``None`` means unlimited."""
    pids_max: int | None = None
    """Maximum number of tasks; ``None`` means unlimited."""

    @property
    def cpu_quota_unlimited(self) -> bool:
        """True when no CFS quota applies (``None`` and ``-1`` are the same thing)."""
        return self.cpu_quota_us is None or self.cpu_quota_us < 0


@dataclass(frozen=True)
class CgroupUsage:
    """Cumulative CPU time and current memory of one cgroup (including its descendants)."""

    cpu_usage_ns: int
    memory_usage_bytes: int
    memory_working_set_bytes: int
    """``usage - inactive_file`` (floored at 0), as kubelet and cAdvisor compute it: the memory
    that cannot be dropped without the workload noticing, and what ``kubectl top`` shows."""


class CgroupError(Exception):
    """Base of every error a driver raises."""


class CgroupNotFound(CgroupError):
    """The cgroup (or one controller's directory of it) does not exist."""


class CgroupUnsupported(CgroupError):
    """The driver (or this machine) cannot do that, e.g. OOM notification without cgroups."""


class CgroupWriteError(CgroupError):
    """The kernel refused a write. The message names the file, the value and the errno text.

    The typical case: a memory limit below current usage. Cgroup v1 first reclaims what it can
    and answers ``EBUSY`` if usage still exceeds the new limit; nothing is ever killed for it.
    """

    def __init__(self, file: str, value: str, err: int, *, action: str | None = None) -> None:
        self.file = file
        self.value = value
        self.errno = err
        name = errno_mod.errorcode.get(err, str(err))
        what = action or f"writing {value!r} to {file}"
        super().__init__(f"{what}: {os.strerror(err)} ({name})")


@runtime_checkable
class CgroupDriver(Protocol):
    """What the node agent needs from cgroups. Paths are relative to the driver's root."""

    name: str
    """``"v1"``, ``"v2"`` or ``"none"``."""
    enforces_limits: bool
    """False for the ``none`` driver: limits are recorded, not applied."""

    def create(self, path: str, resources: CgroupResources) -> None:
        """Create the cgroup (and missing parents) in every controller, then apply
        ``resources``. Idempotent."""

    def update(self, path: str, resources: CgroupResources) -> None:
        """Make the cgroup's limits match ``resources``; raises :class:`CgroupWriteError`.

        Files are written CPU first, then memory, then pids, each only if it differs. A refusal
        (e.g. memory below usage: ``EBUSY`` on v1) stops there and leaves the earlier writes in
        place; :meth:`read` tells the caller what is actually applied."""

    def read(self, path: str) -> CgroupResources:
        """The limits as the kernel reports them now."""

    def normalize(self, resources: CgroupResources) -> CgroupResources:
        """What :meth:`read` would return after ``update(resources)``: page-rounded memory,
        clamped shares, v2's lossy shares→weight→shares round trip. Lets a caller compare
        desired with actual without knowing the driver's units."""

    def add_process(self, path: str, pid: int) -> None:
        """Move ``pid`` (the whole thread group) into the cgroup in every controller."""

    def pids(self, path: str) -> list[int]:
        """Processes (thread-group ids) directly in the cgroup, sorted."""

    def pids_below(self, path: str) -> list[int]:
        """Processes in the cgroup and every cgroup below it, sorted (none if it is gone)."""

    def usage(self, path: str) -> CgroupUsage:
        """CPU time and memory of the cgroup, including descendants."""

    def remove(self, path: str) -> None:
        """Remove the cgroup and its descendants, leaf first, in every controller. A missing
        cgroup is fine; a cgroup that still has processes raises :class:`CgroupWriteError`."""

    def set_oom_kill_disable(self, path: str, disabled: bool) -> None:
        """Pause instead of OOM-kill at the memory limit (see each driver for the mechanism)."""

    def under_oom(self, path: str) -> bool:
        """True while the cgroup's tasks are parked at the memory limit."""

    def oom_kill_count(self, path: str) -> int:
        """How many processes the kernel OOM-killed in this cgroup since it was created."""

    def open_oom_notifier(self, path: str) -> int:
        """A file descriptor that becomes ready when the cgroup hits OOM. The caller owns it
        and closes it (closing also unregisters the notification)."""

    def freeze(self, path: str) -> None:
        """Stop every task of the cgroup (they keep their memory and state)."""

    def thaw(self, path: str) -> None:
        """Undo :meth:`freeze`."""

    def cgroup_paths_of(self, pid: int) -> dict[str, str]:
        """``/proc/PID/cgroup`` as controller → absolute path in that hierarchy."""


def read_proc_cgroup(pid: int, *, proc: str = "/proc") -> dict[str, str]:
    """Parse ``/proc/PID/cgroup``: controller → path inside its hierarchy.

    v1 lines (``4:memory:/a/b``, ``1:cpu,cpuacct:/a``) give one entry per controller, named
    hierarchies keep their ``name=`` prefix (``name=systemd``); the v2 line (``0::/a``) is
    returned under the key ``""``.
    """
    try:
        with open(f"{proc}/{pid}/cgroup") as fh:
            text = fh.read()
    except FileNotFoundError as exc:
        raise ProcessLookupError(pid) from exc
    return parse_proc_cgroup(text)


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """The pure half of :func:`read_proc_cgroup`."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            out[""] = path
            continue
        for controller in controllers.split(","):
            out[controller] = path
    return out


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo`` reduced to what cgroup detection needs."""

    root: str
    """The path inside the filesystem that is mounted (``/`` unless a namespace hides it)."""
    mount_point: str
    fs_type: str
    super_options: tuple[str, ...]


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 4 <= len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse ``/proc/self/mountinfo`` (proc(5)): the fields before `` - `` are positional
    (root is the 4th, mount point the 5th), then fs type, source and super options."""
    mounts: list[Mount] = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        lf, rf = left.split(), right.split()
        if len(lf) < 5 or len(rf) < 3:
            continue
        mounts.append(
            Mount(
                root=_unescape(lf[3]),
                mount_point=_unescape(lf[4]),
                fs_type=rf[0],
                super_options=tuple(rf[2].split(",")),
            )
        )
    return mounts


def read_mountinfo() -> list[Mount]:
    """This process's mounts."""
    with open("/proc/self/mountinfo") as fh:
        return parse_mountinfo(fh.read())


def join_path(base: str, rel: str) -> str:
    """``base/rel`` refusing anything that would escape ``base`` (``..``, absolute ``rel``)."""
    rel = rel.strip("/")
    if not rel:
        return base
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid cgroup path {rel!r}")
    return os.path.join(base, *parts)


def read_text(file: str) -> str:
    """Read a cgroup interface file; a missing file (or cgroup) is :class:`CgroupNotFound`."""
    try:
        with open(file) as fh:
            return fh.read()
    except FileNotFoundError as exc:
        raise CgroupNotFound(f"{file} does not exist") from exc
    except OSError as exc:
        raise CgroupError(f"reading {file}: {exc.strerror}") from exc


def write_text(file: str, value: str, *, create: bool = False, append: bool = False) -> None:
    """Write one value with a single ``write(2)``, as the kernel expects, and turn the kernel's
    refusal into :class:`CgroupWriteError` (file, value and errno text).

    ``create``/``append`` exist for plain directory trees standing in for cgroupfs in tests;
    on the real filesystem interface files always exist and writes never append.
    """
    flags = os.O_WRONLY | os.O_CLOEXEC
    if create:
        flags |= os.O_CREAT
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(file, flags, 0o644)
    except FileNotFoundError as exc:
        raise CgroupNotFound(f"{file} does not exist") from exc
    except OSError as exc:
        raise CgroupWriteError(file, value, exc.errno or errno_mod.EIO) from exc
    try:
        data = value.encode()
        if append and not data.endswith(b"\n"):
            data += b"\n"
        os.write(fd, data)
    except OSError as exc:
        raise CgroupWriteError(file, value, exc.errno or errno_mod.EIO) from exc
    finally:
        os.close(fd)


def parse_flat_keyed(text: str) -> dict[str, int]:
    """Parse ``key value`` lines (``memory.stat``, ``memory.events``, ``cpu.stat``, v1
    ``memory.oom_control``); lines that are not ``<word> <int>`` are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


PAUSE_MARGIN_MIN: Final = 1 << 20
PAUSE_MARGIN_MAX: Final = 32 << 20


def pause_threshold(limit: int) -> int:
    """Where a pause that the kernel does not do itself (cgroup v2's ``memory.high``, the
    userspace monitor) stops a container: just under its memory limit, 1/32 of it below,
    at least 1 MiB and at most 32 MiB below (never below half the limit), page-rounded.

    Close enough that the container has used what it was given, far enough that the tasks
    are parked before the hard limit where the kernel would kill them."""
    margin = min(max(limit // 32, PAUSE_MARGIN_MIN), PAUSE_MARGIN_MAX, limit // 2)
    return page_round_down(limit - margin)


def page_round_down(value: int) -> int:
    """The kernel stores memory limits in pages, rounding the written value down."""
    page = os.sysconf("SC_PAGE_SIZE")
    return (value // page) * page


def rmdir_cgroup(directory: str) -> None:
    """rmdir one cgroup. Tasks that just exited can keep it busy for a moment (the kernel
    unlinks a dead task from its cgroup when it is reaped, with no notification to wait on),
    so EBUSY is retried briefly, but only while ``cgroup.procs`` is empty: a cgroup with live
    tasks fails at once."""
    deadline = time.monotonic() + 1.0
    while True:
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if (
                exc.errno == errno_mod.EBUSY
                and not _has_tasks(directory)
                and time.monotonic() < deadline
            ):
                time.sleep(0.01)
                continue
            raise CgroupWriteError(
                directory, "", exc.errno or errno_mod.EIO, action=f"rmdir {directory}"
            ) from exc


def tree_pids(directories: Iterable[str]) -> list[int]:
    """The processes in each of ``directories`` (cgroup directories) and below, sorted."""
    found: set[int] = set()
    for top in directories:
        for dirpath, _, _ in os.walk(top):
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as fh:
                    found.update(int(x) for x in fh.read().split())
            except OSError:  # removed meanwhile, or a fake file system without the file
                continue
    return sorted(found)


def _has_tasks(directory: str) -> bool:
    try:
        with open(os.path.join(directory, "cgroup.procs")) as fh:
            return bool(fh.read().split())
    except OSError:
        return False
