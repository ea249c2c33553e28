"""Objects for the validation tests, defaulted as the API server validates them, and
helpers that collect the messages a validation error carries."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from inplace.api.validation import ValidationError
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create


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
STATEFULSET = kind("apps", "StatefulSet")
DAEMONSET = kind("apps", "DaemonSet")
CONTROLLERREVISION = kind("apps", "ControllerRevision")
CRONJOB = kind("batch", "CronJob")
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


def stateful_set(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
            **spec,
        },
    }
    return apply_defaults(STATEFULSET, obj)


def daemon_set(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec},
    }
    return apply_defaults(DAEMONSET, obj)


def cron_job(**spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": template(labels={}, restart="OnFailure")}},
            **spec,
        },
    }
    return apply_defaults(CRONJOB, obj)


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


def sidecar_pod() -> dict[str, Any]:
    return pod(
        container(requests={"cpu": "100m"}),
        initContainers=[
            container("init", requests={"cpu": "100m"}),
            container("proxy", requests={"cpu": "100m"}) | {"restartPolicy": "Always"},
        ],
    )


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
