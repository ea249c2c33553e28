"""Who holds a data dir: the lock a running `inplace up` keeps on it.

`inplace up` takes an exclusive ``flock`` on ``<data-dir>/up.lock`` before it writes anything
and holds it while it runs (the kernel drops it when the process ends, however it ends), with
its pid and command line in the file. A second `inplace up` finds the lock taken and refuses,
naming the holder, so it never rewrites the kubeconfigs of a running cluster; `inplace down`
finds the `inplace up` to stop the same way. The API server's store keeps a lock of its own
(``apiserver/store.db.lock``), which counts too: an API server outliving its supervisor still
holds the data dir.

The holder's pid comes from ``/proc/locks`` (the process that took the lock), else from the
file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

from inplace.cli.paths import DataDir

__all__ = ["DataDirLock", "Holder", "LockHeld", "holder_of", "lock_holder"]


@dataclass(frozen=True)
class Holder:
    """The process holding a lock."""

    pid: int
    command: str

    def __str__(self) -> str:
        return f"process {self.pid} ({self.command})" if self.command else f"process {self.pid}"


class LockHeld(Exception):
    def __init__(self, holder: Holder) -> None:
        super().__init__(str(holder))
        self.holder = holder


def _command(pid: int) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(psutil.Process(pid).cmdline())
    return ""


def _flock_pid(path: Path) -> int | None:
    """The pid ``/proc/locks`` gives for a lock on ``path`` (matched by device and inode)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not the holder
            continue
        if len(fields) < 6:
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        if key == wanted and pid > 0:
            return pid
    return None


def lock_holder(path: Path) -> Holder | None:
    """The process holding ``path`` locked, or None (no file means nobody). Finding out takes
    the lock for an instant when it is free; nothing is written."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            return None  # free: closing the fd releases it again
        pid = _flock_pid(path)
        if pid is None:
            with contextlib.suppress(OSError, ValueError):
                pid = int(os.read(fd, 4096).decode().split("\n", 1)[0])
        return Holder(pid or 0, _command(pid) if pid else "")
    finally:
        os.close(fd)


def holder_of(data: DataDir) -> Holder | None:
    """Who holds the data dir: a running `inplace up`, or an API server still using its store
    (named by the `inplace up` that started it, if that still runs: stopping the API server
    alone would only have it restarted)."""
    holder = lock_holder(data.up_lock)
    if holder is not None:
        return holder
    holder = lock_holder(data.store_lock)
    if holder is None:
        return None
    with contextlib.suppress(psutil.Error):
        parent = psutil.Process(holder.pid).parent()
        words = parent.cmdline() if parent is not None else []
        if (
            parent is not None
            and any(w == "inplace" or w.endswith("/inplace") for w in words)
            and "up" in words
        ):
            return Holder(parent.pid, " ".join(words))
    return holder


class DataDirLock:
    """The lock `inplace up` holds on its data dir for as long as it runs."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock (LockHeld naming the holder if another process has it) and record
        this process in the file. The data dir must exist."""
        fd = os.open(self.data.up_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = lock_holder(self.data.up_lock)
            raise LockHeld(holder or Holder(0, "")) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{' '.join([sys.executable, *sys.argv])}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
