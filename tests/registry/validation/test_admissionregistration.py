"""Webhook configurations and admission policies: upstream's rules, paths and messages, and
what an update may keep that a create may not."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.validation.errors import FieldError
from inplace.registry.admissionregistration import (
    default_mutating_webhook_configuration,
    default_validating_admission_policy,
)
from inplace.registry.validation.admissionregistration import (
    validate_mutating_webhook_configuration,
    validate_mutating_webhook_configuration_update,
    validate_validating_admission_policy,
)


def configuration(**hook: Any) -> dict[str, Any]:
    webhook = {
        "name": "hook.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
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
        **hook,
    }
    obj = {"metadata": {"name": "c"}, "webhooks": [webhook]}
    default_mutating_webhook_configuration(obj, True)
    return obj


def messages(errs: list[FieldError]) -> list[str]:
    return [e.message() for e in errs]


def check(obj: dict[str, Any]) -> list[str]:
    errs: list[FieldError] = []
    validate_mutating_webhook_configuration(errs, obj)
    return messages(errs)


def test_defaults() -> None:
    hook = configuration()["webhooks"][0]
    assert hook["clientConfig"]["service"]["port"] == 443
    assert hook["reinvocationPolicy"] == "Never"
    assert hook["rules"][0]["scope"] == "*"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, []),
        (
            {"clientConfig": {}},
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"],
        ),
        (
            {"clientConfig": {"url": "https://user@h.example.com/p#frag"}},
            [
                'webhooks[0].clientConfig.url: Invalid value: "user": user information is not '
                "permitted in the URL",
                'webhooks[0].clientConfig.url: Invalid value: "frag": fragments are not permitted '
                "in the URL",
            ],
        ),
        (
            {"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/a//B"}}},
            [
                'webhooks[0].clientConfig.service.path: Invalid value: "/a//B": segment[1] may not '
                "be empty",
                'webhooks[0].clientConfig.service.path: Invalid value: "/a//B": segment[2]: a '
                "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                "'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            {"clientConfig": {"service": {"name": "s", "namespace": "n", "port": 0}}},
            [
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must "
                "be between 1 and 65535, inclusive"
            ],
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["PATCH"],
                        "apiGroups": [],
                        "apiVersions": ["v1", ""],
                        "resources": ["pods/*", "pods/log", "*", "deployments"],
                    }
                ]
            },
            [
                'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported '
                'values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions[1]: Required value",
                "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/log\": if 'pods/*' is "
                "present, must not specify pods/log",
                'webhooks[0].rules[0].resources: Invalid value: ["pods/*","pods/log","*",'
                "\"deployments\"]: if '*' is present, must not specify other resources without "
                "subresources",
            ],
        ),
        (
            {"reinvocationPolicy": "Always", "matchPolicy": "Loose"},
            [
                'webhooks[0].matchPolicy: Unsupported value: "Loose": supported values: '
                '"Equivalent", "Exact"',
                'webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: '
                '"IfNeeded", "Never"',
            ],
        ),
    ],
)
def test_webhook_rules(change: dict[str, Any], expected: list[str]) -> None:
    assert check(configuration(**change)) == expected


def test_duplicate_names() -> None:
    obj = configuration()
    obj["webhooks"].append(dict(obj["webhooks"][0]))
    assert check(obj) == ['webhooks[1].name: Duplicate value: "hook.example.com"']


def test_an_update_keeps_what_the_stored_object_had() -> None:
    """Side effects other than None/NoneOnDryRun are refused on create, but an object that
    already had them (stored by an older server) may still be updated."""
    old = configuration(sideEffects="Unknown")
    new = configuration(sideEffects="Unknown", timeoutSeconds=5)
    assert check(new) == [
        'webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", '
        '"NoneOnDryRun"'
    ]
    errs: list[FieldError] = []
    validate_mutating_webhook_configuration_update(errs, new, old)
    assert messages(errs) == []
    errs = []
    validate_mutating_webhook_configuration_update(errs, new, configuration())
    assert len(errs) == 1


def test_policy_rules() -> None:
    policy: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": []},
            "validations": [],
            "paramKind": {"kind": "ConfigMap"},
            "variables": [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}],
        },
    }
    default_validating_admission_policy(policy, True)
    errs: list[FieldError] = []
    validate_validating_admission_policy(errs, policy)
    assert messages(errs) == [
        "spec.paramKind.apiVersion: Required value",
        "spec.matchConstraints.resourceRules: Required value",
        "spec.validations: Required value: validations or auditAnnotations must contain at "
        "least one item",
        'spec.variables[1].name: Duplicate value: "a"',
    ]
