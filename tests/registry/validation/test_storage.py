"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: upstream's rules and messages."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.validation.pods import set_protected_host_paths
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create, validate_update
from tests.api.validation.builders import create_messages, kind, messages, mutate

PV = kind("", "PersistentVolume")
PVC = kind("", "PersistentVolumeClaim")
SC = kind("storage.k8s.io", "StorageClass")


def claim(**spec: Any) -> dict[str, Any]:
    obj = {
        "metadata": {"name": "data", "namespace": "default", "uid": "u1", "resourceVersion": "3"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }
    return apply_defaults(PVC, obj)


def volume(**spec: Any) -> dict[str, Any]:
    obj = {
        "metadata": {"name": "pv1", "uid": "v1", "resourceVersion": "3"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
            "hostPath": {"path": "/srv/pv1"},
            **spec,
        },
    }
    return apply_defaults(PV, obj)


def storage_class(**fields: Any) -> dict[str, Any]:
    obj = {
        "metadata": {"name": "fast", "resourceVersion": "3"},
        "provisioner": "rancher.io/local-path",
        **fields,
    }
    return apply_defaults(SC, obj)


def test_valid_objects_pass_and_defaults_are_upstreams() -> None:
    validate_create(PVC, claim())
    validate_create(PV, volume())
    validate_create(SC, storage_class())
    assert claim()["spec"]["volumeMode"] == "Filesystem"
    assert claim()["status"]["phase"] == "Pending"
    assert volume()["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume()["status"]["phase"] == "Pending"
    sc = storage_class()
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"accessModes": []},
            ["spec.accessModes: Required value: at least 1 access mode is required"],
        ),
        (
            {"accessModes": ["ReadWriteAlways"]},
            [
                'spec.accessModes: Unsupported value: "ReadWriteAlways": supported values: '
                '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
            ],
        ),
        (
            {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]},
            ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"],
        ),
        ({"resources": {}}, ["spec.resources[storage]: Required value"]),
        (
            {"resources": {"requests": {"storage": "0"}}},
            ['spec.resources[storage]: Invalid value: "0": must be greater than zero'],
        ),
        (
            {"storageClassName": "Fast_Disks"},
            [
                'spec.storageClassName: Invalid value: "Fast_Disks": a lowercase RFC 1123 '
                "subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'example.com', regex "
                "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                "[a-z0-9])?)*')"
            ],
        ),
        (
            {"volumeMode": "Raw"},
            ['spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"'],
        ),
    ],
)
def test_claim_spec_rules(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_messages(PVC, claim(**spec)) == expected


def test_empty_class_name_means_no_class() -> None:
    validate_create(PVC, claim(storageClassName=""))


def test_claim_spec_is_immutable_except_binding_and_growth() -> None:
    old = claim()
    bound = mutate(old, lambda c: c["spec"].update(volumeName="pv1"))
    validate_update(PVC, bound, old)  # the controller sets volumeName once
    rebound = mutate(bound, lambda c: c["spec"].update(volumeName="pv2"))
    changed = mutate(old, lambda c: c["spec"].update(accessModes=["ReadWriteMany"]))
    spec_msg = (
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    )
    assert messages(lambda: validate_update(PVC, rebound, bound)) == [spec_msg]
    assert messages(lambda: validate_update(PVC, changed, old)) == [spec_msg]
    # A bound claim may grow; an unbound one may not change its request.
    bound["status"] = {"phase": "Bound"}
    grown = mutate(bound, lambda c: c["spec"]["resources"]["requests"].update(storage="2Gi"))
    validate_update(PVC, grown, bound)
    shrunk = mutate(bound, lambda c: c["spec"]["resources"]["requests"].update(storage="1Mi"))
    assert messages(lambda: validate_update(PVC, shrunk, bound)) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
    ]
    unbound_grown = mutate(old, lambda c: c["spec"]["resources"]["requests"].update(storage="2Gi"))
    assert messages(lambda: validate_update(PVC, unbound_grown, old)) == [spec_msg]


def test_class_may_be_set_on_a_claim_that_had_none() -> None:
    old = claim()
    new = mutate(old, lambda c: c["spec"].update(storageClassName="local-path"))
    validate_update(PVC, new, old)
    other = mutate(new, lambda c: c["spec"].update(storageClassName="fast"))
    assert len(messages(lambda: validate_update(PVC, other, new))) == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"capacity": {}},
            [
                "spec.capacity: Required value",
                'spec.capacity: Unsupported value: {}: supported values: "storage"',
            ],
        ),
        (
            {"capacity": {"storage": "-1Gi"}},
            ['spec.capacity[storage]: Invalid value: "-1Gi": must be greater than zero'],
        ),
        ({"accessModes": []}, ["spec.accessModes: Required value"]),
        (
            {"persistentVolumeReclaimPolicy": "Recycle-ish"},
            [
                'spec.persistentVolumeReclaimPolicy: Unsupported value: "Recycle-ish": '
                'supported values: "Delete", "Recycle", "Retain"'
            ],
        ),
        ({"hostPath": {"path": ""}}, ["spec.hostPath.path: Required value"]),
        (
            {"hostPath": {"path": "/srv/../etc"}},
            ["spec.hostPath.path: Invalid value: \"/srv/../etc\": must not contain '..'"],
        ),
        (
            {"hostPath": None, "local": {"path": "/srv/pv1"}},
            ["spec.nodeAffinity: Required value: Local volume requires node affinity"],
        ),
        (
            {"local": {"path": "/srv/pv1"}},
            ["spec.local: Forbidden: may not specify more than 1 volume type"],
        ),
        (
            {"hostPath": None, "nfs": {"server": "nas", "path": "/x"}},
            ["spec.nfs: Forbidden: only hostPath and local volumes can be mounted on this host"],
        ),
        ({"hostPath": None}, ["spec: Required value: must specify a volume type"]),
    ],
)
def test_volume_spec_rules(spec: dict[str, Any], expected: list[str]) -> None:
    obj = volume(**spec)
    if spec.get("hostPath", "absent") is None:
        obj["spec"].pop("hostPath")
    assert create_messages(PV, obj) == expected


def test_volume_source_is_immutable() -> None:
    old = volume()
    new = mutate(old, lambda v: v["spec"]["hostPath"].update(path="/srv/other"))
    assert messages(lambda: validate_update(PV, new, old)) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"
    ]
    claimed = mutate(old, lambda v: v["spec"].update(claimRef={"name": "data"}))
    validate_update(PV, claimed, old)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"provisioner": ""}, ["provisioner: Required value"]),
        (
            {"reclaimPolicy": "Recycle"},
            ['reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'],
        ),
        (
            {"volumeBindingMode": "Later"},
            [
                'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", '
                '"WaitForFirstConsumer"'
            ],
        ),
    ],
)
def test_storage_class_rules(fields: dict[str, Any], expected: list[str]) -> None:
    assert create_messages(SC, storage_class(**fields)) == expected


def test_storage_class_keeps_its_provisioner_parameters_and_policies() -> None:
    old = storage_class(parameters={"a": "1"})
    changes = {
        "provisioner": (
            "example.com/x",
            "provisioner: Forbidden: updates to provisioner are forbidden.",
        ),
        "parameters": ({"a": "2"}, "parameters: Forbidden: updates to parameters are forbidden."),
        "reclaimPolicy": (
            "Retain",
            "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
        ),
        "volumeBindingMode": (
            "WaitForFirstConsumer",
            'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable',
        ),
    }
    for field, (value, message) in changes.items():
        new = mutate(old, lambda sc, f=field, v=value: sc.update({f: v}))
        assert messages(lambda n=new: validate_update(SC, n, old)) == [message]
    annotated = mutate(
        old,
        lambda sc: sc["metadata"].update(
            annotations={"storageclass.kubernetes.io/is-default-class": "true"}
        ),
    )
    validate_update(SC, annotated, old)


def test_volume_path_may_reach_the_data_dir_only_for_local_path_volumes() -> None:
    set_protected_host_paths(("/var/lib/inplace",))
    try:
        for path, refused in (
            ("/var/lib/inplace/storage/pvc-1", False),
            ("/var/lib/inplace/pki", True),
            ("/var/lib/inplace", True),
            ("/var/lib/inplace/storage", True),
            ("/var/lib/other", False),
        ):
            obj = volume(hostPath={"path": path})
            if refused:
                assert create_messages(PV, obj) == [
                    f'spec.hostPath.path: Invalid value: "{path}": must not be the cluster\'s '
                    "data directory /var/lib/inplace or lie under it, except "
                    "/var/lib/inplace/storage/"
                ]
            else:
                validate_create(PV, obj)
    finally:
        set_protected_host_paths(())
