"""The PersistentVolume and protection controllers against the real API server (no nodes):
provisioning into a real directory, binding both ways, reclaiming, and protection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inplace.client import (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODS,
    STORAGECLASSES,
    APINotFoundError,
    Client,
)
from tests.controllers.conftest import Harness
from tests.poll import await_until

CONTROLLERS = "persistentvolume-binder,pvc-protection,pv-protection"


def storage_class(name: str, mode: str = "Immediate", policy: str = "Delete") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": policy,
        "volumeBindingMode": mode,
    }


def claim(name: str, cls: str, size: str = "8Mi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
        },
    }


async def get(client: Client, resource: Any, name: str, **kw: Any) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, **kw)
    except APINotFoundError:
        return None


async def bound_claim(client: Client, name: str) -> dict[str, Any] | None:
    obj = await get(client, PERSISTENTVOLUMECLAIMS, name, namespace="default")
    return obj if obj and obj["status"].get("phase") == "Bound" else None


async def test_provisions_binds_and_deletes(harness: Harness, tmp_path: Path) -> None:
    client = harness.client
    root = tmp_path / "storage"
    await harness.start(CONTROLLERS, local_path_root=str(root))
    await client.create(STORAGECLASSES, storage_class("now"))
    await client.create(PERSISTENTVOLUMECLAIMS, claim("data", "now"))
    pvc = await await_until(lambda: bound_claim(client, "data"), what="data Bound")
    name = pvc["spec"]["volumeName"]
    assert name == f"pvc-{pvc['metadata']['uid']}"
    annotations = pvc["metadata"]["annotations"]
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
    assert pvc["status"]["capacity"] == {"storage": "8Mi"}
    assert pvc["status"]["accessModes"] == ["ReadWriteOnce"]
    pv = await client.get(PERSISTENTVOLUMES, name)
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["hostPath"] == {"path": str(root / name), "type": "DirectoryOrCreate"}
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
        "rancher.io/local-path"
    )
    assert pv["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert (root / name).is_dir() and (root / name).stat().st_mode & 0o777 == 0o777
    (root / name / "file").write_text("x")

    await client.delete(PERSISTENTVOLUMECLAIMS, "data", namespace="default")

    async def reclaimed() -> bool:
        return await get(client, PERSISTENTVOLUMES, name) is None

    await await_until(reclaimed, what="volume deleted")
    assert not (root / name).exists()


async def test_wait_for_first_consumer_provisions_on_the_selected_node(
    harness: Harness, tmp_path: Path
) -> None:
    client = harness.client
    await harness.start(CONTROLLERS, local_path_root=str(tmp_path))
    await client.create(STORAGECLASSES, storage_class("later", mode="WaitForFirstConsumer"))
    await client.create(PERSISTENTVOLUMECLAIMS, claim("data", "later"))
    volumes = await client.list(PERSISTENTVOLUMES)
    assert volumes["items"] == []
    body = {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-2"}}}
    await client.patch(PERSISTENTVOLUMECLAIMS, "data", body, namespace="default")
    pvc = await await_until(lambda: bound_claim(client, "data"), what="data Bound")
    pv = await client.get(PERSISTENTVOLUMES, pvc["spec"]["volumeName"])
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}
    ]


async def test_without_a_root_claims_wait_and_static_volumes_bind(
    harness: Harness, tmp_path: Path
) -> None:
    client = harness.client
    await harness.start(CONTROLLERS)
    await client.create(STORAGECLASSES, storage_class("now"))
    await client.create(PERSISTENTVOLUMECLAIMS, claim("data", "now"))

    async def annotated() -> bool:
        obj = await client.get(PERSISTENTVOLUMECLAIMS, "data", namespace="default")
        annotations = obj["metadata"].get("annotations") or {}
        return annotations.get("volume.kubernetes.io/storage-provisioner") is not None

    await await_until(annotated, what="claim waits for its provisioner")
    for name, size in (("big", "1Gi"), ("small", "16Mi"), ("tiny", "1Mi")):
        await client.create(
            PERSISTENTVOLUMES,
            {
                "metadata": {"name": name},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "now",
                    "hostPath": {"path": str(tmp_path / name)},
                },
            },
        )
    pvc = await await_until(lambda: bound_claim(client, "data"), what="data Bound")
    assert pvc["spec"]["volumeName"] == "small"  # the smallest that fits
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    small = await client.get(PERSISTENTVOLUMES, "small")
    assert small["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]

    async def phase(name: str) -> str:
        return str((await client.get(PERSISTENTVOLUMES, name))["status"]["phase"])

    assert await phase("big") == "Available"
    await client.delete(PERSISTENTVOLUMECLAIMS, "data", namespace="default")

    async def released() -> bool:
        return await phase("small") == "Released"

    await await_until(released, what="small Released")
    assert (await client.get(PERSISTENTVOLUMES, "small"))["spec"][
        "persistentVolumeReclaimPolicy"
    ] == "Retain"


async def test_a_claim_in_use_waits_for_its_pod(harness: Harness, tmp_path: Path) -> None:
    client = harness.client
    await harness.start(CONTROLLERS, local_path_root=str(tmp_path))
    await client.create(STORAGECLASSES, storage_class("now"))
    await client.create(PERSISTENTVOLUMECLAIMS, claim("data", "now"))
    pvc = await await_until(lambda: bound_claim(client, "data"), what="data Bound")
    assert (tmp_path / pvc["spec"]["volumeName"]).is_dir()
    pod = {
        "metadata": {"name": "user", "namespace": "default"},
        "spec": {
            "containers": [{"name": "main", "image": "busybox"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    await client.create(PODS, pod)
    await client.delete(PERSISTENTVOLUMECLAIMS, "data", namespace="default")
    pending = await client.get(PERSISTENTVOLUMECLAIMS, "data", namespace="default")
    assert pending["metadata"]["deletionTimestamp"]
    assert pending["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    # The volume is protected too while it is bound.
    await client.delete(PERSISTENTVOLUMES, pvc["spec"]["volumeName"])
    assert await get(client, PERSISTENTVOLUMES, pvc["spec"]["volumeName"]) is not None
    await client.delete(PODS, "user", namespace="default")

    async def gone() -> bool:
        return (
            await get(client, PERSISTENTVOLUMECLAIMS, "data", namespace="default") is None
            and await get(client, PERSISTENTVOLUMES, pvc["spec"]["volumeName"]) is None
        )

    await await_until(gone, what="claim and volume gone")
    # Deleted by hand while bound, a Delete volume still takes its directory with it.
    await await_until(
        lambda: not (tmp_path / pvc["spec"]["volumeName"]).exists(), what="directory removed"
    )


async def test_a_claim_without_class_gets_the_default_once_there_is_one(
    harness: Harness, tmp_path: Path
) -> None:
    client = harness.client
    await harness.start(CONTROLLERS, local_path_root=str(tmp_path))
    # The API server's own default class would be taken at admission: not there yet.
    if await get(client, STORAGECLASSES, "local-path") is not None:
        await client.delete(STORAGECLASSES, "local-path")
    body = claim("data", "x")
    del body["spec"]["storageClassName"]
    await client.create(PERSISTENTVOLUMECLAIMS, body)
    assert (
        "storageClassName"
        not in (await client.get(PERSISTENTVOLUMECLAIMS, "data", namespace="default"))["spec"]
    )
    chosen = storage_class("chosen")
    chosen["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    await client.create(STORAGECLASSES, chosen)
    pvc = await await_until(lambda: bound_claim(client, "data"), what="data Bound")
    assert pvc["spec"]["storageClassName"] == "chosen"
