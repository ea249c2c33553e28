"""Memory limits above the request: which containers get them, and how high."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.api.vpa_policy import ContainerResources, container_resources, pod_recommendations
from inplace.controllers.vpa.headroom import keeping_memory_limits, lacks_headroom, with_headroom

Q = Quantity.parse


def pod(requests: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return {
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "resources": resources}]},
        "status": {"phase": "Running"},
    }


def vpa(target: dict[str, str], controlled_values: str | None = None) -> dict[str, Any]:
    policies = []
    if controlled_values is not None:
        policies.append({"containerName": "main", "controlledValues": controlled_values})
    return {
        "spec": {"resourcePolicy": {"containerPolicies": policies}},
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "main",
                        "target": target,
                        "lowerBound": target,
                        "upperBound": target,
                    }
                ]
            }
        },
    }


def memory_limit(the_pod: dict[str, Any], the_vpa: dict[str, Any], factor: float) -> str | None:
    recs = pod_recommendations(the_pod, the_vpa)
    (res,) = with_headroom(tuple(container_resources(r) for r in recs), recs, the_pod, factor)
    limit = res.limits.get("memory")
    return None if limit is None else str(limit)


TARGET = {"cpu": "200m", "memory": "300Mi"}


@pytest.mark.parametrize(
    ("name", "the_pod", "controlled", "limit"),
    [
        # Burstable (no CPU limit), memory limit = request: twice the new request.
        ("burstable", pod({"cpu": "100m", "memory": "200Mi"}, {"memory": "200Mi"}), None, "600Mi"),
        # The template's ratio already gives more: it stays (3 x 300Mi).
        (
            "ratio above",
            pod({"cpu": "100m", "memory": "200Mi"}, {"memory": "600Mi"}),
            None,
            "900Mi",
        ),
        # No memory limit: none is added.
        ("unlimited", pod({"cpu": "100m", "memory": "200Mi"}), None, None),
        # RequestsOnly: the limit is the person's (the resize does not write it).
        (
            "requests only",
            pod({"cpu": "100m", "memory": "200Mi"}, {"memory": "400Mi"}),
            "RequestsOnly",
            None,
        ),
        # Guaranteed: limits must stay equal to requests (a resize keeps the QoS class).
        (
            "guaranteed",
            pod({"cpu": "100m", "memory": "200Mi"}, {"cpu": "100m", "memory": "200Mi"}),
            None,
            "300Mi",
        ),
    ],
)
def test_who_gets_headroom(
    name: str, the_pod: dict[str, Any], controlled: str | None, limit: str | None
) -> None:
    assert memory_limit(the_pod, vpa(TARGET, controlled), 2.0) == limit, name


def test_lacks_headroom_only_while_the_limit_is_the_request() -> None:
    the_vpa = vpa(TARGET)
    tight = pod({"cpu": "100m", "memory": "300Mi"}, {"memory": "300Mi"})
    roomy = pod({"cpu": "100m", "memory": "300Mi"}, {"memory": "600Mi"})
    guaranteed = pod({"cpu": "100m", "memory": "300Mi"}, {"cpu": "100m", "memory": "300Mi"})
    assert lacks_headroom(tight, pod_recommendations(tight, the_vpa), 2.0)
    assert not lacks_headroom(tight, pod_recommendations(tight, the_vpa), 1.0)
    assert not lacks_headroom(roomy, pod_recommendations(roomy, the_vpa), 2.0)
    assert not lacks_headroom(guaranteed, pod_recommendations(guaranteed, the_vpa), 2.0)


@pytest.mark.parametrize(
    ("name", "running", "wanted", "sent"),
    [
        # A lowered limit is kept where the container runs with it (1.33 forbids lowering).
        ("lowered", {"memory": "900Mi"}, {"memory": "600Mi"}, "900Mi"),
        # A raised or equal limit goes as it is.
        ("raised", {"memory": "400Mi"}, {"memory": "600Mi"}, "600Mi"),
        ("equal", {"memory": "600Mi"}, {"memory": "600Mi"}, "600Mi"),
        # A container without a memory limit, or a resize that writes none: nothing to keep.
        ("unlimited", None, {"memory": "600Mi"}, "600Mi"),
        ("not written", {"memory": "900Mi"}, {}, None),
    ],
)
def test_keeping_memory_limits(
    name: str, running: dict[str, str] | None, wanted: dict[str, str], sent: str | None
) -> None:
    the_pod = pod({"cpu": "100m", "memory": "400Mi"}, running)
    limits = {k: Q(v) for k, v in wanted.items()}
    resize = ContainerResources("main", {"memory": Q("300Mi")}, limits)
    (res,) = keeping_memory_limits((resize,), the_pod)
    assert res.requests == {"memory": Q("300Mi")}, name
    limit = res.limits.get("memory")
    assert limit == (None if sent is None else Q(sent)), name
