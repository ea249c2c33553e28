"""inotify(7) through ctypes: one instance, many watches, read on the event loop.

Written here rather than taken from a library: the node agent needs four system calls
(``inotify_init1``, ``inotify_add_watch``, ``inotify_rm_watch`` and ``read``) on a file
descriptor it hands to ``loop.add_reader``; the libraries on PyPI bring their own event loop
integration or threads, which is more than that and not what the agent's loop wants.

cgroup v2 notifies a change of its event files (``memory.events``, ``cgroup.events``)
through fsnotify ("a value change in this file generates a file modified event", the kernel's
cgroup-v2 documentation), so ``IN_MODIFY`` on ``memory.events`` wakes the agent when the
kernel counts a ``high`` event. A plain file written by a test produces the same event, which
is how the fake cgroupfs exercises this path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from typing import Final

__all__ = ["IN_MODIFY", "Inotify", "InotifyEvent"]

IN_MODIFY: Final = 0x00000002
IN_IGNORED: Final = 0x00008000
"""The watch was removed (explicitly, or because the file went away)."""
IN_NONBLOCK: Final = os.O_NONBLOCK
IN_CLOEXEC: Final = os.O_CLOEXEC

_EVENT: Final = struct.Struct("iIII")
"""``struct inotify_event``: wd, mask, cookie, len (then ``len`` bytes of name)."""

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.inotify_init1.argtypes = [ctypes.c_int]
_libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
_libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]


InotifyEvent = tuple[int, int]
"""(watch descriptor, mask)."""


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), what)
    return result


class Inotify:
    """One inotify instance (non-blocking, close-on-exec). :attr:`fd` is for
    ``loop.add_reader``; :meth:`read` drains what is queued."""

    def __init__(self) -> None:
        self.fd = _check(_libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC), "inotify_init1")

    def add_watch(self, path: str, mask: int = IN_MODIFY) -> int:
        """Watch ``path``; the watch descriptor (the same one again for the same file)."""
        return _check(_libc.inotify_add_watch(self.fd, os.fsencode(path), mask), path)

    def rm_watch(self, wd: int) -> None:
        """Stop watching; a watch the kernel already dropped (its file went away) is fine."""
        _libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[InotifyEvent]:
        """The queued events, oldest first (empty when none)."""
        try:
            data = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return []
        events: list[InotifyEvent] = []
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            events.append((wd, mask))
            offset += _EVENT.size + length
        return events

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
