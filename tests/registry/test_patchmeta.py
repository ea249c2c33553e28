"""Tests for the strategic-merge metadata table and the schema walk over the client models."""

from __future__ import annotations

import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.models import is_model, list_element, model_fields
from inplace.registry.patchmeta import (
    FieldPatchMeta,
    PatchSchema,
    field_meta,
    schema_for_kind,
    tagged_fields,
)


def test_every_tagged_field_exists_in_the_client_models() -> None:
    for (model, field), meta in tagged_fields().items():
        type_ = model_fields(model).get(field)
        assert type_ is not None, f"{model}.{field} is not a field of the client model"
        element = list_element(type_)
        if meta.merges:
            assert element is not None, f"{model}.{field}: merge strategy on a non-list"
            # A merge key exactly when the items are objects, and it is one of their fields.
            if is_model(element):
                assert meta.merge_key in model_fields(element), f"{model}.{field}"
            else:
                assert meta.merge_key is None, f"{model}.{field}"
        else:
            assert meta.merge_key is None


@pytest.mark.parametrize(
    ("model", "field", "strategy", "key"),
    [
        ("V1PodSpec", "containers", "merge", "name"),
        ("V1PodSpec", "initContainers", "merge", "name"),
        ("V1PodSpec", "volumes", "merge,retainKeys", "name"),
        ("V1PodSpec", "topologySpreadConstraints", "merge", "topologyKey"),
        ("V1PodSpec", "hostAliases", "merge", "ip"),
        ("V1Container", "env", "merge", "name"),
        ("V1Container", "ports", "merge", "containerPort"),
        ("V1Container", "volumeMounts", "merge", "mountPath"),
        ("V1PodStatus", "conditions", "merge", "type"),
        ("V1ObjectMeta", "finalizers", "merge", None),
        ("V1ObjectMeta", "ownerReferences", "merge", "uid"),
        ("V1NodeStatus", "addresses", "merge", "type"),
        ("V1DeploymentSpec", "strategy", "retainKeys", None),
        ("V1PodDisruptionBudgetStatus", "conditions", "merge", "type"),
        ("V1StatefulSetStatus", "conditions", "merge", "type"),
        ("V1DaemonSetStatus", "conditions", "merge", "type"),
        ("V1PersistentVolumeClaimStatus", "conditions", "merge", "type"),
    ],
)
def test_known_tags(model: str, field: str, strategy: str, key: str | None) -> None:
    meta = field_meta(model, field)
    assert meta is not None
    assert meta.strategy == strategy
    assert meta.merge_key == key


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("V1PodSpec", "tolerations"),
        ("V1PodSpec", "readinessGates"),
        ("V1Container", "resizePolicy"),
        ("V1Container", "envFrom"),
        ("V1Container", "command"),
        ("V1PodStatus", "containerStatuses"),
        ("V1NodeSpec", "taints"),
        ("V1StatefulSetSpec", "volumeClaimTemplates"),
        ("V1DaemonSetSpec", "updateStrategy"),
        ("V1CronJobStatus", "active"),
    ],
)
def test_atomic_fields_have_no_tags(model: str, field: str) -> None:
    assert field_meta(model, field) is None


def test_schema_walks_lists_and_maps() -> None:
    pod = PatchSchema("V1Pod")
    container = pod.child("spec").child("containers")
    assert container.model == "V1Container"
    assert container.meta("env") == FieldPatchMeta(frozenset({"merge"}), "name")
    labels = pod.child("metadata").child("labels")
    assert labels.meta("anything") is None
    assert labels.child("anything").meta("x") is None
    assert pod.child("nonexistent").meta("x") is None
    template = PatchSchema("V1Deployment").child("spec").child("template").child("spec")
    assert template.meta("containers") == field_meta("V1PodSpec", "containers")


def test_schema_for_kind() -> None:
    pod = REGISTRY.by_kind("", "Pod")
    vpa = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
    assert pod is not None and vpa is not None
    schema = schema_for_kind(pod)
    assert schema is not None and schema.model == "V1Pod"
    assert schema_for_kind(vpa) is None


def test_empty_schema_knows_nothing() -> None:
    schema = PatchSchema(None)
    assert schema.meta("containers") is None
    assert schema.child("spec").meta("containers") is None
