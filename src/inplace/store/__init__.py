"""A durable, revisioned object store on SQLite (the kine model).

One append-only log whose row id is the global revision; create, compare-and-swap update and
delete; list at a revision; watch from a revision; compaction that answers "too old".

One writer thread commits whatever writes are queued in a single transaction (group commit) and
checks compare-and-swap against an in-memory index; committed groups reach the event loop in
one hop, which updates the in-memory read view and fans the events out to watchers. Current
reads never touch SQLite; past-revision lists and watch catch-up read the log. Details in
`inplace.store.sqlite` (storage, writes, durability) and `inplace.store.watch` (watch).
"""

from .errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    InvalidObjectError,
    KeyExistsError,
    NotFoundError,
    StoreClosedError,
    StoreError,
)
from .model import Entry, Event, EventType, ListResult, Object
from .sqlite import Durability, Store
from .watch import Watch

__all__ = [
    "CompactedError",
    "ConflictError",
    "Durability",
    "Entry",
    "Event",
    "EventType",
    "FutureRevisionError",
    "InvalidObjectError",
    "KeyExistsError",
    "ListResult",
    "NotFoundError",
    "Object",
    "Store",
    "StoreClosedError",
    "StoreError",
    "Watch",
]
