"""Upstream's ``AtomicWriter`` (``pkg/volume/util/atomic_writer.go``): the files of a
configMap, secret, downwardAPI or projected volume change all at once.

Layout of a volume directory::

    ..2024_05_01_10_00_00.123456789/   the current payload (a timestamped directory)
    ..data -> ..2024_05_01_10_00_00.123456789
    key    -> ..data/key               one user-visible symlink per top-level entry

A new payload is written to a new timestamped directory, then ``..data`` is replaced by a
``rename`` of a fresh symlink (atomic), then the user-visible symlinks are added or removed
and the old directory deleted. A reader always sees one whole payload; a payload equal to the
current one writes nothing.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "DATA_DIR_NAME",
    "FileProjection",
    "PayloadError",
    "validate_payload_path",
    "write_payload",
]

DATA_DIR_NAME = "..data"
_DATA_TMP = "..data_tmp"


class PayloadError(ValueError):
    """A payload path that would escape its volume or collide with the writer's own names."""


@dataclass(frozen=True)
class FileProjection:
    data: bytes
    mode: int


def validate_payload_path(path: str) -> None:
    """Upstream's ``validatePath``: relative, no ``..`` element, not starting with ``..``."""
    if not path:
        raise PayloadError("invalid path: must not be empty")
    if path.startswith("/"):
        raise PayloadError(f"invalid path: must be relative path: {path}")
    if len(path) > 4096:
        raise PayloadError(f"invalid path: must be less than or equal to 4096 characters: {path}")
    if ".." in path.split("/"):
        raise PayloadError(f"invalid path: must not contain '..': {path}")
    if path.startswith(".."):
        raise PayloadError(f"invalid path: must not start with '..': {path}")


def _current(target: str) -> dict[str, FileProjection] | None:
    data_dir = os.path.join(target, DATA_DIR_NAME)
    if not os.path.islink(data_dir):
        return None
    current: dict[str, FileProjection] = {}
    root = os.path.realpath(data_dir)
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            with open(path, "rb") as fh:
                current[os.path.relpath(path, root)] = FileProjection(
                    fh.read(), stat.S_IMODE(st.st_mode)
                )
    return current


def _timestamped_name(now: float) -> str:
    stamp = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(now))
    return f"..{stamp}.{int(now * 1e9) % 1_000_000_000:09d}"


def write_payload(
    target: str,
    payload: Mapping[str, FileProjection],
    *,
    set_perms: Callable[[str], None] | None = None,
    now: Callable[[], float] = time.time,
) -> bool:
    """Make ``target`` hold exactly ``payload``; returns whether anything was written.
    ``set_perms`` (fsGroup ownership) runs on the new timestamped directory before the swap."""
    for path in payload:
        validate_payload_path(path)
    os.makedirs(target, 0o755, exist_ok=True)
    old = _current(target)
    data_link = os.path.join(target, DATA_DIR_NAME)
    old_dir = os.readlink(data_link) if os.path.islink(data_link) else None
    if old is not None and old == dict(payload):
        _update_visible(target, payload)
        return False
    name = _timestamped_name(now())
    while os.path.lexists(os.path.join(target, name)):
        name = _timestamped_name(now() + 1e-9)
    ts_dir = os.path.join(target, name)
    os.mkdir(ts_dir, 0o755)
    os.chmod(ts_dir, 0o755)
    for rel, item in payload.items():
        path = os.path.join(ts_dir, rel)
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, item.data)
        finally:
            os.close(fd)
        os.chmod(path, item.mode)
    if set_perms is not None:
        set_perms(ts_dir)
    tmp_link = os.path.join(target, _DATA_TMP)
    if os.path.lexists(tmp_link):
        os.unlink(tmp_link)
    os.symlink(name, tmp_link)
    os.rename(tmp_link, data_link)
    _update_visible(target, payload)
    if old_dir and old_dir != name:
        shutil.rmtree(os.path.join(target, old_dir), ignore_errors=True)
    return True


def _update_visible(target: str, payload: Mapping[str, FileProjection]) -> None:
    """One symlink per top-level payload entry; remove the ones no payload names any more."""
    wanted = {rel.split("/", 1)[0] for rel in payload}
    for top in wanted:
        link = os.path.join(target, top)
        if not os.path.lexists(link):
            os.symlink(os.path.join(DATA_DIR_NAME, top), link)
    for entry in os.listdir(target):
        if entry.startswith("..") or entry in wanted:
            continue
        path = os.path.join(target, entry)
        if os.path.islink(path):
            os.unlink(path)
