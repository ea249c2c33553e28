"""Nodes: the Node authorizer (upstream's node rules, and objects only through the node's own
pods) and NodeRestriction (a node writes only its own objects)."""

from __future__ import annotations

from typing import Any

from inplace.apiserver.auth import AUTHENTICATED_GROUP, NODES_GROUP, User
from inplace.apiserver.authz import Attributes
from inplace.apiserver.authz.node import pod_references
from tests.apiserver.authz.conftest import Cluster

NODE_A = User("system:node:node-a", (NODES_GROUP, AUTHENTICATED_GROUP))
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "nodeSelector": {"inplace.dev/e2e": "none"},
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1d"]}],
            **spec,
        },
    }


def test_pod_references_are_the_edges_of_the_node_graph() -> None:
    spec = {
        "serviceAccountName": "runner",
        "imagePullSecrets": [{"name": "registry"}],
        "volumes": [
            {"name": "a", "secret": {"secretName": "tls"}},
            {"name": "b", "configMap": {"name": "settings"}},
            {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
            {
                "name": "d",
                "projected": {
                    "sources": [{"configMap": {"name": "ca"}}, {"serviceAccountToken": {}}]
                },
            },
        ],
        "containers": [
            {
                "name": "x",
                "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "password"}}}],
                "envFrom": [{"configMapRef": {"name": "more"}}],
            }
        ],
    }
    assert pod_references({"spec": spec}) == {
        ("serviceaccounts", "runner"),
        ("secrets", "registry"),
        ("secrets", "tls"),
        ("configmaps", "settings"),
        ("persistentvolumeclaims", "data"),
        ("configmaps", "ca"),
        ("secrets", "password"),
        ("configmaps", "more"),
    }
    assert ("serviceaccounts", "default") in pod_references({"spec": {}})


async def test_a_node_reads_objects_only_through_its_own_pods(cluster: Cluster) -> None:
    admin = cluster.admin
    mine = pod("mine", "node-a", volumes=[{"name": "c", "configMap": {"name": "settings"}}])
    theirs = pod("theirs", "node-b", volumes=[{"name": "c", "configMap": {"name": "other"}}])
    for body in (mine, theirs):
        assert (await admin.call("POST", PODS, body))[0] == 201
    authz, cache = cluster.server.authz, cluster.server.cache
    assert authz is not None and cache is not None
    await cache.sync()

    def may(verb: str, resource: str, name: str = "", subresource: str = "") -> bool:
        attrs = Attributes(
            NODE_A, verb, namespace="default", resource=resource, name=name, subresource=subresource
        )
        return authz.authorize(attrs).allowed

    assert may("get", "configmaps", "settings")
    assert may("watch", "configmaps", "settings")  # a watch of one object, by name
    assert not may("get", "configmaps", "other")
    assert not may("list", "configmaps")
    decision = authz.authorize(
        Attributes(NODE_A, "get", namespace="default", resource="secrets", name="tls")
    )
    assert decision.reason.startswith("no relationship found between node 'node-a' and this object")
    assert may("create", "serviceaccounts", "default", "token")
    assert not may("create", "serviceaccounts", "someone-else", "token")
    assert may("get", "pods") and may("list", "pods")
    assert not may("create", "deployments")
    assert not may("delete", "namespaces")


async def test_node_restriction(cluster: Cluster) -> None:
    admin = cluster.admin
    for name, node in (("on-a", "node-a"), ("on-b", "node-b")):
        assert (await admin.call("POST", PODS, pod(name, node)))[0] == 201
    node_a = cluster.as_user("system:node:node-a", NODES_GROUP)
    merge = "application/merge-patch+json"
    status, body = await node_a.call(
        "PATCH", f"{PODS}/on-b/status", {"status": {"phase": "Running"}}, content_type=merge
    )
    assert status == 403
    assert body["message"] == (
        'pods "on-b" is forbidden: User "system:node:node-a" cannot patch resource '
        '"pods/status" in API group "" in the namespace "default": node "node-a" can only '
        "update pods bound to it"
    )
    status, body = await node_a.call(
        "PATCH", f"{PODS}/on-a/status", {"status": {"phase": "Running"}}, content_type=merge
    )
    assert status == 200, body
    node = {"metadata": {"name": "node-b"}}
    status, body = await node_a.call("POST", "/api/v1/nodes", node)
    assert status == 403 and body["message"].endswith(
        'node "node-a" can only modify its own Node object'
    )
    assert (await node_a.call("POST", "/api/v1/nodes", {"metadata": {"name": "node-a"}}))[0] == 201
    status, body = await node_a.call("POST", "/api/v1/namespaces", {"metadata": {"name": "x"}})
    assert status == 403
    assert body["message"] == (
        'namespaces is forbidden: User "system:node:node-a" cannot create resource "namespaces" '
        'in API group "" at the cluster scope'
    )
