"""Every quantity field of every served kind is rewritten as upstream stores it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from inplace.api.quantity import Quantity, serialize
from inplace.registry.canonical import canonicalize_quantities
from inplace.registry.kinds import REGISTRY, Kind


def kind(group: str, name: str) -> Kind:
    found = REGISTRY.by_kind(group, name)
    assert found is not None
    return found


POD = kind("", "Pod")
NODE = kind("", "Node")
DEPLOYMENT = kind("apps", "Deployment")
VPA = kind("autoscaling.k8s.io", "VerticalPodAutoscaler")

ISSUE_RESOURCES = {
    "requests": {"cpu": "0.5", "memory": "1.5Gi"},
    "limits": {"cpu": "1000m", "memory": "2048Mi"},
}
CANONICAL = {
    "requests": {"cpu": "500m", "memory": "1536Mi"},
    "limits": {"cpu": "1", "memory": "2Gi"},
}


def container(name: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "resources": resources or ISSUE_RESOURCES,
        "env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"divisor": "1024Ki"}}}],
    }


def test_every_pod_quantity() -> None:
    pod: dict[str, Any] = {
        "spec": {
            "containers": [container("a")],
            "initContainers": [container("i")],
            "overhead": {"cpu": "0.25"},
            "resources": {"limits": {"memory": "1024Mi"}},
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1000Mi"}}],
        },
        "status": {
            "containerStatuses": [
                {"name": "a", "allocatedResources": {"cpu": "0.5"}, "resources": ISSUE_RESOURCES}
            ]
        },
    }
    canonicalize_quantities(POD, pod)
    spec = pod["spec"]
    for c in (spec["containers"][0], spec["initContainers"][0]):
        assert c["resources"] == CANONICAL
        assert c["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"] == "1Mi"
    assert spec["overhead"] == {"cpu": "250m"}
    assert spec["resources"] == {"limits": {"memory": "1Gi"}}
    assert spec["volumes"][0]["emptyDir"]["sizeLimit"] == "1000Mi"
    status = pod["status"]["containerStatuses"][0]
    assert status["allocatedResources"] == {"cpu": "500m"}
    assert status["resources"] == CANONICAL


def test_templates_nodes_and_vpas() -> None:
    deployment: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [container("a")]}}}}
    canonicalize_quantities(DEPLOYMENT, deployment)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == CANONICAL
    node: dict[str, Any] = {
        "status": {"capacity": {"cpu": "2000m", "memory": "4096Mi"}, "allocatable": {"cpu": 1.5}}
    }
    canonicalize_quantities(NODE, node)
    assert node["status"] == {
        "capacity": {"cpu": "2", "memory": "4Gi"},
        "allocatable": {"cpu": "1500m"},
    }
    vpa: dict[str, Any] = {
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "*",
                        "minAllowed": {"cpu": "0.1"},
                        "maxAllowed": {"memory": "2048Mi"},
                    }
                ]
            }
        },
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {"containerName": "a", "target": {"cpu": "1000m"}, "upperBound": {"cpu": 2}}
                ]
            }
        },
    }
    canonicalize_quantities(VPA, vpa)
    policy = vpa["spec"]["resourcePolicy"]["containerPolicies"][0]
    assert policy["minAllowed"] == {"cpu": "100m"} and policy["maxAllowed"] == {"memory": "2Gi"}
    recommendation = vpa["status"]["recommendation"]["containerRecommendations"][0]
    assert recommendation["target"] == {"cpu": "1"} and recommendation["upperBound"] == {"cpu": "2"}


def test_what_does_not_parse_is_left_for_validation() -> None:
    pod: dict[str, Any] = {
        "spec": {"containers": [container("a", {"requests": {"cpu": "lots", "memory": ["x"]}})]}
    }
    canonicalize_quantities(POD, pod)
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "lots", "memory": ["x"]}
    }
    # Wrong shapes on the way to a quantity are left alone too.
    odd: dict[str, Any] = {"spec": {"containers": "nope", "overhead": [1]}}
    canonicalize_quantities(POD, odd)
    assert odd == {"spec": {"containers": "nope", "overhead": [1]}}


def test_kinds_without_quantities_are_untouched() -> None:
    secret = {"data": {"cpu": "MC41"}, "stringData": {"memory": "1.5Gi"}}
    canonicalize_quantities(kind("", "Secret"), secret)
    assert secret == {"data": {"cpu": "MC41"}, "stringData": {"memory": "1.5Gi"}}


@given(
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "example.com/gpu"]),
        st.one_of(
            st.integers(min_value=0, max_value=10**12),
            st.decimals(min_value=0, max_value=10**6, places=3).map(str),
            st.sampled_from(["1Gi", "1024Mi", "0.5", "250m", "1e3"]),
        ),
    )
)
def test_a_second_write_changes_nothing_and_values_are_kept(requests: dict[str, Any]) -> None:
    pod: dict[str, Any] = {
        "spec": {"containers": [{"name": "a", "resources": {"requests": dict(requests)}}]}
    }
    canonicalize_quantities(POD, pod)
    # An empty map of requests is not stored at all (Go's omitempty).
    stored = pod["spec"]["containers"][0]["resources"].get("requests", {})
    assert {k: Quantity.parse(v) for k, v in stored.items()} == {
        k: Quantity.from_json(v) for k, v in requests.items()
    }
    assert all(v == serialize(requests[k]) for k, v in stored.items())
    again: dict[str, Any] = {
        "spec": {"containers": [{"name": "a", "resources": {"requests": dict(stored)}}]}
    }
    canonicalize_quantities(POD, again)
    assert again["spec"]["containers"][0]["resources"].get("requests", {}) == stored
