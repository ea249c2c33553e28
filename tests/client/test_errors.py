from __future__ import annotations

from typing import Any

import pytest

from inplace.client import errors as E


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (400, "BadRequest", E.APIBadRequestError),
        (401, "Unauthorized", E.APIUnauthorizedError),
        (403, "Forbidden", E.APIForbiddenError),
        (404, "NotFound", E.APINotFoundError),
        (409, "Conflict", E.APIConflictError),
        (409, "AlreadyExists", E.APIAlreadyExistsError),
        (410, "Expired", E.APIGoneError),
        (413, "RequestEntityTooLarge", E.APIRequestEntityTooLargeError),
        (415, "UnsupportedMediaType", E.APIUnsupportedMediaTypeError),
        (422, "Invalid", E.APIInvalidError),
        (429, "TooManyRequests", E.APITooManyRequestsError),
        (405, "MethodNotAllowed", E.APIClientError),
        (418, "", E.APIClientError),
        (500, "InternalError", E.APIServerError),
        (503, "ServiceUnavailable", E.APIServerError),
        (504, "Timeout", E.APIServerError),
    ],
)
def test_error_mapping(status: int, reason: str, cls: type[E.APIError]) -> None:
    body = {"kind": "Status", "code": status, "reason": reason, "message": "boom"}
    err = E.error_from_status(status, body)
    assert type(err) is cls
    assert err.status == status
    assert err.reason == reason
    assert err.message == "boom"
    assert err.body == body
    assert isinstance(err, E.APIClientError) == (400 <= status < 500)
    assert isinstance(err, E.APIServerError) == (status >= 500)


def test_conflict_is_not_already_exists() -> None:
    err = E.error_from_status(409, {"reason": "Conflict"})
    assert isinstance(err, E.APIConflictError)
    assert not isinstance(err, E.APIAlreadyExistsError)
    assert isinstance(E.error_from_status(409, {"reason": "AlreadyExists"}), E.APIConflictError)


def test_invalid_exposes_causes() -> None:
    causes = [{"reason": "FieldValueRequired", "message": "Required", "field": "spec.x"}]
    err = E.error_from_status(422, {"reason": "Invalid", "details": {"causes": causes}})
    assert isinstance(err, E.APIInvalidError)
    assert err.causes == causes
    assert err.details == {"causes": causes}
    assert E.error_from_status(422, None).causes == []  # type: ignore[attr-defined]


def test_too_many_requests_retry_after() -> None:
    from_details = E.error_from_status(429, {"details": {"retryAfterSeconds": 7}})
    assert isinstance(from_details, E.APITooManyRequestsError)
    assert from_details.retry_after == 7.0
    from_header = E.error_from_status(429, None, retry_after=3.0)
    assert isinstance(from_header, E.APITooManyRequestsError)
    assert from_header.retry_after == 3.0
    assert E.error_from_status(429, {}).retry_after is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [None, {}, {"reason": 5, "message": None, "details": []}])
def test_odd_bodies(body: Any) -> None:
    err = E.error_from_status(404, body)
    assert isinstance(err, E.APINotFoundError)
    assert err.details is None
    assert isinstance(err.reason, str) and isinstance(err.message, str)


def test_str_and_repr() -> None:
    err = E.error_from_status(404, {"reason": "NotFound", "message": 'pods "x" not found'})
    assert str(err) == '404 NotFound: pods "x" not found'
    assert "APINotFoundError" in repr(err)
    assert str(E.error_from_status(500, None)) == "500"


def test_tree_roots() -> None:
    assert issubclass(E.APIConnectionError, ConnectionError)
    assert not issubclass(E.APIConnectionError, E.APIError)
    assert not issubclass(E.ConfigError, E.APIError)
