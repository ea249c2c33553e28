"""/openapi/v3 documents: shape, self-containedness, and what kubectl 1.32 reads from them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from inplace.api.kinds import REGISTRY, Kind
from inplace.api.openapi import (
    document_keys,
    openapi_v3_bytes,
    openapi_v3_document,
    openapi_v3_document_for_path,
    openapi_v3_hash,
    openapi_v3_index,
    openapi_v3_index_bytes,
    serialize,
)

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


@pytest.fixture(scope="module")
def docs() -> dict[str, dict[str, Any]]:
    """Every served document, parsed back from the served bytes."""
    out = {}
    for key in document_keys(REGISTRY):
        served = openapi_v3_bytes(REGISTRY, key)
        assert served is not None
        out[key] = orjson.loads(served[0])
    return out


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


# --- index --------------------------------------------------------------------------------


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


# --- every document -----------------------------------------------------------------------


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


def test_every_ref_resolves_within_its_document(docs: dict[str, dict[str, Any]]) -> None:
    for key, doc in docs.items():
        schemas = doc["components"]["schemas"]
        refs = [node["$ref"] for node in walk(doc) if "$ref" in node]
        assert refs, key
        for ref in refs:
            assert ref.startswith(REF), (key, ref)
            assert ref[len(REF) :] in schemas, (key, ref)


def test_refs_with_siblings_are_wrapped_in_allof(docs: dict[str, dict[str, Any]]) -> None:
    for doc in docs.values():
        for node in walk(doc):
            if "$ref" in node:
                assert set(node) == {"$ref"}, node


def test_operation_ids_are_unique(docs: dict[str, dict[str, Any]]) -> None:
    for key, doc in docs.items():
        ids = [op["operationId"] for _, _, op in operations(doc)]
        assert len(ids) == len(set(ids)), key


def test_every_kubernetes_action_names_its_gvk(docs: dict[str, dict[str, Any]]) -> None:
    for doc in docs.values():
        for path, method, op in operations(doc):
            if path.endswith("/"):
                continue  # discovery endpoints carry neither, as upstream
            assert op["x-kubernetes-action"] in (
                "get",
                "list",
                "post",
                "put",
                "patch",
                "delete",
                "deletecollection",
            )
            gvk = op["x-kubernetes-group-version-kind"]
            assert set(gvk) == {"group", "kind", "version"}, (path, method)


def test_every_patch_operation_lists_field_validation(docs: dict[str, dict[str, Any]]) -> None:
    patches = 0
    for doc in docs.values():
        for path, method, op in operations(doc):
            if method != "patch":
                continue
            patches += 1
            names = {p["name"] for p in op["parameters"]}
            assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= names, path
            gvk = op["x-kubernetes-group-version-kind"]
            kind = REGISTRY.by_kind(gvk["group"], gvk["kind"])
            # Custom resources take no strategic merge patch (upstream answers 415).
            custom = kind is not None and kind.model is None
            expected = (
                PATCH_TYPES - {"application/strategic-merge-patch+json"} if custom else PATCH_TYPES
            )
            assert set(op["requestBody"]["content"]) == expected, path
    assert patches > 0


def test_writes_list_dry_run_field_manager_and_validation(docs: dict[str, dict[str, Any]]) -> None:
    for doc in docs.values():
        for path, method, op in operations(doc):
            if method in ("post", "put"):
                names = {p["name"] for p in op["parameters"]}
                assert {"fieldValidation", "dryRun", "fieldManager"} <= names, (path, method)


def test_every_top_level_kind_and_list_has_a_gvk_component(
    docs: dict[str, dict[str, Any]],
) -> None:
    for kind in REGISTRY.kinds:
        doc = docs[gv_key(kind.group, kind.version)]
        schema = component_for(doc, kind.group, kind.version, kind.kind)
        assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"])
        metadata = resolve(doc, schema["properties"]["metadata"])
        assert "ownerReferences" in metadata["properties"]
        listed = component_for(doc, kind.group, kind.version, kind.list_kind)
        assert "items" in listed["required"]
        assert resolve(doc, listed["properties"]["items"]["items"]) is schema


# --- what kubectl 1.32 needs (see /work/shared/notes/probes.md) ----------------------------


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


def test_kubectl_explain_walks_into_nested_fields(docs: dict[str, dict[str, Any]]) -> None:
    pod = REGISTRY.by_kind("", "Pod")
    deployment = REGISTRY.by_kind("apps", "Deployment")
    vpa = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
    assert pod is not None and deployment is not None and vpa is not None
    core, apps = docs["api/v1"], docs["apis/apps/v1"]
    containers = core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"][
        "containers"
    ]
    assert containers["description"].startswith("List of containers belonging to the pod.")
    limits = explain(core, pod, "spec.containers.resources.limits")
    assert limits["type"] == "object"
    assert limits["additionalProperties"] == {
        "$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"
    }
    port = explain(apps, deployment, "spec.template.spec.containers.ports.containerPort")
    assert port == {
        "description": port["description"],
        "format": "int32",
        "type": "integer",
    }
    mode = explain(docs["apis/autoscaling.k8s.io/v1"], vpa, "spec.updatePolicy.updateMode")
    assert "InPlaceOrRecreate" in mode["enum"]
    explain(docs["apis/autoscaling.k8s.io/v1"], vpa, "metadata.labels")


def test_pods_document_has_resize_and_the_other_subresources(
    docs: dict[str, dict[str, Any]],
) -> None:
    paths = docs["api/v1"]["paths"]
    base = "/api/v1/namespaces/{namespace}/pods/{name}"
    pod_gvk = {"group": "", "kind": "Pod", "version": "v1"}
    resize = paths[f"{base}/resize"]
    assert set(resize) >= {"get", "put", "patch", "parameters"}
    assert resize["patch"]["operationId"] == "patchCoreV1NamespacedPodResize"
    assert resize["patch"]["x-kubernetes-group-version-kind"] == pod_gvk
    assert resize["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": REF + "io.k8s.api.core.v1.Pod"
    }
    assert paths[f"{base}/status"]["patch"]["operationId"] == "patchCoreV1NamespacedPodStatus"
    binding = paths[f"{base}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"] == {
        "group": "",
        "kind": "Binding",
        "version": "v1",
    }
    eviction = paths[f"{base}/eviction"]["post"]
    assert eviction["requestBody"]["content"]["*/*"]["schema"] == {
        "$ref": REF + "io.k8s.api.policy.v1.Eviction"
    }
    log = paths[f"{base}/log"]["get"]
    assert {"container", "follow", "tailLines"} <= {p["name"] for p in log["parameters"]}
    item = paths[base]
    assert item["patch"]["operationId"] == "patchCoreV1NamespacedPod"
    assert item["patch"]["x-kubernetes-action"] == "patch"
    listing = paths["/api/v1/namespaces/{namespace}/pods"]
    assert {"list", "post", "deletecollection"} == {
        listing[m]["x-kubernetes-action"] for m in ("get", "post", "delete")
    }
    assert {"watch", "labelSelector", "fieldSelector", "limit", "continue"} <= {
        p["name"] for p in listing["get"]["parameters"]
    }
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert "/api/v1/nodes/{name}" in paths
    assert "/api/v1/namespaces/{namespace}/nodes" not in paths


def test_scale_subresource_answers_with_autoscaling_scale(
    docs: dict[str, dict[str, Any]],
) -> None:
    scale = docs["apis/apps/v1"]["paths"][
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"
    ]
    assert scale["get"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    assert scale["get"]["operationId"] == "readAppsV1NamespacedDeploymentScale"


def test_schemas_carry_required_patch_extensions_and_descriptions(
    docs: dict[str, dict[str, Any]],
) -> None:
    schemas = docs["api/v1"]["components"]["schemas"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]
    assert "containers" in pod_spec["required"]
    assert "name" in schemas["io.k8s.api.core.v1.Container"]["required"]
    containers = pod_spec["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    volumes = pod_spec["properties"]["volumes"]
    assert volumes["x-kubernetes-patch-strategy"] == "merge,retainKeys"
    ports = schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    finalizers = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"][
        "finalizers"
    ]
    assert finalizers["x-kubernetes-list-type"] == "set"
    metadata = schemas["io.k8s.api.core.v1.Pod"]["properties"]["metadata"]
    assert metadata["allOf"] == [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert schemas["io.k8s.api.core.v1.Pod"]["description"].startswith("Pod is a collection")
    port = schemas["io.k8s.api.core.v1.HTTPGetAction"]["properties"]["port"]
    assert port["allOf"] == [{"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert {"type": "number"} in schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"]
    strategy = docs["apis/apps/v1"]["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]
    assert strategy["properties"]["strategy"]["x-kubernetes-patch-strategy"] == "retainKeys"


def test_vpa_is_served_with_its_crd_schema(docs: dict[str, dict[str, Any]]) -> None:
    doc = docs["apis/autoscaling.k8s.io/v1"]
    schemas = doc["components"]["schemas"]
    vpa = schemas["io.k8s.autoscaling.v1.VerticalPodAutoscaler"]
    assert vpa["required"] == ["spec"]
    assert vpa["properties"]["spec"]["required"] == ["targetRef"]
    policy = vpa["properties"]["spec"]["properties"]["resourcePolicy"]["properties"][
        "containerPolicies"
    ]["items"]["properties"]
    assert policy["minAllowed"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert policy["controlledValues"]["enum"] == ["RequestsAndLimits", "RequestsOnly"]
    status = vpa["properties"]["status"]["properties"]["recommendation"]["properties"]
    assert status["containerRecommendations"]["items"]["required"] == ["target"]
    assert "io.k8s.autoscaling.v1.VerticalPodAutoscalerList" in schemas
    ops = {op["operationId"] for _, _, op in operations(doc)}
    assert "patchAutoscalingK8sIoV1NamespacedVerticalPodAutoscaler" in ops
    assert "patchAutoscalingK8sIoV1NamespacedVerticalPodAutoscalerStatus" in ops


def test_metrics_kinds_are_read_only(docs: dict[str, dict[str, Any]]) -> None:
    doc = docs["apis/metrics.k8s.io/v1beta1"]
    methods = {method for _, method, _ in operations(doc)}
    assert methods == {"get"}
    pod_metrics = doc["components"]["schemas"]["io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics"]
    assert {"timestamp", "window", "containers"} <= set(pod_metrics["properties"])
    node_metrics = doc["components"]["schemas"][
        "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics"
    ]
    usage = node_metrics["properties"]["usage"]
    assert usage["additionalProperties"] == {
        "$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"
    }
    assert "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}" in doc["paths"]
    assert "/apis/metrics.k8s.io/v1beta1/nodes/{name}" in doc["paths"]


def test_discovery_documents(docs: dict[str, dict[str, Any]]) -> None:
    assert list(docs["api"]["paths"]) == ["/api/"]
    assert list(docs["apis"]["paths"]) == ["/apis/"]
    assert list(docs["apis/apps"]["paths"]) == ["/apis/apps/"]
    assert docs["apis/apps"]["paths"]["/apis/apps/"]["get"]["operationId"] == "getAppsAPIGroup"
    assert list(docs["version"]["paths"]) == ["/version/"]
    assert "io.k8s.apimachinery.pkg.version.Info" in docs["version"]["components"]["schemas"]
    resources = docs["api/v1"]["paths"]["/api/v1/"]["get"]
    assert resources["operationId"] == "getCoreV1APIResources"
