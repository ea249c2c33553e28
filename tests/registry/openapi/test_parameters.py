"""Parameters: what kubectl apply's query-parameter verifier looks for, and the write
parameters every write operation lists."""

from __future__ import annotations

from typing import Any

from inplace.registry.kinds import REGISTRY
from tests.registry.openapi.helpers import PATCH_TYPES, gv_key, operations


def test_every_patch_operation_lists_field_validation(docs: dict[str, dict[str, Any]]) -> None:
    patches = customs = 0
    for doc in docs.values():
        for path, method, op in operations(doc):
            if method != "patch":
                continue
            patches += 1
            names = {p["name"] for p in op["parameters"]}
            assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= names, path
            gvk = op["x-kubernetes-group-version-kind"]
            kind = REGISTRY.by_kind(gvk["group"], gvk["kind"])
            # A custom resource takes no strategic merge patch (upstream answers 415).
            custom = kind is not None and kind.model is None
            smp = {"application/strategic-merge-patch+json"}
            expected = PATCH_TYPES - smp if custom else PATCH_TYPES
            assert set(op["requestBody"]["content"]) == expected, path
            customs += custom
    assert patches > 0 and customs > 0


def test_writes_list_dry_run_field_manager_and_validation(docs: dict[str, dict[str, Any]]) -> None:
    for doc in docs.values():
        for path, method, op in operations(doc):
            if method in ("post", "put") and op["x-kubernetes-action"] != "connect":
                names = {p["name"] for p in op["parameters"]}
                assert {"fieldValidation", "dryRun", "fieldManager"} <= names, (path, method)


def test_kubectl_apply_query_param_verifier_finds_field_validation(
    docs: dict[str, dict[str, Any]],
) -> None:
    """kubectl looks, in the kind's group-version document, for a PATCH operation whose
    x-kubernetes-group-version-kind is the object's and whose parameters name fieldValidation;
    finding it, it skips client-side validation and sends fieldValidation=Strict."""
    for kind in REGISTRY.kinds:
        if "patch" not in kind.verbs:
            continue
        doc = docs[gv_key(kind.group, kind.version)]
        gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
        found = [
            op
            for _, method, op in operations(doc)
            if method == "patch" and op.get("x-kubernetes-group-version-kind") == gvk
        ]
        assert found, kind.kind
        assert any(
            p["name"] == "fieldValidation" and p["in"] == "query"
            for op in found
            for p in op["parameters"]
        )
