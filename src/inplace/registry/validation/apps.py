"""StatefulSets, DaemonSets and ControllerRevisions (upstream's
``pkg/apis/apps/validation``): the objects, their updates and their status.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.defaults import TEMPLATE_GENERATION_ANNOTATION
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    PERCENT_RE,
    Bare,
    FieldError,
    GoStringMap,
    as_int,
    as_list,
    as_map,
    as_str,
    forbidden,
    index_path,
    invalid,
    lookup,
    name_is_dns_label,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    objects_in,
    or_empty,
    required,
)
from inplace.api.validation.meta import (
    selector_is_empty,
    selector_matches,
    template_labels,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.api.validation.pods import validate_pod_template
from inplace.registry.validation.storage import validate_pvc_spec
from inplace.registry.validation.workloads import validate_int_or_percent

__all__ = [
    "int_or_percent_value",
    "template_generation",
    "validate_controller_revision",
    "validate_controller_revision_update",
    "validate_daemon_set",
    "validate_daemon_set_status_update",
    "validate_daemon_set_update",
    "validate_stateful_set",
    "validate_stateful_set_status_update",
    "validate_stateful_set_update",
]

_POD_MANAGEMENT_POLICIES: Final = ("OrderedReady", "Parallel")
_RETENTION_POLICIES: Final = ("Retain", "Delete")
_STATEFUL_SET_SPEC_MUTABLE: Final = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STATEFUL_SET_SPEC_FORBIDDEN: Final = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)
_GREATER_THAN_REPLICAS: Final = "cannot be greater than status.replicas"


def int_or_percent_value(value: object) -> int:
    """Upstream ``getIntOrPercentValue``: a percentage's number, an integer itself, else 0."""
    if isinstance(value, str):
        return int(value[:-1]) if PERCENT_RE.fullmatch(value) else 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


# -- shared --------------------------------------------------------------------------------------


def _validate_stateful_set_selector(errs: list[FieldError], selector: object) -> bool:
    """A selector's own rules (a present one is validated; the empty one is refused); True
    when upstream's ``LabelSelectorAsSelector`` would accept it (an absent selector selects
    nothing, so the template check that follows reports it too)."""
    if selector is None:
        return True
    usable = validate_label_selector(errs, selector, "spec.selector")
    if isinstance(selector, Mapping) and selector_is_empty(selector):
        errs.append(invalid("spec.selector", selector, "empty selector is invalid for statefulset"))
    return usable


def _check_template_selected(
    errs: list[FieldError], selector: object, template: Mapping[str, Any]
) -> None:
    """The template's labels must be selected (an absent selector selects nothing)."""
    labels = template_labels(template)
    if not (isinstance(selector, Mapping) and selector_matches(selector, labels)):
        errs.append(
            invalid(
                "spec.template.metadata.labels",
                GoStringMap(lookup(template, "metadata", "labels")),
                "`selector` does not match template `labels`",
            )
        )


def _check_long_running_template(
    errs: list[FieldError], template: Mapping[str, Any], *, kind: str
) -> None:
    """Pods of a StatefulSet or DaemonSet always restart and have no deadline."""
    restart = lookup(template, "spec", "restartPolicy")
    if restart != "Always":
        errs.append(
            not_supported(
                "spec.template.spec.restartPolicy",
                restart if isinstance(restart, str) else "",
                ("Always",),
            )
        )
    if lookup(template, "spec", "activeDeadlineSeconds") is not None:
        errs.append(
            forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )


def _check_collision_count(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``IsDecremented`` of ``status.collisionCount``."""
    new_count, old_count = (
        lookup(new, "status", "collisionCount"),
        lookup(old, "status", "collisionCount"),
    )
    if not isinstance(old_count, int):
        return
    if new_count is None or (isinstance(new_count, int) and new_count < old_count):
        errs.append(invalid("status.collisionCount", new_count or 0, "cannot be decremented"))


# -- StatefulSet ---------------------------------------------------------------------------------


def _validate_stateful_set_strategy(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    path = "spec.updateStrategy"
    strategy = as_map(errs, spec.get("updateStrategy"), path)
    strategy_type = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if not strategy_type:
        errs.append(required(path))
    elif strategy_type == "OnDelete":
        if rolling is not None:
            errs.append(
                invalid(
                    f"{path}.rollingUpdate",
                    rolling,
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif strategy_type == "RollingUpdate":
        if rolling is not None:
            rolling_map = as_map(errs, rolling, f"{path}.rollingUpdate")
            nonnegative(errs, rolling_map.get("partition"), f"{path}.rollingUpdate.partition")
            unavailable = rolling_map.get("maxUnavailable")
            if unavailable is not None:
                unavailable_path = f"{path}.rollingUpdate.maxUnavailable"
                validate_int_or_percent(errs, unavailable, unavailable_path)
                if int_or_percent_value(unavailable) == 0:
                    errs.append(invalid(unavailable_path, Bare(str(unavailable)), "cannot be 0"))
    else:
        errs.append(invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'"))


def _template_with_claim_volumes(template: object, spec: Mapping[str, Any]) -> object:
    """The template as upstream validates it: the controller sets ``hostname`` and
    ``subdomain``, and adds a volume for each claim template (so mounts may name them)."""
    claims = objects_in(spec.get("volumeClaimTemplates"))
    pod_spec = lookup(template, "spec")
    if not isinstance(pod_spec, Mapping):
        return template
    if not (pod_spec.get("subdomain") or pod_spec.get("hostname") or claims):
        return template
    result = copy.deepcopy(dict(template)) if isinstance(template, Mapping) else template
    assert isinstance(result, dict)
    new_spec = result["spec"]
    new_spec.pop("subdomain", None)
    new_spec.pop("hostname", None)
    if claims:
        names = [lookup(c, "metadata", "name") for c in claims]
        claim_volumes = {
            name: {"name": name, "persistentVolumeClaim": {"claimName": name}}
            for name in names
            if isinstance(name, str)
        }
        volumes = new_spec.get("volumes")
        own = [
            v
            for v in (volumes if isinstance(volumes, list) else [])
            if not (isinstance(v, Mapping) and v.get("name") in claim_volumes)
        ]
        new_spec["volumes"] = [*claim_volumes.values(), *own]
    return result


def _validate_stateful_set_spec(
    errs: list[FieldError], obj: Mapping[str, Any], *, create: bool, template_checked: bool
) -> None:
    """Upstream ``ValidateStatefulSetSpec``; an update tolerates a stored invalid service
    name and claim templates (both immutable), and skips the pod template's rules when the
    stored spec already failed them."""
    spec = as_map(errs, obj.get("spec"), "spec")
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(required("spec.podManagementPolicy"))
    elif policy not in _POD_MANAGEMENT_POLICIES:
        errs.append(
            invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
        )
    _validate_stateful_set_strategy(errs, spec)
    retention_path = "spec.persistentVolumeClaimRetentionPolicy"
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        retention_map = as_map(errs, retention, retention_path)
        for key in ("whenDeleted", "whenScaled"):
            value = retention_map.get(key)
            if value not in _RETENTION_POLICIES:
                errs.append(
                    not_supported(
                        f"{retention_path}.{key}",
                        value if isinstance(value, str) else "",
                        _RETENTION_POLICIES,
                    )
                )
    claims_path = "spec.volumeClaimTemplates"
    claims = objects_in(as_list(errs, spec.get("volumeClaimTemplates"), claims_path))
    if create:
        for i, claim in enumerate(claims):
            claim_spec_path = f"{index_path(claims_path, i)}.spec"
            validate_pvc_spec(
                errs, as_map(errs, claim.get("spec"), claim_spec_path), claim_spec_path
            )
    nonnegative(errs, spec.get("replicas"), "spec.replicas")
    nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    ordinals = spec.get("ordinals")
    if ordinals is not None:
        nonnegative(
            errs, as_map(errs, ordinals, "spec.ordinals").get("start"), "spec.ordinals.start"
        )
    service = as_str(errs, spec.get("serviceName"), "spec.serviceName")
    if create and service:
        errs.extend(
            invalid("spec.serviceName", service, msg) for msg in name_is_dns_label(service, False)
        )
    selector = spec.get("selector")
    if selector is None:
        errs.append(required("spec.selector"))
    usable = _validate_stateful_set_selector(errs, selector)
    template = or_empty(spec.get("template"))
    if not usable:
        errs.append(invalid("spec.selector", selector, ""))
    else:
        if not (isinstance(selector, Mapping) and selector_is_empty(selector)):
            _check_template_selected(errs, selector, template)
        if template_checked:
            validate_pod_template(
                errs, _template_with_claim_volumes(spec.get("template"), spec), "spec.template"
            )
    _check_long_running_template(errs, template, kind="StatefulSet")


def validate_stateful_set(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateStatefulSet``: a DNS-label name (it names the pods) and the spec."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_label)
    _validate_stateful_set_spec(errs, obj, create=True, template_checked=True)


def validate_stateful_set_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateStatefulSetUpdate``: a valid spec, changed only in the fields a
    rolling update can follow."""
    validate_object_meta_update(errs, new, old)
    old_errs: list[FieldError] = []
    _validate_stateful_set_spec(old_errs, old, create=False, template_checked=True)
    _validate_stateful_set_spec(errs, new, create=False, template_checked=not old_errs)
    new_spec, old_spec = new.get("spec"), old.get("spec")
    if not isinstance(new_spec, Mapping) or not isinstance(old_spec, Mapping):
        return
    fixed_new = {k: v for k, v in new_spec.items() if k not in _STATEFUL_SET_SPEC_MUTABLE}
    fixed_old = {k: v for k, v in old_spec.items() if k not in _STATEFUL_SET_SPEC_MUTABLE}
    if semantic(fixed_new) != semantic(fixed_old):
        errs.append(forbidden("spec", _STATEFUL_SET_SPEC_FORBIDDEN))


def validate_stateful_set_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateStatefulSetStatusUpdate``: counters not negative, none above
    ``replicas``, ``availableReplicas`` not above ``readyReplicas``, the collision count
    never decremented."""
    status = as_map(errs, new.get("status"), "status")
    counts: dict[str, int] = {}
    for key in (
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "observedGeneration",
        "collisionCount",
    ):
        nonnegative(errs, status.get(key), f"status.{key}")
        value = as_int([], status.get(key), "")
        counts[key] = value or 0
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(invalid(f"status.{key}", counts[key], _GREATER_THAN_REPLICAS))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(
            invalid(
                "status.availableReplicas",
                counts["availableReplicas"],
                "cannot be greater than status.readyReplicas",
            )
        )
    validate_status_metadata(errs, new, old)
    _check_collision_count(errs, new, old)


# -- DaemonSet -----------------------------------------------------------------------------------


def _validate_rolling_update_daemon_set(errs: list[FieldError], rolling: Mapping[str, Any]) -> None:
    """Upstream ``ValidateRollingUpdateDaemonSet``: each an integer or a percentage, and
    exactly one of them not zero."""
    path = "spec.updateStrategy.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    validate_int_or_percent(
        errs, unavailable if unavailable is not None else 0, f"{path}.maxUnavailable"
    )
    validate_int_or_percent(errs, surge if surge is not None else 0, f"{path}.maxSurge")
    has_unavailable = int_or_percent_value(unavailable) != 0
    has_surge = int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(
            invalid(
                f"{path}.maxSurge",
                Bare(str(surge)),
                "may not be set when maxUnavailable is non-zero",
            )
        )
    elif not has_unavailable and not has_surge:
        errs.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))


def _validate_daemon_set_strategy(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    path = "spec.updateStrategy"
    strategy = as_map(errs, spec.get("updateStrategy"), path)
    strategy_type = strategy.get("type")
    if strategy_type == "OnDelete":
        return
    if strategy_type == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            errs.append(required(f"{path}.rollingUpdate"))
        else:
            _validate_rolling_update_daemon_set(
                errs, as_map(errs, rolling, f"{path}.rollingUpdate")
            )
        return
    errs.append(not_supported(path, strategy, ("RollingUpdate", "OnDelete")))


_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


def template_generation(obj: object) -> int | None:
    """A DaemonSet's template generation, from its annotation as Go's ``strconv.ParseInt``
    reads it; None when absent or not an integer."""
    value = lookup(obj, "metadata", "annotations", TEMPLATE_GENERATION_ANNOTATION)
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        return None
    return int(value, 10)


def _validate_daemon_set_spec(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateDaemonSetSpec``."""
    spec = as_map(errs, obj.get("spec"), "spec")
    selector = spec.get("selector")
    if selector is not None:
        validate_label_selector(errs, selector, "spec.selector")
    template = or_empty(spec.get("template"))
    if selector is None or validate_label_selector([], selector, "spec.selector"):
        _check_template_selected(errs, selector, template)
    if isinstance(selector, Mapping) and selector_is_empty(selector):
        errs.append(invalid("spec.selector", selector, "empty selector is invalid for daemonset"))
    validate_pod_template(errs, spec.get("template"), "spec.template")
    _check_long_running_template(errs, template, kind="DaemonSet")
    nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    generation = template_generation(obj)
    if generation is not None and generation < 0:
        errs.append(
            invalid("spec.templateGeneration", generation, "must be greater than or equal to 0")
        )
    _validate_daemon_set_strategy(errs, spec)
    nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")


def _check_template_generation_annotation(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """apps/v1's conversion refuses an annotation that is not a base-10 integer."""
    value = lookup(obj, "metadata", "annotations", TEMPLATE_GENERATION_ANNOTATION)
    if value is not None and template_generation(obj) is None:
        errs.append(
            invalid(
                f"metadata.annotations[{TEMPLATE_GENERATION_ANNOTATION}]",
                value,
                "must be an integer (the DaemonSet's template generation)",
            )
        )


def validate_daemon_set(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateDaemonSet``."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    _check_template_generation_annotation(errs, obj)
    _validate_daemon_set_spec(errs, obj)


def validate_daemon_set_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateDaemonSetUpdate``: the selector is immutable (the template
    generation is the server's, see
    :func:`inplace.registry.lifecycle.prepare_daemon_set_update`)."""
    validate_object_meta_update(errs, new, old)
    new_sel, old_sel = lookup(new, "spec", "selector"), lookup(old, "spec", "selector")
    if semantic(new_sel) != semantic(old_sel):
        errs.append(invalid("spec.selector", new_sel, IMMUTABLE_MSG))
    _check_template_generation_annotation(errs, new)
    _validate_daemon_set_spec(errs, new)


def validate_daemon_set_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateDaemonSetStatusUpdate``: counters not negative, the collision
    count never decremented."""
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    for key in (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ):
        nonnegative(errs, status.get(key), f"status.{key}")
    _check_collision_count(errs, new, old)


# -- ControllerRevision --------------------------------------------------------------------------


def _validate_revision(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    nonnegative(errs, obj.get("revision"), "revision")


def validate_controller_revision(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateControllerRevisionCreate``: a revision number and a JSON object."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    _validate_revision(errs, obj)
    data = obj.get("data")
    if data is None:
        errs.append(required("data", "data is mandatory"))
    elif not isinstance(data, Mapping):
        errs.append(required("data", "data must be a valid JSON object"))


def validate_controller_revision_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateControllerRevisionUpdate``: ``data`` never changes."""
    validate_object_meta_update(errs, new, old)
    validate_object_meta(errs, new, namespaced=True, name_fn=name_is_dns_subdomain)
    _validate_revision(errs, new)
    if semantic(new.get("data")) != semantic(old.get("data")):
        errs.append(invalid("data", new.get("data"), IMMUTABLE_MSG))
