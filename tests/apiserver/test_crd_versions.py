"""Custom resources beyond the basics: `None` conversion between served versions, the
deprecated version's warning, watches, server-side apply, CRDs served again after a restart,
cluster-scoped kinds and namespace deletion."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.cache import join_items
from inplace.apiserver.crds.versions import convert_response
from inplace.apiserver.httputil import pieces_response
from inplace.apiserver.lists import list_pieces
from inplace.apiserver.server import APIServer, APIServerConfig
from tests.apiserver.support import make_api
from tests.apiserver.test_crds import CRDS, WIDGETS, create_widgets_crd, widget, widget_crd
from tests.conftest import InProcessServer

BETA = "/apis/example.com/v1beta1/namespaces/default/widgets"


def two_version_crd() -> dict[str, Any]:
    crd = widget_crd()
    v1 = crd["spec"]["versions"][0]
    beta = copy.deepcopy(v1)
    beta.update(name="v1beta1", storage=False, deprecated=True)
    crd["spec"]["versions"] = [beta, v1]
    return crd


async def test_none_conversion_between_served_versions(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api, two_version_crd())
        code, group = await api.call("GET", "/apis/example.com")
        assert code == 200 and group["preferredVersion"]["version"] == "v1"
        assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]

        old = widget("a")
        old["apiVersion"] = "example.com/v1beta1"
        async with session.post(
            apiserver.url + BETA, data=orjson.dumps(old), headers=apiserver.headers()
        ) as response:
            created = await response.json()
            assert response.status == 201, created
            assert response.headers.getall("Warning") == [
                '299 - "example.com/v1beta1 Widget is deprecated"'
            ]
        assert created["apiVersion"] == "example.com/v1beta1"
        code, stored = await api.call("GET", f"{WIDGETS}/a")
        assert code == 200 and stored["apiVersion"] == "example.com/v1"
        code, listing = await api.call("GET", BETA)
        assert code == 200 and listing["apiVersion"] == "example.com/v1beta1"
        assert [i["apiVersion"] for i in listing["items"]] == ["example.com/v1beta1"]

        async with session.get(
            apiserver.url + BETA + "?watch=1", headers=apiserver.headers()
        ) as response:
            assert response.headers.getall("Warning") == [
                '299 - "example.com/v1beta1 Widget is deprecated"'
            ]
            line = await asyncio.wait_for(response.content.readline(), 30)
            event = json.loads(line)
            assert event["type"] == "ADDED"
            assert event["object"]["apiVersion"] == "example.com/v1beta1"

        _, crd = await api.call("GET", f"{CRDS}/widgets.example.com")
        assert crd["status"]["storedVersions"] == ["v1"]

        # a list sent in pieces is converted whole
        beta = next(
            k
            for k in apiserver.server.registry.kinds
            if k.group == "example.com" and k.version == "v1beta1"
        )
        items = [b'{"apiVersion":"example.com/v1","kind":"Widget"}'] * 2
        response = convert_response(
            beta,
            pieces_response(list_pieces(beta, {"resourceVersion": "1"}, join_items(items, 1))),
        )
        assert isinstance(response, web.Response) and isinstance(response.body, bytes)
        converted = orjson.loads(response.body)
        assert converted["apiVersion"] == "example.com/v1beta1"
        assert [i["apiVersion"] for i in converted["items"]] == ["example.com/v1beta1"] * 2


async def test_watch_with_a_field_selector(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        async with session.get(
            apiserver.url + WIDGETS + "?watch=1&fieldSelector=spec.color%3Dblue",
            headers=apiserver.headers(),
        ) as response:
            await api.call("POST", WIDGETS, widget("red"))
            await api.call("POST", WIDGETS, widget("blue", color="blue"))
            line = await asyncio.wait_for(response.content.readline(), 30)
            event = json.loads(line)
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "blue")


async def test_server_side_apply_of_a_custom_resource(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        applied = widget("a", color="blue")
        code, obj = await api.call(
            "PATCH",
            f"{WIDGETS}/a?fieldManager=alice",
            applied,
            content_type="application/apply-patch+yaml",
        )
        assert code == 201, obj
        managers = {e["manager"]: e for e in obj["metadata"]["managedFields"]}
        assert managers["alice"]["operation"] == "Apply"
        assert "f:color" in managers["alice"]["fieldsV1"]["f:spec"]
        code, conflict = await api.call(
            "PATCH",
            f"{WIDGETS}/a?fieldManager=bob",
            widget("a", color="red"),
            content_type="application/apply-patch+yaml",
        )
        assert code == 409, conflict
        assert 'conflict with "alice": .spec.color' in conflict["message"]
        code, forced = await api.call(
            "PATCH",
            f"{WIDGETS}/a?fieldManager=bob&force=true",
            widget("a", color="red"),
            content_type="application/apply-patch+yaml",
        )
        assert code == 200 and forced["spec"]["color"] == "red"


async def test_a_restarted_server_serves_its_stored_crds(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    first = APIServer(config)
    await first.start()
    try:
        api, session = await make_api(
            InProcessServer(first, f"http://127.0.0.1:{first.port}", admin, tokens)
        )
        async with session:
            await create_widgets_crd(api)
            code, _ = await api.call("POST", WIDGETS, widget("kept"))
            assert code == 201
    finally:
        await first.stop()
    second = APIServer(config)
    await second.start()
    try:
        server = InProcessServer(second, f"http://127.0.0.1:{second.port}", admin, tokens)
        api, session = await make_api(server)
        async with session:
            code, listing = await api.call("GET", WIDGETS)
            assert code == 200, listing
            assert [i["metadata"]["name"] for i in listing["items"]] == ["kept"]
    finally:
        await second.stop()


async def test_cluster_scoped_kinds_and_namespace_deletion(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        crd = widget_crd()
        crd["spec"]["scope"] = "Cluster"
        await create_widgets_crd(api, crd)
        cluster_widgets = "/apis/example.com/v1/widgets"
        code, created = await api.call("POST", cluster_widgets, widget("global"))
        assert code == 201, created
        assert "namespace" not in created["metadata"]
        code, _ = await api.call("GET", f"{WIDGETS}/global")
        assert code == 404
        code, listing = await api.call("GET", cluster_widgets)
        assert [i["metadata"]["name"] for i in listing["items"]] == ["global"]


async def test_deleting_a_namespace_deletes_its_custom_resources(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}}
        code, _ = await api.call("POST", "/api/v1/namespaces", namespace)
        assert code == 201
        scratch = "/apis/example.com/v1/namespaces/scratch/widgets"
        code, _ = await api.call("POST", scratch, widget("w"))
        assert code == 201
        code, _ = await api.call("DELETE", "/api/v1/namespaces/scratch")
        assert code == 200
        for _ in range(200):
            code, _ = await api.call("GET", "/api/v1/namespaces/scratch")
            if code == 404:
                break
            await asyncio.sleep(0.05)
        assert code == 404
        code, listing = await api.call("GET", scratch)
        assert listing["items"] == []
