"""Owner references, pod state and upstream's deletion order."""

from __future__ import annotations

import copy
from typing import Any

from inplace.controllers.pods import (
    controller_of,
    controller_ref,
    deletion_order,
    is_active,
    is_available,
    pod_from_template,
)

T0 = 1767225600.0


def pod(
    name: str,
    *,
    node: str = "",
    phase: str = "Pending",
    ready_at: str | None = None,
    restarts: int = 0,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready_at})
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_deletion_order_removes_the_least_far_along_first() -> None:
    pods = [
        pod("ready-old", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z"),
        pod("ready-new", node="n", phase="Running", ready_at="2026-01-01T00:05:00Z"),
        pod("running", node="n", phase="Running"),
        pod("pending", node="n"),
        pod("unscheduled"),
        pod("crashy", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z", restarts=5),
    ]
    assert names(deletion_order(pods)) == [
        "unscheduled",
        "pending",
        "running",
        "ready-new",
        "crashy",
        "ready-old",
    ]


def test_deletion_order_prefers_crowded_nodes() -> None:
    a = pod("on-a", node="a", phase="Running", ready_at="2026-01-01T00:00:00Z")
    b = pod("on-b", node="b", phase="Running", ready_at="2026-01-01T00:00:00Z")
    assert names(deletion_order([a, b], colocated={"a": 1, "b": 3})) == ["on-b", "on-a"]


def test_state_helpers() -> None:
    assert is_active(pod("p", phase="Running"))
    assert not is_active(pod("p", phase="Succeeded"))
    deleting = pod("p", phase="Running")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not is_active(deleting)
    ready = pod("p", phase="Running", ready_at="2026-01-01T00:00:00Z")
    assert is_available(ready, 0, T0)
    assert not is_available(ready, 30, T0 + 10)
    assert is_available(ready, 30, T0 + 30)
    assert not is_available(pod("p"), 0, T0)


def test_pod_from_template_carries_labels_annotations_finalizers_and_the_owner() -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "ns", "uid": "u1"},
    }
    template = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"inplace.dev/resize-policy": "InPlacePreferred"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    made = pod_from_template(template, owner, extra_finalizers=["x/y"])
    assert made["metadata"] == {
        "generateName": "web-abc-",
        "namespace": "ns",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-abc",
                "uid": "u1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "labels": {"app": "web"},
        "annotations": {"inplace.dev/resize-policy": "InPlacePreferred"},
        "finalizers": ["x/y"],
    }
    assert made["spec"] == template["spec"] and made["spec"] is not template["spec"]
    assert controller_of(made) == controller_ref(owner)
    assert controller_of({"metadata": {"ownerReferences": [{"uid": "x"}]}}) is None


def test_a_resize_leaves_the_lifecycle_signature_alone() -> None:
    from inplace.controllers.pods import lifecycle_signature

    before = pod("p", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z")
    before["spec"]["containers"] = [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]
    resized = copy.deepcopy(before)
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    resized["status"]["containerStatuses"][0]["resources"] = {"requests": {"cpu": "2"}}
    resized["status"]["conditions"].append({"type": "PodResizeInProgress", "status": "True"})
    assert lifecycle_signature(resized) == lifecycle_signature(before)
    unready = copy.deepcopy(before)
    unready["status"]["conditions"][0]["status"] = "False"
    assert lifecycle_signature(unready) != lifecycle_signature(before)
    relabelled = copy.deepcopy(before)
    relabelled["metadata"]["labels"] = {"app": "other"}
    assert lifecycle_signature(relabelled) != lifecycle_signature(before)
