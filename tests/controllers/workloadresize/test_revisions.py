"""The in-place rule for revisioned workloads: which pods are moved to the update revision
by relabelling, and which must be replaced."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.history import REVISION_HASH_LABEL, new_revision
from inplace.controllers.workloadresize.revisions import in_place_labels, revision_of_pod

GENERATION = "pod-template-generation"


def template(
    image: str = "busybox", cpu: str = "100m", memory: str = "64Mi", limits: bool = True
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    return {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": image, "resources": resources}]},
    }


OWNER = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "default", "uid": "u"},
}
OLD = new_revision(OWNER, template(), 1)
BIGGER = new_revision(OWNER, template(cpu="200m", memory="128Mi"), 2)
NEW_IMAGE = new_revision(OWNER, template(image="nginx"), 2)
BURSTABLE = new_revision(OWNER, template(cpu="200m", limits=False), 2)


def pod(label: str, **extra: str) -> dict[str, Any]:
    return {"metadata": {"name": "db-0", "labels": {REVISION_HASH_LABEL: label, **extra}}}


def name(revision: dict[str, Any]) -> str:
    return str(revision["metadata"]["name"])


def hash_of(revision: dict[str, Any]) -> str:
    return str(revision["metadata"]["labels"][REVISION_HASH_LABEL])


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (BIGGER, {REVISION_HASH_LABEL: name(BIGGER)}),  # resources only: relabel
        (NEW_IMAGE, None),  # an image change is replaced
        (BURSTABLE, None),  # Guaranteed → Burstable changes the QoS class: replaced
    ],
)
def test_a_stateful_pod_is_moved_only_when_a_resize_can_make_the_change(
    update: dict[str, Any], expected: dict[str, str] | None
) -> None:
    labels = {REVISION_HASH_LABEL: name(update)}
    assert in_place_labels(pod(name(OLD)), [OLD, update], update, labels) == expected


def test_a_daemon_pod_is_found_by_hash_and_gets_both_labels() -> None:
    daemon_pod = pod(hash_of(OLD), **{GENERATION: "1"})
    labels = {REVISION_HASH_LABEL: hash_of(BIGGER), GENERATION: "2"}
    assert revision_of_pod(daemon_pod, [OLD, BIGGER]) == OLD
    assert in_place_labels(daemon_pod, [OLD, BIGGER], BIGGER, labels) == labels


def test_a_pod_already_there_needs_nothing_and_an_unknown_revision_is_replaced() -> None:
    labels = {REVISION_HASH_LABEL: name(BIGGER)}
    assert in_place_labels(pod(name(BIGGER)), [OLD, BIGGER], BIGGER, labels) == {}
    assert in_place_labels(pod("db-gone"), [OLD, BIGGER], BIGGER, labels) is None
    assert revision_of_pod({"metadata": {}}, [OLD]) is None


def test_a_template_mounting_its_claim_is_judged_with_the_pods_volumes() -> None:
    """A StatefulSet's template mounts a claim only its pods have as a volume."""

    def mounting(memory: str) -> dict[str, Any]:
        t = template(cpu="100m", memory=memory)
        t["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        return t

    old = new_revision(OWNER, mounting("64Mi"), 1)
    update = new_revision(OWNER, mounting("128Mi"), 2)
    claimed = pod(name(old))
    claimed["spec"] = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]}
    labels = {REVISION_HASH_LABEL: name(update)}
    assert in_place_labels(claimed, [old, update], update, labels) == labels
