"""The autoscaling.k8s.io CRDs: VerticalPodAutoscaler and VerticalPodAutoscalerCheckpoint.

The VPA's rules are its CRD schema's enums and minimums plus what upstream's admission
controller checks (kubernetes/autoscaler ``admission-controller/resource/vpa/validation.go``),
with its messages: ``updateMode`` is required once ``updatePolicy`` is given, ``minAllowed``
must not exceed ``maxAllowed``, CPU bounds are whole millicores and memory bounds whole bytes,
``controlledValues: RequestsAndLimits`` is forbidden on a container whose ``mode`` is ``Off``,
at most one recommender. ``startupBoost`` is refused as upstream refuses it while its feature
gate (``CPUStartupBoost``) is off; the ``InPlace`` mode and the per-VPA settings
(``evictAfterOOMSeconds``, ``oomBumpUpRatio``, ...) are accepted, as with upstream's
``InPlace`` and ``PerVPAConfig`` gates on. The checkpoint's schema has no required fields;
its types are checked from the CRD schema like any field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.quantity import Quantity
from inplace.api.validation.errors import (
    FieldError,
    as_int,
    as_list,
    as_map,
    as_str,
    child_path,
    duplicate,
    forbidden,
    index_path,
    invalid,
    key_path,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    required,
    too_many,
)
from inplace.api.validation.meta import validate_object_meta
from inplace.api.validation.pods import RESIZE_RESOURCES
from inplace.api.validation.resources import parse_quantity, parse_resource_list

__all__ = ["validate_vpa", "validate_vpa_checkpoint"]

UPDATE_MODES: Final = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")
CONTAINER_MODES: Final = ("Auto", "Off")
CONTROLLED_VALUES: Final = ("RequestsAndLimits", "RequestsOnly")
_AT_LEAST_ONE: Final = "must be greater than or equal to 1"


def validate_vpa(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """The VerticalPodAutoscaler CRD's schema and the VPA admission webhook's checks."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    target = spec.get("targetRef")
    if target is None:
        errs.append(required("spec.targetRef"))
    else:
        target_map = as_map(errs, target, "spec.targetRef")
        for key in ("kind", "name"):
            if not as_str(errs, target_map.get(key), f"spec.targetRef.{key}"):
                errs.append(required(f"spec.targetRef.{key}"))
        as_str(errs, target_map.get("apiVersion"), "spec.targetRef.apiVersion")
    if "updatePolicy" in spec:
        _validate_update_policy(errs, as_map(errs, spec.get("updatePolicy"), "spec.updatePolicy"))
    if "resourcePolicy" in spec:
        _validate_resource_policy(
            errs, as_map(errs, spec.get("resourcePolicy"), "spec.resourcePolicy")
        )
    if spec.get("startupBoost") is not None:
        errs.append(_startup_boost_forbidden("spec.startupBoost"))
    recommenders = as_list(errs, spec.get("recommenders"), "spec.recommenders")
    if len(recommenders) > 1:
        errs.append(too_many("spec.recommenders", len(recommenders), 1))
    for i, entry in enumerate(objects_in(recommenders)):
        if not as_str(errs, entry.get("name"), index_path("spec.recommenders", i) + ".name"):
            errs.append(required(child_path(index_path("spec.recommenders", i), "name")))


def _validate_update_policy(errs: list[FieldError], policy: Mapping[str, Any]) -> None:
    path = "spec.updatePolicy"
    mode = policy.get("updateMode")
    if mode is None:
        errs.append(
            required(
                child_path(path, "updateMode"), "updateMode is required if UpdatePolicy is used"
            )
        )
    elif mode not in UPDATE_MODES:
        errs.append(not_supported(child_path(path, "updateMode"), mode, UPDATE_MODES))
    min_replicas = as_int(errs, policy.get("minReplicas"), child_path(path, "minReplicas"))
    if min_replicas is not None and min_replicas <= 0:
        errs.append(
            invalid(child_path(path, "minReplicas"), min_replicas, "minReplicas has to be positive")
        )
    oom_path = child_path(path, "evictAfterOOMSeconds")
    evict_after = as_int(errs, policy.get("evictAfterOOMSeconds"), oom_path)
    if evict_after is not None and evict_after < 1:
        errs.append(invalid(oom_path, evict_after, _AT_LEAST_ONE))


def _validate_resource_policy(errs: list[FieldError], resource_policy: Mapping[str, Any]) -> None:
    policies_path = "spec.resourcePolicy.containerPolicies"
    names: set[str] = set()
    for i, container in enumerate(
        objects_in(as_list(errs, resource_policy.get("containerPolicies"), policies_path))
    ):
        idx = index_path(policies_path, i)
        name = as_str(errs, container.get("containerName"), child_path(idx, "containerName"))
        if not name:
            errs.append(required(child_path(idx, "containerName")))
        elif name in names:
            errs.append(duplicate(child_path(idx, "containerName"), name))
        names.add(name)
        mode = container.get("mode")
        if mode is not None and mode not in CONTAINER_MODES:
            errs.append(not_supported(child_path(idx, "mode"), mode, CONTAINER_MODES))
        controlled = container.get("controlledValues")
        if controlled is not None and controlled not in CONTROLLED_VALUES:
            errs.append(
                not_supported(child_path(idx, "controlledValues"), controlled, CONTROLLED_VALUES)
            )
        if mode == "Off" and controlled == "RequestsAndLimits":
            errs.append(
                forbidden(
                    child_path(idx, "controlledValues"),
                    "controlledValues shouldn't be specified if container scaling mode is off",
                )
            )
        res_path = child_path(idx, "controlledResources")
        for j, resource in enumerate(as_list(errs, container.get("controlledResources"), res_path)):
            if resource not in RESIZE_RESOURCES:
                errs.append(not_supported(index_path(res_path, j), resource, RESIZE_RESOURCES))
        _validate_bounds(errs, container, idx)
        _validate_per_vpa_settings(errs, container, idx)
        if container.get("startupBoost") is not None:
            errs.append(_startup_boost_forbidden(child_path(idx, "startupBoost")))


def _validate_bounds(errs: list[FieldError], container: Mapping[str, Any], idx: str) -> None:
    min_path, max_path = child_path(idx, "minAllowed"), child_path(idx, "maxAllowed")
    minimum = parse_resource_list(errs, container.get("minAllowed"), min_path)
    maximum = parse_resource_list(errs, container.get("maxAllowed"), max_path)
    for resource, low in minimum.items():
        _resolution(errs, key_path(min_path, resource), resource, low)
        high = maximum.get(resource)
        if high is not None and high < low:
            errs.append(
                invalid(
                    key_path(max_path, resource),
                    str(high),
                    f'max resource for {resource} is lower than min of "{low}"',
                )
            )
    for resource, high in maximum.items():
        _resolution(errs, key_path(max_path, resource), resource, high)


def _resolution(errs: list[FieldError], path: str, resource: str, value: Quantity) -> None:
    """Upstream's ``validateResourceResolution``: whole millicores, whole bytes."""
    if resource == "cpu" and value.nanos % 1_000_000:
        errs.append(invalid(path, str(value), "must be a whole number of milli CPUs"))
    if resource == "memory" and value.nanos % 1_000_000_000:
        errs.append(invalid(path, str(value), "must be a whole number of bytes"))


def _validate_per_vpa_settings(
    errs: list[FieldError], container: Mapping[str, Any], idx: str
) -> None:
    ratio_path = child_path(idx, "oomBumpUpRatio")
    if container.get("oomBumpUpRatio") is not None:
        ratio = parse_quantity(errs, container.get("oomBumpUpRatio"), ratio_path)
        if ratio is not None and ratio.milli_value() < 1000:
            errs.append(
                invalid(
                    ratio_path, ratio.milli_value() / 1000, "must be greater than or equal to 1.0"
                )
            )
    bump_path = child_path(idx, "oomMinBumpUp")
    if container.get("oomMinBumpUp") is not None:
        bump = parse_quantity(errs, container.get("oomMinBumpUp"), bump_path)
        if bump is not None and bump.sign() < 0:
            errs.append(invalid(bump_path, bump.value(), "must be greater than or equal to 0"))
    for key in ("memoryAggregationIntervalSeconds", "memoryAggregationIntervalCount"):
        value = as_int(errs, container.get(key), child_path(idx, key))
        if value is not None and value < 1:
            errs.append(invalid(child_path(idx, key), value, _AT_LEAST_ONE))


def _startup_boost_forbidden(path: str) -> FieldError:
    return forbidden(
        path,
        "in order to use startupBoost, you must enable feature gate CPUStartupBoost in the "
        "admission-controller args",
    )


def validate_vpa_checkpoint(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """The checkpoint CRD requires nothing beyond object metadata; its fields' types are
    checked from the schema on decoding, and ``bucketWeights`` is free-form there (as
    upstream's ``x-kubernetes-preserve-unknown-fields``)."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    for key in ("vpaObjectName", "containerName"):
        as_str(errs, spec.get(key), f"spec.{key}")
