"""The ``pods/resize`` rules (upstream ``ValidatePodResize``, v1.33).

Only the cpu and memory requests and limits of containers and sidecars, and their
``resizePolicy``, may change; the QoS class must stay. See :func:`validate_pod_resize`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api import resources
from inplace.api.quantity import Quantity
from inplace.api.validation.equality import diff, semantic, semantic_quantity
from inplace.api.validation.errors import (
    FieldError,
    child_path,
    forbidden,
    invalid,
    key_path,
    lookup,
    objects_in,
    or_empty,
)
from inplace.api.validation.meta import validate_object_meta_update
from inplace.api.validation.pods import MIRROR_POD_ANNOTATION, validate_pod
from inplace.api.validation.resources import CPU, MEMORY

# -- pod resize (pods/resize) --------------------------------------------------------------------

_RESIZE_ONLY_MSG: Final = "only cpu and memory resources are mutable"
_RESIZE_ONLY_SIDECAR_MSG: Final = "only cpu and memory resources for sidecar containers are mutable"
_INIT_IMMUTABLE_MSG: Final = "resources for non-sidecar init containers are immutable"


def _resize_container(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    path: str,
    *,
    detail: str,
    allow_memory_limit_decrease: bool,
) -> None:
    """One container of a resize: only cpu/memory requests and limits (and the resize policy)
    may change, and none may be removed (upstream ``validateContainerResize``)."""
    for key in sorted({*new.keys(), *old.keys()} - {"resources", "resizePolicy"}):
        changes: list[tuple[str, Any, Any]] = []
        diff(
            semantic(old.get(key), key),
            semantic(new.get(key), key),
            child_path(path, key),
            changes,
            key,
        )
        errs.extend(forbidden(p, detail) for p, _, _ in changes)
    res_path = child_path(path, "resources")
    new_res, old_res = or_empty(new.get("resources")), or_empty(old.get("resources"))
    for key in sorted({*new_res.keys(), *old_res.keys()} - {"limits", "requests"}):
        changes = []
        diff(
            semantic(old_res.get(key), key),
            semantic(new_res.get(key), key),
            child_path(res_path, key),
            changes,
            key,
        )
        errs.extend(forbidden(p, detail) for p, _, _ in changes)
    for section, noun in (("requests", "requests"), ("limits", "limits")):
        section_path = child_path(res_path, section)
        new_list, old_list = or_empty(new_res.get(section)), or_empty(old_res.get(section))
        for name in sorted({*map(str, new_list.keys()), *map(str, old_list.keys())}):
            if name in (CPU, MEMORY):
                continue
            if semantic_quantity(new_list.get(name)) != semantic_quantity(old_list.get(name)):
                errs.append(forbidden(key_path(section_path, name), detail))
        if any(name not in new_list for name in old_list):
            errs.append(forbidden(section_path, f"resource {noun} cannot be removed"))
    if allow_memory_limit_decrease:
        return
    memory_policy = ""
    for policy in objects_in(new.get("resizePolicy")):
        if policy.get("resourceName") == MEMORY:
            memory_policy = policy.get("restartPolicy") or ""
            break
    if memory_policy not in ("NotRequired", ""):
        return
    new_limit = semantic_quantity(lookup(new_res, "limits", MEMORY))
    old_limit = semantic_quantity(lookup(old_res, "limits", MEMORY))
    limit_path = key_path(child_path(res_path, "limits"), MEMORY)
    if isinstance(new_limit, Quantity) and isinstance(old_limit, Quantity):
        if new_limit < old_limit:
            errs.append(
                forbidden(
                    limit_path,
                    "memory limits cannot be decreased unless resizePolicy is RestartContainer",
                )
            )
    elif new_limit is not None and old_limit is None:
        errs.append(
            forbidden(
                limit_path, "memory limits cannot be added unless resizePolicy is RestartContainer"
            )
        )


def _qos_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Just the pod's parseable container resources, so computing its QoS cannot fail."""
    spec: dict[str, Any] = {}
    for key in ("containers", "initContainers"):
        containers = []
        for container in objects_in(lookup(pod, "spec", key)):
            res: dict[str, Any] = {}
            for section in ("requests", "limits"):
                raw = lookup(container, "resources", section)
                if isinstance(raw, Mapping):
                    res[section] = {
                        str(k): str(q)
                        for k, v in raw.items()
                        if isinstance(q := semantic_quantity(v), Quantity)
                    }
            containers.append({"resources": res, "restartPolicy": container.get("restartPolicy")})
        spec[key] = containers
    return {"spec": spec}


def _pod_level_resources_set(pod: Mapping[str, Any]) -> bool:
    res = lookup(pod, "spec", "resources")
    return isinstance(res, Mapping) and bool(res.get("requests") or res.get("limits"))


def validate_pod_resize(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    allow_memory_limit_decrease: bool = True,
) -> None:
    """Upstream ``ValidatePodResize`` (v1.33). Pods that cannot be resized at all (pod-level
    resources, static and windows pods) get that one error alone, as upstream answers them.
    Memory limit decreases are allowed (v1.34) unless `allow_memory_limit_decrease` is False
    (v1.33: only with ``RestartContainer``)."""
    validate_object_meta_update(errs, new, old)
    validate_pod(errs, new, create=False)
    if _pod_level_resources_set(old) or _pod_level_resources_set(new):
        errs[:] = [forbidden("", "pods with pod-level resources cannot be resized")]
        return
    old_annotations = lookup(old, "metadata", "annotations")
    if isinstance(old_annotations, Mapping) and MIRROR_POD_ANNOTATION in old_annotations:
        errs[:] = [forbidden("", "static pods cannot be resized")]
        return
    if lookup(old, "spec", "os", "name") == "windows":
        errs[:] = [forbidden("", "windows pods cannot be resized")]
        return
    for key in ("labels", "annotations"):
        changes: list[tuple[str, Any, Any]] = []
        diff(
            semantic(lookup(old, "metadata", key), key),
            semantic(lookup(new, "metadata", key), key),
            f"metadata.{key}",
            changes,
            key,
        )
        if changes:
            errs.append(forbidden(f"metadata.{key}", _RESIZE_ONLY_MSG))
    new_spec, old_spec = or_empty(new.get("spec")), or_empty(old.get("spec"))
    containers_ok = True
    for key in ("containers", "initContainers"):
        new_cs, old_cs = objects_in(new_spec.get(key)), objects_in(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            errs.append(forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            containers_ok = False
            continue
        for i, (new_c, old_c) in enumerate(zip(new_cs, old_cs, strict=True)):
            path = f"spec.{key}[{i}]"
            if key == "containers" or old_c.get("restartPolicy") == "Always":
                _resize_container(
                    errs,
                    new_c,
                    old_c,
                    path,
                    detail=_RESIZE_ONLY_MSG if key == "containers" else _RESIZE_ONLY_SIDECAR_MSG,
                    allow_memory_limit_decrease=allow_memory_limit_decrease,
                )
                continue
            for field in sorted({*new_c.keys(), *old_c.keys()}):
                changes = []
                diff(
                    semantic(old_c.get(field), field),
                    semantic(new_c.get(field), field),
                    child_path(path, field),
                    changes,
                    field,
                )
                if changes and field == "resources":
                    errs.append(forbidden(child_path(path, "resources"), _INIT_IMMUTABLE_MSG))
                elif changes:
                    errs.extend(forbidden(p, _RESIZE_ONLY_MSG) for p, _, _ in changes)
    for field in sorted({*new_spec.keys(), *old_spec.keys()} - {"containers", "initContainers"}):
        changes = []
        diff(
            semantic(old_spec.get(field), field),
            semantic(new_spec.get(field), field),
            f"spec.{field}",
            changes,
            field,
        )
        errs.extend(forbidden(p, _RESIZE_ONLY_MSG) for p, _, _ in changes)
    if containers_ok:
        old_qos = lookup(old, "status", "qosClass")
        if not isinstance(old_qos, str) or not old_qos:
            old_qos = resources.qos_class(_qos_view(old))
        new_qos = resources.qos_class(_qos_view(new))
        if new_qos != old_qos:
            shown = lookup(new, "status", "qosClass")
            errs.append(
                invalid(
                    "spec",
                    shown if isinstance(shown, str) else old_qos,
                    "Pod QOS Class may not change as a result of resizing",
                )
            )
