"""Map a request path and method to what it asks for: verb, kind, namespace, name, subresource.

Upstream's RequestInfo: `/api/v1/namespaces/NS/pods/NAME/resize` → verb patch (by method),
kind Pod, namespace NS, name NAME, subresource resize. Ambiguous paths under `namespaces` are
resolved as upstream does: `/api/v1/namespaces/X/Y` is the collection Y in namespace X when Y
is a namespaced resource of that group-version, else subresource Y of namespace X.
"""

from __future__ import annotations

from dataclasses import dataclass

from inplace.apiserver.errors import StatusError, method_not_allowed
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry

_TRUE = {"1", "true", "True"}
#: Subresources that are only ever created (POSTed).
_CREATE_ONLY = frozenset({"binding", "eviction", "token"})


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def scope(self) -> str:
        if self.name is not None:
            return "resource"
        return "namespace" if self.namespace is not None else "cluster"


def resolve(
    registry: Registry, method: str, path: str, query: dict[str, str]
) -> RequestInfo | None:
    """Return the RequestInfo for a resource path, None if the path is not a resource path."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        candidate = registry.by_resource(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    kind = registry.by_resource(group, version, rest[0])
    if kind is None:
        raise StatusError(404, f'the server could not find the requested resource ("{path}")')
    if kind.namespaced is False and namespace is not None:
        raise StatusError(404, f'the server could not find the requested resource ("{path}")')
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) >= 3 else None
    if len(rest) > 3 or (subresource is not None and subresource not in kind.subresources):
        raise StatusError(404, f'the server could not find the requested resource ("{path}")')
    verb = _verb(method, name is not None, query)
    if verb is None:
        raise method_not_allowed(method, path)
    if subresource is None and verb not in kind.verbs:
        raise method_not_allowed(method, path)
    if (subresource in _CREATE_ONLY and verb != "create") or (
        subresource is not None and verb == "delete"  # never the object itself
    ):
        raise method_not_allowed(method, path)
    return RequestInfo(verb, kind, namespace, name, subresource)


def _verb(method: str, has_name: bool, query: dict[str, str]) -> str | None:
    if method == "GET":
        if query.get("watch") in _TRUE:
            return "watch"
        return "get" if has_name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update" if has_name else None
    if method == "PATCH":
        return "patch" if has_name else None
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return None
