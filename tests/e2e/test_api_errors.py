"""Every rejected input gets the right code and a message naming what was wrong; the official
`kubernetes` Python client lists, watches and patches against a real `inplace up`."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from inplace.apiserver.auth import TokenFile
from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "subject", "namespace": "default", "labels": {"app": "subject"}},
    "spec": {
        # These tests are about the API: keep the pod unscheduled (no node has this label).
        "nodeSelector": {"inplace.dev/e2e": "api-only"},
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sleep", "3600"],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "32Mi"},
                    "limits": {"cpu": "200m", "memory": "64Mi"},
                },
            }
        ],
    },
}


class Raw:
    """HTTP straight to the API server, to see codes and Status bodies exactly."""

    def __init__(self, cluster: Cluster) -> None:
        self.base = f"https://127.0.0.1:{cluster.port}"
        self.context = ssl.create_default_context(cafile=str(cluster.data_dir / "pki" / "ca.crt"))
        self.tokens = TokenFile(cluster.data_dir / "pki" / "tokens.csv")
        self.admin = self.tokens.token_for("admin", ("system:masters",))

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "admin",
        content_type: str = "application/json",
        raw: bytes | None = None,
    ) -> tuple[int, dict[str, Any]]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", content_type)
        if token is not None:
            request.add_header(
                "Authorization", f"Bearer {self.admin if token == 'admin' else token}"
            )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def force_delete(self, pod: str) -> None:
        """Delete a pod of the default namespace at once: what these tests create on a node
        that does not exist has no node agent to end it (the pod garbage collector would,
        after its quarantine, while the session cluster's teardown waits)."""
        status, body = self.call(
            "DELETE", f"/api/v1/namespaces/default/pods/{pod}", {"gracePeriodSeconds": 0}
        )
        assert status in (200, 404), body


@pytest.fixture(scope="module")
def raw(cluster: Cluster) -> Iterator[Raw]:
    api = Raw(cluster)
    status, _ = api.call("POST", "/api/v1/namespaces/default/pods", POD)
    assert status == 201
    try:
        yield api
    finally:
        api.force_delete("subject")


def test_no_token_is_anonymous_and_a_bad_token_is_401(raw: Raw) -> None:
    """As upstream with `--anonymous-auth`: no credentials is system:anonymous, whom RBAC lets
    read health and version only; credentials nobody accepts are a 401."""
    status, body = raw.call("GET", "/api/v1/namespaces/default/pods", token=None)
    assert status == 403 and body["kind"] == "Status" and body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" '
        'in the namespace "default"'
    )
    assert raw.call("GET", "/version", token=None)[0] == 200
    status, body = raw.call("GET", "/api/v1/namespaces/default/pods", token="not-a-token")
    assert status == 401 and body["reason"] == "Unauthorized"


def test_version_with_a_trailing_slash_needs_no_token(raw: Raw) -> None:
    """What the kr8s client asks first; upstream's system:public-info-viewer allows both."""
    for path in ("/version", "/version/"):
        status, body = raw.call("GET", path, token=None)
        assert status == 200 and body["major"] == "1", path


def test_a_node_may_not_write_another_nodes_pod(raw: Raw) -> None:
    try:
        for name, node in (("on-a", "node-a"), ("on-b", "node-b")):
            pod = json.loads(json.dumps(POD))
            pod["metadata"]["name"] = name
            pod["spec"]["nodeName"] = node
            assert raw.call("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
        nodes_may_write_only_their_own_pods(raw)
    finally:
        raw.force_delete("on-a")
        raw.force_delete("on-b")


def nodes_may_write_only_their_own_pods(raw: Raw) -> None:
    node_a = raw.tokens.token_for("system:node:node-a", ("system:nodes",))
    patch = {"status": {"phase": "Running"}}
    status, body = raw.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/on-b/status",
        patch,
        token=node_a,
        content_type="application/merge-patch+json",
    )
    assert status == 403, body
    assert 'User "system:node:node-a"' in body["message"]
    status, body = raw.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/on-a/status",
        patch,
        token=node_a,
        content_type="application/merge-patch+json",
    )
    assert status == 200, body
    assert body["status"]["phase"] == "Running"


def test_bad_quantity_is_422_naming_the_field(raw: Raw) -> None:
    pod = json.loads(json.dumps(POD))
    pod["metadata"]["name"] = "bad-quantity"
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    status, body = raw.call("POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 422, body
    fields = [cause["field"] for cause in body["details"]["causes"]]
    assert "spec.containers[0].resources.requests[cpu]" in fields
    assert raw.call("GET", "/api/v1/namespaces/default/pods/bad-quantity")[0] == 404


def test_malformed_json_is_400(raw: Raw) -> None:
    status, body = raw.call("POST", "/api/v1/namespaces/default/pods", raw=b'{"kind": "Pod",')
    assert status == 400 and body["reason"] == "BadRequest"


def test_stale_resource_version_is_409(raw: Raw) -> None:
    status, pod = raw.call("GET", "/api/v1/namespaces/default/pods/subject")
    assert status == 200
    stale = json.loads(json.dumps(pod))
    pod["metadata"]["labels"]["round"] = "1"
    assert raw.call("PUT", "/api/v1/namespaces/default/pods/subject", pod)[0] == 200
    stale["metadata"]["labels"]["round"] = "2"
    status, body = raw.call("PUT", "/api/v1/namespaces/default/pods/subject", stale)
    assert status == 409 and body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]


def test_resize_ignores_what_is_not_resources(raw: Raw) -> None:
    """Upstream's resize strategy takes only resources and resize policies from the body: an
    image sent to pods/resize is ignored (200, nothing changes), not refused."""
    _, before = raw.call("GET", "/api/v1/namespaces/default/pods/subject")
    patch = {"spec": {"containers": [{"name": "main", "image": "other:1"}]}}
    status, body = raw.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/subject/resize",
        patch,
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 200, body
    assert body["spec"]["containers"][0]["image"] == before["spec"]["containers"][0]["image"]
    assert body["metadata"]["generation"] == before["metadata"]["generation"]


def test_qos_changing_resize_is_422(raw: Raw) -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}}
            ]
        }
    }
    status, body = raw.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/subject/resize",
        patch,
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 422, body
    assert "QOS" in body["message"] or "QoS" in body["message"], body


def test_too_large_body_is_413(raw: Raw) -> None:
    huge = json.loads(json.dumps(POD))
    huge["metadata"]["annotations"] = {"big": "x" * (4 * 1024 * 1024)}
    status, body = raw.call("POST", "/api/v1/namespaces/default/pods", huge)
    assert status == 413, body


def test_official_python_client_lists_watches_and_patches(cluster: Cluster, raw: Raw) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = k8s.CoreV1Api(api_client)
    pods = core.list_namespaced_pod("default")
    names = {p.metadata.name for p in pods.items}
    assert "subject" in names
    seen: list[tuple[str, str]] = []
    ready = threading.Event()

    def follow() -> None:
        watcher = k8s_watch.Watch()
        ready.set()
        for event in watcher.stream(
            core.list_namespaced_pod,
            "default",
            label_selector="app=subject",
            resource_version=pods.metadata.resource_version,
            timeout_seconds=20,
        ):
            seen.append((event["type"], event["object"].metadata.labels.get("client", "")))
            if event["object"].metadata.labels.get("client") == "python":
                watcher.stop()

    thread = threading.Thread(target=follow)
    thread.start()
    ready.wait()
    patched = core.patch_namespaced_pod(
        "subject", "default", {"metadata": {"labels": {"client": "python"}}}
    )
    assert patched.metadata.labels["client"] == "python"
    thread.join(30)
    assert ("MODIFIED", "python") in seen
    api_client.close()
