"""The documents: group-version documents, the discovery documents, the index, and their
serialized bytes and hashes, cached per registry."""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Final

import orjson

from inplace.registry import schema as s
from inplace.registry.openapi.components import (
    DELETE_OPTIONS,
    STATUS,
    WATCH_EVENT,
    Components,
    gvk_of,
)
from inplace.registry.openapi.operations import (
    SUB_GVKS,
    SUB_MODELS,
    build_operation,
    build_responses,
    group_words,
    kind_paths,
    path_prefix,
)
from inplace.registry.served import Registry

# --- serialization and hashing ------------------------------------------------------------


def serialize(doc: dict[str, Any]) -> bytes:
    """The bytes served for `doc`: compact JSON with sorted keys, like upstream's Go output."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def openapi_v3_hash(doc: dict[str, Any]) -> str:
    """Upper-case hex SHA-512 of `serialize(doc)` (kube-openapi's `%X` of `sha512.Sum512`)."""
    return hashlib.sha512(serialize(doc)).hexdigest().upper()


# --- documents ----------------------------------------------------------------------------


def _document(paths: dict[str, Any], components: Components) -> dict[str, Any]:
    return {
        "components": {
            "schemas": components.finish(),
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "openapi": "3.0.0",
        "paths": dict(sorted(paths.items())),
    }


def _component_gvks(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """`x-kubernetes-group-version-kind` for every component that is a kind somewhere.

    Like upstream, the shared meta kinds (DeleteOptions, WatchEvent) name every group-version
    they are served in; here, core/v1 and the document's own.
    """
    gvks: dict[str, list[dict[str, str]]] = {}
    for kind in registry.kinds:
        gvks[s.kind_schema(kind).name] = [gvk_of(kind.group, kind.version, kind.kind)]
        if "list" in kind.verbs:
            gvks[s.list_schema(kind).name] = [gvk_of(kind.group, kind.version, kind.list_kind)]
    for sub, model in SUB_MODELS.items():
        gvks[s.component_name(model)] = [SUB_GVKS[sub]]
    gvks[STATUS] = [gvk_of("", "v1", "Status")]
    served = [("", "v1")] + ([(group, version)] if group else [])
    for name in (DELETE_OPTIONS, WATCH_EVENT):
        gvks[name] = [gvk_of(g, v, name.rsplit(".", 1)[1]) for g, v in served]
    gvks.update(_discovery_gvks())
    return gvks


def _discovery_gvks() -> dict[str, list[dict[str, str]]]:
    out = {}
    for model in ("V1APIResourceList", "V1APIVersions", "V1APIGroupList", "V1APIGroup"):
        name = s.component_name(model)
        out[name] = [gvk_of("", "v1", name.rsplit(".", 1)[1])]
    return out


def openapi_v3_document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one served group-version (`/openapi/v3/apis/G/V`).

    Raises KeyError when the registry serves nothing in that group-version.
    """
    kinds = registry.in_group_version(group, version)
    if not kinds:
        raise KeyError(f"no kinds in {group or 'core'}/{version}")
    components = Components(_component_gvks(registry, group, version))
    components.add_model("V1Status")
    components.add_model("V1DeleteOptions")
    components.add_model("V1WatchEvent")
    resources = components.add_model("V1APIResourceList")
    infix, tag = group_words(kinds[0])
    prefix = path_prefix(group, version)
    paths: dict[str, Any] = {
        f"{prefix}/": {
            "get": build_operation(
                None,
                f"get{infix}APIResources",
                "get available resources",
                tag,
                None,
                build_responses(resources, (200,)),
            )
        }
    }
    for kind in kinds:
        paths.update(kind_paths(kind, components))
    return _document(paths, components)


def _discovery_document(
    path: str, op_id: str, description: str, tag: str, model: str
) -> dict[str, Any]:
    """A document with one discovery GET (`/api/`, `/apis/`, `/apis/<group>/`, `/version/`)."""
    components = Components(_discovery_gvks())
    name = components.add_model(model)
    get = build_operation(None, op_id, description, tag, None, build_responses(name, (200,)))
    return _document({path: {"get": get}}, components)


def document_keys(registry: Registry) -> list[str]:
    """The index's keys, one per document served under `/openapi/v3/`, sorted."""
    keys = {"api", "apis", "version"}
    for group, version in registry.group_versions():
        if group == "":
            keys.add(f"api/{version}")
        else:
            keys.add(f"apis/{group}")
            keys.add(f"apis/{group}/{version}")
    return sorted(keys)


def openapi_v3_document_for_path(registry: Registry, path: str) -> dict[str, Any] | None:
    """The document served at `/openapi/v3/<path>` ("api/v1", "apis/apps", "version", …), or
    None when there is none."""
    path = path.strip("/")
    if path not in document_keys(registry):
        return None
    parts = path.split("/")
    if path == "api":
        return _discovery_document(
            "/api/", "getCoreAPIVersions", "get available API versions", "core", "V1APIVersions"
        )
    if path == "apis":
        return _discovery_document(
            "/apis/", "getAPIVersions", "get available API versions", "apis", "V1APIGroupList"
        )
    if path == "version":
        return _discovery_document(
            "/version/", "getCodeVersion", "get the code version", "version", "VersionInfo"
        )
    if parts[0] == "api":
        return openapi_v3_document(registry, "", parts[1])
    if len(parts) == 2:
        kind = registry.in_group_version(parts[1], _first_version(registry, parts[1]))[0]
        infix, tag = group_words(kind)
        group_word = infix.removesuffix(kind.version[:1].upper() + kind.version[1:])
        return _discovery_document(
            f"/apis/{parts[1]}/",
            f"get{group_word}APIGroup",
            "get information of a group",
            tag.rsplit("_", 1)[0],
            "V1APIGroup",
        )
    return openapi_v3_document(registry, parts[1], parts[2])


def _first_version(registry: Registry, group: str) -> str:
    return next(v for g, v in registry.group_versions() if g == group)


# --- cached serving -----------------------------------------------------------------------


def openapi_v3_bytes(registry: Registry, path: str) -> tuple[bytes, str] | None:
    """(serialized document, its hash) for `/openapi/v3/<path>`, or None when there is no
    such document. Built once per registry generation and path (a CRD changes the registry's
    kinds, and so its generation); serve the bytes as they are, so the hash in the index is
    the hash of what the client receives."""
    path = path.strip("/")
    if path not in _keys(registry, registry.generation):
        return None  # checked first, so arbitrary request paths never grow the cache
    return _built(registry, registry.generation, path)


#: Documents of past generations age out instead of being kept for ever.
_GENERATIONS_KEPT: Final = 512


@functools.lru_cache(maxsize=64)
def _keys(registry: Registry, generation: int) -> frozenset[str]:
    return frozenset(document_keys(registry))


@functools.lru_cache(maxsize=_GENERATIONS_KEPT)
def _built(registry: Registry, generation: int, path: str) -> tuple[bytes, str]:
    doc = openapi_v3_document_for_path(registry, path)
    assert doc is not None
    data = serialize(doc)
    return data, hashlib.sha512(data).hexdigest().upper()


def openapi_v3_index(registry: Registry) -> dict[str, Any]:
    """`/openapi/v3`: every document's key and `serverRelativeURL` with its content hash."""
    paths: dict[str, Any] = {}
    for key in document_keys(registry):
        served = openapi_v3_bytes(registry, key)
        assert served is not None
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={served[1]}"}
    return {"paths": paths}


def openapi_v3_index_bytes(registry: Registry) -> bytes:
    """The serialized index, built once per registry generation."""
    return _index_bytes(registry, registry.generation)


@functools.lru_cache(maxsize=64)
def _index_bytes(registry: Registry, generation: int) -> bytes:
    return serialize(openapi_v3_index(registry))
