"""`--as` and `--as-group`: allowed by the `impersonate` verb, then the request runs as the
impersonated user."""

from __future__ import annotations

from tests.apiserver.authz.conftest import Cluster, service_account, user

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


async def test_impersonating_a_service_account_gives_its_groups(cluster: Cluster) -> None:
    status, body = await cluster.admin.call(
        "POST", WHOAMI, REVIEW, headers={"Impersonate-User": "system:serviceaccount:team:app"}
    )
    assert status == 201
    assert body["status"]["userInfo"] == {
        "username": "system:serviceaccount:team:app",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"],
    }


async def test_groups_and_extras_as_asked(cluster: Cluster) -> None:
    status, body = await cluster.admin.call(
        "POST",
        WHOAMI,
        REVIEW,
        headers={
            "Impersonate-User": "jane",
            "Impersonate-Group": "devs",
            "Impersonate-Extra-Scopes": "view",
            "Impersonate-Uid": "1234",
        },
    )
    assert status == 201, body
    assert body["status"]["userInfo"] == {
        "username": "jane",
        "uid": "1234",
        "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["view"]},
    }


async def test_impersonation_needs_the_impersonate_verb(cluster: Cluster) -> None:
    bob = cluster.as_user("bob")
    status, body = await bob.call(
        "GET", "/api/v1/namespaces/default/pods", headers={"Impersonate-User": "admin"}
    )
    assert status == 403
    assert body["message"] == (
        'users "admin" is forbidden: User "bob" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )
    # edit lets bob impersonate the service accounts of its namespace, and only those.
    await cluster.bind("bob-edit", "edit", user("bob"), namespace="default")
    await cluster.bind("app-view", "view", service_account("app"), namespace="default")
    as_app = {"Impersonate-User": "system:serviceaccount:default:app"}
    assert (await bob.call("GET", "/api/v1/namespaces/default/pods", headers=as_app))[0] == 200
    status, body = await bob.call(
        "GET",
        "/api/v1/namespaces/other/pods",
        headers={"Impersonate-User": "system:serviceaccount:other:app"},
    )
    assert status == 403
    assert body["message"] == (
        'serviceaccounts "app" is forbidden: User "bob" cannot impersonate resource '
        '"serviceaccounts" in API group "" in the namespace "other"'
    )


async def test_groups_without_a_user_are_refused(cluster: Cluster) -> None:
    status, body = await cluster.admin.call(
        "GET", "/api/v1/pods", headers={"Impersonate-Group": "system:masters"}
    )
    assert status == 500
    assert "without impersonating a user" in body["message"]
