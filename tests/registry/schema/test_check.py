"""check_fields: unknown fields and wrong types, in upstream's wording and path format."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.schema.check import (
    check_fields,
    strict_decoding_error,
    unknown_field_warnings,
)
from inplace.registry.schema.roots import kind_schema

POD = REGISTRY.by_kind("", "Pod")
DEPLOYMENT = REGISTRY.by_kind("apps", "Deployment")
JOB = REGISTRY.by_kind("batch", "Job")
PDB = REGISTRY.by_kind("policy", "PodDisruptionBudget")
LEASE = REGISTRY.by_kind("coordination.k8s.io", "Lease")
VPA = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
assert None not in (POD, DEPLOYMENT, JOB, PDB, LEASE, VPA)


def _kind(kind: Kind | None) -> Kind:
    assert kind is not None
    return kind


def container(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox",
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", "sleep 3600"],
        "env": [
            {"name": "A", "value": "1"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": 1, "memory": "128Mi"},
        },
        "resizePolicy": [
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "memory", "restartPolicy": "RestartContainer"},
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
        "readinessProbe": {"tcpSocket": {"port": 8080}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }


def pod_spec() -> dict[str, Any]:
    return {
        "containers": [container("app"), container("sidecar")],
        "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    }


def meta(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "default",
        "labels": {"app": name},
        "annotations": {"inplace.dev/resize-policy": "InPlaceOnly"},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1"}
        ],
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "generation": 3,
    }


def pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta("p"), "spec": pod_spec()}


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("d"),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1},
            },
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": pod_spec()},
        },
    }


def job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("j"),
        "spec": {
            "backoffLimit": 2,
            "completions": 1,
            "template": {"spec": {**pod_spec(), "restartPolicy": "Never"}},
        },
    }


def vpa() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": meta("v"),
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 1},
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "*",
                        "minAllowed": {"cpu": "100m", "memory": 67108864},
                        "maxAllowed": {"cpu": 2, "memory": "4Gi"},
                        "controlledResources": ["cpu", "memory"],
                        "controlledValues": "RequestsAndLimits",
                    }
                ]
            },
        },
        "status": {
            "conditions": [
                {"type": "RecommendationProvided", "status": "True", "lastTransitionTime": None}
            ],
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "app",
                        "target": {"cpu": "250m", "memory": "256Mi"},
                        "lowerBound": {"cpu": "100m"},
                        "upperBound": {"cpu": "1"},
                        "uncappedTarget": {"cpu": "250m"},
                    }
                ]
            },
        },
    }


def pdb() -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta("b"),
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "d"}}},
        "status": {
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "status": "True",
                    "reason": "SufficientPods",
                    "message": "",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ],
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "disruptionsAllowed": 1,
            "expectedPods": 3,
        },
    }


def lease() -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta("node-1"),
        "spec": {
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 40,
            "renewTime": "2025-01-01T00:00:00.000000Z",
        },
    }


VALID: list[tuple[Kind | None, Callable[[], dict[str, Any]]]] = [
    (POD, pod),
    (DEPLOYMENT, deployment),
    (JOB, job),
    (VPA, vpa),
    (PDB, pdb),
    (LEASE, lease),
]


@pytest.mark.parametrize(("kind", "make"), VALID, ids=lambda v: getattr(v, "kind", ""))
def test_valid_objects_have_no_unknown_fields_or_type_errors(
    kind: Kind | None, make: Callable[[], dict[str, Any]]
) -> None:
    report = check_fields(_kind(kind), make())
    assert report.unknown == []
    assert report.type_errors == []
    assert report.ok


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set a dotted path with [i] indices, e.g. "spec.containers[1].foo"."""
    out = copy.deepcopy(obj)
    node: Any = out
    parts = path.replace("[", ".[").split(".")
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    last = parts[-1]
    if last.startswith("["):
        node[int(last[1:-1])] = value
    else:
        node[last] = value
    return out


UNKNOWN: list[tuple[Kind | None, Callable[[], dict[str, Any]], str, Any]] = [
    (POD, pod, "metadata.labelz", {"a": "b"}),
    (POD, pod, "spec.restartPolicyy", "Never"),
    (POD, pod, "spec.containers[1].imagePullPolicyy", "Always"),
    (POD, pod, "spec.containers[0].resources.limitz", {"cpu": "1"}),
    (POD, pod, "spec.containers[0].ports[0].hostPortt", 80),
    (POD, pod, "spec.initContainers[0].resizePolicyy", []),
    (POD, pod, "metadata.ownerReferences[0].controllerr", True),
    (DEPLOYMENT, deployment, "spec.template.spec.containers[0].imagePullPolicyy", "x"),
    (DEPLOYMENT, deployment, "spec.template.metadata.containers", []),
    (DEPLOYMENT, deployment, "spec.strategy.rollingUpdate.maxSurgee", 1),
    (JOB, job, "spec.template.spec.containers[1].resources.requestss", {}),
    (VPA, vpa, "spec.resourcePolicy.containerPolicies[0].maxAlowed", {"cpu": "1"}),
    (VPA, vpa, "spec.updatePolicy.updateModee", "Off"),
    (VPA, vpa, "metadata.labelz", {}),
    (VPA, vpa, "status.recommendation.containerRecommendations[0].targett", {}),
    (PDB, pdb, "spec.minAvailablee", 1),
    (LEASE, lease, "spec.holder", "x"),
]


@pytest.mark.parametrize(("kind", "make", "path", "value"), UNKNOWN, ids=[u[2] for u in UNKNOWN])
def test_unknown_fields_are_reported_with_the_strict_decoding_path(
    kind: Kind | None, make: Callable[[], dict[str, Any]], path: str, value: Any
) -> None:
    report = check_fields(_kind(kind), _set(make(), path, value))
    assert report.unknown == [path]
    assert report.type_errors == []


def test_unknown_fields_are_listed_in_object_order_and_not_descended_into() -> None:
    obj = pod()
    obj["spec"]["foo"] = {"bar": {"baz": 1}}
    obj["spec"]["containers"][1]["x"] = 1
    obj["zzz"] = 1
    report = check_fields(_kind(POD), obj)
    # spec.containers comes before the added spec.foo in the object
    assert report.unknown == ["spec.containers[1].x", "spec.foo", "zzz"]


def test_strict_and_warning_messages_match_upstream() -> None:
    obj = _set(deployment(), "spec.template.spec.initContainers[0].restartPolicyy", "Always")
    obj["spec"]["template"]["metadata"]["volumes"] = []
    report = check_fields(_kind(DEPLOYMENT), obj)
    assert strict_decoding_error(_kind(DEPLOYMENT), report) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.template.metadata.volumes", '
        'unknown field "spec.template.spec.initContainers[0].restartPolicyy"'
    )
    assert unknown_field_warnings(report) == [
        'unknown field "spec.template.metadata.volumes"',
        'unknown field "spec.template.spec.initContainers[0].restartPolicyy"',
    ]


def test_type_error_wins_in_the_strict_message() -> None:
    obj = _set(pod(), "spec.containers[0].ports[0].containerPort", "80")
    obj["spec"]["bogus"] = 1
    report = check_fields(_kind(POD), obj)
    assert report.unknown == ["spec.bogus"]
    assert strict_decoding_error(_kind(POD), report) == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go '
        "struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    )


TYPE_ERRORS: list[tuple[Kind | None, Callable[[], dict[str, Any]], str, Any, str]] = [
    (
        DEPLOYMENT,
        deployment,
        "spec.template.spec.containers[0].env[0].value",
        7070,
        "json: cannot unmarshal number into Go struct field "
        "EnvVar.spec.template.spec.containers.env.value of type string",
    ),
    (
        DEPLOYMENT,
        deployment,
        "spec.selector.matchLabels.app",
        1,
        "json: cannot unmarshal number into Go struct field "
        "LabelSelector.spec.selector.matchLabels of type string",
    ),
    (
        DEPLOYMENT,
        deployment,
        "spec.replicas",
        "3",
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
        "of type int32",
    ),
    (
        DEPLOYMENT,
        deployment,
        "spec.replicas",
        1.5,
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas "
        "of type int32",
    ),
    (
        DEPLOYMENT,
        deployment,
        "spec.replicas",
        2**31,
        "json: cannot unmarshal number 2147483648 into Go struct field "
        "DeploymentSpec.spec.replicas of type int32",
    ),
    (
        POD,
        pod,
        "spec.containers",
        {"name": "c"},
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers "
        "of type []v1.Container",
    ),
    (
        POD,
        pod,
        "spec.containers[1]",
        "busybox",
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers "
        "of type v1.Container",
    ),
    (
        POD,
        pod,
        "spec.containers[0].resources.limits",
        ["1"],
        "json: cannot unmarshal array into Go struct field "
        "ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList",
    ),
    (
        POD,
        pod,
        "spec.containers[0].resources.limits.cpu",
        True,
        "json: cannot unmarshal bool into Go struct field "
        "ResourceRequirements.spec.containers.resources.limits of type resource.Quantity",
    ),
    (
        POD,
        pod,
        "spec.containers[0].livenessProbe.httpGet.port",
        True,
        "json: cannot unmarshal bool into Go struct field "
        "HTTPGetAction.spec.containers.livenessProbe.httpGet.port of type intstr.IntOrString",
    ),
    (
        POD,
        pod,
        "spec.containers[0].command[1]",
        5,
        "json: cannot unmarshal number into Go struct field Container.spec.containers.command "
        "of type string",
    ),
    (
        POD,
        pod,
        "metadata",
        "p",
        "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta",
    ),
    (
        POD,
        pod,
        "spec.hostNetwork",
        "true",
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
    ),
    (
        VPA,
        vpa,
        "spec.updatePolicy.minReplicas",
        "2",
        'spec.updatePolicy.minReplicas: Invalid value: "string": spec.updatePolicy.minReplicas '
        'in body must be of type integer: "string"',
    ),
    (
        VPA,
        vpa,
        "spec.resourcePolicy.containerPolicies[0].controlledResources",
        "cpu",
        'spec.resourcePolicy.containerPolicies[0].controlledResources: Invalid value: "string": '
        "spec.resourcePolicy.containerPolicies[0].controlledResources in body must be of type "
        'array: "string"',
    ),
    (
        VPA,
        vpa,
        "spec.resourcePolicy.containerPolicies[0].minAllowed.cpu",
        [1],
        'spec.resourcePolicy.containerPolicies[0].minAllowed.cpu: Invalid value: "array": '
        "spec.resourcePolicy.containerPolicies[0].minAllowed.cpu in body must be of type "
        'integer or string: "array"',
    ),
]


@pytest.mark.parametrize(
    ("kind", "make", "path", "value", "message"), TYPE_ERRORS, ids=[t[2] for t in TYPE_ERRORS]
)
def test_type_errors_use_upstream_wording(
    kind: Kind | None, make: Callable[[], dict[str, Any]], path: str, value: Any, message: str
) -> None:
    report = check_fields(_kind(kind), _set(make(), path, value))
    assert report.type_errors == [message]
    assert report.unknown == []


ACCEPTED: list[tuple[Kind | None, Callable[[], dict[str, Any]], str, Any]] = [
    (POD, pod, "spec.containers[0].livenessProbe.httpGet.port", 8080),
    (POD, pod, "spec.containers[0].livenessProbe.httpGet.port", "http"),
    (POD, pod, "spec.containers[0].resources.limits.cpu", "500m"),
    (POD, pod, "spec.containers[0].resources.limits.cpu", 2),
    (POD, pod, "spec.containers[0].resources.limits.cpu", 0.5),
    (POD, pod, "spec.overhead", {"cpu": 1, "memory": "10Mi"}),
    (POD, pod, "spec.volumes[0].emptyDir.sizeLimit", 1073741824),
    (POD, pod, "spec.containers[0].env[1].valueFrom.resourceFieldRef", {"resource": "x"}),
    (POD, pod, "spec.containers[0].env[1].valueFrom.resourceFieldRef", {"divisor": 1}),
    (POD, pod, "spec.affinity", None),
    (POD, pod, "spec.containers[0].ports[0].containerPort", None),
    (POD, pod, "metadata.managedFields", [{"manager": "m", "fieldsV1": {"f:spec": {}}}]),
    (POD, pod, "metadata.managedFields", [{"manager": "m", "fieldsV1": {"f:x": [1, "a"]}}]),
    (DEPLOYMENT, deployment, "spec.strategy.rollingUpdate.maxSurge", 2),
    (DEPLOYMENT, deployment, "spec.strategy.rollingUpdate.maxUnavailable", "10%"),
    (PDB, pdb, "spec.minAvailable", 2),
    (VPA, vpa, "spec.resourcePolicy.containerPolicies[0].minAllowed.cpu", 1),
    (VPA, vpa, "spec.resourcePolicy.containerPolicies[0].oomBumpUpRatio", "1.2"),
    (VPA, vpa, "status.conditions[0].lastTransitionTime", "2025-01-01T00:00:00Z"),
]


@pytest.mark.parametrize(
    ("kind", "make", "path", "value"), ACCEPTED, ids=[f"{a[2]}={a[3]!r}" for a in ACCEPTED]
)
def test_int_or_string_quantity_free_form_and_null_are_accepted(
    kind: Kind | None, make: Callable[[], dict[str, Any]], path: str, value: Any
) -> None:
    report = check_fields(_kind(kind), _set(make(), path, value))
    assert report.ok, report


def test_not_an_object_is_a_type_error() -> None:
    report = check_fields(_kind(POD), ["not", "an", "object"])  # type: ignore[arg-type]
    assert report.type_errors == [
        "json: cannot unmarshal array into Go value of type v1.Pod",
    ]


_FIELD_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzXYZ", min_size=1, max_size=12)


@given(extra=st.dictionaries(_FIELD_NAME, st.integers() | st.text(), max_size=6))
def test_exactly_the_names_outside_the_schema_are_unknown(extra: dict[str, Any]) -> None:
    spec = kind_schema(_kind(POD)).fields["spec"].type.struct
    assert spec is not None
    obj = {"spec": {"containers": [{"name": "c", **extra}]}}
    container_struct = spec.fields["containers"].type.elem
    assert container_struct is not None and container_struct.struct is not None
    known = container_struct.struct.fields
    expected = [f"spec.containers[0].{k}" for k in extra if k not in known]
    assert check_fields(_kind(POD), obj).unknown == expected
