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


def write_options(kind: str, manager: str) -> dict[str, Any]:
    """The options an AdmissionReview carries for a write (its field manager, if a client's)."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if manager != SERVER_MANAGER:
        options["fieldManager"] = manager
    return options


def names_resource_version(patch: Any) -> bool:
    """Whether a patch body sets ``metadata.resourceVersion`` (merge patches) or touches it
    (JSON patches): upstream then treats it as a precondition."""
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and meta.get("resourceVersion") is not None
    if isinstance(patch, list):
        return any(
            isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch
        )
    return False


def same_but_version(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """True when `new` differs from `old` only in metadata.resourceVersion: a no-op write."""
    old_meta = dict(old.get("metadata", {}))
    old_meta.pop("resourceVersion", None)
    return {**old, "metadata": old_meta} == new
