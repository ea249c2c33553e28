"""The index and the documents: upstream's keys, hashes of the served bytes, determinism,
OpenAPI 3 shape, and the discovery documents."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.openapi import (
    openapi_v3_bytes,
    openapi_v3_document,
    openapi_v3_document_for_path,
    openapi_v3_hash,
    openapi_v3_index,
    openapi_v3_index_bytes,
    serialize,
)
from tests.registry.openapi.helpers import gv_key, operations


def test_index_lists_every_served_group_version_with_upstream_keys() -> None:
    index = openapi_v3_index(REGISTRY)
    keys = set(index["paths"])
    for group, version in REGISTRY.group_versions():
        assert gv_key(group, version) in keys
        if group:
            assert f"apis/{group}" in keys
    assert {"api", "apis", "version", "api/v1", "apis/apps/v1"} <= keys
    assert list(index) == ["paths"]


def test_index_hashes_are_sha512_of_the_served_bytes() -> None:
    for key, entry in openapi_v3_index(REGISTRY)["paths"].items():
        url = entry["serverRelativeURL"]
        match = re.fullmatch(rf"/openapi/v3/{re.escape(key)}\?hash=([0-9A-F]{{128}})", url)
        assert match, url
        served = openapi_v3_bytes(REGISTRY, key)
        assert served is not None
        data, digest = served
        assert match.group(1) == digest == hashlib.sha512(data).hexdigest().upper()
        doc = openapi_v3_document_for_path(REGISTRY, key)
        assert doc is not None
        assert openapi_v3_hash(doc) == digest
        assert serialize(doc) == data


def test_documents_are_deterministic() -> None:
    first = serialize(openapi_v3_document(REGISTRY, "", "v1"))
    second = serialize(openapi_v3_document(REGISTRY, "", "v1"))
    assert first == second
    assert openapi_v3_index_bytes(REGISTRY) == serialize(openapi_v3_index(REGISTRY))


def test_unknown_paths_and_group_versions() -> None:
    assert openapi_v3_document_for_path(REGISTRY, "apis/nope/v1") is None
    assert openapi_v3_document_for_path(REGISTRY, "api/v2") is None
    assert openapi_v3_bytes(REGISTRY, "apis/apps/v2") is None
    with pytest.raises(KeyError):
        openapi_v3_document(REGISTRY, "nope", "v1")


def test_documents_are_openapi_3_shaped(docs: dict[str, dict[str, Any]]) -> None:
    for key, doc in docs.items():
        assert doc["openapi"] == "3.0.0", key
        assert doc["info"]["title"] == "Kubernetes"
        assert doc["paths"], key
        assert isinstance(doc["components"]["schemas"], dict)
        for path, method, op in operations(doc):
            assert path.startswith("/"), path
            assert op["operationId"], (path, method)
            assert "200" in op["responses"] or "201" in op["responses"], (path, method)
            for param in op.get("parameters", []) + doc["paths"][path].get("parameters", []):
                assert param["in"] in ("query", "path"), param
                assert "type" in param["schema"]
            for name in re.findall(r"\{(\w+)\}", path):
                declared = [
                    p["name"]
                    for p in doc["paths"][path].get("parameters", []) + op.get("parameters", [])
                    if p["in"] == "path"
                ]
                assert name in declared, (path, name)


def test_discovery_documents(docs: dict[str, dict[str, Any]]) -> None:
    assert list(docs["api"]["paths"]) == ["/api/"]
    assert list(docs["apis"]["paths"]) == ["/apis/"]
    assert list(docs["apis/apps"]["paths"]) == ["/apis/apps/"]
    assert docs["apis/apps"]["paths"]["/apis/apps/"]["get"]["operationId"] == "getAppsAPIGroup"
    assert list(docs["version"]["paths"]) == ["/version/"]
    assert "io.k8s.apimachinery.pkg.version.Info" in docs["version"]["components"]["schemas"]
    resources = docs["api/v1"]["paths"]["/api/v1/"]["get"]
    assert resources["operationId"] == "getCoreV1APIResources"
