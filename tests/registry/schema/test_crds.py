"""Kinds served from upstream's CRD schemas: the VPA and its checkpoint."""

from __future__ import annotations

import pytest

from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.schema.builtin import model_struct
from inplace.registry.schema.crds import CRD_FILES, crd, crd_root, is_crd, vpa_crd
from inplace.registry.schema.types import QUANTITY_NAME, Struct, Tag


def _kind(name: str) -> Kind:
    found = REGISTRY.by_kind("autoscaling.k8s.io", name)
    assert found is not None
    return found


def _struct_of(struct: Struct, name: str) -> Struct:
    found = struct.fields[name].type.struct
    assert found is not None
    return found


def test_crd_kinds_are_the_stored_kinds_without_a_client_model() -> None:
    served = {kind.kind for kind in REGISTRY.kinds if is_crd(kind)}
    assert served == set(CRD_FILES) == {"VerticalPodAutoscaler", "VerticalPodAutoscalerCheckpoint"}
    for group, name in (("", "Pod"), ("metrics.k8s.io", "PodMetrics")):
        kind = REGISTRY.by_kind(group, name)
        assert kind is not None and not is_crd(kind)


def test_the_crd_files_are_upstreams_v1_crds() -> None:
    assert vpa_crd() is crd("VerticalPodAutoscaler")
    for kind in CRD_FILES:
        data = crd(kind)
        assert data["group"] == "autoscaling.k8s.io"
        assert data["version"] == "v1"
        assert data["names"]["kind"] == kind
        assert data["openAPIV3Schema"]["type"] == "object"
    with pytest.raises(KeyError, match="no CRD schema for Gizmo"):
        crd("Gizmo")


def test_roots_are_named_like_kube_apiserver_names_crd_components() -> None:
    assert (
        crd_root(_kind("VerticalPodAutoscaler")).name
        == "io.k8s.autoscaling.v1.VerticalPodAutoscaler"
    )
    assert crd_root(_kind("VerticalPodAutoscalerCheckpoint")).name == (
        "io.k8s.autoscaling.v1.VerticalPodAutoscalerCheckpoint"
    )


def test_crd_structs_use_crd_wording_and_the_built_in_object_meta() -> None:
    root = crd_root(_kind("VerticalPodAutoscaler"))
    assert root.crd
    assert _struct_of(root, "spec").crd
    assert _struct_of(root, "metadata") is model_struct("V1ObjectMeta")


def test_quantities_and_types_come_from_the_crd_schema() -> None:
    spec = _struct_of(crd_root(_kind("VerticalPodAutoscaler")), "spec")
    policies = _struct_of(spec, "resourcePolicy").fields["containerPolicies"].type
    assert policies.tag is Tag.LIST and policies.elem is not None
    policy = policies.elem.struct
    assert policy is not None
    min_allowed = policy.fields["minAllowed"].type
    assert min_allowed.tag is Tag.MAP and min_allowed.elem is not None
    assert min_allowed.elem.tag is Tag.INT_OR_STRING
    assert min_allowed.elem.ref == QUANTITY_NAME
    assert policy.fields["containerName"].type.tag is Tag.STRING
    assert _struct_of(spec, "updatePolicy").fields["minReplicas"].type.tag is Tag.INT32
