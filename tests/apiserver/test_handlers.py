"""The resource verbs over real HTTP: create, get, update, patch, delete, and their 409s."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
import yaml

from inplace.apiserver.errors import StatusError
from inplace.apiserver.handlers import delete_options
from inplace.registry.kinds import REGISTRY
from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer
from tests.e2e.manifests import EVERY_KIND


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


@pytest.mark.parametrize(
    ("body", "query", "expected"),
    [
        (None, {}, {}),
        ({"gracePeriodSeconds": 5}, {}, {"gracePeriodSeconds": 5}),
        ({"gracePeriodSeconds": 5}, {"gracePeriodSeconds": "0"}, {"gracePeriodSeconds": 0}),
        (None, {"propagationPolicy": "Orphan"}, {"propagationPolicy": "Orphan"}),
        (
            {"propagationPolicy": "Background", "dryRun": ["All"]},
            {},
            {"propagationPolicy": "Background", "dryRun": ["All"]},
        ),
    ],
)
def test_delete_options_take_the_query_over_the_body(
    body: object, query: dict[str, str], expected: dict[str, object]
) -> None:
    assert delete_options(body, query) == expected


@pytest.mark.parametrize(
    ("body", "query", "code", "names"),
    [
        (None, {"propagationPolicy": "Sideways"}, 422, "propagationPolicy"),
        (None, {"gracePeriodSeconds": "soon"}, 400, "gracePeriodSeconds"),
    ],
)
def test_bad_delete_options_name_the_field(
    body: object, query: dict[str, str], code: int, names: str
) -> None:
    with pytest.raises(StatusError) as caught:
        delete_options(body, query)
    assert caught.value.code == code and names in caught.value.message


def collection(obj: dict[str, Any]) -> str:
    """The collection path of a manifest's object."""
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = REGISTRY.by_kind(group, obj["kind"])
    assert kind is not None, obj["kind"]
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if kind.namespaced:
        base += f"/namespaces/{obj['metadata'].get('namespace', 'default')}"
    return f"{base}/{kind.plural}"


async def test_a_dry_run_writes_nothing_for_every_stored_kind(apiserver: InProcessServer) -> None:
    """create, update, patch and delete with dryRun=All (and a delete with dryRun in its
    DeleteOptions, as `kubectl delete --dry-run=server` sends it) answer what would be written,
    at the stored resourceVersion, and leave the stored object as it was."""
    api, session = await make_api(apiserver)
    objects = [o for o in yaml.safe_load_all(EVERY_KIND) if o]
    assert {o["kind"] for o in objects} == {k.kind for k in REGISTRY.kinds if k.stored}
    merge = "application/merge-patch+json"
    async with session:
        for obj in objects:
            path = collection(obj)
            item = f"{path}/{obj['metadata']['name']}"
            status, would = await api.call("POST", f"{path}?dryRun=All", obj)
            assert status == 201, would
            assert would["metadata"]["uid"] and "resourceVersion" not in would["metadata"]
            assert (await api.call("GET", item))[0] == 404, item
            status, stored = await api.call("POST", path, obj)
            assert status == 201, stored
            version = stored["metadata"]["resourceVersion"]

            labelled = {"metadata": {"labels": {"dry": "run"}}}
            status, patched = await api.call("PATCH", f"{item}?dryRun=All", labelled, merge)
            assert status == 200, patched
            assert patched["metadata"]["labels"]["dry"] == "run"
            assert patched["metadata"]["resourceVersion"] == version
            replaced = json.loads(json.dumps(stored))
            replaced["metadata"].setdefault("labels", {})["dry"] = "run"
            status, updated = await api.call("PUT", f"{item}?dryRun=All", replaced)
            assert status == 200 and updated["metadata"]["labels"]["dry"] == "run", updated
            status, _ = await api.call("DELETE", f"{item}?dryRun=All")
            assert status == 200
            options = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
            status, _ = await api.call("DELETE", item, options)
            assert status == 200

            status, after = await api.call("GET", item)
            assert status == 200, (item, after)
            assert after == stored, item


@pytest.mark.parametrize(
    ("method", "suffix", "options"),
    [
        ("POST", "", "CreateOptions"),
        ("PUT", "/p", "UpdateOptions"),
        ("PATCH", "/p", "PatchOptions"),
        ("DELETE", "/p", "DeleteOptions"),
    ],
)
async def test_a_mistyped_dry_run_is_422_and_writes_nothing(
    apiserver: InProcessServer, method: str, suffix: str, options: str
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, stored = await api.call("POST", PODS, pod("p"))
        assert status == 201
        body: Any = {"metadata": {"labels": {"x": "y"}}}
        if method in ("POST", "PUT"):
            body = {**stored, "metadata": {**stored["metadata"], "name": "p", "labels": {"x": "y"}}}
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        status, answer = await api.call(
            method, f"{PODS}{suffix}?dryRun=all", body if method != "DELETE" else None, content_type
        )
        assert status == 422, answer
        assert answer["message"] == (
            f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
            '[]string{"all"}: supported values: "All"'
        )
        assert answer["details"]["causes"][0]["field"] == "dryRun"
        _, after = await api.call("GET", f"{PODS}/p")
        assert after == stored


async def test_a_node_deleting_a_pod_already_gone_gets_404(apiserver: InProcessServer) -> None:
    """Found by the chaos storm: a node agent confirming a deletion that another writer had
    finished got 403 ("can only update pods bound to it") and retried it forever; upstream's
    NodeRestriction answers the pod's NotFound."""
    token = apiserver.tokens.token_for("system:node:n1", ("system:nodes",))
    async with aiohttp.ClientSession() as session:
        async with session.delete(
            apiserver.url + PODS + "/gone", headers={"Authorization": f"Bearer {token}"}
        ) as response:
            body = await response.json()
        assert response.status == 404, body
        assert body["reason"] == "NotFound"
        async with session.post(
            apiserver.url + PODS,
            json=pod("elsewhere", node="n2"),
            headers=apiserver.headers(),
        ) as response:
            assert response.status == 201, await response.text()
        async with session.delete(
            apiserver.url + PODS + "/elsewhere", headers={"Authorization": f"Bearer {token}"}
        ) as response:
            assert response.status == 403
