"""Errors the API server answers with, each rendered as a Kubernetes `kind: Status`.

Handlers raise `StatusError`; one middleware turns it into the response. Anything else that
escapes a handler is a bug and becomes a 500 with the exception named, never a silent drop.
"""

from __future__ import annotations

from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class StatusError(Exception):
    """An error with an HTTP code, an upstream `reason`, and a message naming what was wrong."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details
        self._body = body

    def status(self) -> dict[str, Any]:
        if self._body is not None:
            return self._body
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(kind: str, name: str | None, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def qualified(plural: str, group: str) -> str:
    """Upstream's "pods" / "deployments.apps" naming of a resource in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> StatusError:
    return StatusError(
        404,
        f'{qualified(plural, group)} "{name}" not found',
        details=_details(plural, name, group),
    )


def already_exists(plural: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        f'{qualified(plural, group)} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(plural, name, group),
    )


def conflict(plural: str, group: str, name: str, why: str | None = None) -> StatusError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return StatusError(
        409,
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        details=_details(plural, name, group),
    )


def check_preconditions(
    plural: str,
    group: str,
    name: str,
    preconditions: dict[str, Any],
    uid: Any,
    revision: int,
) -> None:
    """Upstream's storage preconditions (``uid``, ``resourceVersion``) against the stored
    object: a mismatch is a 409 with upstream's "Precondition failed" message."""
    want_uid = preconditions.get("uid")
    if want_uid and want_uid != uid:
        raise conflict(
            plural,
            group,
            name,
            f"Precondition failed: UID in precondition: {want_uid}, UID in object meta: {uid}",
        )
    want_rv = preconditions.get("resourceVersion")
    if want_rv and str(want_rv) != str(revision):
        raise conflict(
            plural,
            group,
            name,
            f"Precondition failed: ResourceVersion in precondition: {want_rv}, "
            f"ResourceVersion in object meta: {revision}",
        )


def bad_request(message: str) -> StatusError:
    return StatusError(400, message)


def gone(message: str) -> StatusError:
    return StatusError(410, message, reason="Expired")


def forbidden(message: str) -> StatusError:
    return StatusError(403, message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, f"the body of the request was in an unknown format: {content_type}")


def method_not_allowed(verb: str, what: str) -> StatusError:
    return StatusError(
        405, f"the server does not allow this method on the requested resource: {verb} {what}"
    )
