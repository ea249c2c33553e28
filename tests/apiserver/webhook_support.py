"""What the admission webhook tests share: a TLS webhook server this test runs (aiohttp, a
certificate from a CA of its own) as the `hooks` fixture, and the requests and objects they
send through the in-process API server."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from inplace.apiserver.tls import ensure_certificates
from tests.conftest import InProcessServer

NAMESPACES = "/api/v1/namespaces"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"

Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | bytes]]


def allow(uid: str, **response: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": True, **response},
    }


def patch_of(*operations: dict[str, Any]) -> dict[str, Any]:
    return {
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(list(operations)).encode()).decode(),
    }


@dataclass
class WebhookServer:
    """A TLS webhook server: each path answers with a function of the request; every review
    received is recorded by path."""

    url: str
    ca_bundle: str
    answers: dict[str, Answer] = field(default_factory=dict)
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def config(self, path: str) -> dict[str, Any]:
        return {"url": f"{self.url}{path}", "caBundle": self.ca_bundle}


@pytest.fixture
async def hooks(tmp_path: Path) -> AsyncIterator[WebhookServer]:
    certs = ensure_certificates(tmp_path / "webhook-pki", hosts=("hooks.default.svc",))
    app = web.Application()
    server = WebhookServer("", base64.b64encode(certs.ca_pem()).decode())

    async def handle(request: web.Request) -> web.StreamResponse:
        review = await request.json()
        server.received.setdefault(request.path, []).append(review)
        answer = await server.answers[request.path](review["request"])
        if isinstance(answer, bytes):
            return web.Response(body=answer, content_type="application/json")
        return web.json_response(answer)

    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certs.server_context())
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server.url = f"https://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


async def call(
    server: InProcessServer, method: str, path: str, body: Any = None, content_type: str = ""
) -> tuple[int, Any, list[str]]:
    headers = {**server.headers(), "Content-Type": content_type or "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, server.url + path, data=orjson.dumps(body), headers=headers
        ) as response,
    ):
        answer = await response.json(content_type=None)
        return response.status, answer, response.headers.getall("Warning", [])


def webhook(name: str, client: dict[str, Any], **extra: Any) -> dict[str, Any]:
    hook = {
        "name": name,
        "clientConfig": client,
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    hook.update(extra)
    return hook


async def configure(
    server: InProcessServer, path: str, name: str, *hooks: dict[str, Any]
) -> dict[str, Any]:
    status, body, _ = await call(
        server, "POST", path, {"metadata": {"name": name}, "webhooks": list(hooks)}
    )
    assert status == 201, body
    return dict(body)


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeSelector": {"inplace.dev/e2e": "none"},
            "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "1d"]}],
        },
    }


async def namespace(server: InProcessServer, name: str, **labels: str) -> None:
    status, body, _ = await call(
        server, "POST", NAMESPACES, {"metadata": {"name": name, "labels": labels}}
    )
    assert status == 201, body


def add_label(key: str, value: str) -> Answer:
    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels")
        operation = (
            {"op": "add", "path": f"/metadata/labels/{key}", "value": value}
            if labels is not None
            else {"op": "add", "path": "/metadata/labels", "value": {key: value}}
        )
        return allow(request["uid"], **patch_of(operation))

    return answer
