"""Issue 25: what a real kubectl sees after writes that empty a list or map. As upstream's API
server (checked on the v1.36.3 test bed), the field is gone, not ``[]`` or ``{}``: an orphaned
pod has no ``ownerReferences``, a pod whose last label or finalizer went has no ``labels`` or
``finalizers``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

NAMESPACE = "empty-values"


def container() -> dict[str, Any]:
    return {
        "name": "main",
        "image": "busybox",
        "command": ["sleep", "3600"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }


def get(cluster: Cluster, kind: str, name: str) -> dict[str, Any] | None:
    result = cluster.kubectl("-n", NAMESPACE, "get", kind, name, "-o", "json", check=False)
    if result.returncode != 0:
        return None
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def pods(cluster: Cluster, selector: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("-n", NAMESPACE, "get", "pods", "-l", selector, "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[Cluster]:
    cluster.kubectl("create", "namespace", NAMESPACE)
    yield cluster
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=true", "--timeout=120s", timeout=150)


def test_orphaned_pod_and_emptied_labels_and_finalizers(namespace: Cluster) -> None:
    cluster = namespace
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "adopter", "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "adopter"}},
            "template": {
                "metadata": {"labels": {"app": "adopter"}},
                "spec": {"containers": [container()]},
            },
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(replica_set))
    [owned] = wait_until(
        lambda: [p for p in pods(cluster, "app=adopter") if p["metadata"].get("ownerReferences")],
        what="the ReplicaSet's pod",
    )
    name = owned["metadata"]["name"]

    cluster.kubectl("-n", NAMESPACE, "delete", "rs", "adopter", "--cascade=orphan")
    wait_until(lambda: get(cluster, "rs", "adopter") is None, what="the orphaning delete")
    orphan = get(cluster, "pod", name)
    assert orphan is not None
    assert "ownerReferences" not in orphan["metadata"], orphan["metadata"]

    # The last label, removed with kubectl label.
    cluster.kubectl("-n", NAMESPACE, "label", "pod", name, "app-")
    unlabeled = get(cluster, "pod", name)
    assert unlabeled is not None
    assert "labels" not in unlabeled["metadata"], unlabeled["metadata"]

    # The last finalizer, removed with a JSON patch.
    add = [{"op": "add", "path": "/metadata/finalizers", "value": ["example.com/hold"]}]
    remove = [{"op": "remove", "path": "/metadata/finalizers/0"}]
    cluster.kubectl("-n", NAMESPACE, "patch", "pod", name, "--type=json", "-p", json.dumps(add))
    held = get(cluster, "pod", name)
    assert held is not None and held["metadata"]["finalizers"] == ["example.com/hold"]
    cluster.kubectl("-n", NAMESPACE, "patch", "pod", name, "--type=json", "-p", json.dumps(remove))
    released = get(cluster, "pod", name)
    assert released is not None
    assert "finalizers" not in released["metadata"], released["metadata"]

    # And what kubectl's YAML shows.
    shown = cluster.kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "yaml").stdout
    for key in ("ownerReferences:", "finalizers:", "labels:"):
        assert key not in shown
