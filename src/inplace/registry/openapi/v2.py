"""The OpenAPI v2 (Swagger 2.0) document of `/openapi/v2`, derived from the v3 documents.

Why this exists: kubectl validates a manifest on the client when the server cannot validate
it: for a kind the server does not serve, `/openapi/v3` has no document for its
group-version, so kubectl 1.33 downloads `/openapi/v2` (in protobuf, see
`v2_protobuf.py`), finds no model for the kind, skips validation, and only then reaches
its usual `no matches for kind "X" in version "Y"`. Without `/openapi/v2` it stops at "error
validating data: … failed to download openapi". `kubectl explain -o plaintext-openapiv2`
reads it too. kube-apiserver serves one v2 document for every group-version; so does this.

The conversion follows how upstream's generator writes v2 from the same Go types:

* components become `definitions` and `#/components/schemas/X` becomes `#/definitions/X`;
  a `$ref` that v3 wraps in `allOf` to carry siblings (description, patch tags) is a plain
  `$ref` with those siblings, as in upstream's `swagger.json`;
* v2 has no `oneOf`/`anyOf`/`nullable`: `Quantity` and `IntOrString` become `type: string`
  (IntOrString keeps `format: int-or-string`), and a CRD's `anyOf` is dropped as
  kube-apiserver drops it when it publishes a CRD in v2 (its `x-kubernetes-int-or-string`
  stays);
* a `requestBody` becomes a `body` parameter and the media types become `consumes` /
  `produces`; a parameter's `schema` (type, uniqueItems) moves into the parameter;
* a component present in several group-versions (DeleteOptions, WatchEvent) names every
  group-version-kind it is served as, as upstream's v2 document does.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Final

from inplace.registry.openapi.documents import (
    document_keys,
    openapi_v3_document_for_path,
    serialize,
)
from inplace.registry.openapi.v2_protobuf import encode_document
from inplace.registry.served import Registry

__all__ = ["openapi_v2_bytes", "openapi_v2_document", "v2_schema"]

_V3_REF: Final = "#/components/schemas/"
_V2_REF: Final = "#/definitions/"
_GVK: Final = "x-kubernetes-group-version-kind"
#: JSON Schema words v2 does not have (Swagger 2.0 schema objects are a JSON Schema subset).
_V3_ONLY: Final = frozenset({"oneOf", "anyOf", "not", "nullable"})
_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch")


def v2_schema(schema: Any) -> Any:
    """One schema (and everything under it) in its Swagger 2.0 form."""
    if isinstance(schema, list):
        return [v2_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _V3_ONLY:
            continue
        if key == "$ref":
            out[key] = _v2_ref(value)
        elif key in ("properties", "definitions"):
            out[key] = {name: v2_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "allOf"):
            out[key] = v2_schema(value)
        else:
            out[key] = value
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        del out["allOf"]
        out["$ref"] = all_of[0]["$ref"]
    if "type" not in out and _may_be_a_string(schema):
        out["type"] = "string"  # upstream's v2 type of Quantity and IntOrString
    return out


def _may_be_a_string(schema: dict[str, Any]) -> bool:
    """A built-in type v3 gives as alternatives (`oneOf`) one of which is a string.

    A CRD's int-or-string (`anyOf` with `x-kubernetes-int-or-string`) keeps no type in v2.
    """
    if schema.get("x-kubernetes-int-or-string"):
        return False
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    return isinstance(alternatives, list) and any(
        isinstance(alt, dict) and alt.get("type") == "string" for alt in alternatives
    )


def _v2_ref(ref: str) -> str:
    return _V2_REF + ref[len(_V3_REF) :] if ref.startswith(_V3_REF) else ref


def _parameter(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    for key, value in (param.get("schema") or {}).items():
        out[key] = v2_schema(value) if key == "items" else value
    return out


def _operation(op: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in op.items() if k not in ("requestBody", "responses")}
    params = [_parameter(p) for p in op.get("parameters", ())]
    body = op.get("requestBody")
    if body is not None:
        content = body.get("content") or {}
        schema: Any = next((c["schema"] for c in content.values() if "schema" in c), {})
        params.insert(
            0,
            {
                "name": "body",
                "in": "body",
                "required": bool(body.get("required")),
                "schema": v2_schema(schema),
            },
        )
        out["consumes"] = list(content)
    if params:
        out["parameters"] = params
    produces: list[str] = []
    responses: dict[str, Any] = {}
    for code, response in (op.get("responses") or {}).items():
        converted = {"description": response.get("description", "")}
        for media, content in (response.get("content") or {}).items():
            if media not in produces:
                produces.append(media)
            if "schema" in content and "schema" not in converted:
                converted["schema"] = v2_schema(content["schema"])
        responses[code] = converted
    out["responses"] = responses
    if produces:
        out["produces"] = produces
    out["schemes"] = ["https"]
    return out


def _path_item(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key in _METHODS:
            out[key] = _operation(value)
        elif key == "parameters":
            out[key] = [_parameter(p) for p in value]
        else:
            out[key] = value
    return out


def _merge_definition(into: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    known = into.get(name)
    if known is None:
        into[name] = schema
        return
    gvks = list(known.get(_GVK) or [])
    for gvk in schema.get(_GVK) or ():
        if gvk not in gvks:
            gvks.append(gvk)
    if gvks:
        known[_GVK] = sorted(gvks, key=lambda g: (g["group"], g["version"], g["kind"]))


def openapi_v2_document(registry: Registry) -> dict[str, Any]:
    """The one Swagger 2.0 document of every served group-version, discovery and /version."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    security: dict[str, Any] = {}
    for key in document_keys(registry):
        doc = openapi_v3_document_for_path(registry, key)
        assert doc is not None
        for path, item in doc.get("paths", {}).items():
            paths[path] = _path_item(item)
        components = doc.get("components") or {}
        for name, schema in (components.get("schemas") or {}).items():
            _merge_definition(definitions, name, v2_schema(schema))
        security.update(components.get("securitySchemes") or {})
    document: dict[str, Any] = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
    }
    if security:
        document["securityDefinitions"] = security
        document["security"] = [{name: []} for name in security]
    return document


def openapi_v2_bytes(registry: Registry, *, protobuf: bool) -> tuple[bytes, str]:
    """(served bytes, ETag value) of `/openapi/v2` as JSON or as gnostic protobuf.

    As kube-openapi's handler computes it, the ETag of both forms is the upper-case hex
    SHA-512 of the JSON bytes. Built once per registry generation and form.
    """
    return _v2_bytes(registry, registry.generation, protobuf)


@functools.lru_cache(maxsize=64)
def _v2_bytes(registry: Registry, generation: int, protobuf: bool) -> tuple[bytes, str]:
    document = openapi_v2_document(registry)
    data = serialize(document)
    etag = hashlib.sha512(data).hexdigest().upper()
    if protobuf:
        data = encode_document(document)
    return data, etag
