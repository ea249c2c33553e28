"""The pods/resize rules: what may change, what may not, and the messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.api.validation import (
    ValidationError,
    validate_resize,
)
from tests.api.validation.builders import (
    burstable_pod,
    c0,
    container,
    guaranteed_pod,
    messages,
    mutate,
    pod,
    sidecar_pod,
)

# -- resize --------------------------------------------------------------------------------------


def resized(old: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    return mutate(old, change)


def set_res(section: str, **values: str) -> Callable[[dict[str, Any]], object]:
    return lambda p: c0(p)["resources"][section].update(values)


def both(**values: str) -> Callable[[dict[str, Any]], object]:
    return lambda p: (
        c0(p)["resources"]["limits"].update(values),
        c0(p)["resources"]["requests"].update(values),
    )


RESIZE_OK: list[tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], object]]] = [
    ("guaranteed cpu up", guaranteed_pod, both(cpu="2")),
    ("guaranteed cpu down", guaranteed_pod, both(cpu="500m")),
    ("guaranteed memory up", guaranteed_pod, both(memory="2Gi")),
    ("guaranteed memory down", guaranteed_pod, both(memory="512Mi")),
    ("burstable request up", burstable_pod, set_res("requests", cpu="800m", memory="512Mi")),
    ("burstable limit down", burstable_pod, set_res("limits", cpu="600m", memory="300Mi")),
    (
        "resize policy may change",
        guaranteed_pod,
        lambda p: c0(p).update(
            resizePolicy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
        ),
    ),
    ("no change at all", guaranteed_pod, lambda p: None),
]


@pytest.mark.parametrize(
    ("build", "change"), [c[1:] for c in RESIZE_OK], ids=[c[0] for c in RESIZE_OK]
)
def test_resize_accepted(
    build: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], object]
) -> None:
    old = build()
    validate_resize(resized(old, change), old)


RESIZE_REJECTED: list[
    tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], object], list[str]]
] = [
    (
        "image change names the image",
        guaranteed_pod,
        lambda p: c0(p).update(image="nginx:1.27"),
        ["spec.containers[0].image: Forbidden: only cpu and memory resources are mutable"],
    ),
    (
        "other resources may not change",
        lambda: pod(container(limits={"cpu": "1", "ephemeral-storage": "1Gi"})),
        both(**{"ephemeral-storage": "2Gi"}),
        [
            "spec.containers[0].resources.limits[ephemeral-storage]: Forbidden: only cpu and "
            "memory resources are mutable",
            "spec.containers[0].resources.requests[ephemeral-storage]: Forbidden: only cpu and "
            "memory resources are mutable",
        ],
    ),
    (
        "QoS class may not change (Guaranteed to Burstable)",
        guaranteed_pod,
        set_res("requests", cpu="500m"),
        ['spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing'],
    ),
    (
        "QoS class may not change (BestEffort gains requests)",
        pod,
        lambda p: c0(p).update(resources={"requests": {"cpu": "100m"}}),
        ['spec: Invalid value: "BestEffort": Pod QOS Class may not change as a result of resizing'],
    ),
    (
        "limits may not be removed",
        burstable_pod,
        lambda p: c0(p)["resources"]["limits"].pop("memory"),
        ["spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"],
    ),
    (
        "requests may not be removed",
        lambda: pod(container(requests={"cpu": "100m", "memory": "64Mi"})),
        lambda p: c0(p)["resources"]["requests"].pop("memory"),
        ["spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"],
    ),
    (
        "requests still <= limits",
        burstable_pod,
        set_res("requests", cpu="2"),
        [
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or '
            "equal to cpu limit of 1"
        ],
    ),
    (
        "non-sidecar init containers cannot be resized",
        sidecar_pod,
        lambda p: p["spec"]["initContainers"][0]["resources"]["requests"].update(cpu="200m"),
        [
            "spec.initContainers[0].resources: Forbidden: resources for non-sidecar init "
            "containers are immutable"
        ],
    ),
    (
        "sidecars: only cpu and memory",
        sidecar_pod,
        lambda p: p["spec"]["initContainers"][1].update(image="envoy:2"),
        [
            "spec.initContainers[1].image: Forbidden: only cpu and memory resources for sidecar "
            "containers are mutable"
        ],
    ),
    (
        "restartPolicy Never pods: NotRequired only",
        lambda: pod(container(requests={"cpu": "100m"}), restart_policy="Never"),
        lambda p: c0(p).update(
            resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
        ),
        [
            'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
            "'NotRequired' when `restartPolicy` is 'Never'"
        ],
    ),
    (
        "other spec fields",
        guaranteed_pod,
        lambda p: p["spec"].update(nodeName="node-2", priority=10),
        [
            "spec.nodeName: Forbidden: only cpu and memory resources are mutable",
            "spec.priority: Forbidden: only cpu and memory resources are mutable",
        ],
    ),
    (
        "labels through resize",
        guaranteed_pod,
        lambda p: p["metadata"].update(labels={"a": "b"}),
        ["metadata.labels: Forbidden: only cpu and memory resources are mutable"],
    ),
    (
        "containers may not be added",
        guaranteed_pod,
        lambda p: p["spec"]["containers"].append(c0(pod(container("two")))),
        ["spec.containers: Forbidden: pod updates may not add or remove containers"],
    ),
    (
        "static pods",
        lambda: mutate(
            guaranteed_pod(),
            lambda p: p["metadata"].update(annotations={"kubernetes.io/config.mirror": "x"}),
        ),
        both(cpu="2"),
        [": Forbidden: static pods cannot be resized"],
    ),
]


@pytest.mark.parametrize(
    ("build", "change", "expected"),
    [c[1:] for c in RESIZE_REJECTED],
    ids=[c[0] for c in RESIZE_REJECTED],
)
def test_resize_rejected(
    build: Callable[[], dict[str, Any]],
    change: Callable[[dict[str, Any]], object],
    expected: list[str],
) -> None:
    old = build()
    new = resized(old, change)
    assert sorted(messages(lambda: validate_resize(new, old))) == sorted(expected)


def test_resize_error_is_a_pod_422() -> None:
    old = guaranteed_pod()
    with pytest.raises(ValidationError) as info:
        validate_resize(resized(old, lambda p: c0(p).update(image="nginx")), old)
    status = info.value.status()
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Pod" and "group" not in status["details"]
    assert status["message"] == (
        'Pod "web" is invalid: spec.containers[0].image: Forbidden: only cpu and memory '
        "resources are mutable"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: only cpu and memory resources are mutable",
            "field": "spec.containers[0].image",
        }
    ]


def test_resize_uses_stored_qos_class() -> None:
    old = mutate(guaranteed_pod(), lambda p: p.update(status={"qosClass": "Guaranteed"}))
    validate_resize(resized(old, both(cpu="3")), old)


def test_memory_limit_decrease_v133_rule() -> None:
    old = guaranteed_pod()
    shrink = resized(old, both(memory="512Mi"))
    validate_resize(shrink, old)  # v1.34: allowed, the node agent shrinks without killing
    assert messages(lambda: validate_resize(shrink, old, allow_memory_limit_decrease=False)) == [
        "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be "
        "decreased unless resizePolicy is RestartContainer"
    ]
    restart = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    old_restart = mutate(old, lambda p: c0(p).update(resizePolicy=restart))
    shrink_restart = resized(old_restart, both(memory="512Mi"))
    validate_resize(shrink_restart, old_restart, allow_memory_limit_decrease=False)
    burstable = pod(container(requests={"cpu": "100m", "memory": "64Mi"}, limits={"cpu": "1"}))
    add_limit = resized(burstable, set_res("limits", memory="1Gi"))
    validate_resize(add_limit, burstable)
    assert messages(
        lambda: validate_resize(add_limit, burstable, allow_memory_limit_decrease=False)
    ) == [
        "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be added "
        "unless resizePolicy is RestartContainer"
    ]
