"""The store's exception tree.

Expected outcomes of a write (the key exists, the key is gone, someone else wrote first) are
exceptions the API server maps one to one onto HTTP codes: `KeyExistsError` → 409
AlreadyExists, `NotFoundError` → 404, `ConflictError` → 409 Conflict, `CompactedError` → 410
Gone, `FutureRevisionError` → 504/"too large resource version", `InvalidObjectError` → 400.
"""

from __future__ import annotations

from typing import Any


class StoreError(Exception):
    """Base of every error the store raises."""


class StoreClosedError(StoreError):
    """The store was closed (or its writer died); no further reads or writes."""


class InvalidObjectError(StoreError, ValueError):
    """The value is not a JSON object (or `metadata` is not one), or it cannot be serialized."""


class KeyExistsError(StoreError):
    """`create` on a key that holds a live object."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key


class NotFoundError(StoreError):
    """`update`, `delete` (or a strict read) of a key that holds no live object."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class ConflictError(StoreError):
    """A compare-and-swap lost: the key's revision is not the one the caller expected.

    Carries the current state so a read-modify-write loop can retry without another read.
    """

    def __init__(
        self,
        key: str,
        *,
        expected_revision: int,
        current_revision: int,
        current: dict[str, Any] | None,
    ) -> None:
        super().__init__(
            f"key {key!r}: expected revision {expected_revision}, current is {current_revision}"
        )
        self.key = key
        self.expected_revision = expected_revision
        self.current_revision = current_revision
        self.current = current


class CompactedError(StoreError):
    """The requested revision is older than the compacted one (HTTP 410 Gone): relist."""

    def __init__(self, requested_revision: int, compacted_revision: int) -> None:
        super().__init__(
            f"revision {requested_revision} has been compacted (compacted to {compacted_revision})"
        )
        self.requested_revision = requested_revision
        self.compacted_revision = compacted_revision


class FutureRevisionError(StoreError):
    """A list asked for a revision newer than the store's current one."""

    def __init__(self, requested_revision: int, current_revision: int) -> None:
        super().__init__(
            f"revision {requested_revision} is in the future (current is {current_revision})"
        )
        self.requested_revision = requested_revision
        self.current_revision = current_revision
