"""The PersistentVolume controller's decisions, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.storage import find_best_match
from inplace.controllers.volume.model import (
    claim_in_use,
    decide_claim,
    decide_volume,
    local_path_problem,
    volume_in_use,
)

OURS = "rancher.io/local-path"


def claim(
    name: str = "data",
    *,
    uid: str = "c1",
    cls: str | None = "local-path",
    size: str = "1Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume: str = "",
    phase: str = "Pending",
    node: str = "",
    deleting: bool = False,
    selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid}
    if node:
        meta["annotations"] = {"volume.kubernetes.io/selected-node": node}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "volumeMode": "Filesystem",
    }
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def volume(
    name: str,
    *,
    size: str = "1Gi",
    cls: str = "local-path",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    ref: dict[str, Any] | None = None,
    policy: str = "Delete",
    provisioned_by: str = "",
    node: str = "",
    labels: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if provisioned_by:
        meta["annotations"] = {"pv.kubernetes.io/provisioned-by": provisioned_by}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        "persistentVolumeReclaimPolicy": policy,
        "volumeMode": "Filesystem",
        "hostPath": {"path": f"/srv/{name}"},
    }
    if ref is not None:
        spec["claimRef"] = ref
    if node:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                        ]
                    }
                ]
            }
        }
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def ref(name: str = "data", uid: str | None = "c1") -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": "default", "name": name}
    if uid is not None:
        out["uid"] = uid
    return out


IMMEDIATE = {
    "metadata": {"name": "local-path"},
    "provisioner": OURS,
    "volumeBindingMode": "Immediate",
}
DELAYED = {**IMMEDIATE, "volumeBindingMode": "WaitForFirstConsumer"}
EXTERNAL = {"metadata": {"name": "local-path"}, "provisioner": "example.com/nas"}


@pytest.mark.parametrize(
    ("the_claim", "volumes", "cls", "expected"),
    [
        # Immediate, nothing to bind to: provision anywhere.
        (claim(), [], IMMEDIATE, ("provision", "", "")),
        # A fitting Available volume wins over provisioning; the smallest that fits.
        (
            claim(),
            [volume("big", size="10Gi"), volume("small", size="2Gi"), volume("tiny", size="1Mi")],
            IMMEDIATE,
            ("bind", "small", ""),
        ),
        # Class, access modes and claimed volumes are respected.
        (
            claim(modes=("ReadWriteOncePod",)),
            [volume("rwo"), volume("other", cls="fast", modes=("ReadWriteOncePod",))],
            IMMEDIATE,
            ("provision", "", ""),
        ),
        (
            claim(),
            [volume("taken", ref=ref("other", "x"), phase="Bound")],
            IMMEDIATE,
            ("provision", "", ""),
        ),
        (claim(), [volume("going", deleting=True)], IMMEDIATE, ("provision", "", "")),
        # A volume pre-bound to this claim is taken even if a smaller one fits.
        (
            claim(),
            [volume("a", size="1Gi"), volume("mine", size="5Gi", ref=ref(uid=None))],
            IMMEDIATE,
            ("bind", "mine", ""),
        ),
        # A label selector narrows the candidates.
        (
            claim(selector={"matchLabels": {"tier": "gold"}}),
            [volume("plain"), volume("gold", labels={"tier": "gold"})],
            IMMEDIATE,
            ("bind", "gold", ""),
        ),
        # WaitForFirstConsumer: nothing until a node is selected, then provision there...
        (claim(), [volume("free")], DELAYED, ("wait", "", "WaitForFirstConsumer")),
        (claim(node="node-2"), [], DELAYED, ("provision", "node-2", "")),
        # ...or bind a volume whose node affinity admits the node.
        (
            claim(node="node-2"),
            [volume("on-1", node="node-1"), volume("on-2", node="node-2")],
            DELAYED,
            ("bind", "on-2", ""),
        ),
        # Another provisioner's class: wait for it.
        (claim(), [], EXTERNAL, ("wait", "", "ExternalProvisioning")),
        # No class at all (""), and a class that does not exist.
        (claim(cls=""), [], None, ("wait", "", "FailedBinding")),
        (claim(cls="gone"), [], None, ("wait", "", "ProvisioningFailed")),
        # k3s's provisioner makes only ReadWriteOnce(Pod) volumes.
        (claim(modes=("ReadWriteMany",)), [], IMMEDIATE, ("wait", "", "ProvisioningFailed")),
        # A bound claim: finish the binding, or notice the volume is gone.
        (claim(volume="pv1"), [volume("pv1")], IMMEDIATE, ("bind", "pv1", "")),
        # The user named a volume too small for the claim.
        (
            claim(volume="pv1", size="2Gi"),
            [volume("pv1")],
            IMMEDIATE,
            ("wait", "", "VolumeMismatch"),
        ),
        (claim(volume="pv1", phase="Bound"), [], IMMEDIATE, ("lost", "", "ClaimLost")),
        (claim(volume="pv1"), [], IMMEDIATE, ("wait", "", "")),
        (
            claim(volume="pv1", phase="Bound"),
            [volume("pv1", ref=ref("other", "x"))],
            IMMEDIATE,
            ("lost", "", "ClaimMisbound"),
        ),
        # A claim being deleted is the protection controller's business.
        (claim(deleting=True), [], IMMEDIATE, ("none", "", "")),
    ],
)
def test_decide_claim(
    the_claim: dict[str, Any],
    volumes: list[dict[str, Any]],
    cls: dict[str, Any] | None,
    expected: tuple[str, str, str],
) -> None:
    decision = decide_claim(the_claim, volumes, cls, provisioner=OURS)
    step, target, reason = expected
    assert decision.step == step
    assert decision.reason == reason
    if step == "bind":
        assert decision.volume == target
    if step == "provision":
        assert decision.node == target


def test_without_the_local_path_provisioner_its_claims_wait() -> None:
    decision = decide_claim(claim(), [], IMMEDIATE, provisioner="")
    assert (decision.step, decision.reason) == ("wait", "ExternalProvisioning")
    assert "'rancher.io/local-path'" in decision.message


@pytest.mark.parametrize(
    ("the_volume", "the_claim", "expected"),
    [
        (volume("pv", phase="Pending"), None, "available"),
        (volume("pv"), None, "none"),
        # Bound both ways.
        (volume("pv", ref=ref(), phase="Available"), claim(volume="pv"), "bound"),
        (volume("pv", ref=ref(), phase="Bound"), claim(volume="pv"), "none"),
        # Binding half-way (the claim's sync completes it), or pre-bound to a future claim.
        (volume("pv", ref=ref(), phase="Pending"), claim(), "available"),
        (volume("pv", ref=ref(uid=None), phase="Pending"), None, "available"),
        # The claim went (or was re-created with another uid): released, then reclaimed.
        (volume("pv", ref=ref(), phase="Bound"), None, "released"),
        (volume("pv", ref=ref(), phase="Bound"), claim(uid="c2"), "released"),
        (volume("pv", ref=ref(), phase="Released", provisioned_by=OURS), None, "delete"),
        (
            volume("pv", ref=ref(), phase="Released", policy="Retain", provisioned_by=OURS),
            None,
            "none",
        ),
        (
            volume("pv", ref=ref(), phase="Released", provisioned_by=OURS, deleting=True),
            None,
            "none",
        ),
        # The claim is bound to another volume.
        (volume("pv", ref=ref(), phase="Bound"), claim(volume="other"), "available"),
    ],
)
def test_decide_volume(
    the_volume: dict[str, Any], the_claim: dict[str, Any] | None, expected: str
) -> None:
    assert decide_volume(the_volume, the_claim, provisioner=OURS).step == expected


def test_a_released_volume_no_provisioner_made_is_not_deleted() -> None:
    decision = decide_volume(volume("static", ref=ref(), phase="Released"), None, provisioner=OURS)
    assert (decision.step, decision.reason) == ("none", "VolumeFailedDelete")


def test_a_binding_the_controller_made_is_undone_when_the_claim_chose_another() -> None:
    pv = volume("pv", ref=ref(), phase="Bound")
    pv["metadata"]["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert decide_volume(pv, claim(volume="other"), provisioner=OURS).step == "unbind"


def pod(
    name: str, claims: list[str], phase: str = "Running", ns: str = "default"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
            + [{"name": "scratch", "emptyDir": {}}]
        },
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("pods", "in_use"),
    [
        ([], False),
        ([pod("a", ["data"])], True),
        ([pod("a", ["data"], phase="Pending")], True),
        ([pod("a", ["data"], phase="Succeeded")], False),
        ([pod("a", ["data"], phase="Failed"), pod("b", ["other"])], False),
        ([pod("a", ["data"], ns="elsewhere")], False),
    ],
)
def test_claim_in_use(pods: list[dict[str, Any]], in_use: bool) -> None:
    assert claim_in_use(claim(), pods) is in_use


def test_volume_in_use_while_bound() -> None:
    assert volume_in_use(volume("pv", phase="Bound"))
    assert not volume_in_use(volume("pv", phase="Released"))


def test_find_best_match_honours_size_and_node() -> None:
    volumes = [volume("a", size="500Mi"), volume("b", size="3Gi", node="node-1")]
    assert find_best_match(claim(), volumes) == volumes[1]
    assert find_best_match(claim(), volumes, "node-2", {"kubernetes.io/hostname": "node-2"}) is None


def test_local_path_problem() -> None:
    assert local_path_problem(claim()) == ""
    assert local_path_problem(claim(modes=("ReadWriteOncePod",))) == ""
    assert "ReadWriteOnce" in local_path_problem(claim(modes=("ReadOnlyMany",)))
