"""The registry of served kinds: look-ups, storage keys, and strategies that fit their kinds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inplace.api.validation.meta import validate_status_metadata
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.strategy import Strategy


def kind(group: str, name: str) -> Kind:
    found = REGISTRY.by_kind(group, name)
    assert found is not None
    return found


def test_lookups_agree() -> None:
    pod = kind("", "Pod")
    assert REGISTRY.by_resource("", "v1", "pods") is pod
    assert REGISTRY.by_api_version("v1", "Pod") is pod
    deployment = kind("apps", "Deployment")
    assert REGISTRY.by_api_version("apps/v1", "Deployment") is deployment
    assert (deployment.api_version, deployment.list_kind) == ("apps/v1", "DeploymentList")
    assert REGISTRY.by_kind("", "Deployment") is None
    assert REGISTRY.group_versions()[0] == ("", "v1")
    assert kind("metrics.k8s.io", "PodMetrics") in REGISTRY.in_group_version(
        "metrics.k8s.io", "v1beta1"
    )


def test_storage_keys() -> None:
    assert kind("", "Pod").storage_key("web", "default") == "/core/pods/default/web"
    assert kind("", "Pod").storage_prefix() == "/core/pods/"
    assert kind("", "Node").storage_key("n1", "ignored") == "/core/nodes/n1"
    assert kind("apps", "Deployment").storage_key("d", "ns") == "/apps/deployments/ns/d"


@pytest.mark.parametrize("served", REGISTRY.kinds, ids=lambda k: f"{k.kind}.{k.group}")
def test_strategies_fit_their_kinds(served: Kind) -> None:
    strategy = served.strategy
    assert set(strategy.subresources) <= set(served.subresources) - {"status"}
    if strategy.validate_status_update is not validate_status_metadata:
        assert "status" in served.subresources
    if not served.stored:
        # Computed on read (metrics.k8s.io) or answered on create (the reviews).
        assert served.verbs in (("get", "list"), ("create",))


def test_only_kinds_with_a_spec_bump_generation() -> None:
    bumping = {k.kind for k in REGISTRY if k.stored and k.strategy.bumps_generation}
    assert {"Pod", "Deployment", "ReplicaSet", "Job", "PodDisruptionBudget"} <= bumping
    assert not bumping & {"Event", "PriorityClass"}


def test_pods_declare_resize_and_graceful_deletion() -> None:
    pod = kind("", "Pod").strategy
    assert set(pod.subresources) == {"resize"}
    assert pod.grace_period is not None and pod.admit is not None
    assert all(k.strategy.grace_period is None for k in REGISTRY if k.kind != "Pod")


def test_a_kinds_identity_is_not_its_strategy() -> None:
    """The watch cache keys its maps by kind: equality and hashing ignore the strategy."""
    pod = kind("", "Pod")
    other = replace(pod, strategy=Strategy())
    assert other == pod and hash(other) == hash(pod)
    assert {pod: 1}[other] == 1
