"""An empty list or map Go's ``omitempty`` drops is not stored, served or watched, however it
became empty: create, PUT, every patch type, server-side apply, ``/status``, ``/resize``, an
owner reference or finalizer removed; a field Go always prints keeps its empty value.

Upstream (kube-apiserver v1.36.3, checked on the test bed) answers each of these writes
without the key: ``kubectl delete rs --cascade=orphan`` leaves the pod with no
``ownerReferences``, not ``[]``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import yaml

from tests.apiserver.support import API, PODS, make_api, pod
from tests.conftest import InProcessServer

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1234"}


def managed(obj: dict[str, Any], manager: str) -> dict[str, Any] | None:
    for entry in obj["metadata"].get("managedFields") or ():
        if entry["manager"] == manager:
            fields: dict[str, Any] = entry["fieldsV1"]
            return fields
    return None


async def read(api: API, name: str) -> dict[str, Any]:
    status, obj = await api.call("GET", f"{PODS}/{name}")
    assert status == 200, obj
    assert isinstance(obj, dict)
    return obj


async def test_a_create_stores_no_empty_values(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("empty")
        body["metadata"].update(
            {"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []}
        )
        container = body["spec"]["containers"][0]
        container.update({"args": [], "env": [], "ports": [], "volumeMounts": []})
        container["resources"]["limits"] = {}
        body["spec"].update({"nodeSelector": {}, "tolerations": [], "imagePullSecrets": []})
        status, created = await api.call("POST", f"{PODS}?fieldManager=creator", body)
        assert status == 201, created
        for obj in (created, await read(api, "empty")):
            meta = obj["metadata"]
            for key in ("labels", "annotations", "finalizers", "ownerReferences"):
                assert key not in meta
            stored = obj["spec"]["containers"][0]
            for key in ("args", "env", "ports"):
                assert key not in stored
            assert stored["resources"] == {"requests": {"cpu": "100m", "memory": "32Mi"}}
            assert "nodeSelector" not in obj["spec"] and "imagePullSecrets" not in obj["spec"]
            # What Go always prints stays: a struct, and the required containers.
            assert obj["spec"]["securityContext"] == {}
            fields = managed(obj, "creator")
            assert fields is not None
            assert "f:labels" not in fields.get("f:metadata", {})
            assert "f:args" not in json.dumps(fields) and "f:limits" not in json.dumps(fields)

        # The same from a YAML body (kubectl create -f of a manifest saying `finalizers: []`).
        manifest = yaml.safe_dump(
            {**pod("from-yaml"), "metadata": {"name": "from-yaml", "finalizers": []}}
        )
        async with session.post(
            f"{apiserver.url}{PODS}",
            data=manifest,
            headers={**apiserver.headers(), "Content-Type": "application/yaml"},
        ) as response:
            assert response.status == 201, await response.text()
            assert "finalizers" not in (await response.json())["metadata"]


async def test_patches_that_empty_a_field_leave_no_key(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, _ = await api.call("POST", PODS, pod("p"))
        assert status == 201

        # The last label removed by a merge patch: no labels, and the labeler owns nothing.
        status, labeled = await api.call(
            "PATCH",
            f"{PODS}/p?fieldManager=labeler",
            {"metadata": {"labels": {"extra": "x"}}},
            MERGE,
        )
        assert status == 200 and managed(labeled, "labeler") is not None
        status, unlabeled = await api.call(
            "PATCH",
            f"{PODS}/p?fieldManager=labeler",
            {"metadata": {"labels": {"app": None, "extra": None}}},
            MERGE,
        )
        assert status == 200, unlabeled
        assert "labels" not in unlabeled["metadata"]
        assert managed(unlabeled, "labeler") is None
        assert "f:labels" not in json.dumps(unlabeled["metadata"]["managedFields"])

        # The last finalizer removed by a JSON patch.
        ops: list[dict[str, Any]] = [
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/hold"]}
        ]
        status, held = await api.call("PATCH", f"{PODS}/p", ops, JSON_PATCH)
        assert status == 200 and held["metadata"]["finalizers"] == ["example.com/hold"]
        ops = [{"op": "remove", "path": "/metadata/finalizers/0"}]
        status, released = await api.call("PATCH", f"{PODS}/p", ops, JSON_PATCH)
        assert status == 200 and "finalizers" not in released["metadata"]

        # The owner reference removed as inplace's garbage collector does (strategic
        # $patch: delete) and as upstream's does (a merge patch of an empty list).
        for removal, patch_type in (
            ({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1234"}]}}, STRATEGIC),
            ({"metadata": {"ownerReferences": []}}, MERGE),
        ):
            owned = {"metadata": {"ownerReferences": [OWNER]}}
            status, adopted = await api.call("PATCH", f"{PODS}/p", owned, MERGE)
            assert status == 200 and adopted["metadata"]["ownerReferences"] == [OWNER]
            status, orphaned = await api.call("PATCH", f"{PODS}/p", removal, patch_type)
            assert status == 200, orphaned
            assert "ownerReferences" not in orphaned["metadata"]
            assert "ownerReferences" not in (await read(api, "p"))["metadata"]

        # A JSON patch that writes an empty map, or null, changes nothing at all.
        before = await read(api, "p")
        values: list[Any] = [{}, None]
        for value in values:
            ops = [{"op": "add", "path": "/metadata/annotations", "value": value}]
            status, same = await api.call("PATCH", f"{PODS}/p", ops, JSON_PATCH)
            assert status == 200, same
            assert "annotations" not in same["metadata"]
            assert same["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_put_apply_status_and_resize(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, _ = await api.call("POST", PODS, pod("w"))
        assert status == 201

        # PUT of the stored object with empty values added is a no-op write.
        body = await read(api, "w")
        body["metadata"]["ownerReferences"] = []
        body["spec"]["containers"][0]["args"] = []
        status, put = await api.call("PUT", f"{PODS}/w", body)
        assert status == 200, put
        assert "ownerReferences" not in put["metadata"]
        assert "args" not in put["spec"]["containers"][0]
        assert put["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]

        # Server-side apply of an empty map.
        config = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "w", "annotations": {}},
        }
        status, applied = await api.call("PATCH", f"{PODS}/w?fieldManager=applier", config, APPLY)
        assert status == 200, applied
        assert "annotations" not in applied["metadata"]

        # /status: the conditions emptied.
        conditions = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        status, _ = await api.call("PATCH", f"{PODS}/w/status", conditions, MERGE)
        assert status == 200
        emptied: dict[str, Any] = {"status": {"conditions": []}}
        status, written = await api.call("PATCH", f"{PODS}/w/status", emptied, MERGE)
        assert status == 200, written
        assert "conditions" not in written["status"]

        # /resize: an empty resize policy.
        ops = [{"op": "add", "path": "/spec/containers/0/resizePolicy", "value": []}]
        status, resized = await api.call("PATCH", f"{PODS}/w/resize", ops, JSON_PATCH)
        assert status == 200, resized
        assert "resizePolicy" not in resized["spec"]["containers"][0]


async def test_watchers_and_tables_see_no_empty_values(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("seen")
        body["metadata"]["ownerReferences"] = [OWNER]
        status, created = await api.call("POST", PODS, body)
        assert status == 201
        rv = created["metadata"]["resourceVersion"]
        events: list[dict[str, Any]] = []

        async def follow() -> None:
            async with session.get(
                f"{apiserver.url}{PODS}?watch=1&resourceVersion={rv}",
                headers=apiserver.headers(),
            ) as response:
                async for line in response.content:
                    events.append(json.loads(line))
                    return

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.1)
        orphan = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1234"}]}}
        status, _ = await api.call("PATCH", f"{PODS}/seen", orphan, STRATEGIC)
        assert status == 200
        await asyncio.wait_for(task, 10)
        assert events[0]["type"] == "MODIFIED"
        assert "ownerReferences" not in events[0]["object"]["metadata"]

        table_type = "application/json;as=Table;v=v1;g=meta.k8s.io"
        async with session.get(
            f"{apiserver.url}{PODS}/seen?includeObject=Object",
            headers={**apiserver.headers(), "Accept": table_type},
        ) as response:
            table = await response.json()
        assert table["kind"] == "Table"
        assert "ownerReferences" not in table["rows"][0]["object"]["metadata"]


async def test_fields_go_always_prints_keep_their_empty_value(apiserver: InProcessServer) -> None:
    """A role's ``rules`` has no ``omitempty`` upstream: ``[]`` is kept (upstream itself then
    serves ``null``, what its protobuf storage makes of an empty list: a difference left)."""
    api, session = await make_api(apiserver)
    async with session:
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "empty-rules", "labels": {}},
            "rules": [],
        }
        status, created = await api.call(
            "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role
        )
        assert status == 201, created
        assert created["rules"] == []
        assert "labels" not in created["metadata"]


async def test_the_last_finalizer_of_a_deleted_object_removed(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("held")
        body["metadata"]["finalizers"] = ["example.com/hold"]
        status, _ = await api.call("POST", PODS, body)
        assert status == 201
        status, deleting = await api.call("DELETE", f"{PODS}/held")
        assert status == 200 and deleting["metadata"]["deletionTimestamp"]
        ops = [{"op": "remove", "path": "/metadata/finalizers/0"}]
        status, last = await api.call("PATCH", f"{PODS}/held", ops, JSON_PATCH)
        assert status == 200, last
        status, _ = await api.call("GET", f"{PODS}/held")
        assert status == 404
