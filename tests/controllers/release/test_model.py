"""The in-place release plans: what is done, in what order, for each held workload."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from inplace.controllers.history import new_revision
from inplace.controllers.release.model import (
    Relabel,
    Restore,
    UpdateReplicaSet,
    Wait,
    daemon_set_plan,
    deployment_plan,
    stateful_set_plan,
)

SMALL = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
BIG = {"requests": {"cpu": "200m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}


def template(resources: dict[str, Any], image: str = "busybox") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "w"}},
        "spec": {
            "containers": [{"name": "main", "image": image, "resources": copy.deepcopy(resources)}]
        },
    }


def held(kind: str, record: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": "w",
            "namespace": "default",
            "uid": "u-w",
            "generation": 2,
            "annotations": {
                "inplace.dev/held": orjson.dumps(record).decode(),
                "deprecated.daemonset.template.generation": "2",
            },
        },
        "spec": {"template": template(BIG)},
        "status": status,
    }


def replica_set(resources: dict[str, Any], replicas: int = 3, revision: str = "1") -> Any:
    t = template(resources)
    t["metadata"]["labels"]["pod-template-hash"] = "abc"
    return {
        "metadata": {
            "name": "w-abc",
            "annotations": {"deployment.kubernetes.io/revision": revision},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"replicas": replicas, "template": t},
        "status": {"replicas": replicas},
    }


def test_a_held_deployment_brings_its_replica_set_then_waits_then_unpauses() -> None:
    d = held("Deployment", {"paused": False}, observedGeneration=2, updatedReplicas=0)
    (step,) = deployment_plan(d, [replica_set(SMALL)])
    assert isinstance(step, UpdateReplicaSet)
    assert step.template["spec"]["containers"][0]["resources"] == BIG
    assert step.template["metadata"]["labels"]["pod-template-hash"] == "abc"  # kept
    # The ReplicaSet at the new template, but the deployment controller's status not yet.
    (wait,) = deployment_plan(d, [replica_set(BIG)])
    assert isinstance(wait, Wait)
    seen = held("Deployment", {"paused": False}, observedGeneration=2, updatedReplicas=3)
    (restore,) = deployment_plan(seen, [replica_set(BIG)])
    assert isinstance(restore, Restore)
    assert restore.patch == {
        "metadata": {"annotations": {"inplace.dev/held": None}},
        "spec": {"paused": False},
    }


def test_a_deployment_that_cannot_take_the_change_in_place_is_just_unpaused() -> None:
    d = held("Deployment", {"paused": True})
    d["spec"]["template"] = template(BIG, image="nginx")
    (restore,) = deployment_plan(d, [replica_set(SMALL)])
    assert isinstance(restore, Restore) and restore.patch["spec"] == {"paused": True}
    assert deployment_plan({"metadata": {}}, []) == []  # not held: nothing


def revisions() -> tuple[dict[str, Any], dict[str, Any]]:
    owner = held("StatefulSet", {})
    return new_revision(owner, template(SMALL), 1, 0), new_revision(owner, template(BIG), 2, 0)


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def test_a_held_stateful_set_relabels_from_its_partition_up_then_restores() -> None:
    old, new = revisions()
    sts = held(
        "StatefulSet",
        {"updateStrategy": ROLLING},
        observedGeneration=2,
        updateRevision=new["metadata"]["name"],
    )
    pods = [pod(f"w-{i}", {"controller-revision-hash": old["metadata"]["name"]}) for i in range(3)]
    steps = stateful_set_plan(sts, [old, new], pods)
    assert [s.pod["metadata"]["name"] for s in steps if isinstance(s, Relabel)] == ["w-1", "w-2"]
    at_new = {"controller-revision-hash": new["metadata"]["name"]}
    moved = [pods[0], pod("w-1", at_new), pod("w-2", at_new)]
    # Relabelled in the operator's cache, but the statefulset controller's status counts
    # only one: its pod cache may be behind, so the strategy is not restored yet.
    sts["status"]["updatedReplicas"] = 1
    (wait,) = stateful_set_plan(sts, [old, new], moved)
    assert isinstance(wait, Wait) and "counted" in wait.reason
    sts["status"]["updatedReplicas"] = 2
    (restore,) = stateful_set_plan(sts, [old, new], moved)
    assert isinstance(restore, Restore) and restore.patch["spec"] == {"updateStrategy": ROLLING}
    unsynced = held("StatefulSet", {"updateStrategy": ROLLING}, observedGeneration=1)
    assert isinstance(stateful_set_plan(unsynced, [old, new], pods)[0], Wait)


def test_a_held_daemon_set_relabels_by_hash_and_generation() -> None:
    owner = held("DaemonSet", {})
    old = new_revision(owner, template(SMALL), 1, hash_="old")
    new = new_revision(owner, template(BIG), 2, hash_="new")
    ds = held("DaemonSet", {"updateStrategy": {"type": "RollingUpdate"}}, observedGeneration=2)
    pods = [pod("w-x", {"controller-revision-hash": "old", "pod-template-generation": "1"})]
    (step,) = daemon_set_plan(ds, [old, new], pods)
    assert isinstance(step, Relabel)
    assert step.labels == {"controller-revision-hash": "new", "pod-template-generation": "2"}
    assert isinstance(daemon_set_plan(ds, [old], pods)[0], Wait)  # no revision made yet
    at_new = {"controller-revision-hash": "new", "pod-template-generation": "2"}
    moved = [pod("w-x", at_new), pod("w-y", at_new)]
    for p, node in zip(moved, ("n1", "n2"), strict=True):
        p["spec"]["nodeName"] = node
    ds["status"]["updatedNumberScheduled"] = 1  # one node counted: the other not yet seen
    (wait,) = daemon_set_plan(ds, [old, new], moved)
    assert isinstance(wait, Wait) and "counted" in wait.reason
    ds["status"]["updatedNumberScheduled"] = 2
    (restore,) = daemon_set_plan(ds, [old, new], moved)
    assert isinstance(restore, Restore)
    assert restore.patch["spec"] == {"updateStrategy": {"type": "RollingUpdate"}}
