"""Containers' env and envFrom: upstream's ValidateEnv and ValidateEnvFrom messages."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.registry.validation import validate_create
from tests.api.validation.builders import POD, container, create_messages, pod

EXPRESSIONS = (
    'supported values: "metadata.name", "metadata.namespace", "metadata.uid", '
    '"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", '
    '"status.podIP", "status.podIPs"'
)
ENV = "spec.containers[0].env[0]"


def with_env(env: list[dict[str, Any]] | None = None, env_from: list[Any] | None = None) -> Any:
    c = container()
    if env is not None:
        c["env"] = env
    if env_from is not None:
        c["envFrom"] = env_from
    return pod(c)


VALID = [
    [{"name": "A", "value": "1"}],
    [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.podIPs"}}}],
    [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}],
    [
        {
            "name": "A",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
        }
    ],
    [
        {
            "name": "A",
            "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
        }
    ],
    [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k.1"}}}],
    [{"name": "weird-but.ok", "valueFrom": {"secretKeyRef": {"name": "s", "key": "K"}}}],
]


@pytest.mark.parametrize("env", VALID)
def test_valid(env: list[dict[str, Any]]) -> None:
    validate_create(POD, with_env(env))


CASES: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    (
        "no source",
        [{"name": "A", "valueFrom": {}}],
        [
            f'{ENV}.valueFrom: Invalid value: "": must specify one of: `fieldRef`, '
            "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
        ],
    ),
    (
        "value and valueFrom",
        [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        [f'{ENV}.valueFrom: Invalid value: "": may not be specified when `value` is not empty'],
    ),
    (
        "two sources",
        [
            {
                "name": "A",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.name"},
                    "configMapKeyRef": {"name": "c", "key": "k"},
                },
            }
        ],
        [
            f'{ENV}.valueFrom: Invalid value: "": may not have more than one field specified '
            "at a time"
        ],
    ),
    (
        "a field env does not take",
        [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}],
        [f'{ENV}.valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": {EXPRESSIONS}'],
    ),
    (
        "a field nobody knows",
        [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}}],
        [
            f'{ENV}.valueFrom.fieldRef.fieldPath: Invalid value: "spec.hostname": error '
            "converting fieldPath: field label not supported: spec.hostname"
        ],
    ),
    (
        "a resource env cannot read",
        [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}],
        [
            f'{ENV}.valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": '
            'supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", '
            '"requests.cpu", "requests.ephemeral-storage", "requests.memory"'
        ],
    ),
    (
        "a cpu divisor",
        [
            {
                "name": "A",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "10m"}},
            }
        ],
        [
            f'{ENV}.valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only '
            "divisor's values 1m and 1 are supported with the cpu resource"
        ],
    ),
    (
        "a key reference without a key",
        [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
        [f"{ENV}.valueFrom.secretKeyRef.key: Required value"],
    ),
    (
        "a name with =",
        [{"name": "A=B", "value": "1"}],
        [
            f'{ENV}.name: Invalid value: "A=B": a valid environment variable name must consist '
            "only of printable ASCII characters other than '='"
        ],
    ),
]


@pytest.mark.parametrize(("env", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_env_errors(env: list[dict[str, Any]], expected: list[str]) -> None:
    assert create_messages(POD, with_env(env)) == expected


def test_env_from_errors() -> None:
    assert create_messages(POD, with_env(env_from=[{}])) == [
        'spec.containers[0].envFrom: Invalid value: "": must specify one of: `configMapRef` or '
        "`secretRef`"
    ]
    both = [{"configMapRef": {"name": "c"}, "secretRef": {"name": "s"}, "prefix": "X="}]
    assert create_messages(POD, with_env(env_from=both)) == [
        'spec.containers[0].envFrom[0].prefix: Invalid value: "X=": a valid environment variable '
        "name must consist only of printable ASCII characters other than '='",
        'spec.containers[0].envFrom: Invalid value: "": may not have more than one field '
        "specified at a time",
    ]
    nameless = [{"configMapRef": {}}]
    assert create_messages(POD, with_env(env_from=nameless)) == [
        "spec.containers[0].envFrom[0].configMapRef.name: Required value"
    ]
