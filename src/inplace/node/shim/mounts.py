"""The mounts every root build makes (a directory shadowed by a tmpfs showing the same
entries, a read-only remount keeping the locked flags) and what the mount table holds."""

from __future__ import annotations

import os
import stat

from .kernel import (
    MS_BIND,
    MS_NODEV,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    STATVFS_TO_MS,
    mount,
)


def _bind_entry(source: str, target: str, st: os.stat_result) -> None:
    """Recreate ``source`` (one entry of a directory) at ``target``: symlinks are copied,
    anything else bind-mounted (recursively) on an empty directory or file."""
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
        return
    if stat.S_ISDIR(st.st_mode):
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)


def populate(directory: str, source_fd: int) -> None:
    """Fill the (new, empty) ``directory`` with the entries of the directory ``source_fd``."""
    for name in os.listdir(source_fd):
        st = os.lstat(name, dir_fd=source_fd)
        _bind_entry(f"/proc/self/fd/{source_fd}/{name}", os.path.join(directory, name), st)


def shadow(directory: str) -> None:
    """Cover ``directory`` with a tmpfs that shows the same entries (bind mounts of the
    originals), so new entries can be made in it without touching what it covers."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        mount(
            "tmpfs",
            directory,
            "tmpfs",
            MS_NOSUID | MS_NODEV,
            f"mode={mode:o},uid={st.st_uid},gid={st.st_gid}",
        )
        populate(directory, fd)
    finally:
        os.close(fd)


def mount_flags(path: str) -> int:
    f_flag = os.statvfs(path).f_flag
    return sum(ms for st, ms in STATVFS_TO_MS if f_flag & st)


def remount_readonly(path: str) -> None:
    mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | mount_flags(path))


def is_mount_point(path: str) -> bool:
    """Whether ``path`` is a mount point in this namespace (``os.path.ismount`` misses a
    directory bind-mounted onto itself: same device, same inode)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as fh:
        return any(line.split(" ")[4].replace("\\040", " ") == path for line in fh)


def mount_points_under(prefix: str) -> list[str]:
    """Mount points at or below ``prefix`` in this namespace, deepest first."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            point = line.split(" ")[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix.rstrip("/") + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))
