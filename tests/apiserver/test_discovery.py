"""Discovery documents, from the registry and over real HTTP."""

from __future__ import annotations

import pytest

from inplace.apiserver.discovery import (
    OPENAPI_V2_PROTOBUF,
    api_group,
    api_group_list,
    openapi_v2_form,
    resource_list,
    subresource_discovery,
    version_info,
)
from inplace.registry.kinds import REGISTRY
from tests.apiserver.support import make_api
from tests.conftest import InProcessServer

PODS = REGISTRY.by_kind("", "Pod")
DEPLOYMENTS = REGISTRY.by_kind("apps", "Deployment")


@pytest.mark.parametrize(
    ("sub", "expected"),
    [
        ("resize", {"kind": "Pod", "verbs": ["get", "patch", "update"]}),
        ("status", {"kind": "Pod", "verbs": ["get", "patch", "update"]}),
        ("binding", {"kind": "Binding", "verbs": ["create"]}),
        ("eviction", {"group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}),
        ("log", {"kind": "Pod", "verbs": ["get"]}),
    ],
)
def test_pod_subresources_are_discovered_as_upstream_lists_them(
    sub: str, expected: dict[str, object]
) -> None:
    assert PODS is not None
    entry = subresource_discovery(PODS, sub)
    assert entry["name"] == f"pods/{sub}" and entry["namespaced"] is True
    assert {k: entry[k] for k in expected} == expected


def test_scale_is_an_autoscaling_v1_scale() -> None:
    assert DEPLOYMENTS is not None
    entry = subresource_discovery(DEPLOYMENTS, "scale")
    assert (entry["group"], entry["version"], entry["kind"]) == ("autoscaling", "v1", "Scale")


def test_resource_lists_groups_and_version() -> None:
    core = resource_list(REGISTRY, "", "v1")
    assert core is not None and core["groupVersion"] == "v1"
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"] and pods["namespaced"] is True
    apps = resource_list(REGISTRY, "apps", "v1")
    assert apps is not None and apps["groupVersion"] == "apps/v1"
    assert resource_list(REGISTRY, "apps", "v9") is None
    assert resource_list(REGISTRY, "", "v2") is None
    group = api_group(REGISTRY, "apps")
    assert group is not None and group["preferredVersion"] == {
        "groupVersion": "apps/v1",
        "version": "v1",
    }
    assert api_group(REGISTRY, "example.com") is None
    assert all(g["name"] for g in api_group_list(REGISTRY)["groups"])
    assert version_info()["gitVersion"].startswith("v1.33.")


async def test_discovery_over_http(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, core = await api.call("GET", "/api/v1")
        assert status == 200
        names = {r["name"] for r in core["resources"]}
        assert {
            "pods",
            "pods/resize",
            "pods/binding",
            "pods/eviction",
            "pods/log",
            "nodes",
            "namespaces",
            "events",
        } <= names
        _, groups = await api.call("GET", "/apis")
        assert {g["name"] for g in groups["groups"]} >= {
            "apps",
            "batch",
            "policy",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "autoscaling.k8s.io",
            "metrics.k8s.io",
        }
        status, apps = await api.call("GET", "/apis/apps")
        assert status == 200 and apps["kind"] == "APIGroup"
        status, apps_v1 = await api.call("GET", "/apis/apps/v1")
        assert status == 200 and apps_v1["groupVersion"] == "apps/v1"
        _, versions = await api.call("GET", "/api")
        assert versions["versions"] == ["v1"]
        assert versions["serverAddressByClientCIDRs"][0]["serverAddress"].endswith(
            f":{apiserver.server.port}"
        )
        for missing in ("/api/v2", "/apis/example.com", "/apis/apps/v9"):
            status, body = await api.call("GET", missing)
            assert status == 404 and body["kind"] == "Status", missing
        status, index = await api.call("GET", "/openapi/v3")
        assert status == 200 and "api/v1" in index["paths"]
        status, _ = await api.call("GET", "/openapi/v3/apis/example.com/v1")
        assert status == 404


KUBECTL_ASKS = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.mark.parametrize(
    ("accept", "protobuf"),
    [
        ("", False),
        ("*/*", False),
        ("application/json", False),
        ("application/*", False),
        (KUBECTL_ASKS, True),
        (OPENAPI_V2_PROTOBUF, True),
        (f"application/json;q=0.5, {KUBECTL_ASKS}", True),
        (f"*/*, {KUBECTL_ASKS}", True),
        (f"{KUBECTL_ASKS};q=0, application/json", False),
        ("text/html", None),
        ("application/yaml", None),
    ],
)
def test_openapi_v2_is_negotiated_as_kube_openapi_does(accept: str, protobuf: bool | None) -> None:
    assert openapi_v2_form(accept) is protobuf


async def test_trailing_slashes_as_upstream_answers_them(apiserver: InProcessServer) -> None:
    """Discovery and /version are go-restful routes upstream: the slash does not matter.
    Health, metrics and OpenAPI are exact paths: with a slash they are not found."""
    api, session = await make_api(apiserver)
    async with session:
        for path, kind in (
            ("/api/", "APIVersions"),
            ("/apis/", "APIGroupList"),
            ("/api/v1/", "APIResourceList"),
            ("/apis/apps/", "APIGroup"),
            ("/apis/apps/v1/", "APIResourceList"),
            ("/api/v1/namespaces/", "NamespaceList"),
            ("/api/v1/namespaces/default/", "Namespace"),
        ):
            status, body = await api.call("GET", path)
            assert (status, body["kind"]) == (200, kind), path
        async with session.get(apiserver.url + "/version/") as response:  # no token: public
            assert response.status == 200
            assert (await response.json())["gitVersion"].startswith("v1.33.")
        for path in ("/healthz/", "/readyz/", "/metrics/", "/openapi/v2/"):
            status, _ = await api.call("GET", path)
            assert status == 404, path


async def test_openapi_v2_over_http(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        url = apiserver.url + "/openapi/v2"
        headers = apiserver.headers()
        async with session.get(url, headers={**headers, "Accept": KUBECTL_ASKS}) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == OPENAPI_V2_PROTOBUF
            etag = response.headers["Etag"]
            assert (await response.read()).startswith(b"\x0a\x032.0")  # swagger: "2.0"
        async with session.get(url, headers={**headers, "Accept": "application/json"}) as response:
            assert response.headers["Content-Type"] == "application/json"
            assert response.headers["Etag"] == etag
            document = await response.json()
        assert document["swagger"] == "2.0" and "io.k8s.api.core.v1.Pod" in document["definitions"]
        cached = {**headers, "Accept": "application/json", "If-None-Match": etag}
        async with session.get(url, headers=cached) as response:
            assert response.status == 304
        async with session.get(url, headers={**headers, "Accept": "text/html"}) as response:
            assert response.status == 406
        status, _ = await api.call("GET", "/openapi/v2", Authorization="Bearer nobody")
        assert status == 401
