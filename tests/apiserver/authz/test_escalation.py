"""Nobody grants what they do not hold, unless allowed to `bind` or `escalate`."""

from __future__ import annotations

from typing import Any

from tests.apiserver.authz.conftest import RBAC, Cluster, user

BINDINGS = f"{RBAC}/namespaces/default/rolebindings"
ROLES = f"{RBAC}/namespaces/default/roles"


def binding(name: str, role: str, kind: str = "ClusterRole") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [user("mallory")],
    }


async def test_a_user_with_edit_cannot_bind_cluster_admin(cluster: Cluster) -> None:
    """`edit` may not even write RoleBindings; with a role that may, the escalation check
    still refuses to hand out cluster-admin."""
    await cluster.bind("dave-edit", "edit", user("dave"), namespace="default")
    dave = cluster.as_user("dave")
    status, body = await dave.call("POST", BINDINGS, binding("pwn", "cluster-admin"))
    assert status == 403
    assert body["message"] == (
        'rolebindings.rbac.authorization.k8s.io is forbidden: User "dave" cannot create '
        'resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace '
        '"default"'
    )
    writer = {
        "metadata": {"name": "binding-writer"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["rolebindings"],
                "verbs": ["create", "update", "patch"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", ROLES, writer))[0] == 201
    await cluster.bind(
        "dave-writes", "binding-writer", user("dave"), namespace="default", kind="Role"
    )
    status, body = await dave.call("POST", BINDINGS, binding("pwn", "cluster-admin"))
    assert status == 403
    assert body["message"] == (
        'rolebindings.rbac.authorization.k8s.io "pwn" is forbidden: user "dave" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    assert body["details"] == {
        "name": "pwn",
        "group": "rbac.authorization.k8s.io",
        "kind": "rolebindings",
    }
    # What dave holds, he may hand on: edit, or view (a subset).
    assert (await dave.call("POST", BINDINGS, binding("share-edit", "edit")))[0] == 201
    assert (await dave.call("POST", BINDINGS, binding("share-view", "view")))[0] == 201
    status, body = await dave.call("POST", BINDINGS, binding("ghost", "nope"))
    assert status == 403
    assert body["message"].endswith(
        'is forbidden: clusterrole.rbac.authorization.k8s.io "nope" not found'
    )


async def test_bind_and_escalate_verbs_allow_what_is_not_held(cluster: Cluster) -> None:
    delegate = {
        "metadata": {"name": "delegate"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["rolebindings", "roles"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"],
                "resourceNames": ["admin"],
                "verbs": ["bind"],
            },
        ],
    }
    assert (await cluster.admin.call("POST", ROLES, delegate))[0] == 201
    await cluster.bind("erin-delegates", "delegate", user("erin"), namespace="default", kind="Role")
    erin = cluster.as_user("erin")
    assert (await erin.call("POST", BINDINGS, binding("give-admin", "admin")))[0] == 201
    assert (await erin.call("POST", BINDINGS, binding("give-edit", "edit")))[0] == 403
    role = {
        "metadata": {"name": "secrets-reader"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }
    status, body = await erin.call("POST", ROLES, role)
    assert status == 403
    assert body["message"].endswith(
        'attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], '
        'Resources:["secrets"], Verbs:["get"]}'
    )
    escalate = {
        "metadata": {"name": "escalator"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["roles"],
                "verbs": ["escalate"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", ROLES, escalate))[0] == 201
    await cluster.bind(
        "erin-escalates", "escalator", user("erin"), namespace="default", kind="Role"
    )
    assert (await erin.call("POST", ROLES, role))[0] == 201


async def test_aggregation_rules_take_cluster_admin(cluster: Cluster) -> None:
    writer = {
        "metadata": {"name": "clusterrole-writer"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"],
                "verbs": ["create"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", f"{RBAC}/clusterroles", writer))[0] == 201
    await cluster.bind("finn-writes", "clusterrole-writer", user("finn"))
    finn = cluster.as_user("finn")
    gatherer = {
        "metadata": {"name": "gather-all"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
    }
    status, body = await finn.call("POST", f"{RBAC}/clusterroles", gatherer)
    assert status == 403
    assert body["message"] == (
        'clusterroles.rbac.authorization.k8s.io "gather-all" is forbidden: must have '
        "cluster-admin privileges to use the aggregationRule"
    )


async def test_server_side_apply_cannot_escalate(cluster: Cluster) -> None:
    """An apply that would create (or change) a binding passes the same escalation check."""
    writer = {
        "metadata": {"name": "binding-applier"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["rolebindings"],
                "verbs": ["get", "create", "update", "patch"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", ROLES, writer))[0] == 201
    await cluster.bind(
        "erin-applies", "binding-applier", user("erin"), namespace="default", kind="Role"
    )
    await cluster.bind("erin-view", "view", user("erin"), namespace="default")
    erin = cluster.as_user("erin")
    apply = "application/apply-patch+yaml"
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        **binding("pwn", "cluster-admin"),
    }
    path = f"{BINDINGS}/pwn?fieldManager=erin"
    status, answer = await erin.call("PATCH", path, body, content_type=apply)
    assert status == 403
    assert "is attempting to grant RBAC permissions not currently held" in answer["message"]
    assert (await cluster.admin.call("GET", f"{BINDINGS}/pwn"))[0] == 404
    # What erin holds (view) she may hand on; re-pointing it is refused as upstream (roleRef
    # is immutable), before anything is stored.
    status, answer = await erin.call(
        "PATCH", path, {**body, **binding("pwn", "view")}, content_type=apply
    )
    assert status == 201, answer
    status, answer = await erin.call("PATCH", path, body, content_type=apply)
    assert status == 422
    assert answer["message"].endswith("cannot change roleRef")
    stored = (await cluster.admin.call("GET", f"{BINDINGS}/pwn"))[1]
    assert stored["roleRef"]["name"] == "view"
