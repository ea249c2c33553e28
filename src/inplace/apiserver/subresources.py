"""Pod and workload subresources beyond status and resize: binding, eviction, scale.

HTTP-free like `rest.py`: each takes the decoded body and returns the object to answer with.
(pods/log streams a file and lives in `logs.py`.)
"""

from __future__ import annotations

import copy
from typing import Any

from inplace.api.selectors import LabelSelector, SelectorError
from inplace.apiserver.apply import refusal
from inplace.apiserver.auth import User
from inplace.apiserver.crds.scale import custom_scale, set_replicas
from inplace.apiserver.errors import StatusError, bad_request, conflict, not_found
from inplace.apiserver.rest import REST
from inplace.apiserver.writes import check_preconditions
from inplace.registry.fieldmanager import FieldManager, scale_field_manager
from inplace.registry.kinds import Kind
from inplace.registry.managedfields import (
    ApplyConflict,
    ApplyRefused,
    parent_entries_after_scale,
    scale_entries,
    set_managed_fields,
)
from inplace.registry.patch import PatchError, apply_json_patch, apply_merge_patch
from inplace.registry.strategy import copy_json
from inplace.store import ConflictError, NotFoundError


async def bind(rest: REST, pods: Kind, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """pods/binding: set spec.nodeName once, and the PodScheduled condition, as upstream.

    The Binding's ``metadata.uid`` and ``metadata.resourceVersion`` are preconditions, as
    upstream's ``BindingREST``: our scheduler sends the version it decided on, so a pod
    resized (or re-created) after the decision is not bound with it (409; it is retried)."""
    if not isinstance(body, dict):
        raise bad_request("the body of a binding must be a Binding object")
    target = (body.get("target") or {}).get("name")
    if not target:
        raise StatusError(422, "target.name: Required value")
    meta = body.get("metadata") or {}
    preconditions = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    for _ in range(8):
        entry = await rest.get_entry(pods, namespace, name)
        check_preconditions(
            pods.plural, "", name, preconditions, entry.value["metadata"].get("uid"), entry.revision
        )
        pod = copy.deepcopy(entry.value)
        spec = pod.setdefault("spec", {})
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(
                pods.plural, "", name, "pod is being deleted, cannot be assigned to a host"
            )
        if spec.get("nodeName"):
            raise conflict(
                pods.plural,
                "",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        spec["nodeName"] = target
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rest.now(),
            }
        )
        status["conditions"] = conditions
        try:
            await rest.store.update(entry.key, pod, expected_revision=entry.revision)
        except ConflictError:
            continue
        except NotFoundError:  # deleted between the read and the write (found by the chaos storm)
            raise not_found(pods.plural, "", name) from None
        return _success()
    raise conflict(pods.plural, "", name)


async def evict(
    rest: REST, pods: Kind, pdbs: Kind, namespace: str, name: str, body: Any
) -> dict[str, Any]:
    """pods/eviction: delete the pod unless a PodDisruptionBudget forbids it (429).

    As upstream: a pod that is not running (pending, finished, already terminating) may always
    be evicted; otherwise every budget selecting the pod must allow a disruption, and the one
    that does is charged (disruptionsAllowed - 1, the pod recorded in disruptedPods) before
    the pod is deleted, so two evictions cannot spend the same disruption.
    """
    options = (body or {}).get("deleteOptions") or {} if isinstance(body, dict) else {}
    entry = await rest.get_entry(pods, namespace, name)
    pod = entry.value
    phase = pod.get("status", {}).get("phase")
    if pod["metadata"].get("deletionTimestamp") or phase in ("Pending", "Succeeded", "Failed"):
        await rest.delete(pods, namespace, name, options)
        return _success(201)
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for budget in rest.cache.entries(pdbs, namespace):
        try:
            selector = LabelSelector.from_dict(budget.value.get("spec", {}).get("selector"))
        except SelectorError:
            continue
        if selector.matches(labels):
            matching.append(budget)
    if len(matching) > 1:
        raise StatusError(
            500,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support.",
        )
    if matching:
        budget = matching[0]
        spec_status = budget.value.get("status", {})
        budget_name = budget.value["metadata"]["name"]
        generation = budget.value["metadata"].get("generation", 1)
        if spec_status.get("observedGeneration", 0) < generation:
            raise _too_many(
                budget_name,
                f"The disruption budget {budget_name} is still being processed by the server.",
            )
        allowed = int(spec_status.get("disruptionsAllowed", 0))
        if allowed <= 0:
            raise _too_many(
                budget_name,
                f"The disruption budget {budget_name} needs "
                f"{spec_status.get('desiredHealthy', 0)} healthy pods and has "
                f"{spec_status.get('currentHealthy', 0)} currently",
            )
        charged = copy.deepcopy(budget.value)
        charged["status"]["disruptionsAllowed"] = allowed - 1
        charged["status"].setdefault("disruptedPods", {})[name] = rest.now()
        try:
            await rest.store.update(budget.key, charged, expected_revision=budget.revision)
        except ConflictError:
            raise StatusError(
                429,
                "Operation cannot be fulfilled: the disruption budget changed; retry",
                reason="TooManyRequests",
            ) from None
    await rest.delete(pods, namespace, name, options)
    return _success(201)


def _too_many(budget: str, message: str) -> StatusError:
    return StatusError(
        429,
        "Cannot evict pod as it would violate the pod's disruption budget.",
        reason="TooManyRequests",
        details={"causes": [{"reason": "DisruptionBudget", "message": message}], "name": budget},
    )


def _success(code: int = 201) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


_SCALE_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def scale_of(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a Deployment, ReplicaSet or StatefulSet, or of a custom
    resource (its CRD's paths, `crds/scale.py`)."""
    meta = obj["metadata"]
    if kind.crd is not None and kind.crd.scale is not None:
        fields = {k: meta[k] for k in _SCALE_META if k in meta}
        scale = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": fields}
        return scale | custom_scale(kind.crd.scale, obj)
    selector = obj.get("spec", {}).get("selector") or {}
    try:
        selector_text = str(LabelSelector.from_dict(selector))
    except SelectorError:
        selector_text = ""
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
        "status": {"replicas": obj.get("status", {}).get("replicas", 0), "selector": selector_text},
    }


async def write_scale(
    rest: REST,
    kind: Kind,
    namespace: str | None,
    name: str,
    body: Any,
    patch_type: str | None,
    manager: str,
    force: bool = False,
    *,
    user: User | None,
    dry_run: bool = False,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """PUT or PATCH (`patch_type` given, server-side apply included) of `scale`: only
    spec.replicas reaches the object. The Scale's managedFields are the owners of the
    object's replicas, and whoever writes the Scale's replicas takes the object's (upstream's
    ScaleHandler). Admission sees the write as the request's ``user`` on subresource
    ``scale``, as upstream's; returns the Scale and admission's warnings."""
    scales = scale_field_manager()
    for _ in range(8):
        entry = await rest.get_entry(kind, namespace, name)
        parent_entries = entry.value.get("metadata", {}).get("managedFields")
        current = scale_of(kind, entry.value)
        entries = scale_entries(parent_entries)
        if entries is not None:
            current["metadata"]["managedFields"] = entries
        scale = _written_scale(kind, scales, current, body, patch_type, manager, rest.now(), force)
        if scale is None:
            return scale_of(kind, entry.value), ()
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise StatusError(
                422,
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: '
                f"{replicas!r}: must be greater than or equal to 0",
            )
        obj = copy_json(entry.value)
        if kind.crd is not None and kind.crd.scale is not None:
            set_replicas(kind.crd.scale, obj, replicas)
        else:
            obj.setdefault("spec", {})["replicas"] = replicas
        scale_after = scale.get("metadata", {}).get("managedFields")
        set_managed_fields(
            obj["metadata"],
            parent_entries_after_scale(parent_entries, scale_after, kind.api_version),
        )
        try:
            result = await rest._write(
                kind,
                namespace,
                name,
                entry,
                obj,
                subresource=None,
                dry_run=dry_run,
                strict_revision=True,
                user=user,
                managed_fields=True,
                admitted_as="scale",
            )
        except StatusError as exc:
            if exc.code == 409 and exc.reason == "Conflict":
                continue
            raise
        return scale_of(kind, result.obj), result.warnings
    raise conflict(kind.plural, kind.group, name)


def _written_scale(
    kind: Kind,
    scales: FieldManager,
    current: dict[str, Any],
    body: Any,
    patch_type: str | None,
    manager: str,
    now: str,
    force: bool,
) -> dict[str, Any] | None:
    """The Scale after the write, with its managedFields; None when an apply changes
    nothing."""
    if patch_type == "apply":
        if not isinstance(body, dict):
            raise bad_request("error decoding patch: the body must be a Scale object")
        try:
            return scales.apply(current, body, manager, now, force=force)
        except (ApplyConflict, ApplyRefused) as exc:
            raise refusal(exc, kind, body) from exc
    try:
        if patch_type is None:
            scale = body
        elif patch_type == "json":
            scale = apply_json_patch(current, body)
        else:
            scale = apply_merge_patch(current, body)
    except PatchError as exc:
        raise StatusError(422, str(exc)) from exc
    if not isinstance(scale, dict):
        raise bad_request("the body of the request must be a Scale object")
    scale = dict(scale)
    meta = dict(scale.get("metadata") or {})
    set_managed_fields(meta, scales.update(current, scale, manager, now))
    scale["metadata"] = meta
    return scale
