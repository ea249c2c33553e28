"""ValidatingAdmissionPolicy through the in-process API server: CEL validations, bindings'
actions, params, variables, match conditions, failure policies and the policies' own rules."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from tests.conftest import InProcessServer

GROUP = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{GROUP}/validatingadmissionpolicies"
BINDINGS = f"{GROUP}/validatingadmissionpolicybindings"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


async def call(
    server: InProcessServer, method: str, path: str, body: Any = None
) -> tuple[int, Any, list[str]]:
    headers = {**server.headers(), "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, server.url + path, data=orjson.dumps(body), headers=headers
        ) as response,
    ):
        answer = await response.json(content_type=None)
        return response.status, answer, response.headers.getall("Warning", [])


def deployment(name: str, replicas: int, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def policy(name: str, *validations: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments"],
                    }
                ]
            },
            "validations": list(validations),
            **spec,
        },
    }


def binding(name: str, policy_name: str, *actions: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": list(actions), **spec},
    }


async def create(server: InProcessServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer, _ = await call(server, "POST", path, body)
    assert status == 201, answer
    return dict(answer)


async def test_a_denying_policy(apiserver: InProcessServer) -> None:
    created = await create(
        apiserver, POLICIES, policy("max-replicas", {"expression": "object.spec.replicas <= 5"})
    )
    assert created["spec"]["failurePolicy"] == "Fail"
    assert created["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    await create(apiserver, BINDINGS, binding("max-replicas-binding", "max-replicas", "Deny"))
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("big", 7))
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with "
        "binding 'max-replicas-binding' denied request: failed expression: "
        "object.spec.replicas <= 5"
    )
    assert body["details"]["causes"] == [
        {
            "message": "ValidatingAdmissionPolicy 'max-replicas' with binding "
            "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
        }
    ]
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("small", 3))
    assert status == 201, body
    # An update is matched too.
    status, body, _ = await call(
        apiserver, "PUT", f"{DEPLOYMENTS}/small", {**body, "spec": {**body["spec"], "replicas": 9}}
    )
    assert status == 422


async def test_params_messages_and_warnings(apiserver: InProcessServer) -> None:
    await create(
        apiserver,
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": "limits"}, "data": {"max": "4"}},
    )
    await create(
        apiserver,
        POLICIES,
        policy(
            "limits",
            {
                "expression": "object.spec.replicas <= int(params.data.max)",
                "messageExpression": "'at most ' + params.data.max + ' replicas, not ' + "
                "string(object.spec.replicas)",
                "reason": "Forbidden",
            },
            {"expression": "has(object.metadata.labels.team)", "message": "a team is required"},
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
    )
    await create(
        apiserver,
        BINDINGS,
        binding(
            "limits-warn",
            "limits",
            "Warn",
            paramRef={"name": "limits", "parameterNotFoundAction": "Deny"},
        ),
    )
    status, body, warnings = await call(apiserver, "POST", DEPLOYMENTS, deployment("w", 6))
    assert status == 201, body
    assert warnings == [
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'limits' with binding "
        "'limits-warn': at most 4 replicas, not 6\"",
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'limits' with binding "
        "'limits-warn': a team is required\"",
    ]
    await create(
        apiserver,
        BINDINGS,
        binding(
            "limits-deny",
            "limits",
            "Deny",
            paramRef={"name": "limits", "parameterNotFoundAction": "Deny"},
        ),
    )
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("d", 6, team="a"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"].endswith(
        "ValidatingAdmissionPolicy 'limits' with binding 'limits-deny' denied request: at most "
        "4 replicas, not 6"
    )
    # Without its params the binding refuses (parameterNotFoundAction: Deny).
    status, _, _ = await call(apiserver, "DELETE", "/api/v1/namespaces/default/configmaps/limits")
    assert status == 200
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("e", 1, team="a"))
    assert status == 422
    assert body["message"].endswith(
        "denied request: failed to configure binding: no params found for policy binding with "
        "`Deny` parameterNotFoundAction"
    )


async def test_failure_policy_variables_and_match_conditions(apiserver: InProcessServer) -> None:
    await create(
        apiserver,
        POLICIES,
        policy(
            "labelled",
            {"expression": "variables.team == 'a'", "message": "team a only"},
            variables=[{"name": "team", "expression": "object.metadata.labels.team"}],
            matchConditions=[
                {"name": "not-exempt", "expression": "!('exempt' in object.metadata.labels)"}
            ],
        ),
    )
    await create(apiserver, BINDINGS, binding("labelled", "labelled", "Deny"))
    status, _, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("a", 1, team="a"))
    assert status == 201
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("b", 1, team="b"))
    assert status == 422 and body["message"].endswith("denied request: team a only")
    status, _, _ = await call(
        apiserver, "POST", DEPLOYMENTS, deployment("c", 1, team="b", exempt="yes")
    )
    assert status == 201
    # No team label: the variable cannot be evaluated; Fail refuses, Ignore lets it through.
    status, body, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("d", 1, app="x"))
    assert status == 422
    assert body["message"].endswith("denied request: failed to evaluate: no such key: team")
    status, current, _ = await call(apiserver, "GET", f"{POLICIES}/labelled")
    current["spec"]["failurePolicy"] = "Ignore"
    status, body, _ = await call(apiserver, "PUT", f"{POLICIES}/labelled", current)
    assert status == 200, body
    status, _, _ = await call(apiserver, "POST", DEPLOYMENTS, deployment("d", 1, app="x"))
    assert status == 201


async def test_policies_and_bindings_are_validated(apiserver: InProcessServer) -> None:
    status, body, _ = await call(
        apiserver,
        "POST",
        POLICIES,
        policy("bad", {"expression": "object.spec.replicas <="}, {"expression": ""}),
    )
    assert status == 422
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert causes == [
        (
            "spec.validations[0].expression",
            'Invalid value: "object.spec.replicas <=": compilation failed: ERROR: <input>:1:22: '
            "Syntax error",
        ),
        ("spec.validations[1].expression", "Required value: expression is not specified"),
    ]
    status, body, _ = await call(
        apiserver, "POST", BINDINGS, binding("bad", "", "Deny", "Warn", "Shout")
    )
    assert status == 422
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert causes == [
        ("spec.policyName", "Required value"),
        (
            "spec.validationActions[2]",
            'Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn"',
        ),
        (
            "spec.validationActions",
            'Invalid value: ["Deny","Warn","Shout"]: must not contain both Deny and Warn '
            "(repeating the same validation failure information in the API response and "
            "headers serves no purpose)",
        ),
    ]


async def test_tables(apiserver: InProcessServer) -> None:
    await create(
        apiserver,
        POLICIES,
        policy(
            "p",
            {"expression": "true"},
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
    )
    await create(
        apiserver,
        BINDINGS,
        binding(
            "b",
            "p",
            "Audit",
            paramRef={"name": "x", "namespace": "default", "parameterNotFoundAction": "Allow"},
        ),
    )
    headers = {**apiserver.headers(), "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with aiohttp.ClientSession() as session:
        async with session.get(apiserver.url + POLICIES, headers=headers) as response:
            policies = await response.json()
        async with session.get(apiserver.url + BINDINGS, headers=headers) as response:
            bindings = await response.json()
    assert [c["name"] for c in policies["columnDefinitions"]] == [
        "Name",
        "Validations",
        "ParamKind",
        "Age",
    ]
    assert policies["rows"][0]["cells"][:3] == ["p", 1, "v1/ConfigMap"]
    assert [c["name"] for c in bindings["columnDefinitions"]] == [
        "Name",
        "PolicyName",
        "ParamRef",
        "Age",
    ]
    assert bindings["rows"][0]["cells"][:3] == ["b", "p", "default/x"]
