"""PriorityClasses, Leases, Events, Namespaces, Nodes and VPAs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from inplace.registry.validation import validate_create, validate_update
from tests.api.validation.builders import (
    EVENT,
    LEASE,
    NAMESPACE,
    NODE,
    PRIORITY_CLASS,
    QUANTITY_MSG,
    VPA,
    create_messages,
    event,
    lease,
    messages,
    mutate,
    namespace,
    node,
    priority_class,
    vpa,
)

VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (NAMESPACE, namespace),
    (NODE, node),
    (EVENT, event),
    (PRIORITY_CLASS, priority_class),
    (PRIORITY_CLASS, lambda: priority_class(value=1_000_000_000, preemptionPolicy="Never")),
    (LEASE, lease),
    (VPA, vpa),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "namespace is a DNS label",
        NAMESPACE,
        lambda: namespace("team.a"),
        ['metadata.name: Invalid value: "team.a": must not contain dots'],
    ),
    (
        "priority class value and preemption policy",
        PRIORITY_CLASS,
        lambda: priority_class(value=2_000_000_000, preemptionPolicy="Always"),
        [
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            'preemptionPolicy: Unsupported value: "Always": supported values: '
            '"PreemptLowerPriority", "Never"',
        ],
    ),
    (
        "system priority classes are reserved",
        PRIORITY_CLASS,
        lambda: mutate(priority_class(), lambda p: p["metadata"].update(name="system-mine")),
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
            "for system use only. error: system-mine is not a known system priority class"
        ],
    ),
    (
        "lease durations",
        LEASE,
        lambda: lease(leaseDurationSeconds=0, leaseTransitions=-1),
        [
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "vpa",
        VPA,
        lambda: mutate(
            vpa(),
            lambda v: (
                v["spec"].pop("targetRef"),
                v["spec"]["updatePolicy"].update(updateMode="Sometimes"),
                v["spec"]["resourcePolicy"]["containerPolicies"][0].update(
                    controlledResources=["cpu", "disk"],
                    controlledValues="LimitsOnly",
                    mode="On",
                    minAllowed={"cpu": "2"},
                    maxAllowed={"cpu": "1"},
                ),
            ),
        ),
        [
            "spec.targetRef: Required value",
            'spec.updatePolicy.updateMode: Unsupported value: "Sometimes": supported values: '
            '"Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto"',
            'spec.resourcePolicy.containerPolicies[0].mode: Unsupported value: "On": supported '
            'values: "Auto", "Off"',
            "spec.resourcePolicy.containerPolicies[0].controlledValues: Unsupported value: "
            '"LimitsOnly": supported values: "RequestsAndLimits", "RequestsOnly"',
            "spec.resourcePolicy.containerPolicies[0].controlledResources[1]: Unsupported value: "
            '"disk": supported values: "cpu", "memory"',
            'spec.resourcePolicy.containerPolicies[0].maxAllowed[cpu]: Invalid value: "1": max '
            'resource for cpu is lower than min of "2"',
        ],
    ),
    (
        "vpa quantities",
        VPA,
        lambda: mutate(
            vpa(),
            lambda v: v["spec"]["resourcePolicy"]["containerPolicies"][0].update(
                maxAllowed={"memory": "8 Gi"}
            ),
        ),
        [
            "spec.resourcePolicy.containerPolicies[0].maxAllowed[memory]: Invalid value: "
            f'"8 Gi": {QUANTITY_MSG}'
        ],
    ),
    (
        "event needs an involved object",
        EVENT,
        lambda: mutate(event(), lambda e: e.pop("involvedObject")),
        ["involvedObject: Required value"],
    ),
    (
        "event namespace must match",
        EVENT,
        lambda: mutate(event(), lambda e: e["involvedObject"].update(namespace="other")),
        ['involvedObject.namespace: Invalid value: "other": does not match event.namespace'],
    ),
    (
        "node capacity quantities",
        NODE,
        lambda: node(capacity={"cpu": "eight"}, allocatable={"cpu": "8"}),
        [f'status.capacity.cpu: Invalid value: "eight": {QUANTITY_MSG}'],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)


def test_priority_class_value_is_immutable() -> None:
    old = priority_class()
    new = mutate(old, lambda p: p.update(value=5))
    assert messages(lambda: validate_update(PRIORITY_CLASS, new, old)) == [
        "value: Forbidden: may not be changed in an update."
    ]
