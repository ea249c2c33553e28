"""Admission webhooks through the in-process API server, called over TLS on a webhook server
this test runs (aiohttp, a certificate from a CA of its own): matching, order, patches,
warnings, refusals, timeouts, garbage, failure policies, dry runs, reinvocation, the Service
client config and the webhook configurations' own rules."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from inplace.apiserver.tls import ensure_certificates
from tests.apiserver.webhook_support import (
    JSON_PATCH,
    MERGE,
    MUTATING,
    NAMESPACES,
    VALIDATING,
    Answer,
    WebhookServer,
    add_label,
    allow,
    call,
    configure,
    namespace,
    pod,
    webhook,
)
from tests.conftest import InProcessServer


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
