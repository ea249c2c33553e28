"""End to end: persistent volumes from the local-path provisioner (real `inplace up`, real
kubectl, real processes writing real files under the data dir).

One cluster with two nodes for the module: a claim keeps its data across a delete and
re-create of its pod, ``Delete`` removes the volume's directory and ``Retain`` keeps it, a
claim in use is protected until its pod goes, an unbound ``Immediate`` claim keeps a pod
unscheduled with upstream's reason, a ``WaitForFirstConsumer`` claim is bound (on the node
the scheduler selected) before its pod is, a ``ReadWriteOncePod`` claim serves one pod at a
time, and bad input is a 422 naming the field.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.conftest import Cluster, reap_mounts, start_cluster
from tests.e2e.test_node_agent import (
    _kill_cgroup_tree,
    apply,
    cgroup_root_of,
    delete,
    get_pod,
    node_ready,
    running,
)
from tests.poll import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root (mount namespaces) and cgroup v1",
)


@pytest.fixture(scope="module")
def storage_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("storage") / "data"
    cluster = start_cluster(
        data_dir, None, "--nodes", "2", "--node-cpu", "1", "--node-memory", "1Gi"
    )
    try:
        wait_until(lambda: node_ready(cluster), what="node-1 Ready")
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.kubectl(
                "delete", "pods", "--all", "--wait=true", "--timeout=30s", check=False, timeout=40
            )
        cluster.stop()
        _kill_cgroup_tree(cgroup_root_of(data_dir))
        reap_mounts(data_dir)


def get(cluster: Cluster, *what: str) -> dict[str, Any] | None:
    out = cluster.kubectl("get", *what, "-o", "json", check=False)
    return dict(json.loads(out.stdout)) if out.returncode == 0 else None


def claim_manifest(
    name: str, storage_class: str | None = None, size: str = "16Mi", mode: str = "ReadWriteOnce"
) -> str:
    spec: dict[str, Any] = {
        "accessModes": [mode],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": spec,
    }
    return json.dumps(body)


def pod_manifest(name: str, claim: str, script: str) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", f"{script}\nexec sleep 3600"],
                    "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }
    return json.dumps(body)


def bound(cluster: Cluster, claim: str) -> dict[str, Any] | None:
    obj = get(cluster, "pvc", claim)
    if obj is not None and obj.get("status", {}).get("phase") == "Bound":
        return obj
    return None


def volume_dir(cluster: Cluster, volume: str) -> Path:
    return cluster.data_dir / "storage" / volume


def logs(cluster: Cluster, name: str) -> str:
    return cluster.kubectl("logs", name, "-c", "main", check=False).stdout


def core_api(cluster: Cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(k8s_config.new_client_from_config(str(cluster.kubeconfig)))


def revision_now(cluster: Cluster) -> str:
    return str(core_api(cluster).list_namespaced_pod("default", limit=1).metadata.resource_version)


def binding_revision(cluster: Cluster, pod: str, since: str) -> int:
    """The store revision at which ``pod`` got its node: the first watch event (replayed
    from ``since``) that shows ``spec.nodeName``."""
    api = core_api(cluster)
    stream = k8s_watch.Watch().stream(
        api.list_namespaced_pod,
        "default",
        field_selector=f"metadata.name={pod}",
        resource_version=since,
        timeout_seconds=30,
    )
    for event in stream:
        obj = event["object"]
        if obj.spec.node_name:
            return int(obj.metadata.resource_version)
    raise AssertionError(f"no event shows {pod} bound")


def claim_at(cluster: Cluster, name: str, revision: int) -> dict[str, Any]:
    """The claim as it was at ``revision`` (an exact list from the store's log)."""
    out = cluster.kubectl(
        "get",
        "--raw",
        "/api/v1/namespaces/default/persistentvolumeclaims"
        f"?fieldSelector=metadata.name={name}&resourceVersion={revision}"
        "&resourceVersionMatch=Exact",
    ).stdout
    items = json.loads(out)["items"]
    assert len(items) == 1
    return dict(items[0])


def unschedulable_message(cluster: Cluster, name: str) -> str | None:
    for c in get_pod(cluster, name)["status"].get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c["message"])
    return None


def test_default_class_is_local_path(storage_cluster: Cluster) -> None:
    out = storage_cluster.kubectl("get", "storageclass").stdout.splitlines()
    assert out[0].split() == [
        "NAME",
        "PROVISIONER",
        "RECLAIMPOLICY",
        "VOLUMEBINDINGMODE",
        "ALLOWVOLUMEEXPANSION",
        "AGE",
    ]
    assert out[1].split()[:6] == [
        "local-path",
        "(default)",
        "rancher.io/local-path",
        "Delete",
        "WaitForFirstConsumer",
        "false",
    ]


def test_pod_keeps_data_across_recreate_and_delete_removes_the_directory(
    storage_cluster: Cluster,
) -> None:
    cluster = storage_cluster
    apply(cluster, claim_manifest("notes"))
    claim = get(cluster, "pvc", "notes")
    assert claim is not None
    # The DefaultStorageClass admission named the default class; WaitForFirstConsumer waits.
    assert claim["spec"]["storageClassName"] == "local-path"
    assert "kubernetes.io/pvc-protection" in claim["metadata"]["finalizers"]
    assert claim["status"]["phase"] == "Pending"
    write = "echo $HOSTNAME-was-here >> /data/notes; cat /data/notes"
    since = revision_now(cluster)
    apply(cluster, pod_manifest("writer", "notes", write))
    try:
        pod = wait_until(lambda: running(cluster, "writer"), what="writer Running")
        claim = wait_until(lambda: bound(cluster, "notes"), what="notes Bound")
        node = pod["spec"]["nodeName"]
        volume_name = claim["spec"]["volumeName"]
        annotations = claim["metadata"]["annotations"]
        assert annotations["volume.kubernetes.io/selected-node"] == node
        assert annotations["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
        assert annotations["volume.beta.kubernetes.io/storage-provisioner"] == (
            "rancher.io/local-path"
        )
        # The scheduler bound the pod only once the claim was Bound (upstream's PreBind):
        # the claim as it was at the pod's binding revision.
        then = claim_at(cluster, "notes", binding_revision(cluster, "writer", since))
        assert then["status"]["phase"] == "Bound"
        assert then["spec"]["volumeName"] == volume_name
        assert then["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        volume = get(cluster, "pv", volume_name)
        assert volume is not None
        assert volume["status"]["phase"] == "Bound"
        assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [node]
        directory = volume_dir(cluster, volume_name)
        assert Path(volume["spec"]["hostPath"]["path"]) == directory
        wait_until(lambda: "writer-was-here" in logs(cluster, "writer"), what="first write")
        assert (directory / "notes").read_text() == "writer-was-here\n"

        delete(cluster, "writer")
        apply(cluster, pod_manifest("writer", "notes", write))
        again = wait_until(lambda: running(cluster, "writer"), what="writer Running again")
        assert again["metadata"]["uid"] != pod["metadata"]["uid"]
        assert again["spec"]["nodeName"] == node  # the volume's node affinity
        wait_until(
            lambda: logs(cluster, "writer").count("writer-was-here") == 2, what="second write"
        )
        assert (directory / "notes").read_text() == "writer-was-here\n" * 2

        # In use: deleting the claim only marks it until the pod is gone.
        cluster.kubectl("delete", "pvc", "notes", "--wait=false")
        claim = get(cluster, "pvc", "notes")
        assert claim is not None and claim["metadata"].get("deletionTimestamp")
        row = cluster.kubectl("get", "pvc", "notes", "--no-headers").stdout.split()
        assert row[1] == "Terminating"
        assert directory.is_dir()
        assert running(cluster, "writer") is not None
    finally:
        delete(cluster, "writer")
    wait_until(lambda: get(cluster, "pvc", "notes") is None, what="notes gone")
    wait_until(lambda: get(cluster, "pv", volume_name) is None, what="volume gone")
    wait_until(lambda: not directory.exists(), what="directory removed")


def test_retain_keeps_the_directory_and_releases_the_volume(storage_cluster: Cluster) -> None:
    cluster = storage_cluster
    apply(
        cluster,
        json.dumps(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "keep"},
                "provisioner": "rancher.io/local-path",
                "reclaimPolicy": "Retain",
                "volumeBindingMode": "Immediate",
            }
        ),
    )
    apply(cluster, claim_manifest("kept", "keep"))
    # Immediate: provisioned and bound without a pod, on no particular node.
    claim = wait_until(lambda: bound(cluster, "kept"), what="kept Bound")
    volume_name = claim["spec"]["volumeName"]
    volume = get(cluster, "pv", volume_name)
    assert volume is not None and "nodeAffinity" not in volume["spec"]
    directory = volume_dir(cluster, volume_name)
    assert directory.is_dir()
    (directory / "keep-me").write_text("still here")
    # Its class does not allow expansion: growing the request is refused (403), as upstream.
    grown = cluster.kubectl(
        "patch",
        "pvc",
        "kept",
        "--type=merge",
        "-p",
        '{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}',
        check=False,
    )
    assert grown.returncode != 0
    assert "the storageclass that provisions the pvc must support resize" in grown.stderr
    cluster.kubectl("delete", "pvc", "kept", "--wait=true", "--timeout=60s", timeout=70)

    def released() -> dict[str, Any] | None:
        pv = get(cluster, "pv", volume_name)
        return pv if pv is not None and pv["status"]["phase"] == "Released" else None

    wait_until(released, what="volume Released")
    row = cluster.kubectl("get", "pv", volume_name, "--no-headers").stdout.split()
    assert row[3:6] == ["Retain", "Released", "default/kept"]
    assert (directory / "keep-me").read_text() == "still here"
    # A released volume is not reused by a new claim of the same name (another uid).
    apply(cluster, claim_manifest("kept", "keep"))
    again = wait_until(lambda: bound(cluster, "kept"), what="new kept Bound")
    assert again["spec"]["volumeName"] != volume_name
    cluster.kubectl("delete", "pvc", "kept", "--wait=true", "--timeout=60s", timeout=70)
    # The administrator deletes a retained volume: the object goes, the data stays.
    cluster.kubectl("delete", "pv", volume_name, "--wait=true", "--timeout=60s", timeout=70)
    assert (directory / "keep-me").read_text() == "still here"
    shutil.rmtree(directory)


def test_unbound_immediate_claim_keeps_the_pod_unscheduled(storage_cluster: Cluster) -> None:
    cluster = storage_cluster
    apply(
        cluster,
        json.dumps(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "elsewhere"},
                "provisioner": "example.com/nas",
            }
        ),
    )
    apply(cluster, claim_manifest("remote", "elsewhere"))
    apply(cluster, pod_manifest("waiter", "remote", "true"))
    try:
        message = wait_until(
            lambda: unschedulable_message(cluster, "waiter"), what="waiter Unschedulable"
        )
        assert (
            message == "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        )
        claim = get(cluster, "pvc", "remote")
        assert claim is not None
        annotations = claim["metadata"]["annotations"]
        assert annotations["volume.kubernetes.io/storage-provisioner"] == "example.com/nas"
        events = cluster.kubectl(
            "get", "events", "--field-selector", "involvedObject.name=remote", "-o", "json"
        ).stdout
        reasons = {e["reason"] for e in json.loads(events)["items"]}
        assert "ExternalProvisioning" in reasons
        # An administrator provides a volume by hand: the claim binds, the pod schedules.
        path = cluster.data_dir.parent / "manual-volume"
        path.mkdir(exist_ok=True)
        apply(
            cluster,
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": "manual"},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "elsewhere",
                        "hostPath": {"path": str(path)},
                    },
                }
            ),
        )
        claim = wait_until(lambda: bound(cluster, "remote"), what="remote Bound")
        assert claim["spec"]["volumeName"] == "manual"
        assert claim["status"]["capacity"] == {"storage": "1Gi"}
        wait_until(lambda: running(cluster, "waiter"), what="waiter Running")
    finally:
        delete(cluster, "waiter")
    cluster.kubectl("delete", "pvc", "remote", "--wait=true", "--timeout=60s", timeout=70)
    # Retain (the default of a hand-made volume): Released, and it stays until deleted.
    wait_until(
        lambda: (get(cluster, "pv", "manual") or {}).get("status", {}).get("phase") == "Released",
        what="manual Released",
    )
    cluster.kubectl("delete", "pv", "manual", "--wait=true", "--timeout=60s", timeout=70)


def test_wait_for_first_consumer_claim_holds_its_pod_until_bound(storage_cluster: Cluster) -> None:
    """A class whose provisioner never comes: the scheduler selects a node and waits in
    PreBind; the pod stays unbound until an administrator's volume on that node binds."""
    cluster = storage_cluster
    apply(
        cluster,
        json.dumps(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "later"},
                "provisioner": "example.com/later",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        ),
    )
    apply(cluster, claim_manifest("deferred", "later"))
    apply(cluster, pod_manifest("patient", "deferred", "true"))
    try:

        def provisioner_asked() -> dict[str, Any] | None:
            claim = get(cluster, "pvc", "deferred") or {}
            annotations = claim.get("metadata", {}).get("annotations") or {}
            if annotations.get("volume.kubernetes.io/storage-provisioner"):
                return claim
            return None

        # The controller asks the provisioner only once the scheduler selected a node.
        claim = wait_until(provisioner_asked, what="deferred sent to its provisioner")
        node = claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
        assert claim["status"]["phase"] == "Pending"
        assert not get_pod(cluster, "patient")["spec"].get("nodeName")
        path = cluster.data_dir.parent / "later-volume"
        path.mkdir(exist_ok=True)
        hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        apply(
            cluster,
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": "later-volume"},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "later",
                        "persistentVolumeReclaimPolicy": "Delete",
                        "hostPath": {"path": str(path)},
                        "nodeAffinity": {
                            "required": {"nodeSelectorTerms": [{"matchExpressions": [hostname]}]}
                        },
                    },
                }
            ),
        )
        pod = wait_until(lambda: running(cluster, "patient"), what="patient Running")
        assert pod["spec"]["nodeName"] == node
        assert (bound(cluster, "deferred") or {})["spec"]["volumeName"] == "later-volume"
    finally:
        delete(cluster, "patient")
    cluster.kubectl("delete", "pvc", "deferred", "--wait=true", "--timeout=60s", timeout=70)
    cluster.kubectl("delete", "pv", "later-volume", "--wait=true", "--timeout=60s", timeout=70)


def test_read_write_once_pod_claim_serves_one_pod_at_a_time(storage_cluster: Cluster) -> None:
    cluster = storage_cluster
    apply(cluster, claim_manifest("solo", mode="ReadWriteOncePod"))
    apply(cluster, pod_manifest("first", "solo", "true"))
    try:
        first = wait_until(lambda: running(cluster, "first"), what="first Running")
        apply(cluster, pod_manifest("second", "solo", "true"))
        message = wait_until(
            lambda: unschedulable_message(cluster, "second"), what="second Unschedulable"
        )
        assert message == (
            "0/2 nodes are available: 2 node has pod using PersistentVolumeClaim with the same "
            "name and ReadWriteOncePod access mode."
        )
        assert not get_pod(cluster, "second")["spec"].get("nodeName")
        delete(cluster, "first")
        second = wait_until(lambda: running(cluster, "second"), what="second Running")
        assert second["spec"]["nodeName"] == first["spec"]["nodeName"]  # the volume's node
    finally:
        delete(cluster, "first")
        delete(cluster, "second")
    cluster.kubectl("delete", "pvc", "solo", "--wait=true", "--timeout=60s", timeout=70)


def test_bad_input_is_422_naming_the_field(storage_cluster: Cluster) -> None:
    cluster = storage_cluster
    bad_claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "bad"},
        "spec": {"accessModes": ["ReadWriteAlways"], "resources": {"requests": {"storage": "0"}}},
    }
    out = cluster.kubectl("create", "-f", "-", input=json.dumps(bad_claim), check=False)
    assert out.returncode != 0
    assert 'spec.accessModes: Unsupported value: "ReadWriteAlways"' in out.stderr
    assert 'spec.resources[storage]: Invalid value: "0": must be greater than zero' in out.stderr
    # The official client sees the Status: 422, a cause per field.
    api = core_api(cluster)
    with pytest.raises(ApiException) as info:
        api.create_namespaced_persistent_volume_claim("default", bad_claim)
    assert info.value.status == 422
    status = json.loads(info.value.body)
    fields = {c["field"] for c in status["details"]["causes"]}
    assert fields == {"spec.accessModes", "spec.resources[storage]"}
    out = cluster.kubectl(
        "patch",
        "storageclass",
        "local-path",
        "--type=merge",
        "-p",
        '{"reclaimPolicy":"Retain"}',
        check=False,
    )
    assert out.returncode != 0
    assert "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden." in out.stderr
    assert get(cluster, "pvc", "bad") is None
