"""Each served kind's root struct and its list's."""

from __future__ import annotations

from inplace.registry.kinds import REGISTRY
from inplace.registry.schema.builtin import model_struct
from inplace.registry.schema.check import check_fields
from inplace.registry.schema.crds import crd_root
from inplace.registry.schema.metrics import metrics_structs
from inplace.registry.schema.roots import kind_schema, list_schema
from inplace.registry.schema.types import LIST_META_DOC


def test_apiversion_kind_and_metadata_are_known_for_every_kind() -> None:
    for kind in REGISTRY.kinds:
        obj = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "x"}}
        assert check_fields(kind, obj).ok, kind
        metadata = kind_schema(kind).fields["metadata"].type.struct
        assert metadata is not None and metadata.name.endswith("meta.v1.ObjectMeta")
        if "list" in kind.verbs:  # the reviews are never listed, and have no list type
            assert "items" in list_schema(kind).fields


def test_each_kind_takes_its_root_from_where_its_graph_comes_from() -> None:
    pod = REGISTRY.by_kind("", "Pod")
    vpa = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
    node_metrics = REGISTRY.by_kind("metrics.k8s.io", "NodeMetrics")
    assert pod is not None and vpa is not None and node_metrics is not None
    assert kind_schema(pod) is model_struct("V1Pod")
    assert kind_schema(vpa) is crd_root(vpa)
    assert kind_schema(node_metrics) is metrics_structs()["NodeMetrics"]
    assert list_schema(pod) is model_struct("V1PodList")


def test_a_list_without_a_client_model_is_made_like_upstreams() -> None:
    vpa = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
    assert vpa is not None
    listed = list_schema(vpa)
    assert listed.name == "io.k8s.autoscaling.v1.VerticalPodAutoscalerList"
    assert listed.go_name == "VerticalPodAutoscalerList"
    assert listed.crd
    assert list(listed.fields) == ["apiVersion", "kind", "items", "metadata"]
    assert listed.required == ["items"]
    items = listed.fields["items"].type
    assert items.elem is not None and items.elem.struct is kind_schema(vpa)
    assert listed.fields["metadata"].description == LIST_META_DOC
