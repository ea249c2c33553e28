"""Persistent storage: upstream's names for the annotations, finalizers and values that
PersistentVolumes, PersistentVolumeClaims and StorageClasses carry, and the small pure
helpers every component reads them with (the API server's admission and printers, the
PersistentVolume controller, the scheduler's volume binding plugin).

The names are upstream's (``k8s.io/component-helpers/storage/volume``,
``pkg/controller/volume/persistentvolume``), so objects written here read the same to
upstream tools and the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from inplace.api.placement import match_node_selector_terms
from inplace.api.quantity import Quantity, QuantityError
from inplace.api.selectors import LabelSelector, SelectorError

__all__ = [
    "ACCESS_MODES",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "BETA_ANN_STORAGE_PROVISIONER",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "DEFAULT_CLASS_ANNOTATION",
    "IMMEDIATE",
    "LOCAL_PATH_CLASS",
    "LOCAL_PATH_DIRECTORY",
    "LOCAL_PATH_PROVISIONER",
    "NOT_SUPPORTED_PROVISIONER",
    "PVC_PROTECTION_FINALIZER",
    "PV_PROTECTION_FINALIZER",
    "READ_WRITE_ONCE_POD",
    "WAIT_FOR_FIRST_CONSUMER",
    "access_modes_text",
    "binding_mode",
    "claim_class",
    "claim_fully_bound",
    "claim_names",
    "claim_ref_matches",
    "default_class",
    "find_best_match",
    "is_default_class",
    "local_path_class",
    "storage_bytes",
    "topology_allows",
    "uses_read_write_once_pod",
    "volume_allows_node",
    "volume_satisfies_claim",
]

#: The StorageClass annotation that makes a class the default (``"true"``).
DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
#: The claim's class before ``spec.storageClassName`` existed; still honoured on reads.
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
#: On a WaitForFirstConsumer claim: the node the scheduler picked for its first pod.
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
#: On a claim: the provisioner asked to provision it.
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
BETA_ANN_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
#: On a claim: the controller finished binding it (``"yes"``).
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
#: On a claim or volume: the controller (not the user) bound it (``"yes"``).
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
#: On a volume: the provisioner that created it (the reclaim of a Delete volume is its job).
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"

PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"

IMMEDIATE: Final = "Immediate"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"

#: The provisioner of a class that cannot provision (upstream ``NotSupportedProvisioner``):
#: its claims bind only to volumes an administrator made.
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"

#: The access mode one pod at a time may use (the scheduler's VolumeRestrictions).
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"

#: The default StorageClass ``inplace up`` creates, and its provisioner: k3s's names, so a
#: manifest written for k3s (``storageClassName: local-path``) works unchanged.
LOCAL_PATH_CLASS: Final = "local-path"
LOCAL_PATH_PROVISIONER: Final = "rancher.io/local-path"
#: Where in the cluster's data dir the local-path volumes live (``inplace up`` passes
#: ``<data>/storage`` to the controller manager); the one part of the data dir a volume may
#: point into.
LOCAL_PATH_DIRECTORY: Final = "storage"

#: Access modes and their short forms, in the order upstream prints them.
ACCESS_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def is_default_class(storage_class: Mapping[str, Any]) -> bool:
    """Upstream ``IsDefaultAnnotation``: the annotation (or its beta form) is ``"true"``."""
    annotations = _annotations(storage_class)
    return (
        annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
        or annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true"
    )


def default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The default StorageClass: of several marked default, the newest (then by name), as
    upstream's ``GetDefaultClass`` since v1.26."""
    defaults = [c for c in classes if is_default_class(c)]
    if not defaults:
        return None

    def order(c: Mapping[str, Any]) -> tuple[str, str]:
        meta = c.get("metadata") or {}
        return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))

    return max(defaults, key=order)


def claim_class(claim: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClaimClass``: the beta annotation, else the spec's
    ``storageClassName``, else ``""`` (no class)."""
    annotations = _annotations(claim)
    beta = annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if isinstance(beta, str):
        return beta
    name = (claim.get("spec") or {}).get("storageClassName")
    return name if isinstance(name, str) else ""


def binding_mode(storage_class: Mapping[str, Any] | None) -> str:
    """A class's ``volumeBindingMode``; no class binds ``Immediate``."""
    if storage_class is None:
        return IMMEDIATE
    mode = storage_class.get("volumeBindingMode")
    return mode if isinstance(mode, str) and mode else IMMEDIATE


def local_path_class(storage_class: Mapping[str, Any] | None) -> bool:
    """Whether this project's local-path provisioner serves the class."""
    return storage_class is not None and storage_class.get("provisioner") == LOCAL_PATH_PROVISIONER


def access_modes_text(modes: object) -> str:
    """Upstream ``GetAccessModesAsString``: ``RWO,RWX``, each once, in upstream's order."""
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in ACCESS_MODES if mode in present)


def storage_bytes(resources: object) -> int | None:
    """The ``storage`` quantity of a resource list, in bytes (rounded up); None if absent
    or not a quantity."""
    if not isinstance(resources, Mapping) or "storage" not in resources:
        return None
    try:
        return Quantity.from_json(resources["storage"]).value()
    except (QuantityError, ValueError, TypeError, ArithmeticError):
        return None


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The claims a pod's volumes name, in volume order (``persistentVolumeClaim`` only)."""
    names: list[str] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, Mapping):
            name = source.get("claimName")
            if isinstance(name, str) and name:
                names.append(name)
    return names


def volume_allows_node(volume: Mapping[str, Any], node: str, labels: Mapping[str, str]) -> bool:
    """Whether a PersistentVolume's ``nodeAffinity`` admits the node (none: every node)."""
    spec = volume.get("spec") or {}
    affinity = spec.get("nodeAffinity") if isinstance(spec, Mapping) else None
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    if not isinstance(required, Mapping):
        return True
    terms = [t for t in required.get("nodeSelectorTerms") or () if isinstance(t, Mapping)]
    return match_node_selector_terms(terms, labels, node)


def topology_allows(storage_class: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Upstream ``MatchTopologySelectorTerms`` over a class's ``allowedTopologies``: none
    allows every node; else some term whose every ``matchLabelExpressions`` entry has the
    node's label value among its ``values``."""
    terms = storage_class.get("allowedTopologies") if storage_class is not None else None
    if not isinstance(terms, list) or not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        if not isinstance(expressions, list):
            continue
        if all(
            isinstance(e, Mapping)
            and e.get("key") in labels
            and labels[str(e.get("key"))] in (e.get("values") or ())
            for e in expressions
        ):
            return True
    return False


def uses_read_write_once_pod(claim: Mapping[str, Any]) -> bool:
    """The claim asks for ``ReadWriteOncePod`` (upstream ``ContainsAccessMode``)."""
    modes = (claim.get("spec") or {}).get("accessModes")
    return isinstance(modes, list) and READ_WRITE_ONCE_POD in modes


def claim_fully_bound(claim: Mapping[str, Any]) -> bool:
    """Upstream ``isPVCFullyBound``: the claim names its volume and the controller marked
    the binding complete (``pv.kubernetes.io/bind-completed``)."""
    return bool((claim.get("spec") or {}).get("volumeName")) and (
        ANN_BIND_COMPLETED in _annotations(claim)
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def claim_ref_matches(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """The volume's ``claimRef`` names this claim (and its uid, when it has one)."""
    ref = _spec(volume).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    uid = ref.get("uid")
    return not uid or uid == meta.get("uid")


def volume_satisfies_claim(
    volume: Mapping[str, Any], claim: Mapping[str, Any], node: str, node_labels: Mapping[str, str]
) -> bool:
    """Upstream ``checkVolumeSatisfyClaim`` plus the selector and, for a delayed binding, the
    node (``node`` "" skips it): class, mode, access modes, size, labels."""
    spec, claim_spec = _spec(volume), _spec(claim)
    if (spec.get("storageClassName") or "") != claim_class(claim):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim_spec.get("volumeMode") or "Filesystem"):
        return False
    wanted_modes = set(claim_spec.get("accessModes") or [])
    if not wanted_modes <= set(spec.get("accessModes") or []):
        return False
    requested = storage_bytes((claim_spec.get("resources") or {}).get("requests")) or 0
    capacity = storage_bytes(spec.get("capacity"))
    if capacity is None or capacity < requested:
        return False
    selector = claim_spec.get("selector")
    if isinstance(selector, Mapping):
        try:
            if not LabelSelector.from_dict(selector).matches(_meta(volume).get("labels") or {}):
                return False
        except SelectorError:
            return False
    return not node or volume_allows_node(volume, node, node_labels)


def find_best_match(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    node: str = "",
    node_labels: Mapping[str, str] | None = None,
) -> Mapping[str, Any] | None:
    """Upstream ``findBestMatchForClaim``: a volume pre-bound to this claim if one fits, else
    the smallest unclaimed, not deleting volume that satisfies it (then by name). Shared by
    the PersistentVolume controller (which binds it) and the scheduler (whose VolumeBinding
    filter asks whether a node has one)."""
    labels = node_labels or {}
    best: Mapping[str, Any] | None = None
    best_key: tuple[int, str] | None = None
    for volume in volumes:
        if _meta(volume).get("deletionTimestamp"):
            continue
        ref = _spec(volume).get("claimRef")
        if isinstance(ref, Mapping):
            if claim_ref_matches(volume, claim) and volume_satisfies_claim(
                volume, claim, node, labels
            ):
                return volume
            continue
        status = volume.get("status")
        phase = str(status.get("phase") or "") if isinstance(status, Mapping) else ""
        if phase not in ("Available", "Pending", ""):
            continue
        if not volume_satisfies_claim(volume, claim, node, labels):
            continue
        key = (storage_bytes(_spec(volume).get("capacity")) or 0, str(_meta(volume).get("name")))
        if best_key is None or key < best_key:
            best, best_key = volume, key
    return best
