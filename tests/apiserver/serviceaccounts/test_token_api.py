"""The TokenRequest and TokenReview APIs over HTTP: bound tokens authenticate as their service
account until the pod they are bound to goes, and only for the API server's audience."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from inplace.apiserver.serviceaccounts.tokens import EXTENDED_EXPIRATION
from tests.apiserver.authz.conftest import Caller, Cluster, cluster, service_account
from tests.poll import await_until

__all__ = ["cluster"]

PODS = "/api/v1/namespaces/default/pods"
ACCOUNT = "/api/v1/namespaces/default/serviceaccounts"
REVIEWS = "/apis/authentication.k8s.io/v1"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "x", "command": ["sleep", "1"]}], **spec},
    }


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def _bound_token(c: Cluster, pod: dict[str, Any], **spec: Any) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"]}
    ref["uid"] = pod["metadata"]["uid"]
    status, answer = await c.admin.call(
        "POST", f"{ACCOUNT}/default/token", {"spec": {"boundObjectRef": ref, **spec}}
    )
    assert status == 201, answer
    return answer


async def test_a_bound_token_is_its_account_until_the_pod_is_deleted(cluster: Cluster) -> None:
    status, pod = await cluster.admin.call("POST", PODS, _pod("p"))
    assert status == 201, pod
    answer = await _bound_token(cluster, pod)
    as_pod = Caller(cluster.base, cluster.session, answer["status"]["token"])

    status, denied = await as_pod.call("GET", PODS)
    assert status == 403
    assert denied["message"] == (
        'pods is forbidden: User "system:serviceaccount:default:default" cannot list '
        'resource "pods" in API group "" in the namespace "default"'
    )
    await cluster.bind("read", "view", service_account("default"), namespace="default")
    status, _ = await as_pod.call("GET", PODS)
    assert status == 200

    status, me = await as_pod.call("POST", f"{REVIEWS}/selfsubjectreviews", {})
    info = me["status"]["userInfo"]
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["p"]

    status, _ = await cluster.admin.call("DELETE", f"{PODS}/p")
    assert status == 200
    status, _ = await as_pod.call("GET", PODS)
    assert status == 401


async def test_kubelets_lifetime_is_extended_and_warned_after(cluster: Cluster) -> None:
    _, pod = await cluster.admin.call("POST", PODS, _pod("p"))
    answer = await _bound_token(cluster, pod, expirationSeconds=3607)
    claims = _claims(answer["status"]["token"])
    assert claims["exp"] - claims["iat"] == EXTENDED_EXPIRATION
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607
    assert claims["kubernetes.io"]["pod"] == {"name": "p", "uid": pod["metadata"]["uid"]}


async def test_an_expired_token_is_refused(cluster: Cluster) -> None:
    status, answer = await cluster.admin.call("POST", f"{ACCOUNT}/default/token", {})
    assert status == 201
    assert answer["spec"]["expirationSeconds"] == 3600
    token = answer["status"]["token"]
    caller = Caller(cluster.base, cluster.session, token)
    assert (await caller.call("GET", "/version"))[0] == 200
    tokens = cluster.server.tokens
    assert tokens is not None
    tokens.clock = lambda: time.time() + 3600 + 61
    assert (await caller.call("GET", "/version"))[0] == 401


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        (
            {"expirationSeconds": 60},
            422,
            'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
            "Invalid value: 60: may not specify a duration less than 600 seconds",
        ),
        (
            {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "ghost"}},
            404,
            'pods "ghost" not found',
        ),
        (
            {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}},
            400,
            "cannot bind token to object of type apps/v1, Kind=Deployment",
        ),
    ],
)
async def test_token_requests_are_validated_as_upstream(
    cluster: Cluster, spec: dict[str, Any], code: int, message: str
) -> None:
    status, answer = await cluster.admin.call("POST", f"{ACCOUNT}/default/token", {"spec": spec})
    assert (status, answer["message"]) == (code, message)


async def test_token_subresource_is_create_only_and_discovered(cluster: Cluster) -> None:
    status, _ = await cluster.admin.call("GET", f"{ACCOUNT}/default/token")
    assert status == 405
    status, _ = await cluster.admin.call("POST", f"{ACCOUNT}/nobody/token", {})
    assert status == 404
    _, core = await cluster.admin.call("GET", "/api/v1")
    token = next(r for r in core["resources"] if r["name"] == "serviceaccounts/token")
    assert (token["group"], token["kind"], token["verbs"]) == (
        "authentication.k8s.io",
        "TokenRequest",
        ["create"],
    )


async def test_token_review_answers_for_the_asked_audiences(cluster: Cluster) -> None:
    _, answer = await cluster.admin.call("POST", f"{ACCOUNT}/default/token", {})
    token = answer["status"]["token"]
    reviewer = cluster.as_user("webhook")
    await cluster.bind("delegate", "system:auth-delegator", {"kind": "User", "name": "webhook"})

    status, review = await reviewer.call(
        "POST", f"{REVIEWS}/tokenreviews", {"spec": {"token": token}}
    )
    assert status == 201, review
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "system:serviceaccount:default:default"
    assert review["status"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]

    _, review = await reviewer.call(
        "POST", f"{REVIEWS}/tokenreviews", {"spec": {"token": token, "audiences": ["vault"]}}
    )
    assert review["status"] == {
        "user": {},
        "error": 'token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid '
        'for the target audiences ["vault"]',
    }
    _, review = await reviewer.call(
        "POST", f"{REVIEWS}/tokenreviews", {"spec": {"token": "not-a-token"}}
    )
    assert review["status"] == {"user": {}}
    status, review = await reviewer.call("POST", f"{REVIEWS}/tokenreviews", {"spec": {}})
    assert (status, review["message"]) == (
        400,
        "token is required for TokenReview in authentication",
    )


async def test_the_root_ca_is_published_in_every_namespace(cluster: Cluster) -> None:
    await cluster.admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    path = "/api/v1/namespaces/team/configmaps/kube-root-ca.crt"

    async def published() -> bool:
        status, cm = await cluster.admin.call("GET", path)
        return status == 200 and "ca.crt" in cm["data"]

    await await_until(published, what="kube-root-ca.crt in a new namespace")
    await cluster.admin.call("DELETE", path)
    await await_until(published, what="kube-root-ca.crt put back")


async def test_a_node_gets_tokens_only_for_its_own_pods(cluster: Cluster) -> None:
    _, mine = await cluster.admin.call("POST", PODS, _pod("mine", nodeName="node-1"))
    _, theirs = await cluster.admin.call("POST", PODS, _pod("theirs", nodeName="node-2"))
    node = cluster.as_user("system:node:node-1", "system:nodes")

    async def request(pod: dict[str, Any] | None) -> tuple[int, Any]:
        spec: dict[str, Any] = {"expirationSeconds": 3607}
        if pod is not None:
            meta = pod["metadata"]
            spec["boundObjectRef"] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            }
        return await node.call("POST", f"{ACCOUNT}/default/token", {"spec": spec})

    status, _ = await request(mine)
    assert status == 201
    status, refused = await request(theirs)
    assert status == 403
    assert refused["message"].endswith(
        "node requested token bound to a pod scheduled on a different node"
    )
    status, refused = await request(None)
    assert status == 403
    assert refused["message"].endswith("node requested token not bound to a pod")
