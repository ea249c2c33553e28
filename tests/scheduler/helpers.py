"""Builders for node and pod dicts, and a recording fake of the scheduler's cluster actions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.api.conditions import SCHEDULER, Decision, status_update
from inplace.client import APIError, APITooManyRequestsError
from inplace.scheduler.framework import PodInfo


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ephemeral_storage: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    res = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if ephemeral_storage is not None:
        res["ephemeral-storage"] = ephemeral_storage
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {
            "capacity": dict(res),
            "allocatable": dict(res),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    *,
    namespace: str = "default",
    node_name: str = "",
    priority: int = 0,
    limits: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    phase: str = "Pending",
    allocated: Mapping[str, str] | None = None,
    generation: int = 1,
    policy: str | None = None,
    owner: bool = False,
    uid: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
    conditions: list[dict[str, Any]] | None = None,
    ephemeral_storage: str | None = None,
) -> dict[str, Any]:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if ephemeral_storage is not None:
        requests["ephemeral-storage"] = ephemeral_storage
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(limits)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        "priority": priority,
        "schedulerName": "default-scheduler",
    }
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "generation": generation,
        "creationTimestamp": created,
        "labels": dict(labels or {}),
    }
    if policy:
        meta["annotations"] = {"inplace.dev/resize-policy": policy}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}
        ]
    status: dict[str, Any] = {"phase": phase}
    if allocated is not None:
        status["containerStatuses"] = [
            {
                "name": "main",
                "allocatedResources": dict(allocated),
                "resources": {"requests": dict(allocated)},
            }
        ]
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


class FakeActions:
    """Records what the scheduler would do to the cluster; evictions can be refused."""

    def __init__(self) -> None:
        self.evicted: list[str] = []
        self.deleted: list[str] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, str, str, str]] = []
        self.refuse_eviction: dict[str, str] = {}
        """Pod key → budget name: answer its eviction with a 429 naming the budget."""
        self.fail_patch = False

    async def evict(self, pod: PodInfo) -> None:
        budget = self.refuse_eviction.get(pod.key)
        if budget is not None:
            raise APITooManyRequestsError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                details={
                    "name": budget,
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {budget} needs 1 healthy pods "
                            "and has 1 currently",
                        }
                    ],
                },
            )
        self.evicted.append(pod.key)

    async def delete(self, pod: PodInfo) -> None:
        self.deleted.append(pod.key)

    async def write_status(
        self,
        pod: PodInfo,
        *,
        fields: Mapping[str, Any] | None = None,
        conditions: Mapping[str, Decision] | None = None,
    ) -> None:
        """Records the status patch the real actions would send first (computed against
        the pod the scheduler saw)."""
        if self.fail_patch:
            raise APIError(500, "InternalError", "boom")
        patch = status_update(
            pod.obj, writer=SCHEDULER, now="T", fields=fields, decisions=conditions
        )
        self.patches.append((pod.key, {"status": patch.status if patch else {}}))

    def event(self, pod: PodInfo, type_: str, reason: str, message: str) -> None:
        self.events.append((pod.key, type_, reason, message))

    def conditions(self, key: str) -> list[dict[str, Any]]:
        """The conditions patched for ``key``, latest patch last, flattened."""
        out: list[dict[str, Any]] = []
        for k, patch in self.patches:
            if k == key:
                out.extend(patch.get("status", {}).get("conditions", []))
        return out

    def reasons(self, key: str | None = None) -> list[str]:
        return [r for k, _, r, _ in self.events if key is None or k == key]
