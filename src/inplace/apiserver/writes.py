"""What the write paths share: REST's create, update, patch and delete, and server-side apply.

The result of a write, the field manager of the server's own writes, a client's
`resourceVersion` precondition, and how long a write keeps retrying when concurrent writers
win the compare-and-swap.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inplace.apiserver.errors import bad_request, conflict

#: How long a patch or delete keeps re-applying itself while concurrent writers win the
#: compare-and-swap (each round one writer wins, so N writers need up to N rounds); upstream's
#: GuaranteedUpdate likewise retries until the request's deadline.
RETRY_SECONDS = 30.0
#: The field manager of writes the server makes itself (upstream's loopback client's).
SERVER_MANAGER = "kube-apiserver"


@dataclass
class WriteResult:
    """What a write produced: the object, and whether it was created (201) or not (200)."""

    obj: dict[str, Any]
    created: bool = False
    warnings: tuple[str, ...] = ()


def until(seconds: float) -> Iterator[None]:
    """Yields until ``seconds`` have passed (at least once)."""
    deadline = time.monotonic() + seconds
    yield None
    while time.monotonic() < deadline:
        yield None


def parse_resource_version(value: Any) -> int:
    """A `resourceVersion` precondition named in a body: our revisions are integers."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise bad_request(f'invalid resourceVersion "{value}"') from None


def check_preconditions(
    plural: str, group: str, name: str, preconditions: dict[str, Any], uid: Any, revision: int
) -> None:
    """Upstream's storage preconditions (``uid``, ``resourceVersion``) against the stored
    object, for a delete's options and a Binding's metadata: a mismatch is a 409 with
    upstream's "Precondition failed" message."""
    want_uid = preconditions.get("uid")
    if want_uid and want_uid != uid:
        raise conflict(
            plural,
            group,
            name,
            f"Precondition failed: UID in precondition: {want_uid}, UID in object meta: {uid}",
        )
    want_rv = preconditions.get("resourceVersion")
    if want_rv and parse_resource_version(want_rv) != revision:
        raise conflict(
            plural,
            group,
            name,
            f"Precondition failed: ResourceVersion in precondition: {want_rv}, "
            f"ResourceVersion in object meta: {revision}",
        )
