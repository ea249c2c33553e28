"""A VPA's policy, capping and limits in proportion (upstream's utils/vpa rules)."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.api.vpa_policy import (
    cap_recommendation,
    container_policy,
    controlled_resources,
    controlled_values,
    min_replicas,
    pod_container_resources,
    proportional_limit,
    resize_body,
    update_mode,
)

Q = Quantity.parse


@pytest.mark.parametrize(
    ("policy", "mode"),
    [({}, "Recreate"), ({"updateMode": ""}, "Recreate"), ({"updateMode": "Auto"}, "Auto")],
)
def test_update_mode_defaults_to_recreate(policy: dict[str, Any], mode: str) -> None:
    assert update_mode({"spec": {"updatePolicy": policy}}) == mode


def test_min_replicas_overrides_the_global_setting() -> None:
    assert min_replicas({"spec": {}}, 2) == 2
    assert min_replicas({"spec": {"updatePolicy": {"minReplicas": 1}}}, 2) == 1


def test_container_policy_prefers_the_named_entry_over_the_wildcard() -> None:
    vpa = {
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "*", "mode": "Off"},
                    {"containerName": "main", "controlledValues": "RequestsOnly"},
                ]
            }
        }
    }
    assert container_policy(vpa, "main") == {
        "containerName": "main",
        "controlledValues": "RequestsOnly",
    }
    assert container_policy(vpa, "sidecar") == {"containerName": "*", "mode": "Off"}
    assert container_policy({"spec": {}}, "main") is None
    assert controlled_values(None) == "RequestsAndLimits"
    assert controlled_resources(None) == ("cpu", "memory")
    assert controlled_resources({"controlledResources": ["memory"]}) == ("memory",)


@pytest.mark.parametrize(
    ("resource", "limit", "requested", "recommended", "expected"),
    [
        ("cpu", "2", "1", "500m", "1"),  # ratio 2 kept
        ("cpu", "300m", "200m", "333m", "499m"),  # 300 * 333 / 200 = 499.5: remainder dropped
        ("memory", "2Gi", "1Gi", "600Mi", "1200Mi"),
        ("memory", "1000", "300", "7", "23"),  # 1000 * 7 / 300 = 23.3: floor
        ("memory", "1Gi", "1Gi", "700Mi", "700Mi"),  # equal: limit = request
        ("memory", "1Gi", None, "700Mi", "700Mi"),  # no request: limit = request
        ("memory", None, "1Gi", "700Mi", None),  # no limit: none set
        ("memory", "0", "1Gi", "700Mi", None),
        ("cpu", "2", "1", None, None),  # nothing recommended: none set
    ],
)
def test_proportional_limit(
    resource: str,
    limit: str | None,
    requested: str | None,
    recommended: str | None,
    expected: str | None,
) -> None:
    got = proportional_limit(
        resource,
        None if limit is None else Q(limit),
        None if requested is None else Q(requested),
        None if recommended is None else Q(recommended),
    )
    assert got == (None if expected is None else Q(expected))


def test_cap_recommendation_ignores_zero_bounds_and_keeps_uncapped() -> None:
    entry = {
        "containerName": "main",
        "target": {"cpu": "50m", "memory": "8Gi"},
        "lowerBound": {"cpu": "10m", "memory": "1Gi"},
        "upperBound": {"cpu": "4", "memory": "16Gi"},
        "uncappedTarget": {"cpu": "50m", "memory": "8Gi"},
    }
    policy = {"minAllowed": {"cpu": "100m", "memory": "0"}, "maxAllowed": {"memory": "2Gi"}}
    out = cap_recommendation(entry, policy)
    assert out["target"] == {"cpu": "100m", "memory": "2Gi"}
    assert out["lowerBound"] == {"cpu": "100m", "memory": "1Gi"}
    assert out["upperBound"] == {"cpu": "4", "memory": "2Gi"}
    assert out["uncappedTarget"] == entry["uncappedTarget"]
    # A global maximum applies where the policy sets none.
    assert cap_recommendation(entry, None, {"cpu": Q("30m")})["target"]["cpu"] == "30m"


def pod(containers: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> dict:
    return {"spec": {"containers": containers}, "status": {"containerStatuses": statuses or []}}


def vpa_with(policies: list[dict[str, Any]], *entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": {"resourcePolicy": {"containerPolicies": policies}},
        "status": {"recommendation": {"containerRecommendations": list(entries)}},
    }


def rec(name: str, cpu: str, memory: str) -> dict[str, Any]:
    target = {"cpu": cpu, "memory": memory}
    return {"containerName": name, "target": target, "lowerBound": target, "upperBound": target}


def test_requests_and_limits_scale_limits_in_proportion() -> None:
    p = pod(
        [
            {
                "name": "main",
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi"},
                    "limits": {"cpu": "500m", "memory": "512Mi"},
                },
            }
        ]
    )
    (out,) = pod_container_resources(p, vpa_with([], rec("main", "400m", "300Mi")))
    assert out.requests == {"cpu": Q("400m"), "memory": Q("300Mi")}
    assert out.limits == {"cpu": Q("800m"), "memory": Q("600Mi")}
    assert resize_body([out]) == {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "requests": {"cpu": "400m", "memory": "300Mi"},
                        "limits": {"cpu": "800m", "memory": "600Mi"},
                    },
                }
            ]
        }
    }


def test_requests_only_caps_to_the_limit_and_leaves_limits() -> None:
    p = pod(
        [
            {
                "name": "main",
                "resources": {"requests": {"memory": "256Mi"}, "limits": {"memory": "512Mi"}},
            }
        ]
    )
    policies = [{"containerName": "main", "controlledValues": "RequestsOnly"}]
    (out,) = pod_container_resources(p, vpa_with(policies, rec("main", "100m", "1Gi")))
    assert out.requests == {"cpu": Q("100m"), "memory": Q("512Mi")}
    assert out.limits == {}


def test_actual_resources_from_the_status_win_over_the_spec() -> None:
    # A resize in flight: the spec says 1Gi, the node still runs 256Mi with limit 512Mi.
    p = pod(
        [
            {
                "name": "main",
                "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}},
            }
        ],
        [
            {
                "name": "main",
                "resources": {"requests": {"memory": "256Mi"}, "limits": {"memory": "512Mi"}},
            }
        ],
    )
    (out,) = pod_container_resources(p, vpa_with([], rec("main", "100m", "300Mi")))
    assert out.limits == {"memory": Q("600Mi")}


def test_mode_off_and_missing_recommendations_are_left_out() -> None:
    p = pod([{"name": "main"}, {"name": "sidecar"}, {"name": "new"}])
    policies = [{"containerName": "sidecar", "mode": "Off"}]
    out = pod_container_resources(
        p, vpa_with(policies, rec("main", "1", "1Gi"), rec("sidecar", "1", "1Gi"))
    )
    assert [c.name for c in out] == ["main"]
    assert out[0].limits == {}  # no limits before: none after


def test_min_max_allowed_apply_to_the_pod_too() -> None:
    p = pod([{"name": "main", "resources": {"requests": {"cpu": "1"}}}])
    policies = [{"containerName": "*", "maxAllowed": {"cpu": "500m"}}]
    (out,) = pod_container_resources(p, vpa_with(policies, rec("main", "2", "100Mi")))
    assert out.requests["cpu"] == Q("500m")
