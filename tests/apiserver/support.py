"""Talking to an in-process API server over real HTTP: a pod manifest and a tiny client."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import orjson

from tests.conftest import InProcessServer

PODS = "/api/v1/namespaces/default/pods"


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
