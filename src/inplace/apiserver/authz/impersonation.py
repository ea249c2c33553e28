"""Impersonation: ``Impersonate-User``, ``-Group``, ``-Uid`` and ``-Extra-*`` headers, as
``kubectl --as`` / ``--as-group`` send them (upstream ``filters/impersonation.go``).

Each thing impersonated is authorized for the caller first, as the verb ``impersonate`` on
``users``, ``groups`` or ``serviceaccounts`` (core group; a service account by namespace and
name), or ``uids`` / ``userextras/<key>`` (``authentication.k8s.io``); then the request runs
as the impersonated user. A service account impersonated without groups gets its fixed ones;
any user but ``system:anonymous`` gets ``system:authenticated`` unless the groups say
``system:unauthenticated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from inplace.apiserver.auth import (
    ANONYMOUS_USER,
    AUTHENTICATED_GROUP,
    UNAUTHENTICATED_GROUP,
    User,
    service_account_groups,
    service_account_of,
)
from inplace.apiserver.authz import Authorizers, forbidden_error
from inplace.apiserver.authz.rules import Attributes
from inplace.apiserver.errors import StatusError

__all__ = ["impersonate", "impersonation_headers_present"]

USER_HEADER: Final = "Impersonate-User"
GROUP_HEADER: Final = "Impersonate-Group"
UID_HEADER: Final = "Impersonate-Uid"
EXTRA_PREFIX: Final = "Impersonate-Extra-"
_AUTHN_GROUP: Final = "authentication.k8s.io"


@dataclass(frozen=True, slots=True)
class _Request:
    """One thing to impersonate (upstream builds an ObjectReference for each)."""

    kind: str
    name: str
    namespace: str = ""
    key: str = ""

    def describe(self) -> str:
        return f"{{{self.kind} {self.namespace} {self.name} {self.key}}}"


class Headers:
    """The subset of a request's headers impersonation reads (case-insensitive, repeatable)."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self.items = items

    def get_all(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.items if key.lower() == lowered]

    def with_prefix(self, prefix: str) -> list[tuple[str, str]]:
        lowered = prefix.lower()
        return [(key, value) for key, value in self.items if key.lower().startswith(lowered)]


def impersonation_headers_present(headers: Mapping[str, str]) -> bool:
    return any(key.lower().startswith("impersonate-") for key in headers)


def _requests(headers: Headers) -> list[_Request]:
    """Upstream ``buildImpersonationRequests``."""
    out: list[_Request] = []
    user = next(iter(headers.get_all(USER_HEADER)), "")
    if user:
        account = service_account_of(user)
        if account is not None:
            out.append(_Request("ServiceAccount", account[1], account[0]))
        else:
            out.append(_Request("User", user))
    groups = headers.get_all(GROUP_HEADER)
    out.extend(_Request("Group", group) for group in groups)
    extras = headers.with_prefix(EXTRA_PREFIX)
    for key, value in extras:
        out.append(_Request("UserExtra", value, key=unquote(key[len(EXTRA_PREFIX) :].lower())))
    uid = next(iter(headers.get_all(UID_HEADER)), "")
    if uid:
        out.append(_Request("UID", uid))
    if (groups or extras or uid) and not user:
        listed = " ".join(request.describe() for request in out)
        raise StatusError(
            500,
            f"Internal error occurred: requested [{listed}] without impersonating a user",
        )
    return out


def impersonate(authz: Authorizers, caller: User, headers: Headers) -> User:
    """The user the request runs as; raises a 403 naming the first thing the caller may not
    impersonate."""
    requests = _requests(headers)
    if not requests:
        return caller
    groups_specified = bool(headers.get_all(GROUP_HEADER))
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for request in requests:
        if request.kind == "ServiceAccount":
            attrs = Attributes(
                caller,
                "impersonate",
                namespace=request.namespace,
                resource="serviceaccounts",
                name=request.name,
                api_version="v1",
            )
            name = f"system:serviceaccount:{request.namespace}:{request.name}"
            if not groups_specified:
                groups = list(service_account_groups(request.namespace))
        elif request.kind == "User":
            attrs = Attributes(
                caller, "impersonate", resource="users", name=request.name, api_version="v1"
            )
            name = request.name
        elif request.kind == "Group":
            attrs = Attributes(
                caller, "impersonate", resource="groups", name=request.name, api_version="v1"
            )
            groups.append(request.name)
        elif request.kind == "UserExtra":
            attrs = Attributes(
                caller,
                "impersonate",
                api_group=_AUTHN_GROUP,
                api_version="v1",
                resource="userextras",
                subresource=request.key,
                name=request.name,
            )
            extra.setdefault(request.key, []).append(request.name)
        else:
            attrs = Attributes(
                caller,
                "impersonate",
                api_group=_AUTHN_GROUP,
                api_version="v1",
                resource="uids",
                name=request.name,
            )
            uid = request.name
        decision = authz.authorize(attrs)
        if not decision.allowed:
            raise forbidden_error(attrs, decision.reason)
    if name != ANONYMOUS_USER:
        if AUTHENTICATED_GROUP not in groups and UNAUTHENTICATED_GROUP not in groups:
            groups.append(AUTHENTICATED_GROUP)
    elif UNAUTHENTICATED_GROUP not in groups:
        groups.append(UNAUTHENTICATED_GROUP)
    return User(
        name,
        tuple(groups),
        uid,
        tuple((key, tuple(values)) for key, values in sorted(extra.items())),
    )
