"""Reading /openapi/v3 documents the way kubectl does: following $refs, finding a kind's
component, walking into fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inplace.registry.kinds import Kind

REF = "#/components/schemas/"
METHODS = ("get", "put", "post", "delete", "patch")
PATCH_TYPES = {
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
}


def gv_key(group: str, version: str) -> str:
    return f"api/{version}" if group == "" else f"apis/{group}/{version}"


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow `$ref` and single-element `allOf`, as kubectl explain does."""
    while True:
        if "$ref" in schema:
            ref = schema["$ref"]
            assert ref.startswith(REF), ref
            schema = doc["components"]["schemas"][ref[len(REF) :]]
        elif "allOf" in schema and len(schema["allOf"]) == 1:
            schema = schema["allOf"][0]
        else:
            return schema


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def component_for(doc: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    """The component kubectl explain picks for a GVK: the one whose extension names it."""
    found: list[dict[str, Any]] = [
        schema
        for schema in doc["components"]["schemas"].values()
        if {"group": group, "version": version, "kind": kind}
        in schema.get("x-kubernetes-group-version-kind", [])
    ]
    assert len(found) == 1, (group, version, kind, len(found))
    return found[0]


def explain(doc: dict[str, Any], kind: Kind, dotted: str) -> dict[str, Any]:
    schema = component_for(doc, kind.group, kind.version, kind.kind)
    for name in dotted.split("."):
        schema = resolve(doc, schema)
        if schema.get("type") == "array":
            schema = resolve(doc, schema["items"])
        schema = schema["properties"][name]
    return resolve(doc, schema)
