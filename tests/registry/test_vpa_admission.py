"""The VPA admission step: new pods start at the recommendation (upstream's webhook's effect)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from inplace.registry.vpa_admission import admit_pod_vpa, apply_recommendation

NS = "default"


def vpa(mode: str | None = "Initial", **policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    }
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    if policy:
        spec["resourcePolicy"] = {"containerPolicies": [{"containerName": "*", **policy}]}
    return {
        "metadata": {
            "name": "web-vpa",
            "namespace": NS,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "app",
                        "target": {"cpu": "250m", "memory": "300Mi"},
                        "lowerBound": {"cpu": "100m", "memory": "200Mi"},
                        "upperBound": {"cpu": "1", "memory": "1Gi"},
                    }
                ]
            }
        },
    }


def pod(limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "100Mi"}}
    if limits:
        resources["limits"] = limits
    return {
        "metadata": {
            "name": "web-1-abc",
            "namespace": NS,
            "labels": {"app": "web"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": True}
            ],
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "x", "resources": resources},
                {"name": "sidecar", "image": "y"},
            ]
        },
    }


class Objects:
    """The API server's cache, as the admission step sees it."""

    def __init__(self, *vpas: Mapping[str, Any]) -> None:
        self.vpas = list(vpas)
        self.owners = {
            ("apps", "Deployment", "web"): {
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
            },
            ("apps", "ReplicaSet", "web-1"): {
                "metadata": {
                    "name": "web-1",
                    "namespace": NS,
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": "web",
                            "controller": True,
                        }
                    ],
                },
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
            },
        }

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        return self.owners.get((group, kind, name)) if namespace == NS else None

    def list(self, group: str, kind: str) -> Iterable[Mapping[str, Any]]:
        return self.vpas if kind == "VerticalPodAutoscaler" else ()


@pytest.mark.parametrize(
    "mode", ["Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto", None]
)
def test_every_mode_but_off_sets_the_recommendation(mode: str | None) -> None:
    p = pod()
    admit_pod_vpa(p, Objects(vpa(mode)))
    app = p["spec"]["containers"][0]
    assert app["resources"]["requests"] == {"cpu": "250m", "memory": "300Mi"}
    assert "resources" not in p["spec"]["containers"][1]  # no recommendation for it
    assert p["metadata"]["annotations"] == {
        "vpaUpdates": "Pod resources updated by web-vpa: container 0: cpu request, memory request",
        "vpaObservedContainers": "app, sidecar",
    }


def test_off_changes_nothing() -> None:
    p = pod()
    before = copy.deepcopy(p)
    admit_pod_vpa(p, Objects(vpa("Off")))
    assert p == before


def test_a_pod_of_another_workload_is_left_alone() -> None:
    p = pod()
    p["metadata"]["labels"] = {"app": "other"}
    before = copy.deepcopy(p)
    admit_pod_vpa(p, Objects(vpa()))
    assert p == before


def test_limits_keep_their_ratio_under_requests_and_limits() -> None:
    p = pod(limits={"cpu": "200m", "memory": "200Mi"})
    assert apply_recommendation(p, vpa())
    resources = p["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "500m", "memory": "600Mi"}
    assert p["metadata"]["annotations"]["vpaUpdates"] == (
        "Pod resources updated by web-vpa: container 0: cpu request, memory request, "
        "cpu limit, memory limit"
    )


def test_requests_only_leaves_limits_and_caps_to_them() -> None:
    p = pod(limits={"cpu": "200m", "memory": "1Gi"})
    apply_recommendation(p, vpa(controlledValues="RequestsOnly"))
    resources = p["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "200m", "memory": "300Mi"}  # cpu capped to its limit
    assert resources["limits"] == {"cpu": "200m", "memory": "1Gi"}


def test_max_allowed_caps_what_a_new_pod_gets() -> None:
    p = pod()
    apply_recommendation(p, vpa(maxAllowed={"memory": "200Mi"}))
    assert p["spec"]["containers"][0]["resources"]["requests"]["memory"] == "200Mi"


def test_without_a_recommendation_only_the_observed_containers_are_written() -> None:
    v = vpa()
    del v["status"]
    p = pod()
    apply_recommendation(p, v)
    assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "100Mi"}
    assert p["metadata"]["annotations"] == {"vpaObservedContainers": "app, sidecar"}
