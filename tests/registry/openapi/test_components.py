"""Components: every $ref resolves, upstream's names and extensions, what kubectl explain
walks, and the VPA's CRD schema."""

from __future__ import annotations

from typing import Any

from inplace.registry.kinds import REGISTRY
from tests.registry.openapi.helpers import (
    REF,
    component_for,
    explain,
    gv_key,
    operations,
    resolve,
    walk,
)


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


def test_every_top_level_kind_and_list_has_a_gvk_component(
    docs: dict[str, dict[str, Any]],
) -> None:
    for kind in REGISTRY.kinds:
        doc = docs[gv_key(kind.group, kind.version)]
        schema = component_for(doc, kind.group, kind.version, kind.kind)
        assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"])
        metadata = resolve(doc, schema["properties"]["metadata"])
        assert "ownerReferences" in metadata["properties"]
        if "list" not in kind.verbs:
            continue  # create-only kinds (reviews) have no list type, as upstream
        listed = component_for(doc, kind.group, kind.version, kind.list_kind)
        assert "items" in listed["required"]
        assert resolve(doc, listed["properties"]["items"]["items"]) is schema


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
