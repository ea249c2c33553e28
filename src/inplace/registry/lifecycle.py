"""Create-, update- and delete-time rules of the kinds that have them, named by their
strategies.

Upstream's ``PrepareForCreate``, ``PrepareForUpdate`` (``pods/resize``'s is in
:mod:`inplace.registry.resize`) and ``CheckGracefulDelete`` of a resource's strategy, and the
admission plugins that belong to one kind (``ServiceAccount`` and ``Priority`` for pods, then
the VPA's, upstream's webhook: :mod:`inplace.registry.vpa_admission`). Each takes plain JSON and
raises :class:`~inplace.registry.strategy.Rejected` to refuse a request, so the API server runs
them without knowing which kind they are for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.api.defaults import TEMPLATE_GENERATION_ANNOTATION
from inplace.api.quantity import Quantity
from inplace.api.resources import qos_class
from inplace.api.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    claim_class,
    default_class,
)
from inplace.api.timestamps import rfc3339
from inplace.api.token_volume import mount_service_account_token, should_automount
from inplace.registry.strategy import ObjectReader, Rejected, copy_json
from inplace.registry.validation.apps import template_generation
from inplace.registry.vpa_admission import admit_pod_vpa

__all__ = [
    "DEFAULT_SERVICE_ACCOUNT",
    "admit_persistent_volume",
    "admit_persistent_volume_claim",
    "admit_persistent_volume_claim_resize",
    "admit_pod",
    "admit_pod_priority",
    "admit_pod_service_account",
    "finish_daemon_set_update",
    "pod_grace_period",
    "prepare_cron_job_for_create",
    "prepare_daemon_set_for_create",
    "prepare_daemon_set_status_update",
    "prepare_pod_for_create",
    "prepare_pod_status_update",
    "prepare_stateful_set_for_create",
    "prepare_stateful_set_for_update",
]

_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")
_STORAGE_CLASS = ("storage.k8s.io", "StorageClass")
_SERVICE_ACCOUNT = ("", "ServiceAccount")
_MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
#: The ServiceAccount every namespace has and every pod runs as unless it names another.
DEFAULT_SERVICE_ACCOUNT = "default"


def admit_pod(pod: dict[str, Any], objects: ObjectReader) -> None:
    """A new pod's admission steps, in upstream's plugin order."""
    admit_pod_service_account(pod, objects)
    admit_pod_priority(pod, objects)
    admit_pod_vpa(pod, objects)  # upstream's mutating webhook runs after the plugins


def admit_pod_service_account(pod: dict[str, Any], objects: ObjectReader) -> None:
    """Upstream's ``ServiceAccount`` admission plugin: a pod runs as the ``default``
    ServiceAccount unless it names one, and the one it runs as must exist (the API server
    creates ``default`` with each namespace); unless told not to, the pod mounts the account's
    credentials (the ``kube-api-access-*`` volume, :mod:`inplace.api.token_volume`), and
    without image pull secrets of its own it takes the account's. Mirror pods are left
    alone."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and _MIRROR_POD_ANNOTATION in annotations:
        return
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    name = spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
    if not isinstance(name, str):
        return  # validation reports the wrong type
    spec["serviceAccountName"] = name
    spec["serviceAccount"] = name
    namespace = meta.get("namespace") or "default"
    account = objects.get(*_SERVICE_ACCOUNT, name, namespace)
    if account is None:
        raise Rejected(
            403,
            f'pods "{meta.get("name", "")}" is forbidden: error looking up service account '
            f'{namespace}/{name}: serviceaccount "{name}" not found',
        )
    if should_automount(pod, account):
        mount_service_account_token(pod)
    pull_secrets = account.get("imagePullSecrets")
    if not spec.get("imagePullSecrets") and isinstance(pull_secrets, list) and pull_secrets:
        spec["imagePullSecrets"] = copy_json(pull_secrets)


def admit_pod_priority(pod: dict[str, Any], objects: ObjectReader) -> None:
    """Upstream's ``Priority`` admission plugin: a pod's priority (and preemption policy) come
    from the PriorityClass it names, else from the global default class, else 0."""
    spec = pod.setdefault("spec", {})
    class_name = spec.get("priorityClassName")
    if class_name:
        priority_class = objects.get(*_PRIORITY_CLASS, class_name)
        if priority_class is None:
            raise Rejected(
                403,
                f'pods "{pod["metadata"].get("name", "")}" is forbidden: no PriorityClass '
                f"with name {class_name} was found",
            )
        spec["priority"] = priority_class.get("value", 0)
        spec.setdefault(
            "preemptionPolicy", priority_class.get("preemptionPolicy", "PreemptLowerPriority")
        )
    elif "priority" not in spec:
        for value in objects.list(*_PRIORITY_CLASS):
            if value.get("globalDefault"):
                spec["priorityClassName"] = value["metadata"]["name"]
                spec["priority"] = value.get("value", 0)
                break
        else:
            spec["priority"] = 0


def prepare_pod_for_create(pod: dict[str, Any]) -> None:
    """Upstream's pod ``PrepareForCreate``: the status is the server's (``Pending``, and the
    QoS class the resources give), whatever the request said; a pod with scheduling gates
    says so in a ``PodScheduled=False`` condition (``SchedulingGated``)."""
    status: dict[str, Any] = {"phase": "Pending"}
    try:
        status["qosClass"] = qos_class(pod)
    except ValueError:
        pass  # invalid quantities: validation reports them by field
    spec = pod.get("spec")
    if isinstance(spec, Mapping) and spec.get("schedulingGates"):
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ]
    pod["status"] = status


def prepare_pod_status_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's ``podStatusStrategy.PrepareForUpdate``: owner references stay (old kubelets
    corrupted them), a status without a QoS class keeps the stored one, and an
    ``observedGeneration`` a writer leaves out (or sends as 0) keeps its stored value, for
    the pod and for each condition, matched by type in order (``preserveOldObservedGeneration``:
    a writer that does not know the field cannot erase another's)."""
    meta = new.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    if "ownerReferences" in old_meta:
        meta["ownerReferences"] = copy_json(old_meta["ownerReferences"])
    else:
        meta.pop("ownerReferences", None)
    status = new.get("status")
    old_status = old.get("status")
    if not isinstance(status, dict) or not isinstance(old_status, Mapping):
        return
    if not status.get("qosClass") and old_status.get("qosClass"):
        status["qosClass"] = old_status["qosClass"]
    if not status.get("observedGeneration") and old_status.get("observedGeneration"):
        status["observedGeneration"] = old_status["observedGeneration"]
    remembered: dict[Any, list[Any]] = {}
    for condition in old_status.get("conditions") or ():
        if isinstance(condition, Mapping):
            remembered.setdefault(condition.get("type"), []).append(
                condition.get("observedGeneration")
            )
    for condition in status.get("conditions") or ():
        if not isinstance(condition, dict):
            continue
        queue = remembered.get(condition.get("type"))
        previous = queue.pop(0) if queue else None
        if not condition.get("observedGeneration") and previous:
            condition["observedGeneration"] = previous


def pod_grace_period(pod: Mapping[str, Any], requested: Any) -> int:
    """Upstream's pod ``CheckGracefulDelete``: a pod bound to a node and not finished gets the
    requested grace period (default: its ``terminationGracePeriodSeconds``); any other goes at
    once, as no node has to stop it."""
    spec = pod.get("spec", {})
    if not spec.get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds", 30)
    try:
        grace = int(requested)
    except (TypeError, ValueError):
        raise Rejected(400, f"gracePeriodSeconds: invalid value {requested!r}") from None
    return max(grace, 0)


# -- storage -----------------------------------------------------------------------------------


def _add_finalizer(obj: dict[str, Any], finalizer: str) -> None:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    finalizers = meta.get("finalizers")
    if finalizers is None:
        meta["finalizers"] = [finalizer]
    elif isinstance(finalizers, list) and finalizer not in finalizers:
        finalizers.append(finalizer)


def admit_persistent_volume_claim(claim: dict[str, Any], objects: ObjectReader) -> None:
    """Upstream's ``DefaultStorageClass`` admission plugin (a claim that names no class, not
    even ``""``, gets the default class, if there is one) and ``StorageObjectInUseProtection``
    (the ``kubernetes.io/pvc-protection`` finalizer, so a claim a pod uses outlives the pod)."""
    spec = claim.get("spec")
    meta = claim.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    has_beta = isinstance(annotations, Mapping) and BETA_STORAGE_CLASS_ANNOTATION in annotations
    if isinstance(spec, dict) and spec.get("storageClassName") is None and not has_beta:
        chosen = default_class(objects.list(*_STORAGE_CLASS))
        if chosen is not None:
            spec["storageClassName"] = chosen["metadata"]["name"]
    _add_finalizer(claim, PVC_PROTECTION_FINALIZER)


def admit_persistent_volume(volume: dict[str, Any], objects: ObjectReader) -> None:
    """Upstream's ``StorageObjectInUseProtection`` for volumes: ``kubernetes.io/pv-protection``,
    so a volume bound to a claim is not removed under it."""
    _add_finalizer(volume, PV_PROTECTION_FINALIZER)


def _storage_request(claim: Mapping[str, Any]) -> Quantity | None:
    spec = claim.get("spec")
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    if not isinstance(requests, Mapping) or "storage" not in requests:
        return None
    try:
        return Quantity.from_json(requests["storage"])
    except (ValueError, ArithmeticError):
        return None  # validation reports it


def admit_persistent_volume_claim_resize(
    claim: dict[str, Any], old: Mapping[str, Any], objects: ObjectReader
) -> None:
    """Upstream's ``PersistentVolumeClaimResize`` admission plugin: a claim's storage request
    may only grow when it is bound and its class says ``allowVolumeExpansion: true`` (the
    default ``local-path`` class does not, as in k3s)."""
    new_size, old_size = _storage_request(claim), _storage_request(old)
    if new_size is None or old_size is None or new_size <= old_size:
        return
    name = (claim.get("metadata") or {}).get("name", "")
    forbidden = f'persistentvolumeclaims "{name}" is forbidden: '
    if (old.get("status") or {}).get("phase") != "Bound":
        raise Rejected(403, forbidden + "Only bound persistent volume claims can be expanded")
    class_name = claim_class(old)
    storage_class = objects.get(*_STORAGE_CLASS, class_name) if class_name else None
    if storage_class is None or storage_class.get("allowVolumeExpansion") is not True:
        raise Rejected(
            403,
            forbidden + "only dynamically provisioned pvc can be resized and the storageclass "
            "that provisions the pvc must support resize",
        )


# -- revisioned workloads and CronJobs ---------------------------------------------------------


def _unparsable_generation(obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    present = isinstance(annotations, Mapping) and TEMPLATE_GENERATION_ANNOTATION in annotations
    return present and template_generation(obj) is None


def _set_annotation(obj: dict[str, Any], key: str, value: str) -> None:
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    annotations[key] = value


def _rolling_update(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec")
    strategy = spec.get("updateStrategy") if isinstance(spec, Mapping) else None
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, Mapping) else None
    return rolling if isinstance(rolling, dict) else None


def prepare_stateful_set_for_create(obj: dict[str, Any]) -> None:
    """Upstream's StatefulSet ``PrepareForCreate``: no status but the counters apps/v1
    always prints, and no ``maxUnavailable`` (the ``MaxUnavailableStatefulSet`` gate is off
    in v1.36)."""
    obj["status"] = {"replicas": 0, "availableReplicas": 0}
    rolling = _rolling_update(obj)
    if rolling is not None:
        rolling.pop("maxUnavailable", None)


def prepare_stateful_set_for_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's ``dropStatefulSetDisabledFields``: ``maxUnavailable`` is kept only by a
    StatefulSet that already had it."""
    old_rolling = _rolling_update(old)
    if old_rolling is not None and old_rolling.get("maxUnavailable") is not None:
        return
    rolling = _rolling_update(new)
    if rolling is not None:
        rolling.pop("maxUnavailable", None)


def prepare_daemon_set_for_create(obj: dict[str, Any]) -> None:
    """Upstream's DaemonSet ``PrepareForCreate``: no status but the counters apps/v1 always
    prints, and a template generation of at least 1 (apps/v1 shows the internal
    ``spec.templateGeneration`` as an annotation, which the controller labels pods with)."""
    obj["status"] = {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    if _unparsable_generation(obj):
        return  # apps/v1's conversion refuses it; validation says so
    generation = template_generation(obj)
    if generation is None or generation < 1:
        _set_annotation(obj, TEMPLATE_GENERATION_ANNOTATION, "1")


def finish_daemon_set_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's DaemonSet ``PrepareForUpdate``: the template generation is the stored one,
    plus one when the (defaulted) template changed; a writer cannot set it (but one that
    is not an integer is refused, as apps/v1's conversion refuses it)."""
    if _unparsable_generation(new):
        return
    generation = template_generation(old) or 0
    new_spec, old_spec = new.get("spec"), old.get("spec")
    new_template = new_spec.get("template") if isinstance(new_spec, Mapping) else None
    old_template = old_spec.get("template") if isinstance(old_spec, Mapping) else None
    if new_template != old_template:
        generation += 1
    _set_annotation(new, TEMPLATE_GENERATION_ANNOTATION, str(generation))


def prepare_daemon_set_status_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """The status subresource keeps the whole stored spec, the template generation too."""
    generation = template_generation(old)
    if generation is not None:
        _set_annotation(new, TEMPLATE_GENERATION_ANNOTATION, str(generation))


def prepare_cron_job_for_create(obj: dict[str, Any]) -> None:
    """Upstream's CronJob ``PrepareForCreate``: no status."""
    obj["status"] = {}
