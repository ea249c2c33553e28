"""The values the store hands out: entries, events, list results.

All three are frozen and carry both the decoded object and the exact bytes stored, so the API
server can send `raw` to clients without serializing again. Dicts inside an `Event` are shared
by every watcher that receives it (decoding once per change, not once per watcher, is what lets
one write fan out to hundreds of watchers cheaply): treat them as read-only and copy before
changing. Each `Entry` from `get`/`list`/`create`/`update`/`delete` has a dict of its own.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

Object: TypeAlias = dict[str, Any]
"""A Kubernetes object as JSON (what the store keeps under a key)."""

EventType: TypeAlias = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One object at one revision."""

    key: str
    value: Object
    """The object, `metadata.resourceVersion` stamped with `revision`."""
    raw: bytes
    """The stored JSON bytes of `value`."""
    revision: int
    """The revision that last wrote the key (etcd's mod_revision)."""
    create_revision: int
    """The revision that created the key."""


@dataclass(frozen=True, slots=True)
class Event:
    """One committed write, as a watcher sees it."""

    type: EventType
    key: str
    value: Object
    """The new state; for DELETED the last state, resourceVersion stamped to the delete."""
    raw: bytes
    revision: int
    prev: Object | None
    """The state before this write (None for ADDED)."""


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a list, all at `revision`."""

    items: list[Entry]
    revision: int
    continue_key: str | None
    """The last key returned when more remain (pass it as `start_after`), else None."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic GC from scanning the objects of a bulk decode.

    Decoding 10,000 pods creates ~200,000 GC-tracked lists and dicts. With the collector on,
    the allocations trigger collections that walk them all, repeatedly; merely pausing it
    moves one ~110 ms gen-0 scan to the first allocation after re-enabling (measured on the
    2-core dev box: list of 10,000 pods 230 ms with the GC on, 90 ms with it off). JSON
    objects cannot form reference cycles, so scanning them finds nothing: on exit the new
    objects are promoted straight to the oldest generation (`gc.freeze(); gc.unfreeze()`)
    instead. Cost: other young objects are promoted too, so a cycle created just before this
    call is reclaimed at the next full collection instead of the next young one. Skipped when
    the application itself uses `gc.freeze()` (the unfreeze would undo it). Restores the
    previous enabled state, so nesting is harmless.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def prefix_end(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with `prefix` (None: none).

    Python compares strings by code point and SQLite's BINARY collation compares UTF-8 bytes,
    which orders the same, so the bound serves both the in-memory bisect and the SQL range.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # surrogates cannot be encoded; skip over them
                nxt = 0xE000
            chars[-1] = chr(nxt)
            return "".join(chars)
        chars.pop()
    return None
