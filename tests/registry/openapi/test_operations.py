"""Operations: unique ids, actions naming their kind, subresources, read-only kinds."""

from __future__ import annotations

from typing import Any

from tests.registry.openapi.helpers import REF, operations


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
                "connect",
            )
            gvk = op["x-kubernetes-group-version-kind"]
            assert set(gvk) == {"group", "kind", "version"}, (path, method)


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
    exec_ = paths[f"{base}/exec"]
    assert [exec_[m]["operationId"] for m in ("get", "post")] == [
        "connectCoreV1GetNamespacedPodExec",
        "connectCoreV1PostNamespacedPodExec",
    ]
    assert exec_["post"]["x-kubernetes-action"] == "connect"
    assert exec_["get"]["x-kubernetes-group-version-kind"]["kind"] == "PodExecOptions"
    assert [p["name"] for p in exec_["parameters"]] == [
        "command",
        "container",
        "name",
        "namespace",
        "stderr",
        "stdin",
        "stdout",
        "tty",
    ]
    attach = paths[f"{base}/attach"]
    assert attach["get"]["operationId"] == "connectCoreV1GetNamespacedPodAttach"
    assert attach["post"]["x-kubernetes-group-version-kind"]["kind"] == "PodAttachOptions"
    assert "command" not in {p["name"] for p in attach["parameters"]}
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
