"""Pod, node and VPA dicts as the API shows them, for the rescuer's tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.controllers.rescue.model import Size
from inplace.controllers.rescue.usage import UsagePeaks

UNSCHEDULABLE_CPU = "0/1 nodes are available: 1 Insufficient cpu."


def node(
    name: str = "node-1",
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: int = 110,
    ready: bool = True,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    res = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "capacity": dict(res),
            "allocatable": dict(res),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def running(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    node_name: str = "node-1",
    limits: Mapping[str, str] | None = None,
    priority: int = 0,
    shrinkable: str | None = "true",
    annotations: Mapping[str, str] | None = None,
    owner: tuple[str, str] | None = None,
    allocated: Mapping[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A running pod with one container ``main`` whose status agrees with its spec (unless
    ``allocated`` says otherwise)."""
    requests = {"cpu": cpu, "memory": memory}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(limits)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "annotations": dict(annotations or {}),
    }
    if labels is not None:
        meta["labels"] = dict(labels)
    if shrinkable is not None:
        meta["annotations"]["inplace.dev/shrinkable"] = shrinkable
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}
        ]
    held = dict(allocated or requests)
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "main",
                "allocatedResources": held,
                "resources": {"requests": held, **({"limits": dict(limits)} if limits else {})},
            }
        ],
    }
    if conditions:
        status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "priority": priority,
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
        "status": status,
    }


def pending(
    name: str = "new",
    cpu: str = "1",
    memory: str = "256Mi",
    *,
    priority: int = 0,
    message: str = UNSCHEDULABLE_CPU,
    reason: str = "Unschedulable",
    nominated: str = "",
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        ],
    }
    if nominated:
        status["nominatedNodeName"] = nominated
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-01-01T00:01:00Z",
        },
        "spec": {
            "priority": priority,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **(spec or {}),
        },
        "status": status,
    }


def vpa(
    target: tuple[str, str],
    *,
    mode: str = "InPlaceOrRecreate",
    lower: Mapping[str, str] | None = None,
    target_rec: Mapping[str, str] | None = None,
    policy: Mapping[str, Any] | None = None,
    name: str = "vpa",
    namespace: str = "default",
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": target[0], "name": target[1]},
        "updatePolicy": {"updateMode": mode},
    }
    if policy is not None:
        spec["resourcePolicy"] = {"containerPolicies": [{"containerName": "main", **policy}]}
    status: dict[str, Any] = {}
    if lower is not None or target_rec is not None:
        rec = {"containerName": "main"}
        if lower is not None:
            rec["lowerBound"] = dict(lower)  # type: ignore[assignment]
        if target_rec is not None:
            rec["target"] = dict(target_rec)  # type: ignore[assignment]
            rec["upperBound"] = dict(target_rec)  # type: ignore[assignment]
        status["recommendation"] = {"containerRecommendations": [rec]}
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
        "status": status,
    }


def peaks_of(usage: Mapping[str, Size], *, now: float = 1000.0) -> UsagePeaks:
    """Peaks known for ``default/<pod>`` container ``main`` (two readings, long ago enough)."""
    peaks = UsagePeaks(min_history=10.0)
    for pod, size in usage.items():
        peaks.record(f"default/{pod}", "main", now - 60, Size(0, 0))
        peaks.record(f"default/{pod}", "main", now - 30, size)
    return peaks
