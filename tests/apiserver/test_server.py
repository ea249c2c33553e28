"""The API server in this event loop: REST semantics over real HTTP, without kubectl."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
from tests.apiserver.gizmo import GIZMO_REGISTRY, gizmo
from tests.conftest import InProcessServer


def pod(
    name: str, *, node: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sleep", "1d"],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "32Mi"},
                    "limits": {"cpu": "200m", "memory": "64Mi"},
                },
            }
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "t"}},
        "spec": spec,
    }


class API:
    def __init__(self, server: InProcessServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        **headers: str,
    ) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method,
            self.server.url + path,
            data=data,
            headers={**self.server.headers(), "Content-Type": content_type, **headers},
        ) as response:
            text = await response.read()
            return response.status, (json.loads(text) if text else None)


async def make_api(server: InProcessServer) -> tuple[API, aiohttp.ClientSession]:
    session = aiohttp.ClientSession()
    return API(server, session), session


PODS = "/api/v1/namespaces/default/pods"
GIZMOS = "/apis/example.inplace.dev/v1/namespaces/default/gizmos"


async def test_create_get_update_conflict_and_generation(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, created = await api.call("POST", PODS, pod("a"))
        assert status == 201
        assert created["metadata"]["generation"] == 1
        assert created["metadata"]["uid"]
        assert created["status"] == {"phase": "Pending", "qosClass": "Burstable"}
        assert (await api.call("POST", PODS, pod("a")))[0] == 409
        status, got = await api.call("GET", f"{PODS}/a")
        assert got == created
        labelled = json.loads(json.dumps(got))
        labelled["metadata"]["labels"]["x"] = "y"
        status, updated = await api.call("PUT", f"{PODS}/a", labelled)
        assert status == 200 and updated["metadata"]["generation"] == 1
        assert int(updated["metadata"]["resourceVersion"]) > int(got["metadata"]["resourceVersion"])
        status, body = await api.call("PUT", f"{PODS}/a", got)
        assert status == 409 and body["reason"] == "Conflict"
        resize = {
            "spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "300m"}}}]}
        }
        status, resized = await api.call(
            "PATCH", f"{PODS}/a/resize", resize, "application/strategic-merge-patch+json"
        )
        assert status == 200, resized
        assert resized["metadata"]["generation"] == 2
        assert resized["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "300m"
        assert resized["spec"]["containers"][0]["resources"]["requests"]["memory"] == "32Mi"
        again = {
            "spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "400m"}}}]}
        }
        status, body = await api.call(
            "PATCH", f"{PODS}/a", again, "application/strategic-merge-patch+json"
        )
        assert status == 422, body


async def test_list_paging_and_selectors(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        for i in range(7):
            await api.call("POST", PODS, pod(f"p{i}", labels={"app": "t", "odd": str(i % 2)}))
        names: list[str] = []
        token = ""
        while True:
            status, page = await api.call(
                "GET", f"{PODS}?limit=3" + (f"&continue={token}" if token else "")
            )
            assert status == 200
            names += [item["metadata"]["name"] for item in page["items"]]
            token = page["metadata"].get("continue", "")
            if not token:
                break
        assert names == [f"p{i}" for i in range(7)]
        _, odd = await api.call("GET", f"{PODS}?labelSelector=odd%3D1")
        assert [p["metadata"]["name"] for p in odd["items"]] == ["p1", "p3", "p5"]
        _, by_name = await api.call("GET", f"{PODS}?fieldSelector=metadata.name%3Dp4")
        assert [p["metadata"]["name"] for p in by_name["items"]] == ["p4"]
        status, _ = await api.call("GET", f"{PODS}?fieldSelector=spec.bogus%3D1")
        assert status == 400
        status, table = await api.call(
            "GET", PODS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        assert table["kind"] == "Table"
        assert [c["name"] for c in table["columnDefinitions"]][:5] == [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
        ]
        assert len(table["rows"]) == 7


async def test_watch_from_revision_and_filtered_moves(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        _, first = await api.call("POST", PODS, pod("w1"))
        rv = first["metadata"]["resourceVersion"]
        events: list[tuple[str, str]] = []

        async def follow() -> None:
            async with session.get(
                apiserver.url + f"{PODS}?watch=1&resourceVersion={rv}&labelSelector=app%3Dt",
                headers=apiserver.headers(),
            ) as response:
                async for line in response.content:
                    event = json.loads(line)
                    events.append((event["type"], event["object"]["metadata"]["name"]))
                    if len(events) == 3:
                        return

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.1)
        await api.call("POST", PODS, pod("w2"))
        await api.call(
            "PATCH",
            f"{PODS}/w2",
            {"metadata": {"labels": {"app": "other"}}},
            "application/merge-patch+json",
        )
        await api.call("DELETE", f"{PODS}/w1")
        await asyncio.wait_for(task, 10)
        assert events == [("ADDED", "w2"), ("DELETED", "w2"), ("DELETED", "w1")]


async def test_watch_from_a_revision_older_than_the_cache_is_410(tmp_path: Path) -> None:
    """After a restart the cache's history starts at the snapshot: older watches must relist."""
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    first = APIServer(config)
    await first.start()
    await first.stop()
    second = APIServer(config)
    await second.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"http://127.0.0.1:{second.port}{PODS}?watch=1&resourceVersion=1",
                headers={"Authorization": f"Bearer {admin}"},
            ) as response,
        ):
            line = await response.content.readline()
    finally:
        await second.stop()
    event = json.loads(line)
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


async def test_graceful_pod_deletion_waits_for_the_node(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await api.call("POST", PODS, pod("bound", node="n1"))
        status, terminating = await api.call("DELETE", f"{PODS}/bound")
        assert status == 200
        assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
        assert (await api.call("GET", f"{PODS}/bound"))[0] == 200
        status, _ = await api.call("DELETE", f"{PODS}/bound?gracePeriodSeconds=0")
        assert status == 200
        assert (await api.call("GET", f"{PODS}/bound"))[0] == 404
        await api.call("POST", PODS, pod("unbound"))
        await api.call("DELETE", f"{PODS}/unbound")
        assert (await api.call("GET", f"{PODS}/unbound"))[0] == 404


async def test_finalizers_hold_deletion_until_removed(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l", "finalizers": ["example.com/hold"]},
            "spec": {"holderIdentity": "me"},
        }
        path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        assert (await api.call("POST", path, lease))[0] == 201
        _, marked = await api.call("DELETE", f"{path}/l")
        assert marked["metadata"]["deletionTimestamp"]
        assert (await api.call("GET", f"{path}/l"))[0] == 200
        status, _ = await api.call(
            "PATCH", f"{path}/l", {"metadata": {"finalizers": None}}, "application/merge-patch+json"
        )
        assert status == 200
        assert (await api.call("GET", f"{path}/l"))[0] == 404


async def test_binding_and_eviction_with_a_budget(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await api.call("POST", PODS, pod("e", labels={"app": "guarded"}))
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "e"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        }
        assert (await api.call("POST", f"{PODS}/e/binding", binding))[0] == 201
        status, body = await api.call("POST", f"{PODS}/e/binding", binding)
        assert status == 409
        _, bound = await api.call("GET", f"{PODS}/e")
        assert bound["spec"]["nodeName"] == "n1"
        await api.call(
            "PATCH",
            f"{PODS}/e/status",
            {"status": {"phase": "Running"}},
            "application/merge-patch+json",
        )
        pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        }
        assert (await api.call("POST", pdbs, budget))[0] == 201
        await api.call(
            "PATCH",
            f"{pdbs}/guard/status",
            {
                "status": {
                    "observedGeneration": 1,
                    "disruptionsAllowed": 0,
                    "currentHealthy": 1,
                    "desiredHealthy": 1,
                    "expectedPods": 1,
                }
            },
            "application/merge-patch+json",
        )
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e"}}
        status, body = await api.call("POST", f"{PODS}/e/eviction", eviction)
        assert status == 429, body
        assert "disruption budget" in body["message"]
        await api.call(
            "PATCH",
            f"{pdbs}/guard/status",
            {"status": {"disruptionsAllowed": 1}},
            "application/merge-patch+json",
        )
        status, body = await api.call("POST", f"{PODS}/e/eviction", eviction)
        assert status == 201, body
        _, charged = await api.call("GET", f"{pdbs}/guard")
        assert charged["status"]["disruptionsAllowed"] == 0
        assert "e" in charged["status"]["disruptedPods"]


async def test_scale_subresource(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        path = "/apis/apps/v1/namespaces/default/deployments"
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
        status, created = await api.call("POST", path, deployment)
        assert status == 201, created
        assert created["spec"]["replicas"] == 1
        status, scale = await api.call("GET", f"{path}/d/scale")
        assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
        status, scale = await api.call(
            "PATCH", f"{path}/d/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json"
        )
        assert status == 200 and scale["spec"]["replicas"] == 3
        _, after = await api.call("GET", f"{path}/d")
        assert after["spec"]["replicas"] == 3 and after["metadata"]["generation"] == 2


async def test_namespace_deletion_removes_its_contents(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}}
        assert (await api.call("POST", "/api/v1/namespaces", ns))[0] == 201
        assert (await api.call("POST", "/api/v1/namespaces/gone/pods", pod("x")))[0] == 201
        assert (await api.call("POST", "/api/v1/namespaces/missing/pods", pod("x")))[0] == 404
        assert (await api.call("DELETE", "/api/v1/namespaces/gone"))[0] == 200
        for _ in range(50):
            if (await api.call("GET", "/api/v1/namespaces/gone"))[0] == 404:
                break
            await asyncio.sleep(0.05)
        assert (await api.call("GET", "/api/v1/namespaces/gone"))[0] == 404
        assert (await api.call("GET", "/api/v1/namespaces/gone/pods/x"))[0] == 404


async def test_discovery_metrics_and_health(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        _, core = await api.call("GET", "/api/v1")
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
        async with session.get(apiserver.url + "/readyz") as response:
            assert await response.text() == "ok"
        await api.call("GET", PODS)
        async with session.get(apiserver.url + "/metrics", headers=apiserver.headers()) as response:
            text = await response.text()
        assert 'apiserver_request_total{code="200"' in text
        assert "apiserver_request_duration_seconds_bucket" in text


async def test_concurrent_patches_retry_and_a_named_version_is_a_precondition(
    apiserver: InProcessServer,
) -> None:
    """Patches that name no resourceVersion never answer 409: a lost compare-and-swap
    re-reads and re-applies (upstream's GuaranteedUpdate). One that names a stale version
    gets the 409 it asked for."""
    api, session = await make_api(apiserver)
    async with session:
        status, created = await api.call("POST", PODS, pod("racer"))
        assert status == 201
        merge = "application/merge-patch+json"

        async def label(i: int) -> int:
            body = {"metadata": {"labels": {f"writer-{i}": "x"}}}
            code, answer = await api.call("PATCH", f"{PODS}/racer", body, merge)
            assert code == 200, answer["message"]
            return code

        codes = await asyncio.gather(*(label(i) for i in range(40)))
        assert set(codes) == {200}
        _, final = await api.call("GET", f"{PODS}/racer")
        assert {f"writer-{i}" for i in range(40)} <= set(final["metadata"]["labels"])

        stale = created["metadata"]["resourceVersion"]
        body = {"metadata": {"resourceVersion": stale, "labels": {"late": "x"}}}
        code, answer = await api.call("PATCH", f"{PODS}/racer", body, merge)
        assert code == 409, answer
        ops = [{"op": "replace", "path": "/metadata/resourceVersion", "value": stale}]
        code, _ = await api.call("PATCH", f"{PODS}/racer", ops, "application/json-patch+json")
        assert code == 409


async def test_a_kind_is_served_from_its_registry_entry_alone(tmp_path: Path) -> None:
    """Routing, discovery, OpenAPI, storage, REST and tables for a kind no code knows: one
    `Kind(...)` entry with its strategy (`tests.apiserver.gizmo`) is all it takes."""
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    server = APIServer(config, registry=GIZMO_REGISTRY)
    await server.start()
    try:
        api, session = await make_api(
            InProcessServer(server, f"http://127.0.0.1:{server.port}", admin, tokens)
        )
        async with session:
            status, discovery = await api.call("GET", "/apis/example.inplace.dev/v1")
            assert status == 200
            resources = {r["name"]: r for r in discovery["resources"]}
            assert set(resources) == {"gizmos", "gizmos/status", "gizmos/tune"}
            assert resources["gizmos"]["shortNames"] == ["gz"]
            status, openapi = await api.call("GET", "/openapi/v3/apis/example.inplace.dev/v1")
            assert status == 200
            tune = "/apis/example.inplace.dev/v1/namespaces/{namespace}/gizmos/{name}/tune"
            assert set(openapi["paths"][tune]) >= {"get", "put", "patch"}

            status, created = await api.call("POST", GIZMOS, gizmo())
            assert (status, created["spec"], created["status"]) == (
                201,
                {"replicas": 1},
                {"replicas": 0},
            )
            status, table = await api.call(
                "GET", GIZMOS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
            )
            assert status == 200
            assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas"]
            assert [r["cells"] for r in table["rows"]] == [["g", 1]]
            status, tuned = await api.call(
                "PATCH",
                f"{GIZMOS}/g/tune",
                {"spec": {"replicas": 4}, "metadata": {"labels": {"x": "y"}}},
                "application/merge-patch+json",
            )
            assert (status, tuned["spec"], tuned["metadata"].get("labels")) == (
                200,
                {"replicas": 4},
                None,
            )
            status, listed = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.replicas%3D4")
            assert (status, [g["metadata"]["name"] for g in listed["items"]]) == (200, ["g"])
            status, listed = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.replicas%3D5")
            assert (status, listed["items"]) == (200, [])
            status, error = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.paused%3Dtrue")
            assert (status, error["message"]) == (400, "field label not supported: spec.paused")
            status, error = await api.call(
                "PUT", f"{GIZMOS}/g/status", tuned | {"status": {"readyReplicas": 9}}
            )
            assert (status, error["reason"]) == (422, "Invalid")
            assert error["details"]["causes"] == [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: 9: must not exceed spec.replicas",
                    "field": "status.readyReplicas",
                }
            ]
    finally:
        await server.stop()
