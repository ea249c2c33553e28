"""The webhook's HTTPS server, reached as kube-apiserver reaches it: real TLS, the CA
verified, an AdmissionReview in and out."""

from __future__ import annotations

import base64
import copy
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest

from inplace.operator.certs import ServingCert, make_serving_cert
from inplace.operator.webhook import WebhookServer
from inplace.registry.patch import apply_json_patch

OWN_USER = "system:serviceaccount:inplace-system:inplace-operator"
SMALL = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
BIG = {"requests": {"cpu": "200m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}


def deployment(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": copy.deepcopy(resources)}
                    ]
                },
            },
        },
    }


def review(kind: str, operation: str, new: Any, old: Any = None, user: str = "alice") -> Any:
    group, version = ("apps", "v1") if kind == "Deployment" else ("", "v1")
    request: dict[str, Any] = {
        "uid": "0f5b6c1e-7d43-4d5a-9c1e-1d2f3a4b5c6d",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "name": new["metadata"]["name"],
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": user},
        "object": new,
        "oldObject": old,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@dataclass
class Served:
    server: WebhookServer
    cert: ServingCert
    ready: list[bool]

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"


JOB = {
    "metadata": {
        "name": "batch",
        "namespace": "default",
        "annotations": {"inplace.dev/template-resources": orjson.dumps({"main": BIG}).decode()},
    }
}


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    cert = make_serving_cert(["inplace-webhook.inplace-system.svc"], ["127.0.0.1"])
    ready = [False]
    server = WebhookServer(
        cert,
        host="127.0.0.1",
        port=0,
        own_user=OWN_USER,
        jobs=lambda namespace, name: JOB if (namespace, name) == ("default", "batch") else None,
        ready=lambda: ready[0],
    )
    await server.start()
    try:
        yield Served(server, cert, ready)
    finally:
        await server.stop()


async def call(
    url: str, ca_pem: bytes, *, body: bytes | None = None, method: str = "POST"
) -> tuple[int, bytes]:
    """One request on a new connection, trusting only ``ca_pem``."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, url, data=body, ssl=context, headers={"Content-Type": "application/json"}
        ) as response,
    ):
        return response.status, await response.read()


async def test_a_resources_only_change_is_answered_with_the_patch_that_holds_it(
    served: Served,
) -> None:
    old, new = deployment(SMALL), deployment(BIG)
    status, body = await call(
        served.base + "/mutate",
        served.cert.ca_pem,
        body=orjson.dumps(review("Deployment", "UPDATE", new, old)),
    )
    assert status == 200
    answer = orjson.loads(body)
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "0f5b6c1e-7d43-4d5a-9c1e-1d2f3a4b5c6d"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    held = apply_json_patch(new, orjson.loads(base64.b64decode(response["patch"])))
    assert held["spec"]["paused"] is True
    assert orjson.loads(held["metadata"]["annotations"]["inplace.dev/held"]) == {"paused": False}
    assert held["spec"]["template"] == new["spec"]["template"]


async def test_an_image_change_and_the_operators_own_write_pass_untouched(served: Served) -> None:
    old = deployment(SMALL)
    image = deployment(SMALL)
    image["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36"
    for request in (
        review("Deployment", "UPDATE", image, old),
        review("Deployment", "UPDATE", deployment(BIG), old, user=OWN_USER),
    ):
        status, body = await call(
            served.base + "/mutate", served.cert.ca_pem, body=orjson.dumps(request)
        )
        assert status == 200
        response = orjson.loads(body)["response"]
        assert response["allowed"] is True and "patch" not in response


async def test_a_jobs_later_pod_is_created_at_the_jobs_recorded_resources(
    served: Served,
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "batch-x",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "controller": True}
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": SMALL}]},
    }
    status, body = await call(
        served.base + "/mutate", served.cert.ca_pem, body=orjson.dumps(review("Pod", "CREATE", pod))
    )
    assert status == 200
    patch = orjson.loads(base64.b64decode(orjson.loads(body)["response"]["patch"]))
    assert apply_json_patch(pod, patch)["spec"]["containers"][0]["resources"] == BIG


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not JSON"),
        (b"[]", "the body is not a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', "expected"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "has no request"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}',
            "request.uid is required",
        ),
        (
            orjson.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"uid": "u", "object": "a string"},
                }
            ),
            "request.object must be an object",
        ),
    ],
)
async def test_a_malformed_review_is_a_bad_request_saying_why(
    served: Served, body: bytes, message: str
) -> None:
    status, answer = await call(served.base + "/mutate", served.cert.ca_pem, body=body)
    assert status == 400
    assert message in answer.decode()


async def test_health_while_serving_and_readiness_once_ready(served: Served) -> None:
    ca = served.cert.ca_pem
    assert await call(served.base + "/healthz", ca, method="GET") == (200, b"ok\n")
    assert await call(served.base + "/readyz", ca, method="GET") == (503, b"not ready\n")
    served.ready[0] = True
    assert await call(served.base + "/readyz", ca, method="GET") == (200, b"ok\n")
    url = served.base + "/healthz"
    await served.server.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await call(url, ca, method="GET")


async def test_a_replaced_certificate_is_served_to_new_connections(served: Served) -> None:
    renewed = make_serving_cert(["inplace-webhook.inplace-system.svc"], ["127.0.0.1"])
    served.server.reload(renewed)
    assert await call(served.base + "/healthz", renewed.ca_pem, method="GET") == (200, b"ok\n")
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await call(served.base + "/healthz", served.cert.ca_pem, method="GET")


async def test_port_zero_picks_a_free_port_reported_after_start() -> None:
    cert = make_serving_cert([], ["127.0.0.1"])
    server = WebhookServer(cert, host="127.0.0.1", port=0, own_user="", jobs=lambda ns, n: None)
    assert server.port == 0
    await server.start()
    try:
        assert server.port > 0
        status, _ = await call(
            f"https://127.0.0.1:{server.port}/healthz", cert.ca_pem, method="GET"
        )
        assert status == 200
    finally:
        await server.stop()
