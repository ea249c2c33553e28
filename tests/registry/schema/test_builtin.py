"""Structs from the client's models: upstream component names, and the types the models lack."""

from __future__ import annotations

from inplace.registry.schema.builtin import component_name, list_model, model_struct
from inplace.registry.schema.types import OBJECT_META_DOC, Struct, Tag


def _struct_of(struct: Struct, name: str) -> Struct:
    found = struct.fields[name].type.struct
    assert found is not None
    return found


def test_upstream_component_names() -> None:
    assert component_name("V1Pod") == "io.k8s.api.core.v1.Pod"
    assert component_name("V1PodSpec") == "io.k8s.api.core.v1.PodSpec"
    assert component_name("V1PodTemplateSpec") == "io.k8s.api.core.v1.PodTemplateSpec"
    assert component_name("V1Deployment") == "io.k8s.api.apps.v1.Deployment"
    assert component_name("V1RollingUpdateDeployment") == (
        "io.k8s.api.apps.v1.RollingUpdateDeployment"
    )
    assert component_name("V1JobSpec") == "io.k8s.api.batch.v1.JobSpec"
    assert component_name("CoreV1Event") == "io.k8s.api.core.v1.Event"
    assert component_name("V1ObjectMeta") == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert component_name("V1LabelSelector") == (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
    )
    assert component_name("V1Scale") == "io.k8s.api.autoscaling.v1.Scale"
    assert component_name("V1Eviction") == "io.k8s.api.policy.v1.Eviction"
    assert component_name("V1PriorityClass") == "io.k8s.api.scheduling.v1.PriorityClass"
    assert component_name("V1LeaseSpec") == "io.k8s.api.coordination.v1.LeaseSpec"


def test_types_the_client_does_not_carry_come_from_the_tables() -> None:
    spec = _struct_of(model_struct("V1Pod"), "spec")
    assert spec.fields["overhead"].type.elem is not None
    assert spec.fields["overhead"].type.elem.tag is Tag.QUANTITY
    assert spec.fields["terminationGracePeriodSeconds"].type.tag is Tag.INT64
    lease_spec = _struct_of(model_struct("V1Lease"), "spec")
    assert lease_spec.fields["renewTime"].type.tag is Tag.MICRO_TIME
    assert lease_spec.fields["leaseDurationSeconds"].type.tag is Tag.INT32


def test_structs_are_built_once_and_shared() -> None:
    pod = model_struct("V1Pod")
    assert model_struct("V1Pod") is pod
    template = _struct_of(model_struct("V1Deployment"), "spec").fields["template"].type.struct
    assert template is not None
    assert _struct_of(template, "spec") is _struct_of(pod, "spec")
    assert _struct_of(pod, "metadata") is model_struct("V1ObjectMeta")


def test_go_names_and_the_restored_metadata_description() -> None:
    assert model_struct("V1PodSpec").go_name == "PodSpec"
    assert model_struct("V1PodSpec").model == "V1PodSpec"
    assert model_struct("V1Pod").fields["metadata"].description == OBJECT_META_DOC
    assert model_struct(list_model("V1Pod")).name == "io.k8s.api.core.v1.PodList"
