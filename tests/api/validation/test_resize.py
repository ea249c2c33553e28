"""The pods/resize rules: upstream's ``TestValidatePodResize`` table, ported case by case
(``pkg/apis/core/validation/validation_test.go``, v1.33), plus the cases v1.34 and later
changed (memory limit decreases, container ordering, non-cpu/memory resources added to a
container that had none).

Each case is the same pair of pods upstream builds with ``podtest.MakePod`` (a default
container ``ctr``, the resized container ``container``), validated without the strategy in
front (as upstream's unit test calls ``ValidatePodResize`` directly); ``err`` is a substring
of the aggregated message, as upstream checks it. Cases whose answer differs between v1.33 and
v1.34 give both: this server answers as v1.34 (memory limits may go down, see
docs/user-guide.md) and as v1.33 with ``allow_memory_limit_decrease=False``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from inplace.api.validation import ValidationError, validate_resize

Tweak = Callable[[dict[str, Any]], None]


def get_resources(cpu: str, memory: str, storage: str, pods: str = "") -> dict[str, str]:
    """Upstream's ``getResources``: the non-empty ones."""
    names = {"cpu": cpu, "memory": memory, "ephemeral-storage": storage, "pods": pods}
    return {name: value for name, value in names.items() if value}


def make_container(name: str, **fields: Any) -> dict[str, Any]:
    """``podtest.MakeContainer``: what defaulting would fill in, present and valid."""
    return {
        "name": name,
        "image": "image",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        **fields,
    }


def make_pod(*tweaks: Tweak) -> dict[str, Any]:
    """``podtest.MakePod("pod", ...)``."""
    pod: dict[str, Any] = {
        "metadata": {"name": "pod", "namespace": "default", "resourceVersion": "1"},
        "spec": {
            "containers": [make_container("ctr")],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "securityContext": {},
        },
    }
    for tweak in tweaks:
        tweak(pod)
    return pod


def requirements(req: dict[str, str], lim: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if req:
        out["requests"] = req
    if lim:
        out["limits"] = lim
    return out


def mk_pod(req: dict[str, str], lim: dict[str, str], *tweaks: Tweak) -> dict[str, Any]:
    """The table's ``mkPod``: one container ``container`` with these resources."""

    def set_containers(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"] = [make_container("container", resources=requirements(req, lim))]

    return make_pod(set_containers, *tweaks)


def mk_pod_with_init_containers(
    req: dict[str, str], lim: dict[str, str], restart_policy: str, *tweaks: Tweak
) -> dict[str, Any]:
    """The table's ``mkPodWithInitContainers``: the default ``ctr`` and one init container
    ``container`` (a sidecar when `restart_policy` is ``Always``)."""

    def set_init(pod: dict[str, Any]) -> None:
        init = make_container("container", resources=requirements(req, lim))
        if restart_policy:
            init["restartPolicy"] = restart_policy
        pod["spec"]["initContainers"] = [init]

    return make_pod(set_init, *tweaks)


def resize_policy(resource: str, policy: str) -> Tweak:
    """``podtest.TweakContainers(SetContainerResizePolicy(...))``: every container."""

    def tweak(pod: dict[str, Any]) -> None:
        for key in ("containers", "initContainers"):
            for c in pod["spec"].get(key, []):
                c["resizePolicy"] = [{"resourceName": resource, "restartPolicy": policy}]

    return tweak


def set_pod_resources(req: dict[str, str], lim: dict[str, str]) -> Tweak:
    def tweak(pod: dict[str, Any]) -> None:
        pod["spec"]["resources"] = requirements(req, lim)

    return tweak


def set_os(name: str) -> Tweak:
    def tweak(pod: dict[str, Any]) -> None:
        pod["spec"]["os"] = {"name": name}

    return tweak


def running_status(resources: dict[str, Any] | None, *, running: bool = True) -> Tweak:
    def tweak(pod: dict[str, Any]) -> None:
        status: dict[str, Any] = {
            "containerID": "docker://numbers",
            "image": "nginx:alpine",
            "name": "main",
            "ready": True,
            "started": True,
            "state": (
                {"running": {"startedAt": "2025-01-01T00:00:00Z"}}
                if running
                else {"waiting": {"reason": "PodInitializing"}}
            ),
        }
        if resources is not None:
            status["resources"] = resources
        pod["status"] = {"containerStatuses": [status]}

    return tweak


def pod_level(
    container_res: dict[str, Any], pod_res: tuple[dict[str, str], dict[str, str]]
) -> dict[str, Any]:
    def tweak(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"] = [make_container("container", resources=container_res)]

    return make_pod(tweak, set_pod_resources(*pod_res))


R = get_resources
NONE: dict[str, str] = {}
ALWAYS = "Always"


@dataclass
class Case:
    test: str
    old: dict[str, Any]
    new: dict[str, Any]
    err: str
    #: What v1.34 and later answer, when it differs from v1.33's `err`.
    v134: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


PL = "pods with pod-level resources cannot be resized"
MEM_DECREASE = "memory limits cannot be decreased"
ONLY_CPU_MEM = "spec: Forbidden: only cpu and memory resources are mutable"
ONLY_SIDECAR = "spec: Forbidden: only cpu and memory resources for sidecar containers are mutable"
QOS = "Pod QOS Class may not change as a result of resizing"
LIMITS_REMOVED = "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"
REQUESTS_REMOVED = (
    "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"
)
INIT_LIMITS_REMOVED = (
    "spec.initContainers[0].resources.limits: Forbidden: resource limits cannot be removed"
)
INIT_REQUESTS_REMOVED = (
    "spec.initContainers[0].resources.requests: Forbidden: resource requests cannot be removed"
)

# Upstream's table, in upstream's order.
TABLE: list[Case] = [
    Case(
        "pod-level resources with container cpu limit change",
        old=pod_level({"limits": R("200m", "100Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        new=pod_level({"limits": R("100m", "100Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with container memory limit change",
        old=pod_level({"limits": R("100m", "100Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        new=pod_level({"limits": R("100m", "200Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with container cpu request change",
        old=pod_level({"requests": R("200m", "200Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        new=pod_level({"requests": R("100m", "200Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with container memory request change",
        old=pod_level({"requests": R("100m", "200Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        new=pod_level({"requests": R("100m", "100Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with pod-level memory limit change",
        old=pod_level({"requests": R("100m", "100Mi", "")}, (NONE, R("200m", "100Mi", ""))),
        new=pod_level({"requests": R("100m", "100Mi", "")}, (NONE, R("200m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with pod-level memory request change",
        old=pod_level({"requests": R("100m", "100Mi", "")}, (R("200m", "100Mi", ""), NONE)),
        new=pod_level({"requests": R("100m", "100Mi", "")}, (R("200m", "200Mi", ""), NONE)),
        err=PL,
    ),
    Case(
        "pod-level resources with pod-level cpu limit change",
        old=pod_level({"requests": R("100m", "100Mi", "")}, (NONE, R("100m", "200Mi", ""))),
        new=pod_level({"requests": R("100m", "100Mi", "")}, (NONE, R("200m", "200Mi", ""))),
        err=PL,
    ),
    Case(
        "pod-level resources with pod-level cpu request change",
        old=pod_level({"requests": R("100m", "100Mi", "")}, (R("200m", "200Mi", ""), NONE)),
        new=pod_level({"requests": R("100m", "100Mi", "")}, (R("100m", "200Mi", ""), NONE)),
        err=PL,
    ),
    Case(
        "cpu limit change",
        old=mk_pod(NONE, R("100m", "0", "1Gi")),
        new=mk_pod(NONE, R("200m", "0", "1Gi")),
        err="",
    ),
    Case(
        "memory limit increase",
        old=mk_pod(NONE, R("100m", "100Mi", "")),
        new=mk_pod(NONE, R("100m", "200Mi", "")),
        err="",
    ),
    Case(
        "no restart policy: memory limit decrease",
        old=mk_pod(NONE, R("100m", "200Mi", "")),
        new=mk_pod(NONE, R("100m", "100Mi", "")),
        err=MEM_DECREASE,
        v134="",
    ),
    Case(
        "restart NotRequired: memory limit decrease",
        old=mk_pod(NONE, R("100m", "200Mi", ""), resize_policy("memory", "NotRequired")),
        new=mk_pod(NONE, R("100m", "100Mi", ""), resize_policy("memory", "NotRequired")),
        err=MEM_DECREASE,
        v134="",
    ),
    Case(
        "RestartContainer: memory limit decrease",
        old=mk_pod(NONE, R("100m", "200Mi", ""), resize_policy("memory", "RestartContainer")),
        new=mk_pod(NONE, R("100m", "100Mi", ""), resize_policy("memory", "RestartContainer")),
        err="",
    ),
    Case(
        "storage limit change",
        old=mk_pod(NONE, R("100m", "100Mi", "2Gi")),
        new=mk_pod(NONE, R("100m", "100Mi", "1Gi")),
        err=ONLY_CPU_MEM,
    ),
    Case(
        "cpu request change",
        old=mk_pod(R("200m", "0", ""), NONE),
        new=mk_pod(R("100m", "0", ""), NONE),
        err="",
    ),
    Case(
        "memory request change",
        old=mk_pod(R("0", "100Mi", ""), NONE),
        new=mk_pod(R("0", "200Mi", ""), NONE),
        err="",
    ),
    Case(
        "storage request change",
        old=mk_pod(R("100m", "0", "1Gi"), NONE),
        new=mk_pod(R("100m", "0", "2Gi"), NONE),
        err=ONLY_CPU_MEM,
    ),
    Case(
        "Pod QoS unchanged, guaranteed -> guaranteed",
        old=mk_pod(R("100m", "100Mi", "1Gi"), R("100m", "100Mi", "1Gi")),
        new=mk_pod(R("200m", "400Mi", "1Gi"), R("200m", "400Mi", "1Gi")),
        err="",
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable",
        old=mk_pod(R("200m", "100Mi", "1Gi"), R("400m", "200Mi", "2Gi")),
        new=mk_pod(R("100m", "200Mi", "1Gi"), R("200m", "400Mi", "2Gi")),
        err="",
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, add limits",
        old=mk_pod(R("100m", "100Mi", ""), NONE),
        new=mk_pod(R("100m", "100Mi", ""), R("200m", "", "")),
        err="",
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, add requests",
        old=mk_pod(NONE, R("200m", "500Mi", "1Gi")),
        new=mk_pod(R("300m", "", ""), R("400m", "500Mi", "1Gi")),
        err="",
    ),
    Case(
        "Pod QoS change, guaranteed -> burstable",
        old=mk_pod(R("100m", "100Mi", ""), R("100m", "100Mi", "")),
        new=mk_pod(R("100m", "100Mi", ""), R("200m", "200Mi", "")),
        err=QOS,
    ),
    Case(
        "Pod QoS change, burstable -> guaranteed",
        old=mk_pod(R("100m", "100Mi", ""), NONE),
        new=mk_pod(R("100m", "100Mi", ""), R("100m", "100Mi", "")),
        err=QOS,
    ),
    Case(
        "Pod QoS change, besteffort -> burstable",
        old=mk_pod(NONE, NONE),
        new=mk_pod(R("100m", "100Mi", ""), R("200m", "200Mi", "")),
        err=QOS,
    ),
    Case(
        "Pod QoS change, burstable -> besteffort",
        old=mk_pod(R("100m", "100Mi", ""), R("200m", "200Mi", "")),
        new=mk_pod(NONE, NONE),
        err=QOS,
    ),
    Case(
        "windows pod, no resource change",
        old=mk_pod(NONE, R("100m", "0", "1Gi"), set_os("windows")),
        new=mk_pod(NONE, R("100m", "0", "1Gi"), set_os("windows")),
        err="Forbidden: windows pods cannot be resized",
    ),
    Case(
        "windows pod, resource change",
        old=mk_pod(NONE, R("100m", "0", "1Gi"), set_os("windows")),
        new=mk_pod(NONE, R("200m", "0", "1Gi"), set_os("windows")),
        err="Forbidden: windows pods cannot be resized",
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove cpu limit",
        old=mk_pod(NONE, R("100m", "100Mi", "")),
        new=mk_pod(NONE, R("", "100Mi", "")),
        err=LIMITS_REMOVED,
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove memory limit",
        old=mk_pod(NONE, R("100m", "100Mi", "")),
        new=mk_pod(NONE, R("100m", "", "")),
        err=LIMITS_REMOVED,
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove cpu request",
        old=mk_pod(R("100m", "100Mi", ""), NONE),
        new=mk_pod(R("", "100Mi", ""), NONE),
        err=REQUESTS_REMOVED,
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove memory request",
        old=mk_pod(R("100m", "100Mi", ""), NONE),
        new=mk_pod(R("100m", "", ""), NONE),
        err=REQUESTS_REMOVED,
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove cpu and memory limits",
        old=mk_pod(R("100m", "", ""), R("100m", "100Mi", "")),
        new=mk_pod(R("100m", "", ""), NONE),
        err=LIMITS_REMOVED,
    ),
    Case(
        "Pod QoS unchanged, burstable -> burstable, remove cpu and memory requests",
        old=mk_pod(R("100m", "100Mi", ""), R("100m", "", "")),
        new=mk_pod(NONE, R("100m", "", "")),
        err=REQUESTS_REMOVED,
    ),
    Case(
        "sidecar: remove cpu limit",
        old=mk_pod_with_init_containers(NONE, R("100m", "100Mi", ""), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("", "100Mi", ""), ALWAYS),
        err=INIT_LIMITS_REMOVED,
    ),
    Case(
        "sidecar: remove memory limit",
        old=mk_pod_with_init_containers(NONE, R("100m", "100Mi", ""), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("100m", "", ""), ALWAYS),
        err=INIT_LIMITS_REMOVED,
    ),
    Case(
        "sidecar: remove cpu request",
        old=mk_pod_with_init_containers(R("100m", "100Mi", ""), NONE, ALWAYS),
        new=mk_pod_with_init_containers(R("", "100Mi", ""), NONE, ALWAYS),
        err=INIT_REQUESTS_REMOVED,
    ),
    Case(
        "sidecar: remove memory request",
        old=mk_pod_with_init_containers(R("100m", "100Mi", ""), NONE, ALWAYS),
        new=mk_pod_with_init_containers(R("100m", "", ""), NONE, ALWAYS),
        err=INIT_REQUESTS_REMOVED,
    ),
    Case(
        "sidecar: remove cpu and memory limits",
        old=mk_pod_with_init_containers(R("100m", "", ""), R("100m", "100Mi", ""), ALWAYS),
        new=mk_pod_with_init_containers(R("100m", "", ""), NONE, ALWAYS),
        err=INIT_LIMITS_REMOVED,
    ),
    Case(
        "sidecar: remove cpu and memory requests",
        old=mk_pod_with_init_containers(R("100m", "100Mi", ""), R("100m", "", ""), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("100m", "", ""), ALWAYS),
        err=INIT_REQUESTS_REMOVED,
    ),
    Case(
        "regular init container: remove cpu and memory requests",
        old=mk_pod_with_init_containers(R("100m", "100Mi", ""), R("100m", "", ""), ""),
        new=mk_pod_with_init_containers(NONE, R("100m", "", ""), ""),
        err="spec: Forbidden: resources for non-sidecar init containers are immutable",
    ),
    Case(
        "Pod with nil Resource field in Status",
        old=mk_pod(NONE, R("100m", "0", "1Gi"), running_status(None)),
        new=mk_pod(NONE, R("200m", "0", "1Gi")),
        err="Forbidden: Pod running on node without support for resize",
    ),
    Case(
        "Pod with non-nil Resources field in Status",
        old=mk_pod(NONE, R("100m", "0", "1Gi"), running_status({})),
        new=mk_pod(NONE, R("200m", "0", "1Gi")),
        err="",
    ),
    Case(
        "Pod without running containers",
        old=mk_pod(
            NONE, R("100m", "0", "1Gi"), lambda p: p.update(status={"containerStatuses": []})
        ),
        new=mk_pod(NONE, R("200m", "0", "1Gi")),
        err="",
    ),
    Case(
        "Pod with containers which are not running yet",
        old=mk_pod(NONE, R("100m", "0", "1Gi"), running_status({}, running=False)),
        new=mk_pod(NONE, R("200m", "0", "1Gi")),
        err="",
    ),
    Case(
        "cpu limit change for sidecar containers",
        old=mk_pod_with_init_containers(NONE, R("100m", "0", "1Gi"), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("200m", "0", "1Gi"), ALWAYS),
        err="",
    ),
    Case(
        "memory limit increase for sidecar containers",
        old=mk_pod_with_init_containers(NONE, R("100m", "100Mi", ""), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("100m", "200Mi", ""), ALWAYS),
        err="",
    ),
    Case(
        "memory limit decrease for sidecar containers, no resize policy",
        old=mk_pod_with_init_containers(NONE, R("100m", "200Mi", ""), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("100m", "100Mi", ""), ALWAYS),
        err=MEM_DECREASE,
        v134="",
    ),
    Case(
        "memory limit decrease for sidecar containers, resize policy NotRequired",
        old=mk_pod_with_init_containers(
            NONE, R("100m", "200Mi", ""), ALWAYS, resize_policy("memory", "NotRequired")
        ),
        new=mk_pod_with_init_containers(
            NONE, R("100m", "100Mi", ""), ALWAYS, resize_policy("memory", "NotRequired")
        ),
        err=MEM_DECREASE,
        v134="",
    ),
    Case(
        "memory limit decrease for sidecar containers, resize policy RestartContainer",
        old=mk_pod_with_init_containers(
            NONE, R("100m", "200Mi", ""), ALWAYS, resize_policy("memory", "RestartContainer")
        ),
        new=mk_pod_with_init_containers(
            NONE, R("100m", "100Mi", ""), ALWAYS, resize_policy("memory", "RestartContainer")
        ),
        err="",
    ),
    Case(
        "storage limit change for sidecar containers",
        old=mk_pod_with_init_containers(NONE, R("100m", "100Mi", "2Gi"), ALWAYS),
        new=mk_pod_with_init_containers(NONE, R("100m", "100Mi", "1Gi"), ALWAYS),
        err=ONLY_SIDECAR,
    ),
    Case(
        "cpu request change for sidecar containers",
        old=mk_pod_with_init_containers(R("200m", "0", ""), NONE, ALWAYS),
        new=mk_pod_with_init_containers(R("100m", "0", ""), NONE, ALWAYS),
        err="",
    ),
    Case(
        "memory request change for sidecar containers",
        old=mk_pod_with_init_containers(R("0", "100Mi", ""), NONE, ALWAYS),
        new=mk_pod_with_init_containers(R("0", "200Mi", ""), NONE, ALWAYS),
        err="",
    ),
    Case(
        "storage request change for sidecar containers",
        old=mk_pod_with_init_containers(R("100m", "0", "1Gi"), NONE, ALWAYS),
        new=mk_pod_with_init_containers(R("100m", "0", "2Gi"), NONE, ALWAYS),
        err=ONLY_SIDECAR,
    ),
    Case(
        "change resize restart policy",
        old=mk_pod(R("100m", "0", "1Gi"), NONE, resize_policy("cpu", "NotRequired")),
        new=mk_pod(R("100m", "0", "2Gi"), NONE, resize_policy("cpu", "RestartContainer")),
        err=ONLY_CPU_MEM,
    ),
    Case(
        "change sidecar container resize restart policy",
        old=mk_pod_with_init_containers(
            R("100m", "0", "1Gi"), NONE, ALWAYS, resize_policy("memory", "RestartContainer")
        ),
        new=mk_pod_with_init_containers(
            R("100m", "0", "2Gi"), NONE, ALWAYS, resize_policy("memory", "NotRequired")
        ),
        err=ONLY_CPU_MEM,
    ),
]

# What v1.34 and later added (kubernetes PRs 130282 and 135084).
LATER: list[Case] = [
    Case(
        "containers reordered",
        old=make_pod(
            lambda p: p["spec"].update(
                containers=[
                    make_container("c1", resources={"requests": R("20m", "", "")}),
                    make_container("c2", resources={"requests": R("20m", "", "")}),
                ]
            )
        ),
        new=make_pod(
            lambda p: p["spec"].update(
                containers=[
                    make_container("c2", resources={"requests": R("20m", "", "")}),
                    make_container("c1", resources={"requests": R("20m", "", "")}),
                ]
            )
        ),
        err="spec.containers[0].name: Forbidden: containers may not be renamed or reordered on "
        "resize, spec.containers[1].name: Forbidden: containers may not be renamed or reordered "
        "on resize",
    ),
    Case(
        "container added",
        old=mk_pod(R("100m", "", ""), NONE),
        new=mk_pod(
            R("100m", "", ""),
            NONE,
            lambda p: p["spec"]["containers"].append(make_container("extra")),
        ),
        err="spec.containers: Forbidden: containers may not be added or removed on resize",
    ),
    Case(
        "another resource added to a container that had none",
        old=mk_pod(NONE, NONE),
        new=mk_pod(NONE, R("", "", "1Gi")),
        err=ONLY_CPU_MEM,
    ),
]


def answer(old: dict[str, Any], new: dict[str, Any], *, v133: bool) -> str:
    try:
        validate_resize(
            copy.deepcopy(new), copy.deepcopy(old), allow_memory_limit_decrease=not v133
        )
    except ValidationError as exc:
        return exc.message()
    return ""


def check(expected: str, actual: str) -> None:
    if expected == "":
        assert actual == "", actual
    else:
        assert expected in actual, actual


@pytest.mark.parametrize("case", TABLE, ids=[c.test for c in TABLE])
def test_upstream_table_v133(case: Case) -> None:
    check(case.err, answer(case.old, case.new, v133=True))


@pytest.mark.parametrize("case", TABLE + LATER, ids=[c.test for c in TABLE + LATER])
def test_upstream_table_as_served(case: Case) -> None:
    check(case.v134 if case.v134 is not None else case.err, answer(case.old, case.new, v133=False))


def test_message_is_upstreams_whole() -> None:
    """The Status body of a refusal: the kind, the name, each cause at its path."""
    old = mk_pod(R("100m", "100Mi", ""), NONE)
    new = mk_pod(R("", "100Mi", ""), NONE)
    with pytest.raises(ValidationError) as info:
        validate_resize(new, old)
    status = info.value.status()
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"] == f'Pod "pod" is invalid: {REQUESTS_REMOVED}'
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: resource requests cannot be removed",
            "field": "spec.containers[0].resources.requests",
        }
    ]


def test_the_resized_pod_must_still_be_valid() -> None:
    old = mk_pod(R("100m", "", ""), R("1", "", ""))
    new = mk_pod(R("2", "", ""), R("1", "", ""))
    assert answer(old, new, v133=False) == (
        'Pod "pod" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must '
        "be less than or equal to cpu limit of 1"
    )


def test_the_stored_qos_class_is_the_old_one() -> None:
    """``GetPodQOS(old)`` reads the stored class, and the message shows the new pod's."""
    old = mk_pod(
        R("1", "1Gi", ""), R("1", "1Gi", ""), lambda p: p.update(status={"qosClass": "Guaranteed"})
    )
    new = mk_pod(
        R("500m", "1Gi", ""),
        R("1", "1Gi", ""),
        lambda p: p.update(status={"qosClass": "Guaranteed"}),
    )
    assert answer(old, new, v133=False) == (
        'Pod "pod" is invalid: spec: Invalid value: "Guaranteed": Pod QOS Class may not change as '
        "a result of resizing"
    )
