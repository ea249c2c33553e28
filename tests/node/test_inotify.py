"""inotify through ctypes: a modified file wakes the reader, a removed one ends its watch."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from inplace.node.inotify import IN_IGNORED, IN_MODIFY, Inotify


def test_modify_and_remove(tmp_path: Path) -> None:
    watched = tmp_path / "memory.events"
    watched.write_text("high 0\n")
    notify = Inotify()
    try:
        wd = notify.add_watch(str(watched), IN_MODIFY)
        assert notify.add_watch(str(watched), IN_MODIFY) == wd  # one watch per file
        assert notify.read() == []
        watched.write_text("high 1\n")
        assert select.select([notify.fd], [], [], 5)[0]
        events = notify.read()
        assert events and all(w == wd and mask & IN_MODIFY for w, mask in events)
        watched.unlink()
        assert select.select([notify.fd], [], [], 5)[0]
        assert any(mask & IN_IGNORED for _, mask in notify.read())
    finally:
        notify.close()
    assert notify.fd == -1


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    notify = Inotify()
    try:
        with pytest.raises(FileNotFoundError):
            notify.add_watch(str(tmp_path / "absent"))
    finally:
        notify.close()


def test_close_on_exec() -> None:
    notify = Inotify()
    try:
        assert not os.get_inheritable(notify.fd)
    finally:
        notify.close()
