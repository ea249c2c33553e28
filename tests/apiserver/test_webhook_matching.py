"""Which webhooks a request calls: upstream's rule, scope, match-policy and selector tables."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.apiserver.webhooks.matching import (
    Resource,
    is_exempt,
    matched_resource,
    namespace_labels_from_request,
    rule_matches,
    selects_namespace,
    selects_object,
    sorted_hooks,
)

PODS = Resource("", "v1", "pods", "Pod", True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
WIDGETS_V1 = Resource("example.com", "v1", "widgets", "Widget", True)
WIDGETS_V2 = Resource("example.com", "v2", "widgets", "Widget", True)


def rule(resources: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "operations": extra.pop("operations", ["*"]),
        "apiGroups": extra.pop("apiGroups", ["*"]),
        "apiVersions": extra.pop("apiVersions", ["*"]),
        "resources": resources,
        **extra,
    }


@pytest.mark.parametrize(
    ("the_rule", "operation", "resource", "subresource", "namespace", "expected"),
    [
        (rule(["pods"]), "CREATE", PODS, "", "default", True),
        (rule(["pods"]), "UPDATE", PODS, "status", "default", False),
        (rule(["pods/status"]), "UPDATE", PODS, "status", "default", True),
        (rule(["pods/*"]), "UPDATE", PODS, "status", "default", True),
        # upstream's matcher: a `*` subresource also matches the resource itself
        (rule(["pods/*"]), "UPDATE", PODS, "", "default", True),
        (rule(["*"]), "UPDATE", PODS, "status", "default", False),
        (rule(["*/status"]), "UPDATE", DEPLOYMENTS, "status", "default", True),
        (rule(["*/*"]), "UPDATE", DEPLOYMENTS, "scale", "default", True),
        (rule(["*/*"]), "CREATE", PODS, "", "default", True),
        (rule(["pods"], operations=["CREATE"]), "DELETE", PODS, "", "default", False),
        (rule(["deployments"], apiGroups=[""]), "CREATE", DEPLOYMENTS, "", "default", False),
        (rule(["deployments"], apiGroups=["apps"]), "CREATE", DEPLOYMENTS, "", "x", True),
        (rule(["deployments"], apiVersions=["v1beta1"]), "CREATE", DEPLOYMENTS, "", "x", False),
        # scope: a Namespace object is cluster-scoped though its request names a namespace
        (rule(["*"], scope="Namespaced"), "CREATE", PODS, "", "default", True),
        (rule(["*"], scope="Namespaced"), "CREATE", NAMESPACES, "", "ns1", False),
        (rule(["*"], scope="Namespaced"), "CREATE", NODES, "", "", False),
        (rule(["*"], scope="Cluster"), "CREATE", NAMESPACES, "", "ns1", True),
        (rule(["*"], scope="Cluster"), "CREATE", NODES, "", "", True),
        (rule(["*"], scope="Cluster"), "CREATE", PODS, "", "default", False),
        (rule(["*"], scope="*"), "CREATE", PODS, "", "default", True),
    ],
)
def test_rule_matches(
    the_rule: dict[str, Any],
    operation: str,
    resource: Resource,
    subresource: str,
    namespace: str,
    expected: bool,
) -> None:
    assert rule_matches(the_rule, operation, resource, subresource, namespace) is expected


def test_match_policy_equivalent_calls_at_the_version_the_rules_name() -> None:
    hook = {"rules": [rule(["widgets"], apiVersions=["v1"])], "matchPolicy": "Equivalent"}
    equivalents = [WIDGETS_V1, WIDGETS_V2]
    assert matched_resource(hook, "CREATE", WIDGETS_V1, "", "ns", equivalents) == WIDGETS_V1
    assert matched_resource(hook, "CREATE", WIDGETS_V2, "", "ns", equivalents) == WIDGETS_V1
    exact = {**hook, "matchPolicy": "Exact"}
    assert matched_resource(exact, "CREATE", WIDGETS_V2, "", "ns", equivalents) is None


def pod(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "labels": labels}}


@pytest.mark.parametrize(
    ("selector", "obj", "old", "expected"),
    [
        ({}, pod(), None, True),
        ({"matchLabels": {"a": "1"}}, pod(a="1"), None, True),
        ({"matchLabels": {"a": "1"}}, pod(), None, False),
        # an update matches when either the new or the old object does
        ({"matchLabels": {"a": "1"}}, pod(), pod(a="1"), True),
        ({"matchLabels": {"a": "1"}}, None, pod(a="1"), True),  # a delete
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, pod(), None, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, None, None, False),
    ],
)
def test_object_selector(selector: dict[str, Any], obj: Any, old: Any, expected: bool) -> None:
    assert selects_object({"objectSelector": selector}, obj, old) is expected


def test_namespace_selector() -> None:
    hook = {"namespaceSelector": {"matchLabels": {"team": "a"}}}
    assert selects_namespace(hook, PODS, "default", {"team": "a"})
    assert not selects_namespace(hook, PODS, "default", {})
    # A cluster-scoped object other than a Namespace is never exempted.
    assert selects_namespace(hook, NODES, "", {})
    # A Namespace being written is matched by the labels it is written with.
    labels = namespace_labels_from_request(
        NAMESPACES, "", "CREATE", {"metadata": {"labels": {"team": "a"}}}
    )
    assert labels == {"team": "a"}
    assert selects_namespace(hook, NAMESPACES, "ns1", labels)
    assert namespace_labels_from_request(NAMESPACES, "", "DELETE", None) is None
    assert namespace_labels_from_request(PODS, "", "CREATE", pod()) is None


def test_configuration_kinds_are_exempt() -> None:
    group = "admissionregistration.k8s.io"
    assert is_exempt(Resource(group, "v1", "validatingwebhookconfigurations", "X", False))
    assert is_exempt(Resource(group, "v1", "mutatingwebhookconfigurations", "X", False))
    assert not is_exempt(PODS)


def test_hooks_are_ordered_by_configuration_name_then_position() -> None:
    configurations = [
        {"metadata": {"name": "b"}, "webhooks": [{"name": "b1"}, {"name": "b0"}]},
        {"metadata": {"name": "a"}, "webhooks": [{"name": "a1"}]},
    ]
    assert [(c, h["name"]) for c, h in sorted_hooks(configurations)] == [
        ("a", "a1"),
        ("b", "b1"),
        ("b", "b0"),
    ]
