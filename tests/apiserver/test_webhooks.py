"""Admission webhooks through the in-process API server, called over TLS on a webhook server
this test runs (aiohttp, a certificate from a CA of its own): matching, order, patches,
warnings, refusals, timeouts, garbage, failure policies, dry runs, reinvocation, the Service
client config and the webhook configurations' own rules."""

from __future__ import annotations

import asyncio
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


async def test_a_mutating_webhook_patches_and_sees_the_request(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    hooks.answers["/label"] = add_label("mutated", "yes")
    config = await configure(
        apiserver, MUTATING, "labeller", webhook("label.example.com", hooks.config("/label"))
    )
    # upstream's defaults
    hook = config["webhooks"][0]
    assert (hook["failurePolicy"], hook["matchPolicy"], hook["timeoutSeconds"]) == (
        "Fail",
        "Equivalent",
        10,
    )
    assert hook["reinvocationPolicy"] == "Never"
    assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
    assert hook["rules"][0]["scope"] == "*"
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p1"))
    assert status == 201, body
    assert body["metadata"]["labels"] == {"mutated": "yes"}
    (review,) = hooks.received["/label"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    request = review["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["requestKind"] == request["kind"]
    assert request["requestResource"] == request["resource"]
    assert (request["name"], request["namespace"], request["operation"]) == (
        "p1",
        "default",
        "CREATE",
    )
    assert request["userInfo"]["username"] == "admin"
    assert "system:masters" in request["userInfo"]["groups"]
    assert request["object"]["spec"]["containers"][0]["name"] == "app"
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"]["kind"] == "CreateOptions"
    # An UPDATE is not in the rules: not called.
    status, _, _ = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/default/pods/p1",
        {"metadata": {"annotations": {"a": "b"}}},
        MERGE,
    )
    assert status == 200
    assert len(hooks.received["/label"]) == 1


async def test_mutating_webhooks_run_in_order_and_see_earlier_patches(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def recording(key: str) -> Answer:
        inner = add_label(key, "1")

        async def answer(request: dict[str, Any]) -> dict[str, Any]:
            seen.append((key, dict(request["object"]["metadata"].get("labels") or {})))
            return await inner(request)

        return answer

    hooks.answers["/a"] = recording("a")
    hooks.answers["/b"] = recording("b")
    hooks.answers["/c"] = recording("c")
    # Configurations by name ("1-first" before "2-second"), then webhooks in their order.
    await configure(apiserver, MUTATING, "2-second", webhook("c.example.com", hooks.config("/c")))
    await configure(
        apiserver,
        MUTATING,
        "1-first",
        webhook("a.example.com", hooks.config("/a")),
        webhook("b.example.com", hooks.config("/b")),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201, body
    assert seen == [("a", {}), ("b", {"a": "1"}), ("c", {"a": "1", "b": "1"})]
    assert body["metadata"]["labels"] == {"a": "1", "b": "1", "c": "1"}


async def test_a_validating_webhook_refuses_with_its_message_and_nothing_is_stored(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    async def refuse_forbidden(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels") or {}
        if "forbidden" in labels:
            return {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": request["uid"],
                    "allowed": False,
                    "status": {"code": 403, "reason": "Forbidden", "message": "no forbidden pods"},
                },
            }
        return allow(request["uid"], warnings=["checked by the policy"])

    hooks.answers["/check"] = refuse_forbidden
    hooks.answers["/label"] = add_label("forbidden", "yes")
    await configure(
        apiserver, VALIDATING, "policy", webhook("check.example.com", hooks.config("/check"))
    )
    status, body, warnings = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("ok"))
    assert status == 201, body
    assert warnings == ['299 - "checked by the policy"']
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods", pod("bad", forbidden="x")
    )
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'admission webhook "check.example.com" denied the request: no forbidden pods'
    )
    # A mutating webhook runs first: the validating one sees what it added.
    await configure(
        apiserver, MUTATING, "labeller", webhook("label.example.com", hooks.config("/label"))
    )
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods", pod("labelled-later")
    )
    assert status == 403, body
    for name in ("bad", "labelled-later"):
        status, _, _ = await call(apiserver, "GET", f"{NAMESPACES}/default/pods/{name}")
        assert status == 404


async def test_a_refusal_without_a_message_or_code(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    async def refuse(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": request["uid"], "allowed": False},
        }

    hooks.answers["/no"] = refuse
    await configure(apiserver, VALIDATING, "no", webhook("no.example.com", hooks.config("/no")))
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 400
    assert (
        body["message"]
        == 'admission webhook "no.example.com" denied the request without explanation'
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            b"this is not json",
            "failed to call webhook: couldn't get version/kind; json parse error: ",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "received invalid webhook response: webhook response was absent",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",'
            b' "response": {"uid": "someone-else", "allowed": true}}',
            'received invalid webhook response: expected response.uid="',
        ),
    ],
)
async def test_garbage_gets_the_failure_policy(
    apiserver: InProcessServer, hooks: WebhookServer, answer: bytes, reason: str
) -> None:
    async def garbage(request: dict[str, Any]) -> bytes:
        return answer

    hooks.answers["/garbage"] = garbage
    await configure(
        apiserver,
        VALIDATING,
        "closed",
        webhook("closed.example.com", hooks.config("/garbage")),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 500
    assert body["reason"] == "InternalError"
    assert body["message"].startswith(
        f'Internal error occurred: failed calling webhook "closed.example.com": {reason}'
    )
    status, _, _ = await call(apiserver, "GET", f"{NAMESPACES}/default/pods/p")
    assert status == 404
    # The same webhook with failurePolicy: Ignore lets the write through.
    status, _, _ = await call(
        apiserver,
        "PATCH",
        f"{VALIDATING}/closed",
        [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
        JSON_PATCH,
    )
    assert status == 200
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201, body


async def test_a_hanging_webhook_times_out_into_its_failure_policy(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    async def hang(request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(30)
        return allow(request["uid"])

    hooks.answers["/hang"] = hang
    await configure(
        apiserver,
        MUTATING,
        "slow",
        webhook("slow.example.com", hooks.config("/hang"), timeoutSeconds=1),
        webhook(
            "slow-ignored.example.com",
            hooks.config("/hang"),
            timeoutSeconds=1,
            failurePolicy="Ignore",
        ),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call '
        f'webhook: Post "{hooks.url}/hang?timeout=1s": context deadline exceeded'
    )
    status, _, _ = await call(
        apiserver,
        "PATCH",
        f"{MUTATING}/slow",
        [{"op": "remove", "path": "/webhooks/0"}],
        JSON_PATCH,
    )
    assert status == 200
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201, body


async def test_an_unreachable_or_untrusted_webhook(
    apiserver: InProcessServer, hooks: WebhookServer, tmp_path: Path
) -> None:
    hooks.answers["/ok"] = add_label("x", "y")
    other_ca = ensure_certificates(tmp_path / "other-pki").ca_pem()
    untrusted = {"url": f"{hooks.url}/ok", "caBundle": base64.b64encode(other_ca).decode()}
    await configure(apiserver, VALIDATING, "untrusted", webhook("tls.example.com", untrusted))
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 500
    assert body["message"].startswith(
        'Internal error occurred: failed calling webhook "tls.example.com": failed to call '
        f'webhook: Post "{hooks.url}/ok?timeout=10s": tls: failed to verify certificate: x509: '
    )
    await call(apiserver, "DELETE", f"{VALIDATING}/untrusted")
    closed = {"url": "https://127.0.0.1:1/x", "caBundle": hooks.ca_bundle}
    await configure(apiserver, VALIDATING, "down", webhook("down.example.com", closed))
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "down.example.com": failed to call '
        'webhook: Post "https://127.0.0.1:1/x?timeout=10s": dial tcp 127.0.0.1:1: connect: '
        "connection refused"
    )


async def test_selectors_rules_and_scope(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    hooks.answers["/label"] = add_label("seen", "yes")
    await namespace(apiserver, "chosen", team="a")
    await namespace(apiserver, "other", team="b")
    await configure(
        apiserver,
        MUTATING,
        "selective",
        webhook(
            "ns.example.com",
            hooks.config("/label"),
            namespaceSelector={"matchLabels": {"team": "a"}},
            objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        ),
    )
    for ns, name, labels, expected in [
        ("chosen", "in", {}, {"seen": "yes"}),
        ("chosen", "skipped", {"skip": "1"}, {"skip": "1"}),
        ("other", "out", {}, None),
    ]:
        status, body, _ = await call(
            apiserver, "POST", f"{NAMESPACES}/{ns}/pods", pod(name, **labels)
        )
        assert status == 201, body
        assert body["metadata"].get("labels") == expected, name
    # A cluster-scoped rule on namespaces: a Namespace is matched by its own labels.
    await configure(
        apiserver,
        MUTATING,
        "namespaces",
        webhook(
            "namespaces.example.com",
            hooks.config("/label"),
            rules=[
                {
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["namespaces"],
                    "scope": "Cluster",
                }
            ],
            namespaceSelector={"matchLabels": {"team": "a"}},
        ),
    )
    status, body, _ = await call(
        apiserver, "POST", NAMESPACES, {"metadata": {"name": "n1", "labels": {"team": "a"}}}
    )
    assert status == 201 and body["metadata"]["labels"]["seen"] == "yes"
    status, body, _ = await call(apiserver, "POST", NAMESPACES, {"metadata": {"name": "n2"}})
    assert status == 201 and "seen" not in body["metadata"]["labels"]


async def test_subresources_deletes_and_the_exempt_configuration_kinds(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    async def refuse(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"],
                "allowed": False,
                "status": {"message": f"{request['operation']} {request.get('subResource', '')}"},
            },
        }

    hooks.answers["/refuse"] = refuse
    status, _, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201
    everything = {
        "operations": ["*"],
        "apiGroups": ["*"],
        "apiVersions": ["*"],
        "resources": ["*/*"],
    }
    await configure(
        apiserver,
        VALIDATING,
        "status-and-deletes",
        webhook(
            "everything.example.com",
            hooks.config("/refuse"),
            rules=[everything],
            objectSelector={"matchLabels": {"guarded": "yes"}},
        ),
    )
    status, _, _ = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/default/pods/p",
        {"metadata": {"labels": {"guarded": "yes"}}},
        MERGE,
    )
    assert status == 400  # the old object did not match; the new one does
    status, body, _ = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/default/pods/p/status",
        {"status": {"message": "hi"}},
        MERGE,
    )
    # The stored pod is not labelled: nothing matches, the status write goes through.
    assert status == 200, body
    # A webhook never guards its own configuration kinds: the configuration can go.
    everything_exempt = {**everything}
    await configure(
        apiserver,
        VALIDATING,
        "guard-all",
        webhook("all.example.com", hooks.config("/refuse"), rules=[everything_exempt]),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("q"))
    assert status == 400 and body["message"].endswith("denied the request: CREATE ")
    status, body, _ = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/default/pods/p/status",
        {"status": {"message": "x"}},
        MERGE,
    )
    assert status == 400 and body["message"].endswith("denied the request: UPDATE status")
    status, body, _ = await call(apiserver, "DELETE", f"{NAMESPACES}/default/pods/p")
    assert status == 400 and body["message"].endswith("denied the request: DELETE ")
    # A delete of the collection sends each delete to the webhook too: nothing goes.
    status, _, _ = await call(apiserver, "DELETE", f"{NAMESPACES}/default/pods")
    assert status == 200
    status, _, _ = await call(apiserver, "GET", f"{NAMESPACES}/default/pods/p")
    assert status == 200
    status, _, _ = await call(apiserver, "DELETE", f"{VALIDATING}/guard-all")
    assert status == 200
    status, _, _ = await call(apiserver, "DELETE", f"{VALIDATING}/status-and-deletes")
    assert status == 200
    status, _, _ = await call(apiserver, "DELETE", f"{NAMESPACES}/default/pods/p")
    assert status == 200


async def test_dry_run_and_side_effects(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    hooks.answers["/label"] = add_label("dry", "run")
    await configure(
        apiserver, MUTATING, "safe", webhook("safe.example.com", hooks.config("/label"))
    )
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods?dryRun=All", pod("p")
    )
    assert status == 201 and body["metadata"]["labels"] == {"dry": "run"}
    assert hooks.received["/label"][0]["request"]["dryRun"] is True
    # A webhook configured before its side effects were declared safe (an older server's
    # object) refuses the dry run: create it safe, then relax it (an update may keep what the
    # stored object had only; here we edit the stored object as an update that upstream
    # would have accepted from a v1beta1 object).
    status, body, _ = await call(
        apiserver,
        "POST",
        MUTATING,
        {
            "metadata": {"name": "unsafe"},
            "webhooks": [webhook("unsafe.example.com", hooks.config("/label"), sideEffects="Some")],
        },
    )
    assert status == 422
    assert body["message"] == (
        'MutatingWebhookConfiguration.admissionregistration.k8s.io "unsafe" is invalid: '
        'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
        '"NoneOnDryRun"'
    )


async def test_reinvocation_if_needed(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    calls: list[str] = []

    async def first(request: dict[str, Any]) -> dict[str, Any]:
        calls.append("first")
        return allow(request["uid"])

    hooks.answers["/first"] = first
    hooks.answers["/second"] = add_label("second", "1")
    await configure(
        apiserver,
        MUTATING,
        "a",
        webhook("first.example.com", hooks.config("/first"), reinvocationPolicy="IfNeeded"),
        webhook("second.example.com", hooks.config("/second")),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201, body
    # "second" changed the object after "first" ran: "first" runs again, "second" does not.
    assert calls == ["first", "first"]
    assert len(hooks.received["/second"]) == 1
    assert hooks.received["/first"][1]["request"]["object"]["metadata"]["labels"] == {"second": "1"}


async def test_a_webhook_behind_a_service(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    """``clientConfig.service``: the Service's ready pod is called, its certificate verified
    for ``<service>.<namespace>.svc``; without a ready pod, upstream's resolver error."""
    hooks.answers["/mutate"] = add_label("via", "service")
    port = int(hooks.url.rsplit(":", 1)[1])
    service = {
        "metadata": {"name": "hooks"},
        "spec": {"selector": {"app": "hooks"}, "ports": [{"port": 443, "targetPort": "https"}]},
    }
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/services", service)
    assert status == 201, body
    server_pod = pod("hooks-0", app="hooks")
    server_pod["spec"]["containers"][0]["ports"] = [{"name": "https", "containerPort": port}]
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", server_pod)
    assert status == 201, body
    await configure(
        apiserver,
        MUTATING,
        "by-service",
        webhook(
            "service.example.com",
            {
                "service": {"namespace": "default", "name": "hooks", "path": "/mutate"},
                "caBundle": hooks.ca_bundle,
            },
            objectSelector={"matchLabels": {"want": "it"}},
        ),
    )
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p", want="it")
    )
    assert status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "service.example.com": failed to call '
        'webhook: Post "https://hooks.default.svc:443/mutate?timeout=10s": no endpoints '
        'available for service "hooks"'
    )
    running = {
        "status": {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        }
    }
    status, body, _ = await call(
        apiserver, "PATCH", f"{NAMESPACES}/default/pods/hooks-0/status", running, MERGE
    )
    assert status == 200, body
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p", want="it")
    )
    assert status == 201, body
    assert body["metadata"]["labels"] == {"want": "it", "via": "service"}


async def test_configuration_validation(apiserver: InProcessServer) -> None:
    bad = {
        "metadata": {"name": "bad"},
        "webhooks": [
            {
                "name": "short",
                "clientConfig": {"url": "http://x.example.com/a?b=c"},
                "rules": [
                    {
                        "operations": ["CREATE", "*"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["*/*", "pods"],
                        "scope": "Somewhere",
                    }
                ],
                "failurePolicy": "Maybe",
                "timeoutSeconds": 31,
                "admissionReviewVersions": ["v2"],
            }
        ],
    }
    status, body, _ = await call(apiserver, "POST", VALIDATING, bad)
    assert status == 422
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert causes == [
        (
            "webhooks[0].name",
            'Invalid value: "short": should be a domain with at least three segments separated '
            "by dots",
        ),
        (
            "webhooks[0].rules[0].operations",
            'Invalid value: ["CREATE","*"]: if \'*\' is present, must not specify other operations',
        ),
        (
            "webhooks[0].rules[0].resources",
            'Invalid value: ["*/*","pods"]: if \'*/*\' is present, must not specify other '
            "resources",
        ),
        (
            "webhooks[0].rules[0].scope",
            'Unsupported value: "Somewhere": supported values: "*", "Cluster", "Namespaced"',
        ),
        (
            "webhooks[0].failurePolicy",
            'Unsupported value: "Maybe": supported values: "Fail", "Ignore"',
        ),
        ("webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun"),
        (
            "webhooks[0].timeoutSeconds",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            "webhooks[0].clientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
            "https://host[/path]",
        ),
        (
            "webhooks[0].clientConfig.url",
            'Invalid value: "b=c": query parameters are not permitted in the URL',
        ),
        (
            "webhooks[0].admissionReviewVersions",
            'Invalid value: ["v2"]: must include at least one of v1, v1beta1',
        ),
    ]


async def test_kubectl_table_columns(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    await configure(
        apiserver,
        MUTATING,
        "two",
        webhook("a.example.com", hooks.config("/a")),
        webhook("b.example.com", hooks.config("/b")),
    )
    headers = {**apiserver.headers(), "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(apiserver.url + MUTATING, headers=headers) as response,
    ):
        table = await response.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
    assert table["rows"][0]["cells"][:2] == ["two", 2]


async def test_match_conditions(apiserver: InProcessServer, hooks: WebhookServer) -> None:
    hooks.answers["/label"] = add_label("matched", "yes")
    conditions = [
        {"name": "not-skipped", "expression": "!object.metadata.name.startsWith('skip-')"},
        {"name": "creating", "expression": "request.operation == 'CREATE'"},
    ]
    await configure(
        apiserver,
        MUTATING,
        "conditional",
        webhook("cond.example.com", hooks.config("/label"), matchConditions=conditions),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201 and body["metadata"]["labels"] == {"matched": "yes"}
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("skip-p"))
    assert status == 201 and "labels" not in body["metadata"]
    assert len(hooks.received["/label"]) == 1
    # A condition that cannot be evaluated gets the failure policy (Fail).
    broken = [{"name": "broken", "expression": "object.spec.nothing.here == 1"}]
    await configure(
        apiserver,
        VALIDATING,
        "broken",
        webhook("broken.example.com", hooks.config("/label"), matchConditions=broken),
    )
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("q"))
    assert status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "broken.example.com": failed to '
        'evaluate match condition "broken": no such key: nothing'
    )
    # An expression that does not compile is refused with the configuration.
    status, body, _ = await call(
        apiserver,
        "POST",
        VALIDATING,
        {
            "metadata": {"name": "bad"},
            "webhooks": [
                webhook(
                    "bad.example.com",
                    hooks.config("/label"),
                    matchConditions=[{"name": "x", "expression": "object.metadata.name =="}],
                )
            ],
        },
    )
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "webhooks[0].matchConditions[0].expression"


async def test_a_scale_write_sends_the_scale(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    """A webhook on ``deployments/scale`` is sent autoscaling/v1 Scales (as upstream's), and
    what a mutating one patches in the Scale's replicas is what the Deployment gets."""

    async def cap(request: dict[str, Any]) -> dict[str, Any]:
        if request["object"]["spec"]["replicas"] > 3:
            return allow(
                request["uid"], **patch_of({"op": "replace", "path": "/spec/replicas", "value": 3})
            )
        return allow(request["uid"])

    hooks.answers["/cap"] = cap
    scale_rule = {
        "operations": ["UPDATE"],
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "resources": ["deployments/scale"],
    }
    await configure(
        apiserver,
        MUTATING,
        "cap",
        webhook("cap.example.com", hooks.config("/cap"), rules=[scale_rule]),
    )
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }
    path = "/apis/apps/v1/namespaces/default/deployments"
    status, body, _ = await call(apiserver, "POST", path, deployment)
    assert status == 201, body
    status, body, _ = await call(
        apiserver, "PATCH", f"{path}/web/scale", {"spec": {"replicas": 10}}, MERGE
    )
    assert status == 200, body
    assert body["spec"]["replicas"] == 3
    status, body, _ = await call(apiserver, "GET", f"{path}/web")
    assert body["spec"]["replicas"] == 3
    (review,) = hooks.received["/cap"]
    request = review["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert request["subResource"] == "scale"
    assert request["object"]["kind"] == "Scale"
    assert request["oldObject"]["spec"]["replicas"] == 1


async def test_connect_is_admitted_with_its_options(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    """``kubectl exec`` is a CONNECT of ``pods/exec``: a webhook sees the PodExecOptions and
    may refuse before any stream is opened."""

    async def no_exec(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"],
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "no exec here"},
            },
        }

    hooks.answers["/no-exec"] = no_exec
    status, _, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201
    connect = {
        "operations": ["CONNECT"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods/exec"],
    }
    await configure(
        apiserver,
        VALIDATING,
        "no-exec",
        webhook("no-exec.example.com", hooks.config("/no-exec"), rules=[connect]),
    )
    status, body, _ = await call(
        apiserver, "GET", f"{NAMESPACES}/default/pods/p/exec?command=ls&command=-l&stdout=true"
    )
    assert status == 403
    assert (
        body["message"]
        == 'admission webhook "no-exec.example.com" denied the request: no exec here'
    )
    (review,) = hooks.received["/no-exec"]
    request = review["request"]
    assert (request["operation"], request["subResource"]) == ("CONNECT", "exec")
    assert request["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert request["object"] == {
        "kind": "PodExecOptions",
        "apiVersion": "v1",
        "stdout": True,
        "command": ["ls", "-l"],
    }
    # attach is another subresource: not matched, the request goes on (and needs an upgrade).
    status, body, _ = await call(
        apiserver, "GET", f"{NAMESPACES}/default/pods/p/attach?stdout=true"
    )
    assert status == 400


async def test_an_eviction_is_admitted_as_an_eviction(
    apiserver: InProcessServer, hooks: WebhookServer
) -> None:
    async def no_eviction(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"],
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "keep it"},
            },
        }

    hooks.answers["/no-eviction"] = no_eviction
    status, _, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods", pod("p"))
    assert status == 201
    rule = {
        "operations": ["CREATE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods/eviction"],
    }
    await configure(
        apiserver,
        VALIDATING,
        "no-eviction",
        webhook("no-eviction.example.com", hooks.config("/no-eviction"), rules=[rule]),
    )
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    status, body, _ = await call(
        apiserver, "POST", f"{NAMESPACES}/default/pods/p/eviction", eviction
    )
    assert status == 403, body
    assert body["message"].endswith("denied the request: keep it")
    request = hooks.received["/no-eviction"][0]["request"]
    assert request["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert (request["subResource"], request["name"]) == ("eviction", "p")
    status, _, _ = await call(apiserver, "GET", f"{NAMESPACES}/default/pods/p")
    assert status == 200
    # A binding is another subresource: not matched, the pod is bound.
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/default/pods/p/binding", binding)
    assert status == 201, body
