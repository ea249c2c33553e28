"""Writing a pod's status under the status-writers rule (:mod:`inplace.api.conditions`).

:func:`write_status` is the one loop every component's status write goes through: compute
the patch from the pod as the writer last saw it; send it (with that pod's
``resourceVersion`` as a precondition when it decides a condition type that another writer
may decide at the same moment); on a conflict re-read the pod and compute again from what
the server now holds, so a newer decision is seen and kept. :func:`write_pod_status` is the
same over :class:`~inplace.client.api.Client`; tests pass their own ``send``/``reread``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from inplace.api.conditions import StatusPatch

from .api import PODS, Client
from .errors import APIConflictError, APINotFoundError

__all__ = ["ATTEMPTS", "ComputeStatus", "write_pod_status", "write_status"]

ATTEMPTS: Final = 16
"""Conflicts tolerated before giving up (each one means another writer's write landed)."""

ComputeStatus = Callable[[Mapping[str, Any]], StatusPatch | None]
"""The pod as last seen → the patch that applies the writer's decisions (None: nothing)."""


def patch_body(pod: Mapping[str, Any], patch: StatusPatch) -> dict[str, Any]:
    """The request body: ``{"status": ...}``, plus the resourceVersion precondition of a
    guarded patch (the API server answers 409 if the pod changed since ``pod``)."""
    body: dict[str, Any] = {"status": patch.status}
    if patch.guarded:
        rv = (pod.get("metadata") or {}).get("resourceVersion")
        if rv:
            body["metadata"] = {"resourceVersion": rv}
    return body


async def write_status(
    pod: Mapping[str, Any],
    compute: ComputeStatus,
    *,
    send: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    reread: Callable[[], Awaitable[dict[str, Any]]],
    attempts: int = ATTEMPTS,
) -> dict[str, Any] | None:
    """Write ``compute(pod)``; on a conflict, ``compute`` again from a fresh read.

    Returns the pod as written, ``pod`` itself when there was nothing to write, or None
    when the pod is gone (or replaced by one with another uid). ``send`` raises
    :class:`~inplace.client.APIConflictError` on a failed precondition and
    :class:`~inplace.client.APINotFoundError` when the pod is gone."""
    uid = (pod.get("metadata") or {}).get("uid")
    current: Mapping[str, Any] = pod
    for attempt in range(attempts):
        patch = compute(current)
        if patch is None:
            return dict(current)
        try:
            return await send(patch_body(current, patch))
        except APINotFoundError:
            return None
        except APIConflictError:
            if attempt == attempts - 1:
                raise
        try:
            fresh = await reread()
        except APINotFoundError:
            return None
        if uid and (fresh.get("metadata") or {}).get("uid") != uid:
            return None
        current = fresh
    raise AssertionError("unreachable")  # pragma: no cover


async def write_pod_status(
    client: Client, namespace: str, name: str, pod: Mapping[str, Any], compute: ComputeStatus
) -> dict[str, Any] | None:
    """:func:`write_status` for ``pods/NAME/status`` over the API client."""

    async def send(body: dict[str, Any]) -> dict[str, Any]:
        return await client.patch(
            PODS, name, body, namespace=namespace, subresource="status", patch_type="strategic"
        )

    async def reread() -> dict[str, Any]:
        return await client.get(PODS, name, namespace=namespace)

    return await write_status(pod, compute, send=send, reread=reread)
