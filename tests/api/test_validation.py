"""Validation: upstream's rules and messages, every bad field at once, never a crash."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inplace.api.defaults import apply_defaults
from inplace.api.kinds import REGISTRY, Kind
from inplace.api.validation import (
    FieldError,
    ValidationError,
    dns1123_label_errors,
    qualified_name_errors,
    validate_create,
    validate_resize,
    validate_status_update,
    validate_update,
)


def kind(group: str, name: str) -> Kind:
    found = REGISTRY.by_kind(group, name)
    assert found is not None
    return found


POD = kind("", "Pod")
NAMESPACE = kind("", "Namespace")
NODE = kind("", "Node")
EVENT = kind("", "Event")
DEPLOYMENT = kind("apps", "Deployment")
REPLICASET = kind("apps", "ReplicaSet")
JOB = kind("batch", "Job")
PDB = kind("policy", "PodDisruptionBudget")
PRIORITY_CLASS = kind("scheduling.k8s.io", "PriorityClass")
LEASE = kind("coordination.k8s.io", "Lease")
VPA = kind("autoscaling.k8s.io", "VerticalPodAutoscaler")


# -- object builders (defaulted, as the API server validates them) --------------------------------


def container(name: str = "app", **resources: dict[str, str]) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "busybox:1.36", "command": ["sleep", "3600"]}
    if resources:
        c["resources"] = resources
    return c


def pod(
    *containers: dict[str, Any], restart_policy: str | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [container()], **extra}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "5"},
        "spec": spec,
    }
    return apply_defaults(POD, obj)


def guaranteed_pod(**extra: Any) -> dict[str, Any]:
    res = {"cpu": "1", "memory": "1Gi"}
    return pod(container(limits=dict(res), requests=dict(res)), **extra)


def burstable_pod(**extra: Any) -> dict[str, Any]:
    return pod(
        container(
            requests={"cpu": "500m", "memory": "256Mi"}, limits={"cpu": "1", "memory": "1Gi"}
        ),
        **extra,
    )


def template(labels: dict[str, str] | None = None, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(requests={"cpu": "100m"})]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}}, "spec": spec}


def deployment(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec},
    }
    return apply_defaults(DEPLOYMENT, obj)


def replicaset(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec},
    }
    return apply_defaults(REPLICASET, obj)


def job(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "crunch", "namespace": "default", "uid": "job-uid"},
        "spec": {"template": template(labels={}, restart="Never"), **spec},
    }
    return apply_defaults(JOB, obj)


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def priority_class(**fields: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        **fields,
    }
    return apply_defaults(PRIORITY_CLASS, obj)


def lease(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40, **spec},
    }


def vpa(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "app",
                        "minAllowed": {"cpu": "100m", "memory": "64Mi"},
                        "maxAllowed": {"cpu": "4", "memory": "8Gi"},
                        "controlledResources": ["cpu", "memory"],
                        "controlledValues": "RequestsAndLimits",
                        "mode": "Auto",
                    }
                ]
            },
            **spec,
        },
    }


def event(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "ResizeStarted",
        "message": "resizing",
        "type": "Normal",
        **fields,
    }


def namespace(name: str = "team-a") -> dict[str, Any]:
    return apply_defaults(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )


def node(**status: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "spec": {},
        "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}, **status},
    }
    return apply_defaults(NODE, obj)


def messages(action: Callable[[], None]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        action()
    return [error.message() for error in info.value.errors]


def create_messages(k: Kind, obj: dict[str, Any]) -> list[str]:
    return messages(lambda: validate_create(k, obj))


def mutate(obj: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    copied = copy.deepcopy(obj)
    change(copied)
    return copied


def c0(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = obj["spec"]["containers"][0]
    return result


# -- field error and status formatting ------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            FieldError("FieldValueRequired", "spec.containers", ""),
            "spec.containers: Required value",
        ),
        (
            FieldError("FieldValueRequired", "metadata.name", "name or generateName is required"),
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            FieldError(
                "FieldValueInvalid",
                "spec.containers[0].resources.requests",
                "must be less than or equal to cpu limit of 1",
                "2",
            ),
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or '
            "equal to cpu limit of 1",
        ),
        (
            FieldError(
                "FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0", -1
            ),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            FieldError("FieldValueForbidden", "spec", "pod updates may not change fields"),
            "spec: Forbidden: pod updates may not change fields",
        ),
        (
            FieldError(
                "FieldValueNotSupported",
                "spec.restartPolicy",
                'supported values: "Always", "OnFailure", "Never"',
                "Sometimes",
            ),
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"',
        ),
        (
            FieldError("FieldValueDuplicate", "spec.containers[1].name", "", "app"),
            'spec.containers[1].name: Duplicate value: "app"',
        ),
        (
            FieldError(
                "FieldValueTooLong", "metadata.annotations", "must have at most 262144 bytes"
            ),
            "metadata.annotations: Too long: must have at most 262144 bytes",
        ),
        (
            FieldError("FieldValueInvalid", "x", "bad", 'quote " and\nnewline'),
            'x: Invalid value: "quote \\" and\\nnewline": bad',
        ),
        (FieldError("FieldValueInvalid", "x", "bad", None), "x: Invalid value: null: bad"),
        (FieldError("FieldValueInvalid", "x", "bad", True), "x: Invalid value: true: bad"),
    ],
)
def test_field_error_message(error: FieldError, message: str) -> None:
    assert error.message() == message


def test_validation_error_message_and_status() -> None:
    one = ValidationError(
        "Pod", "web", [FieldError("FieldValueRequired", "spec.containers[0].image")]
    )
    assert one.message() == 'Pod "web" is invalid: spec.containers[0].image: Required value'
    two = ValidationError(
        "Deployment",
        "web",
        [
            FieldError("FieldValueRequired", "spec.selector"),
            FieldError(
                "FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0", -1
            ),
            FieldError("FieldValueRequired", "spec.selector"),  # duplicates collapse
        ],
        group="apps",
    )
    assert two.message() == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.replicas: '
        "Invalid value: -1: must be greater than or equal to 0]"
    )
    assert str(two) == two.message()
    assert two.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": two.message(),
        "reason": "Invalid",
        "details": {
            "name": "web",
            "group": "apps",
            "kind": "Deployment",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.selector",
                },
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be greater than or equal to 0",
                    "field": "spec.replicas",
                },
            ],
        },
        "code": 422,
    }


def test_format_messages_are_upstreams() -> None:
    assert dns1123_label_errors("My_Name") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert dns1123_label_errors("a" * 64) == ["must be no more than 63 characters"]
    assert qualified_name_errors("example.com/") == [
        "name part must be non-empty",
        (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ),
    ]
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("inplace.dev/resize-policy") == []


# -- valid objects pass --------------------------------------------------------------------------

VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (POD, lambda: pod()),
    (POD, guaranteed_pod),
    (POD, burstable_pod),
    (
        POD,
        lambda: pod(
            container(
                "main",
                limits={"cpu": "2", "memory": "1Gi"},
                requests={"cpu": "1", "memory": "512Mi"},
            )
            | {
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "memory", "restartPolicy": "RestartContainer"},
                ],
                "ports": [{"containerPort": 8080, "name": "http"}],
                "env": [{"name": "JAVA_OPTS", "value": "-Xmx1g"}],
            },
            initContainers=[container("init"), container("sidecar") | {"restartPolicy": "Always"}],
            nodeName="node-1",
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
            ],
        ),
    ),
    (POD, lambda: pod(restart_policy="Never")),
    (POD, lambda: pod(container(limits={"example.com/gpu": "1"}))),
    (NAMESPACE, namespace),
    (NODE, node),
    (EVENT, event),
    (DEPLOYMENT, deployment),
    (REPLICASET, replicaset),
    (JOB, job),
    (JOB, lambda: job(parallelism=4, completions=8, completionMode="Indexed")),
    (PDB, lambda: pdb(minAvailable=1)),
    (PDB, lambda: pdb(maxUnavailable="25%")),
    (PDB, pdb),
    (PRIORITY_CLASS, priority_class),
    (PRIORITY_CLASS, lambda: priority_class(value=1_000_000_000, preemptionPolicy="Never")),
    (LEASE, lease),
    (VPA, vpa),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


# -- invalid objects: exact paths and messages ---------------------------------------------------

DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUANTITY_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "no containers",
        POD,
        lambda: mutate(pod(), lambda p: p["spec"].update(containers=[])),
        ["spec.containers: Required value"],
    ),
    (
        "request above limit",
        POD,
        lambda: pod(container(limits={"cpu": "1"}, requests={"cpu": "2"})),
        [
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
            "to cpu limit of 1"
        ],
    ),
    (
        "memory request above limit, canonical quantities",
        POD,
        lambda: pod(container(limits={"memory": "1024Mi"}, requests={"memory": "2048Mi"})),
        [
            'spec.containers[0].resources.requests: Invalid value: "2Gi": must be less than or '
            "equal to memory limit of 1Gi"
        ],
    ),
    (
        "bad quantity names the exact field",
        POD,
        lambda: pod(container(limits={"memory": "lots"})),
        [f'spec.containers[0].resources.limits[memory]: Invalid value: "lots": {QUANTITY_MSG}'],
    ),
    (
        "negative quantity",
        POD,
        lambda: pod(container(requests={"cpu": "-100m"})),
        [
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-100m": must be greater '
            "than or equal to 0"
        ],
    ),
    (
        "unknown resource name",
        POD,
        lambda: pod(container(requests={"gpus": "1"})),
        [
            'spec.containers[0].resources.requests[gpus]: Invalid value: "gpus": must be a '
            "standard resource type or fully qualified",
            'spec.containers[0].resources.requests[gpus]: Invalid value: "gpus": must be a '
            "standard resource for containers",
        ],
    ),
    (
        "extended resources are whole and not overcommitted",
        POD,
        lambda: pod(
            container(limits={"example.com/gpu": "1"}, requests={"example.com/gpu": "500m"})
        ),
        [
            "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 500m: must "
            "be an integer",
            'spec.containers[0].resources.requests: Invalid value: "500m": must be equal to '
            "example.com/gpu limit of 1",
        ],
    ),
    (
        "container names",
        POD,
        lambda: pod(container("App"), container("b"), container("b")),
        [
            f'spec.containers[0].name: Invalid value: "App": {DNS_LABEL_MSG}',
            'spec.containers[2].name: Duplicate value: "b"',
        ],
    ),
    (
        "init container name collides with a container",
        POD,
        lambda: pod(container("app"), initContainers=[container("app")]),
        ['spec.initContainers[0].name: Duplicate value: "app"'],
    ),
    (
        "image required (the runtime runs command, but upstream requires image)",
        POD,
        lambda: mutate(pod(), lambda p: c0(p).pop("image")),
        ["spec.containers[0].image: Required value"],
    ),
    (
        "restart policy",
        POD,
        lambda: mutate(pod(), lambda p: p["spec"].update(restartPolicy="Sometimes")),
        [
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"'
        ],
    ),
    (
        "container restartPolicy only on init containers, only Always",
        POD,
        lambda: pod(
            container() | {"restartPolicy": "Always"},
            initContainers=[container("init") | {"restartPolicy": "OnFailure"}],
        ),
        [
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported '
            'values: "Always"',
        ],
    ),
    (
        "resize policy entries",
        POD,
        lambda: pod(
            container()
            | {
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "cpu", "restartPolicy": "Sometimes"},
                    {"resourceName": "ephemeral-storage", "restartPolicy": "NotRequired"},
                ]
            }
        ),
        [
            'spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"',
            'spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: '
            '"NotRequired", "RestartContainer"',
            'spec.containers[0].resizePolicy: Unsupported value: "ephemeral-storage": supported '
            'values: "cpu", "memory"',
        ],
    ),
    (
        "restartPolicy Never allows only NotRequired resize policies",
        POD,
        lambda: pod(
            container()
            | {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]},
            restart_policy="Never",
        ),
        [
            'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
            "'NotRequired' when `restartPolicy` is 'Never'"
        ],
    ),
    (
        "node name",
        POD,
        lambda: pod(nodeName="Node_1"),
        [f'spec.nodeName: Invalid value: "Node_1": {DNS_SUBDOMAIN_MSG}'],
    ),
    (
        "our annotations",
        POD,
        lambda: mutate(
            pod(),
            lambda p: p["metadata"].update(
                annotations={
                    "inplace.dev/resize-policy": "Sometimes",
                    "inplace.dev/oom-kill-disable": "yes",
                }
            ),
        ),
        [
            'metadata.annotations[inplace.dev/resize-policy]: Unsupported value: "Sometimes": '
            'supported values: "InPlaceOnly", "InPlacePreferred", "Restart"',
            'metadata.annotations[inplace.dev/oom-kill-disable]: Unsupported value: "yes": '
            'supported values: "true", "false"',
        ],
    ),
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
            "metadata.annotations: Too long: must have at most 262144 bytes",
        ],
    ),
    (
        "name or generateName",
        POD,
        lambda: mutate(pod(), lambda p: p["metadata"].pop("name")),
        ["metadata.name: Required value: name or generateName is required"],
    ),
    (
        "namespace is a DNS label",
        NAMESPACE,
        lambda: namespace("team.a"),
        ['metadata.name: Invalid value: "team.a": must not contain dots'],
    ),
    (
        "cluster-scoped kinds take no namespace",
        NODE,
        lambda: mutate(node(), lambda n: n["metadata"].update(namespace="default")),
        ["metadata.namespace: Forbidden: not allowed on this type"],
    ),
    (
        "deployment selector must match template labels; replicas >= 0",
        DEPLOYMENT,
        lambda: deployment(replicas=-1, selector={"matchLabels": {"app": "api"}}),
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
            "`selector` does not match template `labels`",
        ],
    ),
    (
        "deployment selector required",
        DEPLOYMENT,
        lambda: mutate(deployment(), lambda d: d["spec"].pop("selector")),
        ["spec.selector: Required value"],
    ),
    (
        "deployment template restart policy",
        DEPLOYMENT,
        lambda: deployment(template=template(restart="Never")),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
            '"Always"'
        ],
    ),
    (
        "deployment rolling update",
        DEPLOYMENT,
        lambda: deployment(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"},
            }
        ),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
            "`maxSurge` is 0"
        ],
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
    (
        "job counts and restart policy",
        JOB,
        lambda: job(
            parallelism=-1, completions=-2, backoffLimit=-3, template=template(restart="Always")
        ),
        [
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.completions: Invalid value: -2: must be greater than or equal to 0",
            "spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
            'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
            '"OnFailure", "Never"',
        ],
    ),
    (
        "job manual selector must match",
        JOB,
        lambda: job(manualSelector=True, selector={"matchLabels": {"app": "other"}}),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{}: `selector` does "
            "not match template `labels`"
        ],
    ),
    (
        "pdb: not both",
        PDB,
        lambda: pdb(minAvailable=1, maxUnavailable=1),
        [
            'spec: Invalid value: {"maxUnavailable":1,"minAvailable":1,"selector":{"matchLabels":'
            '{"app":"web"}}}: minAvailable and maxUnavailable cannot be both set'
        ],
    ),
    (
        "pdb: int or percent",
        PDB,
        lambda: pdb(minAvailable="half"),
        [
            "spec.minAvailable: Invalid value: half: a valid percent string must be a numeric "
            "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
            "is '[0-9]+%')"
        ],
    ),
    (
        "pdb: at most 100%, not negative",
        PDB,
        lambda: pdb(maxUnavailable="150%"),
        ["spec.maxUnavailable: Invalid value: 150%: must not be greater than 100%"],
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
            "resource for cpu is lower than min (2)",
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


def test_validation_requires_defaulted_objects() -> None:
    raw = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    }
    assert sorted(create_messages(POD, raw)) == [
        "spec.containers[0].imagePullPolicy: Required value",
        "spec.containers[0].terminationMessagePolicy: Required value",
        "spec.dnsPolicy: Required value",
        "spec.restartPolicy: Required value",
        "spec.terminationGracePeriodSeconds: Required value",
    ]


def test_request_namespace_must_match() -> None:
    assert create_messages_ns(pod(), "other") == [
        'metadata.namespace: Invalid value: "default": the namespace of the provided object does '
        "not match the namespace sent on the request"
    ]
    validate_create(POD, pod(), namespace="default")


def create_messages_ns(obj: dict[str, Any], ns: str) -> list[str]:
    return messages(lambda: validate_create(POD, obj, namespace=ns))


def test_wrong_json_types_are_field_errors() -> None:
    bad = pod()
    bad["spec"]["containers"][0]["command"] = "sleep 1"
    bad["spec"]["terminationGracePeriodSeconds"] = "30"
    bad["metadata"]["labels"] = {"app": 1}
    assert sorted(create_messages(POD, bad)) == [
        "metadata.labels[app]: Invalid value: 1: must be of type string",
        'spec.containers[0].command: Invalid value: "sleep 1": must be of type array',
        'spec.terminationGracePeriodSeconds: Invalid value: "30": must be of type integer',
    ]
    with pytest.raises(ValidationError) as info:
        validate_create(POD, ["not", "an", "object"])  # type: ignore[arg-type]
    assert info.value.errors[0].type == "FieldValueTypeInvalid"


# -- updates -------------------------------------------------------------------------------------


def test_pod_update_allows_image_and_added_tolerations() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p).update(image="busybox:1.37"))
    new["spec"]["tolerations"].append({"key": "x", "operator": "Exists", "effect": "NoSchedule"})
    new["metadata"]["labels"] = {"tier": "web"}
    validate_update(POD, new, old)


def test_pod_update_forbids_resource_changes() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p)["resources"]["limits"].update(cpu="2"))
    (message,) = messages(lambda: validate_update(POD, new, old))
    assert message.startswith(
        "spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)\n"
    )
    assert "spec.containers[0].resources.limits[cpu]: 1 -> 2" in message


def test_pod_update_semantic_equality() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p)["resources"]["limits"].update(cpu="1000m"))
    new["spec"]["hostNetwork"] = False  # Go's zero value, same as absent
    validate_update(POD, new, old)


def test_pod_update_immutable_metadata_and_node_name() -> None:
    old = pod()
    new = mutate(
        old, lambda p: (p["metadata"].update(name="api", uid="u2"), p["spec"].update(nodeName="n1"))
    )
    got = messages(lambda: validate_update(POD, new, old))
    assert 'metadata.name: Invalid value: "api": field is immutable' in got
    assert 'metadata.uid: Invalid value: "u2": field is immutable' in got
    assert any(
        m.startswith("spec: Forbidden: pod updates may not change") and "spec.nodeName" in m
        for m in got
    )


def test_pod_update_tolerations_only_added() -> None:
    old = pod()
    new = mutate(old, lambda p: p["spec"]["tolerations"].pop())
    assert messages(lambda: validate_update(POD, new, old)) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ]


def test_pod_update_containers_count() -> None:
    old = pod()
    new = mutate(old, lambda p: p["spec"]["containers"].append(c0(pod(container("two")))))
    assert messages(lambda: validate_update(POD, new, old)) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]


def test_deployment_selector_is_immutable_template_is_not() -> None:
    old = deployment()
    changed_template = mutate(
        old, lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="x:2")
    )
    validate_update(DEPLOYMENT, changed_template, old)
    new = mutate(
        old,
        lambda d: (
            d["spec"]["selector"]["matchLabels"].update(tier="a"),
            d["spec"]["template"]["metadata"]["labels"].update(tier="a"),
        ),
    )
    assert messages(lambda: validate_update(DEPLOYMENT, new, old)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"a"}}: field is immutable'
    ]


def test_replicaset_selector_is_immutable() -> None:
    old = replicaset()
    new = mutate(
        old,
        lambda r: r["spec"]["selector"].update(
            matchExpressions=[{"key": "app", "operator": "Exists"}]
        ),
    )
    assert [m.split(":")[0] for m in messages(lambda: validate_update(REPLICASET, new, old))] == [
        "spec.selector"
    ]


def test_job_template_is_immutable_except_container_resources() -> None:
    old = job()
    resized = mutate(
        old,
        lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
            cpu="2"
        ),
    )
    validate_update(JOB, resized, old)
    reimaged = mutate(
        old, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="x:2")
    )
    got = messages(lambda: validate_update(JOB, reimaged, old))
    assert len(got) == 1 and got[0].startswith("spec.template: Invalid value: {")
    assert got[0].endswith(": field is immutable")


def test_job_selector_and_completions_immutable() -> None:
    old = job()
    new = mutate(old, lambda j: j["spec"].update(completions=3))
    assert messages(lambda: validate_update(JOB, new, old)) == [
        "spec.completions: Invalid value: 3: field is immutable"
    ]
    new = mutate(old, lambda j: j["spec"]["selector"]["matchLabels"].update(extra="x"))
    got = messages(lambda: validate_update(JOB, new, old))
    assert any(
        m.startswith("spec.selector: Invalid value:") and m.endswith("field is immutable")
        for m in got
    )


def test_priority_class_value_is_immutable() -> None:
    old = priority_class()
    new = mutate(old, lambda p: p.update(value=5))
    assert messages(lambda: validate_update(PRIORITY_CLASS, new, old)) == [
        "value: Forbidden: may not be changed in an update."
    ]


def test_generation_never_decreases() -> None:
    old = mutate(deployment(), lambda d: d["metadata"].update(generation=3))
    new = mutate(old, lambda d: d["metadata"].update(generation=2))
    assert messages(lambda: validate_update(DEPLOYMENT, new, old)) == [
        "metadata.generation: Invalid value: 2: must not be decremented"
    ]


# -- status updates ------------------------------------------------------------------------------


def test_pod_status_update() -> None:
    old = mutate(guaranteed_pod(), lambda p: p.update(status={"qosClass": "Guaranteed"}))
    ok = mutate(
        old,
        lambda p: p["status"].update(
            conditions=[{"type": "PodResizeInProgress", "status": "True"}], phase="Running"
        ),
    )
    validate_status_update(POD, ok, old)
    bad = mutate(
        old, lambda p: (p["status"].update(qosClass="Burstable"), p["spec"].update(nodeName="n"))
    )
    assert sorted(messages(lambda: validate_status_update(POD, bad, old))) == [
        "status.nodeName: Forbidden: may not be changed directly",
        'status.qosClass: Invalid value: "Burstable": field is immutable',
    ]


def test_workload_status_counts() -> None:
    old = deployment()
    new = mutate(old, lambda d: d.update(status={"replicas": -1}))
    assert messages(lambda: validate_status_update(DEPLOYMENT, new, old)) == [
        "status.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]
    old_ns = namespace()
    bad_ns = mutate(old_ns, lambda n: n["status"].update(phase="Terminating"))
    assert messages(lambda: validate_status_update(NAMESPACE, bad_ns, old_ns)) == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if "
        "`deletionTimestamp` is empty"
    ]


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


def sidecar_pod() -> dict[str, Any]:
    return pod(
        container(requests={"cpu": "100m"}),
        initContainers=[
            container("init", requests={"cpu": "100m"}),
            container("proxy", requests={"cpu": "100m"}) | {"restartPolicy": "Always"},
        ],
    )


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
