"""Storage helpers and the admission steps of claims and volumes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from inplace.api.lifecycle import admit_persistent_volume, admit_persistent_volume_claim
from inplace.api.storage import (
    access_modes_text,
    binding_mode,
    claim_class,
    claim_names,
    default_class,
    storage_bytes,
    volume_allows_node,
)


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
