"""Storage helpers and the admission steps of claims and volumes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from inplace.api.storage import (
    access_modes_text,
    binding_mode,
    claim_class,
    claim_fully_bound,
    claim_names,
    default_class,
    storage_bytes,
    topology_allows,
    uses_read_write_once_pod,
    volume_allows_node,
)
from inplace.registry.lifecycle import (
    admit_persistent_volume,
    admit_persistent_volume_claim,
    admit_persistent_volume_claim_resize,
)
from inplace.registry.strategy import Rejected


def sc(
    name: str, default: str | None = None, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if default is not None:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": default}
    return {"metadata": meta, "provisioner": "x"}


class Classes:
    """The ObjectReader an admission step sees: only StorageClasses here."""

    def __init__(self, *classes: dict[str, Any]) -> None:
        self.classes = classes

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        return None

    def list(self, group: str, kind: str) -> Iterable[Mapping[str, Any]]:
        assert (group, kind) == ("storage.k8s.io", "StorageClass")
        return self.classes


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ((), None),
        ((sc("a"), sc("b", "false")), None),
        ((sc("a", "true"), sc("b")), "a"),
        # Several defaults: the newest wins (upstream since v1.26), then the name.
        ((sc("old", "true", "2025-01-01T00:00:00Z"), sc("new", "true")), "new"),
        ((sc("b", "true"), sc("a", "true")), "b"),
    ],
)
def test_default_class(classes: tuple[dict[str, Any], ...], expected: str | None) -> None:
    chosen = default_class(classes)
    assert (chosen["metadata"]["name"] if chosen else None) == expected


@pytest.mark.parametrize(
    ("spec", "annotations", "classes", "expected"),
    [
        ({}, {}, (sc("local-path", "true"),), "local-path"),
        ({}, {}, (), None),
        ({"storageClassName": ""}, {}, (sc("local-path", "true"),), ""),
        ({"storageClassName": "fast"}, {}, (sc("local-path", "true"),), "fast"),
        # The beta annotation counts as naming a class.
        (
            {},
            {"volume.beta.kubernetes.io/storage-class": "old"},
            (sc("local-path", "true"),),
            None,
        ),
    ],
)
def test_default_storage_class_admission(
    spec: dict[str, Any],
    annotations: dict[str, str],
    classes: tuple[dict[str, Any], ...],
    expected: str | None,
) -> None:
    claim = {"metadata": {"name": "c", "annotations": annotations}, "spec": dict(spec)}
    admit_persistent_volume_claim(claim, Classes(*classes))
    assert claim["spec"].get("storageClassName") == expected
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]


def test_protection_finalizers_are_added_once() -> None:
    claim = {"metadata": {"finalizers": ["kubernetes.io/pvc-protection", "x.io/y"]}, "spec": {}}
    admit_persistent_volume_claim(claim, Classes())
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection", "x.io/y"]
    volume: dict[str, Any] = {"metadata": {"name": "pv"}}
    admit_persistent_volume(volume, Classes())
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


def test_small_helpers() -> None:
    assert access_modes_text(["ReadWriteOncePod", "ReadWriteOnce", "ReadWriteOnce"]) == "RWO,RWOP"
    assert access_modes_text(None) == ""
    assert storage_bytes({"storage": "1Ki"}) == 1024
    assert storage_bytes({"storage": "nonsense"}) is None
    assert storage_bytes({}) is None
    assert binding_mode(None) == "Immediate"
    assert binding_mode({"volumeBindingMode": "WaitForFirstConsumer"}) == "WaitForFirstConsumer"
    beta = {"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}}}
    assert claim_class({**beta, "spec": {"storageClassName": "new"}}) == "old"
    assert claim_class({"spec": {}}) == ""
    pod = {
        "spec": {
            "volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "one"}},
                {"name": "b", "emptyDir": {}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "two"}},
            ]
        }
    }
    assert claim_names(pod) == ["one", "two"]


def test_volume_allows_node() -> None:
    pinned = {
        "spec": {
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a"]},
                            ]
                        },
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n9"]}
                            ]
                        },
                    ]
                }
            }
        }
    }
    assert volume_allows_node({"spec": {}}, "n1", {})
    assert volume_allows_node(pinned, "n1", {"zone": "a"})
    assert not volume_allows_node(pinned, "n1", {"zone": "b"})
    assert volume_allows_node(pinned, "n9", {})


class OneClass(Classes):
    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        return next((c for c in self.classes if c["metadata"]["name"] == name), None)


def sized(size: str, phase: str = "Bound", cls: str = "grow") -> dict[str, Any]:
    return {
        "metadata": {"name": "data"},
        "spec": {"storageClassName": cls, "resources": {"requests": {"storage": size}}},
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        (sized("1Gi"), sized("1Gi"), None),
        (sized("1Gi"), sized("1024Mi"), None),
        (sized("1Gi"), sized("512Mi"), None),  # shrinking is validation's to refuse (422)
        (sized("1Gi"), sized("2Gi"), None),
        (
            sized("1Gi", "Pending"),
            sized("2Gi"),
            "Only bound persistent volume claims can be expanded",
        ),
        (
            sized("1Gi", cls="fixed"),
            sized("2Gi", cls="fixed"),
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize",
        ),
        (sized("1Gi", cls="gone"), sized("2Gi", cls="gone"), "only dynamically provisioned"),
    ],
)
def test_resize_admission(old: dict[str, Any], new: dict[str, Any], refusal: str | None) -> None:
    classes = OneClass(
        {"metadata": {"name": "grow"}, "allowVolumeExpansion": True},
        {"metadata": {"name": "fixed"}},
    )
    if refusal is None:
        admit_persistent_volume_claim_resize(new, old, classes)
        return
    with pytest.raises(Rejected) as info:
        admit_persistent_volume_claim_resize(new, old, classes)
    assert info.value.code == 403
    assert info.value.message.startswith('persistentvolumeclaims "data" is forbidden: ' + refusal)


ZONE_A = {"kubernetes.io/hostname": "node-1", "zone": "a"}


@pytest.mark.parametrize(
    ("topologies", "labels", "allowed"),
    [
        (None, ZONE_A, True),
        ([], ZONE_A, True),
        ([{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}], ZONE_A, True),
        ([{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}], ZONE_A, False),
        ([{"matchLabelExpressions": [{"key": "rack", "values": ["a"]}]}], ZONE_A, False),
        # Terms are ORed, the expressions of one term ANDed.
        (
            [
                {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]},
                {
                    "matchLabelExpressions": [
                        {"key": "zone", "values": ["a"]},
                        {"key": "kubernetes.io/hostname", "values": ["node-1"]},
                    ]
                },
            ],
            ZONE_A,
            True,
        ),
        (
            [
                {
                    "matchLabelExpressions": [
                        {"key": "zone", "values": ["a"]},
                        {"key": "kubernetes.io/hostname", "values": ["node-2"]},
                    ]
                }
            ],
            ZONE_A,
            False,
        ),
    ],
)
def test_topology_allows(
    topologies: list[dict[str, Any]] | None, labels: dict[str, str], allowed: bool
) -> None:
    storage_class: dict[str, Any] = {"metadata": {"name": "c"}, "provisioner": "p"}
    if topologies is not None:
        storage_class["allowedTopologies"] = topologies
    assert topology_allows(storage_class, labels) is allowed
    assert topology_allows(None, labels)


@pytest.mark.parametrize(
    ("volume_name", "annotations", "bound"),
    [
        ("", {}, False),
        ("pv", {}, False),  # named but the controller has not finished
        ("", {"pv.kubernetes.io/bind-completed": "yes"}, False),
        ("pv", {"pv.kubernetes.io/bind-completed": "yes"}, True),
        ("pv", {"pv.kubernetes.io/bind-completed": ""}, True),  # presence is what counts
    ],
)
def test_claim_fully_bound(volume_name: str, annotations: dict[str, str], bound: bool) -> None:
    claim = {"metadata": {"name": "c", "annotations": annotations}, "spec": {}}
    if volume_name:
        claim["spec"] = {"volumeName": volume_name}
    assert claim_fully_bound(claim) is bound


@pytest.mark.parametrize(
    ("modes", "rwop"),
    [
        (["ReadWriteOncePod"], True),
        (["ReadWriteOnce"], False),
        (["ReadWriteOnce", "ReadOnlyMany"], False),
        (None, False),
    ],
)
def test_uses_read_write_once_pod(modes: list[str] | None, rwop: bool) -> None:
    assert uses_read_write_once_pod({"spec": {"accessModes": modes}}) is rwop
