"""The ``pods/resize`` rules: upstream ``ValidatePodResize`` (v1.33, with v1.34's memory
limit decreases; ``pkg/apis/core/validation/validation.go``).

By the time these run the resize strategy (:func:`inplace.registry.resize.prepare_pod_resize`)
has taken only the containers' ``resources`` and ``resizePolicy`` from the request, so what is
left to refuse is said as upstream says it, at the paths upstream uses:

* pods with pod-level resources, static pods and Windows pods are refused whole (one error at
  the empty path);
* the QoS class may not change (``spec: Invalid value: "Guaranteed": Pod QOS Class may not
  change as a result of resizing``), and a pod whose running containers report no
  ``resources`` runs on a node that cannot resize;
* containers may not be added, removed, renamed or reordered (per container, at
  ``spec.containers[i].name``), and nothing further is checked then;
* requests and limits may not be removed (``spec.containers[i].resources.requests``);
* only cpu and memory may change (``spec: Forbidden: only cpu and memory resources are
  mutable``; sidecars say so for sidecars), ``resizePolicy`` included, and regular init
  containers not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api import resources
from inplace.api.quantity import Quantity
from inplace.api.validation.equality import semantic, semantic_quantity
from inplace.api.validation.errors import (
    FieldError,
    child_path,
    forbidden,
    index_path,
    invalid,
    key_path,
    lookup,
    objects_in,
    or_empty,
)
from inplace.api.validation.meta import validate_object_meta_update
from inplace.api.validation.pods import MIRROR_POD_ANNOTATION, validate_pod
from inplace.api.validation.resources import CPU, MEMORY

__all__ = ["validate_pod_resize"]

_ONLY_CPU_MEMORY: Final = "only cpu and memory resources are mutable"
_ONLY_CPU_MEMORY_SIDECAR: Final = "only cpu and memory resources for sidecar containers are mutable"
_INIT_IMMUTABLE: Final = "resources for non-sidecar init containers are immutable"
_REORDERED: Final = "containers may not be renamed or reordered on resize"
_RESIZABLE: Final = (CPU, MEMORY)


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _resources(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return or_empty(container.get("resources"))


def _validate_container_resize(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    path: str,
    *,
    allow_memory_limit_decrease: bool,
) -> None:
    """Upstream ``validateContainerResize``: nothing removed; (v1.33) memory limits not
    lowered or added unless the container restarts for memory."""
    new_res, old_res = _resources(new), _resources(old)
    for section, noun in (("requests", "requests"), ("limits", "limits")):
        new_list, old_list = or_empty(new_res.get(section)), or_empty(old_res.get(section))
        if len(old_list) > len(new_list) or any(name not in new_list for name in old_list):
            errs.append(forbidden(child_path(path, section), f"resource {noun} cannot be removed"))
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
    limit_path = key_path(child_path(path, "limits"), MEMORY)
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


def _without_cpu_memory_changes(
    container: Mapping[str, Any], old: Mapping[str, Any]
) -> dict[str, Any]:
    """Upstream ``dropCPUMemoryResourcesFromContainer``: the container with its cpu and memory
    requests and limits put back to the old ones, so whatever still differs from the old
    container is a change resize may not make (as fixed in v1.35: adding another resource to
    a container that had none is such a change)."""
    munged = dict(container)
    new_res, old_res = _resources(container), _resources(old)
    res: dict[str, Any] = {k: v for k, v in new_res.items() if k not in ("limits", "requests")}
    for section in ("limits", "requests"):
        kept = {k: v for k, v in or_empty(new_res.get(section)).items() if k not in _RESIZABLE}
        old_list = or_empty(old_res.get(section))
        kept.update({k: v for k, v in old_list.items() if k in _RESIZABLE})
        if kept:
            res[section] = kept
    munged["resources"] = res
    return munged


def _same_container(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return bool(semantic(new, "") == semantic(old, ""))


def _qos_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Just the pod's parseable container resources, so computing its QoS cannot fail. The
    pods the API server validates are defaulted (a missing request is its limit), so the
    class is computed from them as they are, as upstream's ``ComputePodQOS`` does."""
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


def _resize_supported(pod: Mapping[str, Any]) -> bool:
    """Upstream ``isPodResizeRequestSupported``: the node reports ``resources`` for its
    running containers (a node that does not cannot resize); no running container, no
    evidence either way."""
    for status in objects_in(lookup(pod, "status", "containerStatuses")):
        if isinstance(lookup(status, "state", "running"), Mapping):
            return isinstance(status.get("resources"), Mapping)
    return True


def _ordering_errors(
    errs: list[FieldError], new_spec: Mapping[str, Any], old_spec: Mapping[str, Any]
) -> bool:
    """Containers may not be added, removed, renamed or reordered; True when one was."""
    before = len(errs)
    for key in ("containers", "initContainers"):
        new_cs, old_cs = objects_in(new_spec.get(key)), objects_in(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            errs.append(forbidden(f"spec.{key}", f"{key} may not be added or removed on resize"))
            continue
        for i, (new_c, old_c) in enumerate(zip(new_cs, old_cs, strict=True)):
            if new_c.get("name") != old_c.get("name"):
                errs.append(forbidden(child_path(index_path(f"spec.{key}", i), "name"), _REORDERED))
    return len(errs) > before


def validate_pod_resize(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    allow_memory_limit_decrease: bool = True,
) -> None:
    """Upstream ``ValidatePodResize``; see the module docstring. Memory limit decreases are
    allowed (v1.34) unless `allow_memory_limit_decrease` is False (v1.33)."""
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
    old_qos = lookup(old, "status", "qosClass")
    if not isinstance(old_qos, str) or not old_qos:
        old_qos = resources.qos_class(_qos_view(old), requests_from_limits=False)
    if resources.qos_class(_qos_view(new), requests_from_limits=False) != old_qos:
        shown = lookup(new, "status", "qosClass")
        errs.append(
            invalid(
                "spec",
                shown if isinstance(shown, str) else "",
                "Pod QOS Class may not change as a result of resizing",
            )
        )
    if not _resize_supported(old):
        errs.append(forbidden("spec", "Pod running on node without support for resize"))
    new_spec, old_spec = or_empty(new.get("spec")), or_empty(old.get("spec"))
    if _ordering_errors(errs, new_spec, old_spec):
        return
    new_init, old_init = (
        objects_in(new_spec.get("initContainers")),
        objects_in(old_spec.get("initContainers")),
    )
    new_cs, old_cs = objects_in(new_spec.get("containers")), objects_in(old_spec.get("containers"))
    for i, (new_c, old_c) in enumerate(zip(new_init, old_init, strict=True)):
        if _is_sidecar(old_c):
            _validate_container_resize(
                errs,
                new_c,
                old_c,
                f"spec.initContainers[{i}].resources",
                allow_memory_limit_decrease=allow_memory_limit_decrease,
            )
    for i, (new_c, old_c) in enumerate(zip(new_cs, old_cs, strict=True)):
        _validate_container_resize(
            errs,
            new_c,
            old_c,
            f"spec.containers[{i}].resources",
            allow_memory_limit_decrease=allow_memory_limit_decrease,
        )
    for new_c, old_c in zip(new_cs, old_cs, strict=True):
        if not _same_container(_without_cpu_memory_changes(new_c, old_c), old_c):
            errs.append(forbidden("spec", _ONLY_CPU_MEMORY))
    for new_c, old_c in zip(new_init, old_init, strict=True):
        if _is_sidecar(new_c):
            if not _same_container(_without_cpu_memory_changes(new_c, old_c), old_c):
                errs.append(forbidden("spec", _ONLY_CPU_MEMORY_SIDECAR))
        elif not _same_container(new_c, old_c):
            errs.append(forbidden("spec", _INIT_IMMUTABLE))
    if errs:
        return
    munged = dict(new_spec)
    munged["containers"] = [
        _without_cpu_memory_changes(n, o) for n, o in zip(new_cs, old_cs, strict=True)
    ]
    munged["initContainers"] = [
        _without_cpu_memory_changes(n, o) if _is_sidecar(n) else n
        for n, o in zip(new_init, old_init, strict=True)
    ]
    if semantic(munged, "spec") != semantic(old_spec, "spec"):
        errs.append(forbidden("spec", _ONLY_CPU_MEMORY))
