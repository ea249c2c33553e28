"""Upstream's ``SetVolumeOwnership`` (``pkg/volume/volume_linux.go``): a pod's ``fsGroup``
owns its volumes' files, which its group may read (and write unless read-only), and new
files in their directories inherit the group (setgid)."""

from __future__ import annotations

import os
import stat

__all__ = ["requires_permission_change", "set_volume_ownership"]

_RW = 0o660
_RO = 0o440
_EXEC = 0o110


def requires_permission_change(root: str, fs_group: int, *, readonly: bool) -> bool:
    """``OnRootMismatch``: whether the root's group, mode and setgid bit already match."""
    st = os.stat(root)
    if st.st_gid != fs_group or not stat.S_ISDIR(st.st_mode):
        return True
    wanted = (_RO if readonly else _RW) | _EXEC
    if stat.S_IMODE(st.st_mode) & wanted != wanted:
        return True
    return not st.st_mode & stat.S_ISGID


def _change(path: str, fs_group: int, *, readonly: bool) -> None:
    st = os.lstat(path)
    os.lchown(path, -1, fs_group)
    if stat.S_ISLNK(st.st_mode):
        return
    mask = _RO if readonly else _RW
    if stat.S_ISDIR(st.st_mode):
        mask |= stat.S_ISGID | _EXEC
    os.chmod(path, stat.S_IMODE(st.st_mode) | mask)


def set_volume_ownership(
    root: str, fs_group: int | None, *, readonly: bool = False, policy: str | None = None
) -> None:
    """Give ``fs_group`` every file under ``root`` (``policy`` ``OnRootMismatch`` skips the
    walk when the root already matches; ``Always`` or None walks every time)."""
    if fs_group is None:
        return
    if policy == "OnRootMismatch" and not requires_permission_change(
        root, fs_group, readonly=readonly
    ):
        return
    for dirpath, dirnames, filenames in os.walk(root):
        _change(dirpath, fs_group, readonly=readonly)
        for name in [
            *filenames,
            *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d))),
        ]:
            _change(os.path.join(dirpath, name), fs_group, readonly=readonly)
