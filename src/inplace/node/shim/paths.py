"""Paths inside a container's root, resolved as the kernel would from inside it (symlinks
followed within the root, never out of it): where a volume or a masked path lands."""

from __future__ import annotations

import os
import stat

from .kernel import MAX_SYMLINKS, SetupError

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from collections.abc import Callable

# -- paths inside a root ----------------------------------------------------------------------


def split_path(path: str) -> list[str]:
    """The components of ``path`` with ``.`` and empty ones removed (``..`` is kept)."""
    return [part for part in path.split("/") if part not in ("", ".")]


def resolve_in_root(root: str, path: str, *, follow_last: bool = True) -> str:
    """``path`` resolved inside ``root`` as if ``root`` were ``/``: symlinks (absolute ones
    restart at ``root``) and ``..`` never leave it, as runc's securejoin. Missing components
    are kept as they are. Returns a host path under ``root``."""
    pending = split_path(path)
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = os.path.join(root, *done, part)
        if not follow_last and not pending:
            done.append(part)
            break
        try:
            st = os.lstat(candidate)
        except OSError:
            done.append(part)
            continue
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise SetupError(f"too many levels of symbolic links in {path}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            pending = split_path(target) + pending
            continue
        done.append(part)
    return os.path.join(root, *done) if done else root


def ensure_path(
    root: str,
    path: str,
    *,
    is_file: bool,
    owned: set[str],
    shadow: Callable[[str], None],
) -> str:
    """Make ``path`` (inside ``root``) exist as a directory (or an empty file) to mount on,
    without writing to the host: a missing entry is created only in a directory this sandbox
    owns (its root, a directory it created, or one it ``shadow``-ed: covered with a tmpfs
    that re-binds the original entries). Returns the host path of the mount point."""
    target = resolve_in_root(root, path)
    rel = split_path(os.path.relpath(target, root)) if target != root else []
    current = root
    for i, part in enumerate(rel):
        nxt = os.path.join(current, part)
        last = i == len(rel) - 1
        if not os.path.lexists(nxt):
            if current not in owned:
                shadow(current)
                owned.add(current)
            if last and is_file:
                os.close(os.open(nxt, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            else:
                os.mkdir(nxt, 0o755)
            owned.add(nxt)
        current = nxt
    return current
