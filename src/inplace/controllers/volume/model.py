"""The PersistentVolume controller's decisions, as pure functions over plain objects.

Upstream's ``pkg/controller/volume/persistentvolume`` (``syncUnboundClaim``,
``syncBoundClaim``, ``syncVolume``, ``findBestMatchForClaim``) reduced to what one host needs:

* :func:`decide_claim` — what an unbound or bound claim needs next: bind to a matching
  volume (a volume pre-bound to it first, else the smallest Available one that fits), have
  one provisioned, wait (for its first consumer, for an external provisioner, for a class),
  or nothing;
* :func:`decide_volume` — what a volume needs: ``Available`` while unclaimed, ``Bound``
  while its claim holds it, ``Released`` once the claim is gone, then the reclaim policy
  (``Delete``: remove what the provisioner made; ``Retain``: keep it, ``Released``);
* :func:`claim_in_use` and :func:`volume_in_use` — the protection controllers' rule.

The controller (``controller.py``) reads the informers, asks these functions, and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from inplace.api.storage import (
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode,
    claim_class,
    claim_names,
    claim_ref_matches,
    find_best_match,
    volume_satisfies_claim,
)

__all__ = [
    "ClaimDecision",
    "VolumeDecision",
    "claim_in_use",
    "decide_claim",
    "decide_volume",
    "local_path_problem",
    "volume_in_use",
]

Obj = Mapping[str, Any]

ClaimStep = Literal["none", "bind", "provision", "wait", "lost"]
VolumeStep = Literal["none", "available", "bound", "released", "delete", "unbind"]


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """``bind``: to ``volume``; ``provision``: a new volume on ``node`` ("" for any);
    ``wait``/``lost``: an event (``reason``, ``message``) says why."""

    step: ClaimStep
    volume: str = ""
    node: str = ""
    reason: str = ""
    message: str = ""
    event_type: str = "Normal"


@dataclass(frozen=True, slots=True)
class VolumeDecision:
    step: VolumeStep
    reason: str = ""
    message: str = ""


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _phase(obj: Obj) -> str:
    status = obj.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def decide_claim(
    claim: Obj,
    volumes: Iterable[Obj],
    storage_class: Obj | None,
    *,
    provisioner: str,
    node_labels: Mapping[str, str] | None = None,
) -> ClaimDecision:
    """What ``claim`` needs next. ``storage_class`` is its class (None when it names none or
    the class does not exist); ``provisioner`` is the one this controller runs."""
    if _deleting(claim):
        return ClaimDecision("none")
    volumes = list(volumes)
    volume_name = str(_spec(claim).get("volumeName") or "")
    if volume_name:
        volume = next((v for v in volumes if _name(v) == volume_name), None)
        if volume is None:
            if _phase(claim) in ("Bound", "Lost"):
                return ClaimDecision(
                    "lost",
                    reason="ClaimLost",
                    message="Bound claim has lost its PersistentVolume. Data on the volume is "
                    "lost!",
                    event_type="Warning",
                )
            return ClaimDecision("wait")  # pre-bound by the user to a volume not yet created
        ref = _spec(volume).get("claimRef")
        if isinstance(ref, Mapping) and not claim_ref_matches(volume, claim):
            return ClaimDecision(
                "lost",
                reason="ClaimMisbound",
                message="Two claims are bound to the same volume, this one is bound incorrectly",
                event_type="Warning",
            )
        if not isinstance(ref, Mapping) and not volume_satisfies_claim(volume, claim, "", {}):
            # The user named a volume that cannot serve the claim (upstream's check).
            return ClaimDecision(
                "wait",
                reason="VolumeMismatch",
                message=f'Cannot bind to requested volume "{volume_name}": it does not '
                "satisfy the claim's storage class, access modes, size or selector",
                event_type="Warning",
            )
        return ClaimDecision("bind", volume=volume_name)
    class_name = claim_class(claim)
    node = str((_meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE) or "")
    delayed = class_name != "" and binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER
    if not delayed or node:
        if node_labels is None and node:
            node_labels = {"kubernetes.io/hostname": node}  # how nodes register here
        match = find_best_match(claim, volumes, node, node_labels)
        if match is not None:
            return ClaimDecision("bind", volume=_name(match))
    if not class_name:
        return ClaimDecision(
            "wait",
            reason="FailedBinding",
            message="no persistent volumes available for this claim and no storage class is set",
        )
    if storage_class is None:
        return ClaimDecision(
            "wait",
            reason="ProvisioningFailed",
            message=f'storageclass.storage.k8s.io "{class_name}" not found',
            event_type="Warning",
        )
    if delayed and not node:
        return ClaimDecision(
            "wait",
            reason="WaitForFirstConsumer",
            message="waiting for first consumer to be created before binding",
        )
    wanted = str(storage_class.get("provisioner") or "")
    if wanted != provisioner:
        return ClaimDecision(
            "wait",
            reason="ExternalProvisioning",
            message=f"Waiting for a volume to be created either by the external provisioner "
            f"'{wanted}' or manually by the system administrator. If volume creation is "
            "delayed, please verify that the provisioner is running and correctly registered.",
        )
    problem = local_path_problem(claim)
    if problem:
        return ClaimDecision(
            "wait", reason="ProvisioningFailed", message=problem, event_type="Warning"
        )
    return ClaimDecision("provision", node=node)


def local_path_problem(claim: Obj) -> str:
    """What k3s's local-path provisioner refuses: access modes other than ``ReadWriteOnce``
    and ``ReadWriteOncePod``, and block volumes ("" when it can provision the claim)."""
    spec = _spec(claim)
    for mode in spec.get("accessModes") or ():
        if mode not in ("ReadWriteOnce", "ReadWriteOncePod"):
            return "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"
    if (spec.get("volumeMode") or "Filesystem") != "Filesystem":
        return "local-path only supports Filesystem volumes"
    return ""


def decide_volume(volume: Obj, claim: Obj | None, *, provisioner: str) -> VolumeDecision:
    """What ``volume`` needs, given the claim its ``claimRef`` names (None: not found)."""
    spec = _spec(volume)
    ref = spec.get("claimRef")
    phase = _phase(volume)
    if not isinstance(ref, Mapping):
        return VolumeDecision("none" if phase == "Available" else "available")
    uid = ref.get("uid")
    if claim is not None and (not uid or uid == _meta(claim).get("uid")):
        if _spec(claim).get("volumeName") == _name(volume):
            return VolumeDecision("none" if phase == "Bound" else "bound")
        if not _spec(claim).get("volumeName"):
            # Pre-bound, or the binding is half-way: the claim's sync completes it.
            return VolumeDecision("none" if phase in ("Available", "Bound") else "available")
        # The claim is bound to another volume: a binding this controller made is undone.
        annotations = _meta(volume).get("annotations") or {}
        if annotations.get("pv.kubernetes.io/bound-by-controller") == "yes":
            return VolumeDecision("unbind")
        return VolumeDecision("none" if phase == "Available" else "available")
    if not uid:
        # Pre-bound to a claim that does not exist yet.
        return VolumeDecision("none" if phase == "Available" else "available")
    # The claim it was bound to is gone (or was re-created: another uid).
    if phase != "Released" and phase != "Failed":
        return VolumeDecision("released")
    policy = spec.get("persistentVolumeReclaimPolicy") or "Retain"
    if policy != "Delete" or _deleting(volume):
        return VolumeDecision("none")
    annotations = _meta(volume).get("annotations") or {}
    if annotations.get(ANN_DYNAMICALLY_PROVISIONED) != provisioner:
        if phase == "Failed":
            return VolumeDecision("none")
        return VolumeDecision(
            "none",
            reason="VolumeFailedDelete",
            message=f'error getting deleter volume plugin for volume "{_name(volume)}": no '
            "deletable volume plugin matched",
        )
    return VolumeDecision("delete")


def _terminated(pod: Obj) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def claim_in_use(claim: Obj, pods: Iterable[Obj]) -> bool:
    """Upstream pvc-protection: a pod of the claim's namespace that is not finished names it
    (a pod being deleted still uses it until it is gone)."""
    meta = _meta(claim)
    name, namespace = meta.get("name"), meta.get("namespace")
    for pod in pods:
        if _meta(pod).get("namespace") != namespace or _terminated(pod):
            continue
        if name in claim_names(pod):
            return True
    return False


def volume_in_use(volume: Obj) -> bool:
    """Upstream pv-protection: a volume is in use while it is ``Bound``."""
    return _phase(volume) == "Bound"
