"""What clients ask before anything else: /version, /api, /apis, resource lists, OpenAPI.

kubectl and the official clients map a kind to a resource through these documents: the
legacy form (APIVersions, APIGroupList, APIGroup, APIResourceList) and, for a client whose
Accept header asks for it (kubectl does), aggregated discovery (`apidiscovery.k8s.io/v2`
`APIGroupDiscoveryList` from `/api` and `/apis`: every group, version and resource in one
answer); they fetch OpenAPI v3 (and v2, see `inplace.registry.openapi.v2`) to validate and explain
fields. Everything here is derived from the kind registry at request time, so a kind added
there (a CustomResourceDefinition's) is discovered at once, without touching this module.

Trailing slashes are answered as upstream answers them: its discovery and version endpoints
are go-restful routes, which match `/version/`, `/api/`, `/apis/`, `/api/v1/` and
`/apis/apps/v1/` as the paths without the slash (the kr8s client asks for `/version/`); the
health, metrics and OpenAPI endpoints are exact paths, where a trailing slash is a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from inplace import __version__
from inplace.apiserver.errors import StatusError
from inplace.apiserver.httputil import json_response
from inplace.registry.kinds import Kind
from inplace.registry.openapi import openapi_v3_bytes, openapi_v3_index_bytes
from inplace.registry.openapi.v2 import openapi_v2_bytes
from inplace.registry.served import Registry

#: Kubernetes version this server speaks (pods/resize is a v1.33 subresource).
KUBE_VERSION = ("1", "33", "v1.33.0")
#: /openapi/v2 in gnostic's protobuf: the media type served, and the older spelling kubectl
#: still asks for (with an "@", which is not a valid media type character, so it is never
#: what the response says).
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_OPENAPI_V2_PROTOBUF_ASKED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
#: kube-openapi's table for /openapi/v2: the (type, subtype) a clause may name, and whether
#: it is served protobuf.
_OPENAPI_V2_FORMS = (
    ("application", "json", False),
    ("application", _OPENAPI_V2_PROTOBUF_ASKED.split("/", 1)[1], True),
    ("application", OPENAPI_V2_PROTOBUF.split("/", 1)[1], True),
)


def version_info() -> dict[str, str]:
    """The body of GET /version, upstream's version.Info."""
    major, minor, git = KUBE_VERSION
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"{git}+inplace.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "python",
        "compiler": "cpython",
        "platform": "linux/amd64",
    }


def openapi_v2_form(accept: str) -> bool | None:
    """Whether an Accept header gets /openapi/v2 in protobuf (True), JSON (False), or 406 (None).

    As kube-openapi's handler: the clauses are taken by quality, then by specificity (a
    wildcard ranks below a named type); the first clause that matches a served form wins.
    """
    clauses = []
    for position, clause in enumerate((accept or "*/*").split(",")):
        media, *params = (part.strip() for part in clause.split(";"))
        if not media:
            continue
        kind, _, sub = media.partition("/")
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            clauses.append((-quality, kind == "*", sub == "*", position, kind, sub or "*"))
    for *_, kind, sub in sorted(clauses):
        for form_kind, form_sub, protobuf in _OPENAPI_V2_FORMS:
            if kind in (form_kind, "*") and sub in (form_sub, "*"):
                return protobuf
    return None


def subresource_discovery(kind: Kind, sub: str) -> dict[str, Any]:
    """The APIResource entry of `kind`'s subresource `sub` ("pods/resize", "deployments/scale")."""
    entry: dict[str, Any] = {
        "name": f"{kind.plural}/{sub}",
        "singularName": "",
        "namespaced": kind.namespaced,
        "kind": kind.kind,
    }
    if sub in ("status", "resize"):
        entry["verbs"] = ["get", "patch", "update"]
    elif sub == "scale":
        entry.update(
            group="autoscaling", version="v1", kind="Scale", verbs=["get", "patch", "update"]
        )
    elif sub == "binding":
        entry.update(kind="Binding", verbs=["create"])
    elif sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction", verbs=["create"])
    elif sub == "token":
        entry.update(
            group="authentication.k8s.io", version="v1", kind="TokenRequest", verbs=["create"]
        )
    elif sub == "log":
        entry["verbs"] = ["get"]
    elif sub == "exec":
        entry.update(kind="PodExecOptions", verbs=["create", "get"])
    elif sub == "attach":
        entry.update(kind="PodAttachOptions", verbs=["create", "get"])
    return entry


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The APIResourceList of a group-version, None when nothing is served there."""
    kinds = registry.in_group_version(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for kind in kinds:
        entry: dict[str, Any] = {
            "name": kind.plural,
            "singularName": kind.singular,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": list(kind.verbs),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        resources.append(entry)
        for sub in kind.subresources:
            resources.append(subresource_discovery(kind, sub))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    """The APIGroup document of a named group, None when the group is not served."""
    versions = [v for g, v in registry.group_versions() if g == group]
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    """A group's versions, the preferred (first served: a CRD's by upstream's version
    priority) first."""
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    """GET /apis: every named group with its served versions."""
    versions: dict[str, list[str]] = {}
    for group, version in registry.group_versions():
        if group:
            versions.setdefault(group, []).append(version)
    groups = [_group_entry(group, served) for group, served in versions.items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


# --- aggregated discovery (apidiscovery.k8s.io/v2) ------------------------------------------

_AGGREGATED_GROUP = "apidiscovery.k8s.io"
_AGGREGATED_VERSIONS = ("v2", "v2beta1")


def aggregated_form(accept: str) -> str | None:
    """The apidiscovery version an Accept header asks `/api` and `/apis` for ("v2" before
    "v2beta1"), None for the legacy documents. As upstream: a JSON clause naming
    `g=apidiscovery.k8s.io;v=<version>;as=APIGroupDiscoveryList`."""
    asked = set()
    for clause in accept.split(","):
        media, *params = (part.strip() for part in clause.split(";"))
        values = dict(p.partition("=")[::2] for p in params)
        if (
            media in ("application/json", "*/*")
            and values.get("g") == _AGGREGATED_GROUP
            and values.get("as") == "APIGroupDiscoveryList"
        ):
            asked.add(values.get("v"))
    return next((v for v in _AGGREGATED_VERSIONS if v in asked), None)


def _response_kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(kind: Kind) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": kind.plural,
        "responseKind": _response_kind(kind.group, kind.version, kind.kind),
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "singularResource": kind.singular,
        "verbs": list(kind.verbs),
    }
    if kind.short_names:
        entry["shortNames"] = list(kind.short_names)
    if kind.categories:
        entry["categories"] = list(kind.categories)
    subresources = []
    for sub in kind.subresources:
        legacy = subresource_discovery(kind, sub)
        subresources.append(
            {
                "subresource": sub,
                "responseKind": _response_kind(
                    legacy.get("group", kind.group),
                    legacy.get("version", kind.version),
                    legacy["kind"],
                ),
                "verbs": legacy["verbs"],
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated_discovery(registry: Registry, *, core: bool, version: str) -> dict[str, Any]:
    """The `APIGroupDiscoveryList` of `/api` (`core`) or `/apis`: every group, its versions
    (preferred first) and their resources with subresources, as upstream's aggregated
    discovery serves them."""
    groups: dict[str, dict[str, list[Kind]]] = {}
    for kind in registry.kinds:
        if (kind.group == "") == core:
            groups.setdefault(kind.group, {}).setdefault(kind.version, []).append(kind)
    items = []
    for group, versions in groups.items():
        metadata: dict[str, Any] = {"creationTimestamp": None}
        if group:
            metadata["name"] = group
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": served,
                        "resources": [_aggregated_resource(k) for k in kinds],
                        "freshness": "Current",
                    }
                    for served, kinds in versions.items()
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{_AGGREGATED_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


def _aggregated_response(
    registry: Registry, request: web.Request, *, core: bool
) -> web.Response | None:
    version = aggregated_form(request.headers.get("Accept", ""))
    if version is None:
        return None
    body = orjson.dumps(aggregated_discovery(registry, core=core, version=version))
    response = web.Response(body=body)
    response.headers["Content-Type"] = (
        f"application/json;g={_AGGREGATED_GROUP};v={version};as=APIGroupDiscoveryList"
    )
    response.headers["Vary"] = "Accept"
    return response


class Discovery:
    """The discovery and OpenAPI endpoints; `address` is the host:port clients reach us at."""

    def __init__(self, registry: Registry, address: Callable[[], str]) -> None:
        self.registry = registry
        self.address = address

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register every endpoint; before the catch-all resource routes, which they shadow."""
        for path, handler in (
            ("/version", self.version),
            ("/api", self.api_versions),
            ("/apis", self.api_groups),
        ):
            router.add_route("GET", path, handler)
            router.add_route("GET", f"{path}/", handler)
        router.add_route("GET", "/api/{version}{slash:/?}", self.core_resources)
        router.add_route("GET", "/apis/{group}{slash:/?}", self.group)
        router.add_route("GET", "/apis/{group}/{version}{slash:/?}", self.group_resources)
        router.add_route("GET", "/openapi/v2", self.openapi_v2)
        router.add_route("GET", "/openapi/v3", self.openapi_index)
        router.add_route("GET", "/openapi/v3/{path:.*}", self.openapi_document)

    async def version(self, request: web.Request) -> web.Response:
        return json_response(version_info())

    async def api_versions(self, request: web.Request) -> web.Response:
        aggregated = _aggregated_response(self.registry, request, core=True)
        if aggregated is not None:
            return aggregated
        return json_response(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self.address()}
                ],
            }
        )

    async def api_groups(self, request: web.Request) -> web.Response:
        aggregated = _aggregated_response(self.registry, request, core=False)
        if aggregated is not None:
            return aggregated
        return json_response(api_group_list(self.registry))

    async def core_resources(self, request: web.Request) -> web.Response:
        return self._listing(resource_list(self.registry, "", request.match_info["version"]))

    async def group(self, request: web.Request) -> web.Response:
        return self._listing(api_group(self.registry, request.match_info["group"]))

    async def group_resources(self, request: web.Request) -> web.Response:
        info = request.match_info
        return self._listing(resource_list(self.registry, info["group"], info["version"]))

    async def openapi_v2(self, request: web.Request) -> web.Response:
        """The Swagger 2.0 document, in JSON or gnostic protobuf as the client accepts."""
        protobuf = openapi_v2_form(request.headers.get("Accept", ""))
        if protobuf is None:
            return web.Response(status=406, headers={"Vary": "Accept"})
        body, digest = openapi_v2_bytes(self.registry, protobuf=protobuf)
        etag = f'"{digest}"'
        headers = {"Etag": etag, "Vary": "Accept"}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        content_type = OPENAPI_V2_PROTOBUF if protobuf else "application/json"
        return web.Response(body=body, content_type=content_type, headers=headers)

    async def openapi_index(self, request: web.Request) -> web.Response:
        return web.Response(
            body=openapi_v3_index_bytes(self.registry), content_type="application/json"
        )

    async def openapi_document(self, request: web.Request) -> web.Response:
        found = openapi_v3_bytes(self.registry, request.match_info["path"])
        if found is None:
            raise StatusError(
                404, f'the server could not find the requested resource ("{request.path}")'
            )
        body, digest = found
        return web.Response(
            body=body, content_type="application/json", headers={"Etag": f'"{digest}"'}
        )

    @staticmethod
    def _listing(document: dict[str, Any] | None) -> web.Response:
        if document is None:
            raise StatusError(404, "the server could not find the requested resource")
        return json_response(document)
