"""TokenReview (``authentication.k8s.io/v1``): does this token authenticate, and as whom?

Upstream's ``pkg/registry/authentication/tokenreview``: the token is put through the API
server's own token authenticators (the token file and service account tokens) for the
audiences asked for (the API server's when none are), and the answer says whether it
authenticated, the user it authenticates as and the audiences it is good for, or the error of
the authenticator that refused it. Created, never stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inplace.apiserver.auth import Authenticator
from inplace.apiserver.errors import bad_request

__all__ = ["token_review"]


def token_review(
    authn: Authenticator, api_audiences: Sequence[str], api_version: str, body: Any
) -> dict[str, Any]:
    """The TokenReview `body` with its status filled in."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a TokenReview object")
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise bad_request("token is required for TokenReview in authentication")
    raw_audiences = spec.get("audiences")
    audiences = (
        [str(a) for a in raw_audiences if isinstance(a, str)]
        if isinstance(raw_audiences, list)
        else []
    )
    result = authn.review(token, audiences, api_audiences)
    status: dict[str, Any] = {"user": {}}
    if result.user is not None:
        status["authenticated"] = True
        user: dict[str, Any] = {"username": result.user.name}
        if result.user.uid:
            user["uid"] = result.user.uid
        if result.user.groups:
            user["groups"] = list(result.user.groups)
        if result.user.extra:
            user["extra"] = {key: list(values) for key, values in result.user.extra}
        status["user"] = user
        if result.audiences:
            status["audiences"] = list(result.audiences)
    if result.error:
        status["error"] = result.error
    return {
        **body,
        "apiVersion": api_version,
        "kind": "TokenReview",
        "metadata": {"creationTimestamp": None},
        "status": status,
    }
