"""The kernel's constants and the few libc calls the shim makes (mount, umount, prctl):
what every other part of the shim builds on. A failed call raises :class:`SetupError` naming
the step."""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from typing import Any


# -- the kernel's constants (linux/sched.h, linux/mount.h, linux/prctl.h, linux/capability.h) --

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
NAMESPACE_FLAGS = {"ipc": CLONE_NEWIPC, "uts": CLONE_NEWUTS, "mnt": CLONE_NEWNS}
"""The namespaces a container joins, in the order it joins them (the mount one last: the
others' pins are on the host, hidden inside it)."""
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_KEEPCAPS = 8
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
OPEN_TREE, MOVE_MOUNT = 428, 429
"""``open_tree`` and ``move_mount``: the same number on every machine (added after 5.1)."""
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 4
AT_FDCWD = -100
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
"""``pivot_root`` has no libc wrapper: its syscall number per machine."""

STATVFS_TO_MS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
"""Flags a read-only remount must keep: the kernel refuses to clear locked ones."""

MAX_SYMLINKS = 40


class SetupError(Exception):
    """A step of entering or building a sandbox failed; the message names the step."""


_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        try:  # by its soname: ctypes.util.find_library imports ~30 ms of modules
            _libc = ctypes.CDLL("libc.so.6", use_errno=True)
        except OSError:  # a libc of another name (musl)
            from ctypes import util

            _libc = ctypes.CDLL(util.find_library("c"), use_errno=True)
    return _libc


def checked(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")
    return result


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    checked(
        libc().mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or fstype or ''} on {target}",
    )


def umount(target: str, flags: int = MNT_DETACH) -> None:
    checked(libc().umount2(target.encode(), flags), f"unmount {target}")


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    checked(
        libc().prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), 0, 0), f"prctl {option}"
    )
