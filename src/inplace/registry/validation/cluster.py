"""The other kinds: PriorityClasses, Leases, Events, Namespaces and Nodes (the autoscaling
CRDs are in :mod:`.autoscaling`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.names import (
    label_value_errors,
    qualified_name_errors,
)
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    DUPLICATE,
    IMMUTABLE_MSG,
    NEGATIVE_MSG,
    FieldError,
    as_int,
    as_list,
    as_map,
    as_str,
    check_bool,
    child_path,
    forbidden,
    invalid,
    lookup,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    required,
)
from inplace.api.validation.meta import (
    STANDARD_FINALIZERS,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.api.validation.pods import TAINT_EFFECTS, validate_preemption_policy
from inplace.api.validation.resources import (
    parse_quantity,
    quantity_value_checks,
)

# -- other kinds ---------------------------------------------------------------------------------

_HIGHEST_USER_PRIORITY: Final = 1_000_000_000
_SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


def validate_priority_class(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePriorityClass``: user classes at most 1e9, ``system-`` reserved."""
    meta = validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    raw_name = meta.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    value = as_int(errs, obj.get("value"), "value")
    global_default = obj.get("globalDefault")
    check_bool(errs, global_default, "globalDefault")
    if name.startswith("system-"):
        problem = ""
        if name not in _SYSTEM_PRIORITY_CLASSES:
            problem = f"{name} is not a known system priority class"
        elif value != _SYSTEM_PRIORITY_CLASSES[name]:
            problem = f"value of {name} PriorityClass must be {_SYSTEM_PRIORITY_CLASSES[name]}"
        elif global_default is True:
            problem = f"globalDefault of {name} PriorityClass must be false"
        if problem:
            errs.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only. "
                    f"error: {problem}",
                )
            )
    elif value is not None and value > _HIGHEST_USER_PRIORITY:
        errs.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {_HIGHEST_USER_PRIORITY}",
            )
        )
    if obj.get("preemptionPolicy") is not None:
        validate_preemption_policy(errs, obj.get("preemptionPolicy"), "preemptionPolicy")


def validate_priority_class_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePriorityClassUpdate``: value and preemption policy are immutable."""
    validate_object_meta_update(errs, new, old)
    validate_priority_class(errs, new)
    if semantic(new.get("value")) != semantic(old.get("value")):
        errs.append(forbidden("value", "may not be changed in an update."))
    if semantic(new.get("preemptionPolicy")) != semantic(old.get("preemptionPolicy")):
        errs.append(invalid("preemptionPolicy", new.get("preemptionPolicy"), IMMUTABLE_MSG))


def validate_lease(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    duration = as_int(errs, spec.get("leaseDurationSeconds"), "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = as_int(errs, spec.get("leaseTransitions"), "spec.leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(invalid("spec.leaseTransitions", transitions, NEGATIVE_MSG))
    as_str(errs, spec.get("holderIdentity"), "spec.holderIdentity")


def validate_event(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``legacyValidateEvent`` (core/v1), plus a required ``involvedObject`` (ours)."""
    meta = validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    involved = obj.get("involvedObject")
    if not involved:
        errs.append(required("involvedObject"))
    involved_map = as_map(errs, involved, "involvedObject")
    involved_ns = as_str(errs, involved_map.get("namespace"), "involvedObject.namespace")
    if not obj.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(
                    invalid(
                        "involvedObject.namespace", involved_ns, "does not match event.namespace"
                    )
                )
        elif namespace != involved_ns:
            errs.append(
                invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(
                invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
        for key in ("reportingComponent", "reportingInstance", "action", "reason"):
            if not obj.get(key):
                errs.append(required(key))
    event_type = obj.get("type")
    if event_type not in (None, "", "Normal", "Warning"):
        errs.append(not_supported("type", event_type, ("Normal", "Warning")))
    as_int(errs, obj.get("count"), "count")


def validate_namespace(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_label)
    spec = as_map(errs, obj.get("spec"), "spec")
    for i, finalizer in enumerate(as_list(errs, spec.get("finalizers"), "spec.finalizers")):
        text = as_str(errs, finalizer, f"spec.finalizers[{i}]")
        errs.extend(invalid("spec.finalizers", text, msg) for msg in qualified_name_errors(text))
        if "/" not in text and text not in STANDARD_FINALIZERS:
            errs.append(
                invalid(
                    "spec.finalizers",
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )


def validate_namespace_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateNamespaceStatusUpdate``: the phase follows the deletion timestamp."""
    validate_status_metadata(errs, new, old)
    phase = lookup(new, "status", "phase")
    if not lookup(new, "metadata", "deletionTimestamp"):
        if phase != "Active":
            errs.append(
                invalid(
                    "status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"
                )
            )
    elif phase != "Terminating":
        errs.append(
            invalid(
                "status.Phase",
                phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        )


def validate_node(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateNode``: name, taints (at ``metadata.taints``, sic), resources."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(objects_in(as_list(errs, spec.get("taints"), "spec.taints"))):
        idx = f"metadata.taints[{i}]"
        key = as_str(errs, taint.get("key"), child_path(idx, "key"))
        errs.extend(invalid(child_path(idx, "key"), key, msg) for msg in qualified_name_errors(key))
        value = as_str(errs, taint.get("value"), child_path(idx, "value"))
        msgs = label_value_errors(value)
        if msgs:
            errs.append(invalid(child_path(idx, "value"), value, ";".join(msgs)))
        effect = as_str(errs, taint.get("effect"), child_path(idx, "effect"))
        if not effect:
            errs.append(required(child_path(idx, "effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(child_path(idx, "effect"), effect, TAINT_EFFECTS))
        if (effect, key) in seen:
            errs.append(
                FieldError(DUPLICATE, idx, "taints must be unique by key and effect pair", taint)
            )
        seen.add((effect, key))
    check_bool(errs, spec.get("unschedulable"), "spec.unschedulable")
    _validate_node_resources(errs, obj)


def validate_node_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """A node's status: capacity and allocatable are valid quantities."""
    validate_status_metadata(errs, new, old)
    _validate_node_resources(errs, new)


def _validate_node_resources(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    status = as_map(errs, obj.get("status"), "status")
    for section in ("capacity", "allocatable"):
        for name, raw in as_map(errs, status.get(section), f"status.{section}").items():
            path = f"status.{section}.{name}"
            q = parse_quantity(errs, raw, path)
            if q is not None:
                quantity_value_checks(errs, str(name), q, path)
