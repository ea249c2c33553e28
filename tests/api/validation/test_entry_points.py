"""The entry points: every bad field at once, the request's namespace, and never anything but
a ValidationError whatever JSON comes in."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inplace.api.validation import ValidationError, validate_resize
from inplace.registry.kinds import Kind
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create, validate_status_update, validate_update
from tests.api.validation.builders import (
    DEPLOYMENT,
    EVENT,
    JOB,
    LEASE,
    NAMESPACE,
    NODE,
    PDB,
    POD,
    PRIORITY_CLASS,
    REPLICASET,
    VPA,
    burstable_pod,
    container,
    deployment,
    event,
    guaranteed_pod,
    job,
    lease,
    messages,
    namespace,
    node,
    pdb,
    pod,
    priority_class,
    replicaset,
    sidecar_pod,
    vpa,
)


def test_every_bad_field_is_reported_at_once() -> None:
    bad = pod(
        container("App", limits={"cpu": "1", "memory": "1Gx"}, requests={"cpu": "2"}),
        container("b") | {"image": ""},
        restart_policy="Sometimes",
    )
    bad["metadata"]["name"] = "Web"
    bad["spec"]["nodeName"] = "Bad_Node"
    with pytest.raises(ValidationError) as info:
        validate_create(POD, bad)
    fields = sorted(e.field for e in info.value.errors)
    assert fields == [
        "metadata.name",
        "spec.containers[0].name",
        "spec.containers[0].resources.limits[memory]",
        "spec.containers[0].resources.requests",
        "spec.containers[1].image",
        "spec.nodeName",
        "spec.restartPolicy",
    ]
    message = info.value.message()
    assert message.startswith('Pod "Web" is invalid: [')
    assert message.count("Invalid value") + message.count("Required value") + message.count(
        "Unsupported value"
    ) == len(fields)


def test_request_namespace_must_match() -> None:
    assert create_messages_ns(pod(), "other") == [
        'metadata.namespace: Invalid value: "default": the namespace of the provided object does '
        "not match the namespace sent on the request"
    ]
    validate_create(POD, pod(), namespace="default")


def create_messages_ns(obj: dict[str, Any], ns: str) -> list[str]:
    return messages(lambda: validate_create(POD, obj, namespace=ns))


# -- never anything but ValidationError ----------------------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["1", "500m", "1Gi", "-1", "1e3", "Always", "Never", "cpu", "memory", ""]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(max_size=8),
                st.sampled_from(["cpu", "memory", "limits", "requests", "name", "image"]),
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=25,
)

POD_PATHS: list[tuple[str | int, ...]] = [
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec",),
    ("spec", "containers"),
    ("spec", "containers", 0),
    ("spec", "containers", 0, "name"),
    ("spec", "containers", 0, "image"),
    ("spec", "containers", 0, "resources"),
    ("spec", "containers", 0, "resources", "limits"),
    ("spec", "containers", 0, "resources", "limits", "cpu"),
    ("spec", "containers", 0, "resources", "requests", "memory"),
    ("spec", "containers", 0, "resizePolicy"),
    ("spec", "containers", 0, "resizePolicy", 0),
    ("spec", "containers", 0, "ports"),
    ("spec", "containers", 0, "env"),
    ("spec", "initContainers"),
    ("spec", "tolerations"),
    ("spec", "restartPolicy"),
    ("spec", "nodeName"),
    ("spec", "terminationGracePeriodSeconds"),
    ("spec", "activeDeadlineSeconds"),
    ("status",),
    ("status", "qosClass"),
]


def put(obj: Any, path: tuple[str | int, ...], value: Any) -> None:
    """Set obj[path] = value, creating what is missing and replacing what is in the way."""
    for i, step in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return
            if not isinstance(obj[step], dict | list):
                obj[step] = [] if isinstance(nxt, int) else {}
            obj = obj[step]
        else:
            if not isinstance(obj, dict):
                return
            if not isinstance(obj.get(step), dict | list):
                obj[step] = [] if isinstance(nxt, int) else {}
            obj = obj[step]
    last = path[-1]
    if isinstance(last, int):
        if isinstance(obj, list) and len(obj) > last:
            obj[last] = value
    elif isinstance(obj, dict):
        obj[last] = value


def check_only_validation_errors(action: Callable[[], None]) -> None:
    try:
        action()
    except ValidationError as err:
        assert err.errors
        err.status()  # renders


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    edits=st.lists(st.tuples(st.sampled_from(POD_PATHS), json_value), min_size=1, max_size=4),
    base=st.sampled_from([guaranteed_pod, burstable_pod, sidecar_pod, pod]),
)
def test_random_pods_only_raise_validation_errors(
    edits: list[tuple[tuple[str | int, ...], Any]], base: Callable[[], dict[str, Any]]
) -> None:
    old = base()
    new = copy.deepcopy(old)
    for path, value in edits:
        put(new, path, value)
    check_only_validation_errors(lambda: validate_create(POD, new))
    check_only_validation_errors(lambda: validate_update(POD, new, old))
    check_only_validation_errors(lambda: validate_update(POD, old, new))
    check_only_validation_errors(lambda: validate_status_update(POD, new, old))
    check_only_validation_errors(lambda: validate_resize(new, old))
    check_only_validation_errors(lambda: validate_resize(old, new))
    defaulted = apply_defaults(POD, copy.deepcopy(new))
    check_only_validation_errors(lambda: validate_create(POD, defaulted))


KIND_BUILDERS: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (DEPLOYMENT, deployment),
    (REPLICASET, replicaset),
    (JOB, job),
    (PDB, pdb),
    (PRIORITY_CLASS, priority_class),
    (LEASE, lease),
    (VPA, vpa),
    (EVENT, event),
    (NAMESPACE, namespace),
    (NODE, node),
]
WORKLOAD_PATHS: list[tuple[str | int, ...]] = [
    ("metadata",),
    ("spec",),
    ("spec", "selector"),
    ("spec", "selector", "matchLabels"),
    ("spec", "selector", "matchExpressions"),
    ("spec", "selector", "matchExpressions", 0),
    ("spec", "replicas"),
    ("spec", "template"),
    ("spec", "template", "metadata"),
    ("spec", "template", "spec"),
    ("spec", "strategy"),
    ("spec", "strategy", "rollingUpdate"),
    ("spec", "minAvailable"),
    ("spec", "maxUnavailable"),
    ("spec", "targetRef"),
    ("spec", "updatePolicy"),
    ("spec", "resourcePolicy", "containerPolicies"),
    ("spec", "resourcePolicy", "containerPolicies", 0),
    ("spec", "resourcePolicy", "containerPolicies", 0, "maxAllowed"),
    ("spec", "leaseDurationSeconds"),
    ("spec", "taints"),
    ("value",),
    ("involvedObject",),
    ("status",),
    ("status", "capacity"),
]


@SETTINGS
@given(
    edits=st.lists(st.tuples(st.sampled_from(WORKLOAD_PATHS), json_value), min_size=1, max_size=4),
    which=st.sampled_from(KIND_BUILDERS),
)
def test_random_objects_of_every_kind_only_raise_validation_errors(
    edits: list[tuple[tuple[str | int, ...], Any]],
    which: tuple[Kind, Callable[[], dict[str, Any]]],
) -> None:
    k, build = which
    old = build()
    new = copy.deepcopy(old)
    for path, value in edits:
        put(new, path, value)
    check_only_validation_errors(lambda: validate_create(k, new))
    check_only_validation_errors(lambda: validate_update(k, new, old))
    check_only_validation_errors(lambda: validate_update(k, old, new))
    check_only_validation_errors(lambda: validate_status_update(k, new, old))
    defaulted = apply_defaults(k, copy.deepcopy(new))
    check_only_validation_errors(lambda: validate_create(k, defaulted))


@SETTINGS
@given(value=json_value)
def test_any_json_at_the_top_only_raises_validation_errors(value: Any) -> None:
    for k in (POD, DEPLOYMENT, JOB, VPA):
        check_only_validation_errors(lambda k=k: validate_create(k, value))  # type: ignore[misc]
        check_only_validation_errors(lambda k=k: validate_update(k, value, value))  # type: ignore[misc]
    check_only_validation_errors(lambda: validate_resize(value, value))


def test_deeply_nested_json_is_a_validation_error() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    obj = pod()
    obj["spec"]["containers"][0]["args"] = deep
    with pytest.raises(ValidationError):
        validate_create(POD, obj)
