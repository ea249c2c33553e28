"""The Swagger 2.0 document: every reference resolves, no v3-only word is left, and the shapes
upstream's v2 document has (body parameters, consumes/produces, merged group-version-kinds)."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.openapi.v2 import openapi_v2_bytes, openapi_v2_document, v2_schema

DOC = openapi_v2_document(REGISTRY)
DEFINITIONS: dict[str, Any] = DOC["definitions"]


def walk(node: Any, path: str = "") -> list[tuple[str, str, Any]]:
    """Every (path, key, value) under `node`."""
    found: list[tuple[str, str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((path, key, value))
            found += walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += walk(value, f"{path}/{i}")
    return found


def test_every_reference_names_a_definition() -> None:
    refs = {value for _, key, value in walk(DOC) if key == "$ref"}
    assert refs, "the document has references"
    assert all(ref.startswith("#/definitions/") for ref in refs)
    assert {ref.removeprefix("#/definitions/") for ref in refs} <= set(DEFINITIONS)


def test_no_schema_keeps_a_v3_only_word() -> None:
    # Keys directly under "properties" are field names, not schema words.
    words = {k for p, k, _ in walk(DOC) if not p.endswith("/properties")}
    assert "type" in words and "$ref" in words
    assert not words & {"oneOf", "anyOf", "nullable", "not", "requestBody", "content"}


def test_quantity_and_int_or_string_are_strings_as_upstream_writes_them() -> None:
    quantity = DEFINITIONS["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["type"] == "string" and "format" not in quantity
    int_or_string = DEFINITIONS["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert (int_or_string["type"], int_or_string["format"]) == ("string", "int-or-string")


@pytest.mark.parametrize(
    ("v3", "v2"),
    [
        (
            {"allOf": [{"$ref": "#/components/schemas/A"}], "description": "d"},
            {"$ref": "#/definitions/A", "description": "d"},
        ),
        (
            {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/B"}]}},
            {"type": "array", "items": {"$ref": "#/definitions/B"}},
        ),
        (
            {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            {"x-kubernetes-int-or-string": True},
        ),
        ({"type": "string", "nullable": True}, {"type": "string"}),
        (
            {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Q"}},
            {"type": "object", "additionalProperties": {"$ref": "#/definitions/Q"}},
        ),
    ],
)
def test_schema_conversion(v3: dict[str, Any], v2: dict[str, Any]) -> None:
    assert v2_schema(v3) == v2


def test_a_kind_definition_names_its_group_version_kind() -> None:
    pod = DEFINITIONS["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    delete_options = DEFINITIONS["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
    groups = {gvk["group"] for gvk in delete_options["x-kubernetes-group-version-kind"]}
    assert {"", "apps", "batch", "policy"} <= groups


def test_a_patch_takes_a_body_and_names_its_patch_types() -> None:
    patch = DOC["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    body = patch["parameters"][0]
    assert body == {
        "name": "body",
        "in": "body",
        "required": True,
        "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
    }
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert "application/json" in patch["produces"]
    names = {p["name"] for p in patch["parameters"]}
    assert {"dryRun", "fieldManager", "fieldValidation", "force"} <= names
    query = next(p for p in patch["parameters"] if p["name"] == "dryRun")
    assert query == {
        "in": "query",
        "name": "dryRun",
        "description": query["description"],
        "type": "string",
        "uniqueItems": True,
    }
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert DOC["paths"]["/version/"]["get"]["responses"]["200"]["schema"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.version.Info"
    }


def test_both_forms_share_one_etag_of_the_json() -> None:
    json_bytes, json_etag = openapi_v2_bytes(REGISTRY, protobuf=False)
    proto_bytes, proto_etag = openapi_v2_bytes(REGISTRY, protobuf=True)
    assert json_etag == proto_etag and len(json_etag) == 128
    assert json_bytes.startswith(b"{") and not proto_bytes.startswith(b"{")
