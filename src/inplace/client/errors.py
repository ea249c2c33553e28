"""The client's exception tree.

Every non-2xx answer from the API server becomes an :class:`APIError` subclass chosen by HTTP
status (and, for 409, by the ``reason`` of the ``kind: Status`` body), so callers catch exactly
what they mean::

    Exception
    ├── ConfigError                       kubeconfig / in-cluster configuration is unusable
    ├── APIConnectionError (ConnectionError)  the server could not be reached or the stream broke
    └── APIError                          the server answered with an error status
        ├── APIClientError                4xx: the request is wrong; resending it as is won't help
        │   ├── APIBadRequestError            400
        │   ├── APIUnauthorizedError          401
        │   ├── APIForbiddenError             403
        │   ├── APINotFoundError              404
        │   ├── APIConflictError              409 (optimistic-concurrency conflict)
        │   │   └── APIAlreadyExistsError     409 with reason AlreadyExists
        │   ├── APIGoneError                  410 (resourceVersion too old: relist)
        │   ├── APIRequestEntityTooLargeError 413
        │   ├── APIUnsupportedMediaTypeError  415
        │   ├── APIInvalidError               422 (``causes`` lists the offending fields)
        │   └── APITooManyRequestsError       429 (``retry_after`` seconds, e.g. a PDB blocks)
        └── APIServerError                5xx: the server failed; retrying later may help

Only connection trouble and :class:`APIError` cross the client's public surface; aiohttp's own
exceptions never do (they are chained as ``__cause__``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APIAlreadyExistsError",
    "APIBadRequestError",
    "APIClientError",
    "APIConflictError",
    "APIConnectionError",
    "APIError",
    "APIForbiddenError",
    "APIGoneError",
    "APIInvalidError",
    "APINotFoundError",
    "APIRequestEntityTooLargeError",
    "APIServerError",
    "APITooManyRequestsError",
    "APIUnauthorizedError",
    "APIUnsupportedMediaTypeError",
    "ConfigError",
    "error_from_status",
]


class ConfigError(Exception):
    """The cluster configuration (kubeconfig file or in-cluster files) cannot be used.

    The message names the file and the field at fault.
    """


class APIConnectionError(ConnectionError):
    """The API server could not be reached, or a response or watch stream broke off.

    A subclass of the builtin :class:`ConnectionError`; the transport's exception is the
    ``__cause__``. Retrying (with backoff) is the usual answer.
    """


class APIError(Exception):
    """The API server answered with an error HTTP status.

    Attributes mirror the ``kind: Status`` body the server sent (empty when it sent none).
    """

    status: int
    """HTTP status code (or ``Status.code`` for an error delivered inside a watch stream)."""
    reason: str
    """Machine-readable ``Status.reason``, e.g. ``NotFound``, ``AlreadyExists``, ``Expired``."""
    message: str
    """Human-readable ``Status.message``."""
    body: dict[str, Any] | None
    """The parsed ``Status`` body, if the server sent a JSON object."""
    details: dict[str, Any] | None
    """``Status.details`` (name, group, kind, causes, retryAfterSeconds), if present."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        *,
        body: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.details = details
        super().__init__(status, reason, message)

    def __str__(self) -> str:
        parts = [str(self.status)]
        if self.reason:
            parts.append(self.reason)
        text = " ".join(parts)
        return f"{text}: {self.message}" if self.message else text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, reason={self.reason!r}, "
            f"message={self.message!r})"
        )


class APIClientError(APIError):
    """4xx: the request itself is at fault."""


class APIBadRequestError(APIClientError):
    """400 Bad Request: malformed body, bad selector, bad parameter."""


class APIUnauthorizedError(APIClientError):
    """401 Unauthorized: missing or invalid credentials."""


class APIForbiddenError(APIClientError):
    """403 Forbidden: authenticated, but not allowed (RBAC), or the namespace is terminating."""


class APINotFoundError(APIClientError):
    """404 Not Found: the object (or the resource type) does not exist."""


class APIConflictError(APIClientError):
    """409 Conflict: resourceVersion (or a precondition) no longer matches; re-read, retry."""


class APIAlreadyExistsError(APIConflictError):
    """409 with reason ``AlreadyExists``: create of a name that is taken."""


class APIGoneError(APIClientError):
    """410 Gone: the requested resourceVersion is compacted away; list again from scratch."""


class APIRequestEntityTooLargeError(APIClientError):
    """413 Request Entity Too Large."""


class APIUnsupportedMediaTypeError(APIClientError):
    """415 Unsupported Media Type: e.g. a patch type the resource does not accept."""


class APIInvalidError(APIClientError):
    """422 Unprocessable Entity: the object failed validation.

    ``causes`` lists ``{"reason", "message", "field"}`` dicts from ``Status.details.causes``.
    """

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = (self.details or {}).get("causes") or []
        return [c for c in causes if isinstance(c, dict)]


class APITooManyRequestsError(APIClientError):
    """429 Too Many Requests: throttled, or an eviction is blocked by a PodDisruptionBudget.

    ``retry_after`` is the server's hint in seconds (``Retry-After`` header or
    ``Status.details.retryAfterSeconds``), or None.
    """

    retry_after: float | None

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        *,
        body: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason, message, body=body, details=details)
        if retry_after is None and details is not None:
            value = details.get("retryAfterSeconds")
            if isinstance(value, int | float) and not isinstance(value, bool):
                retry_after = float(value)
        self.retry_after = retry_after


class APIServerError(APIError):
    """5xx: the server failed; the request may succeed later."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: APIBadRequestError,
    401: APIUnauthorizedError,
    403: APIForbiddenError,
    404: APINotFoundError,
    409: APIConflictError,
    410: APIGoneError,
    413: APIRequestEntityTooLargeError,
    415: APIUnsupportedMediaTypeError,
    422: APIInvalidError,
    429: APITooManyRequestsError,
}


def error_from_status(
    status: int, body: dict[str, Any] | None, *, retry_after: float | None = None
) -> APIError:
    """Build the exception for an HTTP error ``status`` and its (parsed) ``kind: Status`` body.

    ``body`` may be None or any JSON object; only the Status fields ``reason``, ``message``
    and ``details`` are read. ``retry_after`` carries a ``Retry-After`` header for 429.
    """
    reason = ""
    message = ""
    details: dict[str, Any] | None = None
    if isinstance(body, dict):
        reason = body.get("reason") or ""
        message = body.get("message") or ""
        raw_details = body.get("details")
        details = raw_details if isinstance(raw_details, dict) else None
        reason = reason if isinstance(reason, str) else str(reason)
        message = message if isinstance(message, str) else str(message)
    else:
        body = None

    cls: type[APIError]
    if status == 409 and reason == "AlreadyExists":
        cls = APIAlreadyExistsError
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif 400 <= status < 500:
        cls = APIClientError
    elif status >= 500:
        cls = APIServerError
    else:
        cls = APIError

    if cls is APITooManyRequestsError:
        return APITooManyRequestsError(
            status, reason, message, body=body, details=details, retry_after=retry_after
        )
    return cls(status, reason, message, body=body, details=details)
