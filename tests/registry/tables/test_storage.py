"""PersistentVolumes, PersistentVolumeClaims and StorageClasses, as upstream prints them."""

from __future__ import annotations

from tests.api.tables.helpers import MINUTE, ago, by_name


def meta(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "creationTimestamp": ago(5 * MINUTE), **extra}


def test_volume_row() -> None:
    pv = {
        "metadata": meta("pvc-1"),
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {"namespace": "default", "name": "data"},
            "storageClassName": "local-path",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound"},
    }
    assert by_name("PersistentVolume", pv) == {
        "Name": "pvc-1",
        "Capacity": "1Gi",
        "Access Modes": "RWO,RWX",
        "Reclaim Policy": "Delete",
        "Status": "Bound",
        "Claim": "default/data",
        "StorageClass": "local-path",
        "VolumeAttributesClass": "<unset>",
        "Reason": "",
        "Age": "5m",
        "VolumeMode": "Filesystem",
    }
    pv["metadata"] = meta("pvc-1", deletionTimestamp=ago(1))
    assert by_name("PersistentVolume", pv)["Status"] == "Terminating"


def test_claim_row_shows_capacity_only_once_bound() -> None:
    pvc = {
        "metadata": meta("data"),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "local-path",
        },
        "status": {"phase": "Pending"},
    }
    row = by_name("PersistentVolumeClaim", pvc)
    assert (row["Status"], row["Volume"], row["Capacity"], row["Access Modes"]) == (
        "Pending",
        "",
        "",
        "",
    )
    assert (row["StorageClass"], row["VolumeMode"]) == ("local-path", "<unset>")
    pvc["spec"]["volumeName"] = "pvc-1"  # type: ignore[index]
    pvc["status"] = {
        "phase": "Bound",
        "capacity": {"storage": "2Gi"},
        "accessModes": ["ReadWriteOncePod"],
    }
    row = by_name("PersistentVolumeClaim", pvc)
    assert (row["Status"], row["Volume"], row["Capacity"], row["Access Modes"]) == (
        "Bound",
        "pvc-1",
        "2Gi",
        "RWOP",
    )


def test_storage_class_row_marks_the_default() -> None:
    sc = {
        "metadata": meta(
            "local-path", annotations={"storageclass.kubernetes.io/is-default-class": "true"}
        ),
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    assert by_name("StorageClass", sc) == {
        "Name": "local-path (default)",
        "Provisioner": "rancher.io/local-path",
        "ReclaimPolicy": "Delete",
        "VolumeBindingMode": "WaitForFirstConsumer",
        "AllowVolumeExpansion": "false",
        "Age": "5m",
    }
    sc["metadata"] = meta("plain")
    assert by_name("StorageClass", sc)["Name"] == "plain"
