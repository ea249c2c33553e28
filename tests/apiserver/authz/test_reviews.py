"""The review APIs `kubectl auth can-i` and `kubectl auth whoami` use."""

from __future__ import annotations

from typing import Any

from tests.apiserver.authz.conftest import Cluster, user

AUTHZ = "/apis/authorization.k8s.io/v1"


def can(verb: str, resource: str, namespace: str = "default", **extra: str) -> dict[str, Any]:
    return {
        "spec": {
            "resourceAttributes": {
                "verb": verb,
                "resource": resource,
                "namespace": namespace,
                **extra,
            }
        }
    }


async def test_may_i(cluster: Cluster) -> None:
    await cluster.bind("gail-view", "view", user("gail"), namespace="default")
    gail = cluster.as_user("gail")
    review = f"{AUTHZ}/selfsubjectaccessreviews"
    status, body = await gail.call("POST", review, can("list", "pods"))
    assert status == 201
    assert body["kind"] == "SelfSubjectAccessReview"
    assert body["status"]["allowed"] is True
    assert body["status"]["reason"].startswith('RBAC: allowed by RoleBinding "gail-view/default"')
    status, body = await gail.call("POST", review, can("delete", "pods"))
    assert body["status"] == {"allowed": False}
    status, body = await gail.call(
        "POST", review, {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/api"}}}
    )
    assert body["status"]["allowed"] is True
    status, body = await gail.call("POST", review, {"spec": {}})
    assert status == 422
    assert body["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must "
        "be specified"
    )


async def test_may_they(cluster: Cluster) -> None:
    sar = {
        "spec": {
            "user": "system:kube-scheduler",
            "groups": ["system:authenticated"],
            "resourceAttributes": {"verb": "create", "resource": "namespaces"},
        }
    }
    status, body = await cluster.admin.call("POST", f"{AUTHZ}/subjectaccessreviews", sar)
    assert status == 201 and body["status"] == {"allowed": False}
    sar["spec"]["resourceAttributes"] = {
        "verb": "create",
        "resource": "pods",
        "subresource": "binding",
        "namespace": "x",
    }
    status, body = await cluster.admin.call("POST", f"{AUTHZ}/subjectaccessreviews", sar)
    assert body["status"]["allowed"] is True
    # Asking about others takes create on subjectaccessreviews.
    status, body = await cluster.as_user("nosy").call("POST", f"{AUTHZ}/subjectaccessreviews", sar)
    assert status == 403
    status, body = await cluster.admin.call(
        "POST", f"{AUTHZ}/subjectaccessreviews", {"spec": {"resourceAttributes": {"verb": "get"}}}
    )
    assert status == 422
    assert (
        'spec.user: Invalid value: "": at least one of user or group must be specified'
        in body["message"]
    )
    local = f"{AUTHZ}/namespaces/default/localsubjectaccessreviews"
    sar["spec"]["resourceAttributes"]["namespace"] = "other"
    status, body = await cluster.admin.call("POST", local, sar)
    assert (status, body["message"]) == (
        400,
        "spec.resourceAttributes.namespace must match namespace: default",
    )


async def test_everything_i_may_do(cluster: Cluster) -> None:
    await cluster.bind("hal-edit", "edit", user("hal"), namespace="default")
    hal = cluster.as_user("hal")
    rules = f"{AUTHZ}/selfsubjectrulesreviews"
    status, body = await hal.call("POST", rules, {"spec": {"namespace": "default"}})
    assert status == 201
    resource_rules = body["status"]["resourceRules"]
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in resource_rules
    assert any("pods" in r["resources"] and "create" in r["verbs"] for r in resource_rules)
    assert {
        "verbs": ["get"],
        "nonResourceURLs": [
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/openapi",
            "/openapi/*",
            "/readyz",
            "/version",
            "/version/",
        ],
    } in body["status"]["nonResourceRules"]
    assert body["status"]["incomplete"] is False
    status, body = await hal.call("POST", rules, {"spec": {"namespace": "other"}})
    assert not any("pods" in r["resources"] for r in body["status"]["resourceRules"])
    status, body = await hal.call("POST", rules, {"spec": {}})
    assert (status, body["message"]) == (400, "no namespace on request")
    status, body = await cluster.admin.call("POST", rules, {"spec": {"namespace": "default"}})
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in body["status"][
        "resourceRules"
    ]
