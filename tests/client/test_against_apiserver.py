"""The client, informer and work queue against the real API server (in this event loop)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
from inplace.client import (
    PODS,
    APIConflictError,
    APIGoneError,
    APIInvalidError,
    APINotFoundError,
    Client,
    ClusterConfig,
    Informer,
)
from tests.conftest import InProcessServer


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "c"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def client_for(server: InProcessServer) -> Client:
    return Client(ClusterConfig(server=server.url, token=server.token))


async def test_typed_errors_from_the_real_server(apiserver: InProcessServer) -> None:
    async with client_for(apiserver) as client:
        created = await client.create(PODS, pod("a"), namespace="default")
        with pytest.raises(APIConflictError):
            await client.create(PODS, pod("a"), namespace="default")
        with pytest.raises(APINotFoundError):
            await client.get(PODS, "missing", namespace="default")
        stale = dict(created)
        await client.patch(PODS, "a", {"metadata": {"labels": {"v": "1"}}}, namespace="default")
        with pytest.raises(APIConflictError):
            await client.update(PODS, stale, namespace="default")
        bad = pod("b")
        bad["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "many"}}
        with pytest.raises(APIInvalidError) as invalid:
            await client.create(PODS, bad, namespace="default")
        assert any("limits[cpu]" in cause.get("field", "") for cause in invalid.value.causes)


async def test_watch_from_a_revision_the_server_no_longer_holds_raises_gone(
    tmp_path: Path,
) -> None:
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    first = APIServer(config)
    await first.start()
    await first.stop()
    # A restarted server's watch cache starts at its snapshot: older revisions are gone.
    second = APIServer(config)
    await second.start()
    try:
        config_ = ClusterConfig(server=f"http://127.0.0.1:{second.port}", token=admin)
        async with Client(config_) as client:
            with pytest.raises(APIGoneError):
                async for _ in client.watch(PODS, namespace="default", resource_version="1"):
                    pass
    finally:
        await second.stop()


async def test_informer_cache_follows_the_server(apiserver: InProcessServer) -> None:
    async with client_for(apiserver) as client:
        for i in range(3):
            await client.create(PODS, pod(f"p{i}"), namespace="default")
        informer = Informer(client, PODS, namespace="default")
        seen: list[tuple[str, str]] = []
        informer.add_handler(
            lambda obj: seen.append(("add", obj["metadata"]["name"])),
            lambda old, new: seen.append(("update", new["metadata"]["name"])),
            lambda obj: seen.append(("delete", obj["metadata"]["name"])),
        )
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.wait_synced(), 10)
            assert sorted(informer.keys()) == ["default/p0", "default/p1", "default/p2"]
            await client.patch(
                PODS, "p1", {"metadata": {"labels": {"x": "y"}}}, namespace="default"
            )
            await client.delete(PODS, "p2", namespace="default")
            await client.create(PODS, pod("p3"), namespace="default")
            for _ in range(200):
                if ("add", "p3") in seen and ("delete", "p2") in seen:
                    break
                await asyncio.sleep(0.01)
            assert ("update", "p1") in seen and ("delete", "p2") in seen
            assert sorted(informer.keys()) == ["default/p0", "default/p1", "default/p3"]
            cached = informer.get("default/p1")
            assert cached is not None and cached["metadata"]["labels"]["x"] == "y"
        finally:
            informer.stop()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_an_optional_informer_of_a_kind_not_served_is_synced_and_empty(
    apiserver: InProcessServer,
) -> None:
    """A CRD kind the cluster lacks (the VPA on a cluster without it) does not keep the
    controllers that also read it from starting; a required one keeps retrying."""
    from inplace.client import Resource

    widgets = Resource("example.com", "v1", "widgets", True, "Widget")
    async with client_for(apiserver) as client:
        optional = Informer(client, widgets, optional=True)
        required = Informer(client, widgets, backoff_max=0.2)
        tasks = [asyncio.create_task(i.run()) for i in (optional, required)]
        try:
            await asyncio.wait_for(optional.wait_synced(), timeout=5)
            assert optional.list() == []
            await asyncio.sleep(0.5)
            assert not required.has_synced
        finally:
            for informer, task in zip((optional, required), tasks, strict=True):
                informer.stop()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
