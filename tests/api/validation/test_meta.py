"""Object metadata and label selectors: names, namespaces, labels, annotations, generation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from inplace.registry.validation import validate_update
from tests.api.validation.builders import (
    DEPLOYMENT,
    DNS_SUBDOMAIN_MSG,
    NODE,
    POD,
    REPLICASET,
    create_messages,
    deployment,
    messages,
    mutate,
    node,
    pod,
    replicaset,
)

INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "metadata: name, namespace, labels, annotation size",
        POD,
        lambda: mutate(
            pod(),
            lambda p: p.update(
                metadata={
                    "name": "Web",
                    "labels": {"app": "x" * 64},
                    "annotations": {"big": "x" * (256 * 1024)},
                }
            ),
        ),
        [
            f'metadata.name: Invalid value: "Web": {DNS_SUBDOMAIN_MSG}',
            "metadata.namespace: Required value",
            f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 characters',
            "metadata.annotations: Too long: may not be more than 262144 bytes",
        ],
    ),
    (
        "name or generateName",
        POD,
        lambda: mutate(pod(), lambda p: p["metadata"].pop("name")),
        ["metadata.name: Required value: name or generateName is required"],
    ),
    (
        "cluster-scoped kinds take no namespace",
        NODE,
        lambda: mutate(node(), lambda n: n["metadata"].update(namespace="default")),
        ["metadata.namespace: Forbidden: not allowed on this type"],
    ),
    (
        "replicaset selector expressions",
        REPLICASET,
        lambda: replicaset(
            selector={"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
        ),
        [
            "spec.selector.matchExpressions[0].values: Required value: must be specified when "
            "`operator` is 'In' or 'NotIn'"
        ],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)


def test_generation_never_decreases() -> None:
    old = mutate(deployment(), lambda d: d["metadata"].update(generation=3))
    new = mutate(old, lambda d: d["metadata"].update(generation=2))
    assert messages(lambda: validate_update(DEPLOYMENT, new, old)) == [
        "metadata.generation: Invalid value: 2: must not be decremented"
    ]
