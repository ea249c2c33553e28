"""Deployments, ReplicaSets, Jobs and PodDisruptionBudgets (upstream apps, batch and policy
validation): the objects, their updates and their status.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from inplace.api import resources
from inplace.api.defaults import default_pod
from inplace.api.names import regex_error as _regex_error
from inplace.api.podtemplates import without_resizable
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    NEGATIVE_MSG,
    PERCENT_FMT,
    PERCENT_MSG,
    PERCENT_RE,
    Bare,
    FieldError,
    GoStringMap,
    as_int,
    as_map,
    check_bool,
    forbidden,
    invalid,
    lookup,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
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
from inplace.api.validation.resize import validate_pod_resize

# -- workloads -----------------------------------------------------------------------------------


def validate_int_or_percent(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if isinstance(value, str):
        if not PERCENT_RE.fullmatch(value):
            errs.append(
                invalid(path, Bare(value), _regex_error(PERCENT_MSG, PERCENT_FMT, "1%", "93%"))
            )
        elif int(value[:-1]) > 100:
            errs.append(invalid(path, Bare(value), "must not be greater than 100%"))
    elif isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            errs.append(invalid(path, value, NEGATIVE_MSG))
    else:
        errs.append(invalid(path, value, "must be an integer or percentage (e.g '5%')"))


def int_or_percent_is_zero(value: object) -> bool:
    if isinstance(value, str) and PERCENT_RE.fullmatch(value):
        return int(value[:-1]) == 0
    return value == 0 and not isinstance(value, bool)


def _validate_replica_template(
    errs: list[FieldError], spec: Mapping[str, Any], *, kind: str
) -> None:
    """A Deployment's or ReplicaSet's selector and template (upstream
    ``ValidatePodTemplateSpecForReplicaSet``)."""
    selector_value = spec.get("selector")
    usable = False
    if selector_value is None:
        errs.append(required("spec.selector"))
    else:
        usable = validate_label_selector(errs, selector_value, "spec.selector")
        if isinstance(selector_value, Mapping) and selector_is_empty(selector_value):
            errs.append(
                invalid("spec.selector", selector_value, "empty selector is invalid for deployment")
            )
            usable = False
    template = validate_pod_template(errs, spec.get("template"), "spec.template")
    if usable and isinstance(selector_value, Mapping):
        labels = template_labels(template)
        if not selector_matches(selector_value, labels):
            errs.append(
                invalid(
                    "spec.template.metadata.labels",
                    GoStringMap(lookup(template, "metadata", "labels")),
                    "`selector` does not match template `labels`",
                )
            )
    restart = lookup(template, "spec", "restartPolicy")
    if isinstance(restart, str) and restart and restart != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if lookup(template, "spec", "activeDeadlineSeconds") is not None:
        errs.append(
            forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )


def validate_deployment(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    nonnegative(errs, spec.get("replicas"), "spec.replicas")
    _validate_replica_template(errs, spec, kind="ReplicaSet")
    strategy = as_map(errs, spec.get("strategy"), "spec.strategy")
    strategy_type = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if strategy_type == "Recreate":
        if rolling is not None:
            errs.append(
                forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif strategy_type == "RollingUpdate":
        if rolling is None:
            errs.append(
                required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")
            )
        else:
            rolling_map = as_map(errs, rolling, "spec.strategy.rollingUpdate")
            unavailable = rolling_map.get("maxUnavailable")
            surge = rolling_map.get("maxSurge")
            validate_int_or_percent(errs, unavailable, "spec.strategy.rollingUpdate.maxUnavailable")
            validate_int_or_percent(errs, surge, "spec.strategy.rollingUpdate.maxSurge")
            if int_or_percent_is_zero(unavailable) and int_or_percent_is_zero(surge):
                errs.append(
                    invalid(
                        "spec.strategy.rollingUpdate.maxUnavailable",
                        Bare(str(unavailable)),
                        "may not be 0 when `maxSurge` is 0",
                    )
                )
    else:
        errs.append(not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate")))
    min_ready = as_int(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = as_int(errs, spec.get("progressDeadlineSeconds"), "spec.progressDeadlineSeconds")
    if deadline is not None:
        if deadline < 0:
            errs.append(invalid("spec.progressDeadlineSeconds", deadline, NEGATIVE_MSG))
        if deadline <= (min_ready or 0):
            errs.append(
                invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    check_bool(errs, spec.get("paused"), "spec.paused")


def validate_replica_set(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    nonnegative(errs, spec.get("replicas"), "spec.replicas")
    nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    _validate_replica_template(errs, spec, kind="ReplicaSet")


def validate_deployment_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateDeploymentUpdate``: a valid deployment whose selector is unchanged."""
    validate_object_meta_update(errs, new, old)
    validate_deployment(errs, new)
    _validate_selector_update(errs, new, old)


def validate_replica_set_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateReplicaSetUpdate``: a valid replica set whose selector is unchanged."""
    validate_object_meta_update(errs, new, old)
    validate_replica_set(errs, new)
    _validate_selector_update(errs, new, old)


def _validate_selector_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    new_sel, old_sel = lookup(new, "spec", "selector"), lookup(old, "spec", "selector")
    if semantic(new_sel) != semantic(old_sel):
        errs.append(invalid("spec.selector", new_sel, IMMUTABLE_MSG))


_COMPLETION_MODES: Final = ("NonIndexed", "Indexed")
_POD_REPLACEMENT_POLICIES: Final = ("TerminatingOrFailed", "Failed")


def validate_job_spec(
    errs: list[FieldError], spec: Mapping[str, Any], path: str
) -> Mapping[str, Any]:
    """Upstream ``validateJobSpec`` at `path` (a Job's ``spec``, a CronJob's
    ``spec.jobTemplate.spec``): everything but the selector. Returns the template."""
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        nonnegative(errs, spec.get(key), f"{path}.{key}")
    for key in ("suspend", "manualSelector"):
        check_bool(errs, spec.get(key), f"{path}.{key}")
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            errs.append(not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
        elif mode == "Indexed" and spec.get("completions") is None:
            errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in _POD_REPLACEMENT_POLICIES:
        errs.append(
            not_supported(f"{path}.podReplacementPolicy", replacement, _POD_REPLACEMENT_POLICIES)
        )
    template = validate_pod_template(errs, spec.get("template"), f"{path}.template")
    restart = lookup(template, "spec", "restartPolicy")
    restart_path = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", "", None):
        errs.append(required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(
            not_supported(
                restart_path, restart if isinstance(restart, str) else "", ("OnFailure", "Never")
            )
        )
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(
            invalid(
                restart_path,
                restart,
                'only "Never" is supported when podFailurePolicy is specified',
            )
        )
    return template


def validate_job(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateJob``. The selector may be absent on input: the job strategy
    generates it from the uid (see ``apply_defaults``)."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    template = validate_job_spec(errs, spec, "spec")
    selector = spec.get("selector")
    if selector is None:
        if spec.get("manualSelector") is True:
            errs.append(required("spec.selector"))
    else:
        usable = validate_label_selector(errs, selector, "spec.selector")
        if (
            usable
            and isinstance(selector, Mapping)
            and not selector_matches(selector, template_labels(template))
        ):
            errs.append(
                invalid(
                    "spec.template.metadata.labels",
                    GoStringMap(lookup(template, "metadata", "labels")),
                    "`selector` does not match template `labels`",
                )
            )


def _pod_of(template: object) -> dict[str, Any]:
    """A defaulted pod made from a template, to ask the ``pods/resize`` rules about it."""
    meta = template.get("metadata") if isinstance(template, Mapping) else None
    spec = template.get("spec") if isinstance(template, Mapping) else None
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "template", "namespace": "default"},
        "spec": copy.deepcopy(spec) if isinstance(spec, Mapping) else {},
    }
    if isinstance(meta, Mapping):
        for key in ("labels", "annotations"):
            if isinstance(meta.get(key), Mapping):
                pod["metadata"][key] = dict(meta[key])
    default_pod(pod, True)
    return pod


def _under_template(path: str) -> str:
    return f"spec.template.{path}" if path else "spec.template"


def _job_template_errors(new_template: object, old_template: object) -> list[FieldError]:
    """A Job's template may change only in its containers' resources (ours; upstream: not at
    all), and only as far as its running pods can follow in place: the change must pass the
    ``pods/resize`` rules (which also keep ``resizePolicy`` as it is), whose errors are
    reported under ``spec.template``."""
    if semantic(without_resizable(new_template)) != semantic(without_resizable(old_template)):
        return [invalid("spec.template", new_template, IMMUTABLE_MSG)]
    if semantic(new_template) == semantic(old_template):
        return []
    old_pod, new_pod = _pod_of(old_template), _pod_of(new_template)
    # What the API server stored for the running pods (a resize keeps their status).
    old_pod["status"] = new_pod["status"] = {"qosClass": resources.qos_class(old_pod)}
    pod_errs: list[FieldError] = []
    validate_pod_resize(pod_errs, new_pod, old_pod)
    return [dataclasses.replace(e, field=_under_template(e.field)) for e in pod_errs]


def validate_job_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateJobUpdate``: selector, completions, completion mode and template
    unchanged, except the template's container resources (ours: the workload-resize
    controller resizes the running pods in place to match)."""
    validate_object_meta_update(errs, new, old)
    validate_job(errs, new)
    _validate_selector_update(errs, new, old)
    for key in ("completions", "completionMode"):
        new_value, old_value = lookup(new, "spec", key), lookup(old, "spec", key)
        if semantic(new_value) != semantic(old_value):
            errs.append(invalid(f"spec.{key}", new_value, IMMUTABLE_MSG))
    new_template, old_template = lookup(new, "spec", "template"), lookup(old, "spec", "template")
    errs.extend(_job_template_errors(new_template, old_template))


_UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def validate_pdb(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePodDisruptionBudget`` (policy/v1): at most one of minAvailable and
    maxUnavailable, each an integer or a percentage."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    if min_available is not None:
        validate_int_or_percent(errs, min_available, "spec.minAvailable")
    if max_unavailable is not None:
        validate_int_or_percent(errs, max_unavailable, "spec.maxUnavailable")
    if spec.get("selector") is not None:
        validate_label_selector(errs, spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, _UNHEALTHY_POD_EVICTION_POLICIES
            )
        )


def validate_pdb_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        nonnegative(errs, status.get(key), f"status.{key}")


def validate_deployment_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Deployments and replica sets: the replica counters are not negative."""
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    for key in (
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "fullyLabeledReplicas",
        "observedGeneration",
        "collisionCount",
        "terminatingReplicas",
    ):
        nonnegative(errs, status.get(key), f"status.{key}")


def validate_job_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        nonnegative(errs, status.get(key), f"status.{key}")
