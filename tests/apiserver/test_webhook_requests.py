"""Admission webhooks and what each request sends them: a webhook behind a Service, the
webhook configurations' own rules and columns, match conditions, and the subresource writes
(scale, connect, eviction) admitted as upstream admits them."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.apiserver.webhook_support import (
    MERGE,
    MUTATING,
    NAMESPACES,
    VALIDATING,
    WebhookServer,
    add_label,
    allow,
    call,
    configure,
    patch_of,
    pod,
    webhook,
)
from tests.conftest import InProcessServer


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
