"""Containers, pod specs, pod templates and pods: create, update and status update.

Upstream ``ValidatePodSpec``, ``ValidatePodTemplateSpec``, ``ValidatePodCreate``,
``ValidatePodUpdate`` and ``ValidatePodStatusUpdate`` (``pkg/apis/core/validation``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from typing import Any, Final

from inplace.api.annotations import (
    MEMORY_MAX,
    MEMORY_ON_PAUSE,
    OOM_KILL_DISABLE,
    ORIGINAL_RESOURCES,
    PAUSE_TIMEOUT,
    RESIZE_POLICIES,
    RESIZE_POLICY,
    SHRINKABLE,
    USAGE_PROFILE,
    parse_memory_max,
    parse_memory_on_pause,
    parse_pause_timeout,
)
from inplace.api.names import (
    dns1123_label_errors,
    label_value_errors,
    qualified_name_errors,
)
from inplace.api.original_resources import parse_original_resources
from inplace.api.usage_profile import profile_errors
from inplace.api.validation.env import validate_env, validate_env_from
from inplace.api.validation.equality import diff, semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    MAX_INT32,
    FieldError,
    NameFn,
    as_int,
    as_list,
    as_map,
    as_str,
    check_bool,
    child_path,
    duplicate,
    forbidden,
    inclusive_range_error,
    index_path,
    invalid,
    is_int,
    key_path,
    lookup,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    objects_in,
    or_empty,
    port_name_errors,
    render,
    required,
)
from inplace.api.validation.meta import (
    validate_annotations,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.api.validation.resources import parse_resource_list, validate_resource_requirements

# -- containers ----------------------------------------------------------------------------------

_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
RESIZE_RESOURCES: Final = ("cpu", "memory")
_RESIZE_POLICIES: Final = ("NotRequired", "RestartContainer")
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_INIT_ONLY_FORBIDDEN: Final = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _validate_resize_policy(
    errs: list[FieldError], value: object, path: str, pod_restart_policy: str
) -> None:
    """Upstream ``validateResizePolicy``, including v1.33's rule that a pod which is never
    restarted may only be resized in place."""
    seen: set[str] = set()
    for i, policy in enumerate(objects_in(as_list(errs, value, path))):
        resource_name = as_str(
            errs, policy.get("resourceName"), child_path(index_path(path, i), "resourceName")
        )
        restart = as_str(
            errs, policy.get("restartPolicy"), child_path(index_path(path, i), "restartPolicy")
        )
        if resource_name in seen:
            errs.append(duplicate(index_path(path, i), resource_name))
        seen.add(resource_name)
        if resource_name == "":
            errs.append(required(path))
        elif resource_name not in RESIZE_RESOURCES:
            errs.append(not_supported(path, resource_name, RESIZE_RESOURCES))
        if restart == "":
            errs.append(required(path))
        elif restart not in _RESIZE_POLICIES:
            errs.append(not_supported(path, restart, _RESIZE_POLICIES))
        if pod_restart_policy == "Never" and restart != "NotRequired":
            errs.append(
                invalid(path, restart, "must be 'NotRequired' when `restartPolicy` is 'Never'")
            )


def _validate_ports(errs: list[FieldError], value: object, path: str) -> None:
    names: set[str] = set()
    for i, port in enumerate(objects_in(as_list(errs, value, path))):
        idx = index_path(path, i)
        name = as_str(errs, port.get("name"), child_path(idx, "name"))
        if name:
            msgs = port_name_errors(name)
            if msgs:
                errs.extend(invalid(child_path(idx, "name"), name, msg) for msg in msgs)
            elif name in names:
                errs.append(duplicate(child_path(idx, "name"), name))
            else:
                names.add(name)
        container_port = as_int(errs, port.get("containerPort"), child_path(idx, "containerPort"))
        if not container_port:
            if port.get("containerPort") is None or container_port == 0:
                errs.append(required(child_path(idx, "containerPort")))
        elif not 1 <= container_port <= 65535:
            errs.append(
                invalid(
                    child_path(idx, "containerPort"),
                    container_port,
                    inclusive_range_error(1, 65535),
                )
            )
        host_port = as_int(errs, port.get("hostPort"), child_path(idx, "hostPort"))
        if host_port and not 1 <= host_port <= 65535:
            errs.append(
                invalid(child_path(idx, "hostPort"), host_port, inclusive_range_error(1, 65535))
            )
        protocol = as_str(errs, port.get("protocol"), child_path(idx, "protocol"))
        if not protocol:
            errs.append(required(child_path(idx, "protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(not_supported(child_path(idx, "protocol"), protocol, _PROTOCOLS))


def _validate_string_list(errs: list[FieldError], value: object, path: str) -> None:
    for i, item in enumerate(as_list(errs, value, path)):
        as_str(errs, item, index_path(path, i))


def _validate_local_descending_path(errs: list[FieldError], value: str, path: str) -> None:
    """Upstream's ``validateLocalDescendingPath``: relative, and no ``..`` element."""
    if value.startswith("/"):
        errs.append(invalid(path, value, "must be a relative path"))
    if ".." in value.replace("\\", "/").split("/"):
        errs.append(invalid(path, value, "must not contain '..'"))


_protected_host_paths: tuple[str, ...] = ()


def set_protected_host_paths(paths: tuple[str, ...]) -> None:
    """Directories no hostPath volume may name or lie under: the cluster's own data dir
    (its keys, tokens and store). The API server sets them at start."""
    global _protected_host_paths
    _protected_host_paths = tuple(os.path.normpath(p) for p in paths)


def protected_dir_of(host_path: str) -> str | None:
    """The protected directory (see :func:`set_protected_host_paths`) ``host_path`` is or
    lies under, or None."""
    normalized = os.path.normpath(host_path)
    for protected in _protected_host_paths:
        if normalized == protected or normalized.startswith(protected.rstrip("/") + "/"):
            return protected
    return None


def _validate_host_path(errs: list[FieldError], volume: Mapping[str, Any], path: str) -> None:
    body = volume.get("hostPath")
    if body is None:
        return
    body = as_map(errs, body, child_path(path, "hostPath"))
    host_path = child_path(child_path(path, "hostPath"), "path")
    value = as_str(errs, body.get("path"), host_path)
    if not value:
        errs.append(required(host_path))
        return
    protected = protected_dir_of(value)
    if protected is not None:
        errs.append(
            invalid(
                host_path,
                value,
                f"must not be the cluster's data directory {protected} or lie under it",
            )
        )


def _validate_container_common(
    errs: list[FieldError],
    container: Mapping[str, Any],
    path: str,
    *,
    pod_restart_policy: str,
    volumes: set[str],
) -> str:
    """Upstream ``validateContainerCommon``; returns the container's name."""
    name_path = child_path(path, "name")
    name = as_str(errs, container.get("name"), name_path)
    if not name:
        errs.append(required(name_path))
    else:
        errs.extend(invalid(name_path, name, msg) for msg in dns1123_label_errors(name))
    image = as_str(errs, container.get("image"), child_path(path, "image"))
    if not image:
        errs.append(required(child_path(path, "image")))
    _validate_string_list(errs, container.get("command"), child_path(path, "command"))
    _validate_string_list(errs, container.get("args"), child_path(path, "args"))
    as_str(errs, container.get("workingDir"), child_path(path, "workingDir"))
    tmp_path = child_path(path, "terminationMessagePolicy")
    policy = as_str(errs, container.get("terminationMessagePolicy"), tmp_path)
    if not policy:
        errs.append(required(tmp_path))
    elif policy not in _TERMINATION_MESSAGE_POLICIES:
        errs.append(not_supported(tmp_path, policy, _TERMINATION_MESSAGE_POLICIES))
    _validate_ports(errs, container.get("ports"), child_path(path, "ports"))
    validate_env(errs, container.get("env"), child_path(path, "env"))
    validate_env_from(errs, container.get("envFrom"), child_path(path, "envFrom"))
    mounts_path = child_path(path, "volumeMounts")
    mount_points: set[str] = set()
    for i, mount in enumerate(
        objects_in(as_list(errs, container.get("volumeMounts"), mounts_path))
    ):
        idx = index_path(mounts_path, i)
        mount_name = as_str(errs, mount.get("name"), child_path(idx, "name"))
        if not mount_name:
            errs.append(required(child_path(idx, "name")))
        if mount_name not in volumes:
            errs.append(not_found(child_path(idx, "name"), mount_name))
        mount_path = as_str(errs, mount.get("mountPath"), child_path(idx, "mountPath"))
        if not mount_path:
            errs.append(required(child_path(idx, "mountPath")))
        if mount_path in mount_points:
            errs.append(invalid(child_path(idx, "mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
        # Upstream reports these at `volumeMounts.subPath` (its fldPath, not the index).
        sub_path = as_str(errs, mount.get("subPath"), child_path(idx, "subPath"))
        if sub_path:
            _validate_local_descending_path(errs, sub_path, child_path(mounts_path, "subPath"))
        expr = as_str(errs, mount.get("subPathExpr"), child_path(idx, "subPathExpr"))
        if expr:
            if sub_path:
                errs.append(
                    invalid(
                        child_path(idx, "subPathExpr"),
                        expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            _validate_local_descending_path(errs, expr, child_path(mounts_path, "subPathExpr"))
    pull_path = child_path(path, "imagePullPolicy")
    pull = as_str(errs, container.get("imagePullPolicy"), pull_path)
    if not pull:
        errs.append(required(pull_path))
    elif pull not in _PULL_POLICIES:
        errs.append(not_supported(pull_path, pull, _PULL_POLICIES))
    validate_resource_requirements(errs, container.get("resources"), child_path(path, "resources"))
    _validate_resize_policy(
        errs, container.get("resizePolicy"), child_path(path, "resizePolicy"), pod_restart_policy
    )
    as_map(errs, container.get("securityContext"), child_path(path, "securityContext"))
    return name


def _validate_containers(
    errs: list[FieldError],
    spec: Mapping[str, Any],
    path: str,
    *,
    restart_policy: str,
    volumes: set[str],
) -> None:
    """Regular, init and ephemeral containers: each valid, names unique across all of them."""
    containers_path = child_path(path, "containers")
    containers = objects_in(as_list(errs, spec.get("containers"), containers_path))
    if not containers:
        errs.append(required(containers_path))
    names: set[str] = set()
    for i, container in enumerate(containers):
        idx = index_path(containers_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        if name in names:
            errs.append(duplicate(child_path(idx, "name"), name))
        else:
            names.add(name)
        if container.get("restartPolicy") is not None:
            errs.append(
                forbidden(
                    child_path(idx, "restartPolicy"), "may not be set for non-init containers"
                )
            )
    init_path = child_path(path, "initContainers")
    for i, container in enumerate(objects_in(as_list(errs, spec.get("initContainers"), init_path))):
        idx = index_path(init_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        restart = container.get("restartPolicy")
        if restart is not None:
            restart_text = as_str(errs, restart, child_path(idx, "restartPolicy"))
            if restart_text != "Always":
                errs.append(
                    not_supported(child_path(idx, "restartPolicy"), restart_text, ("Always",))
                )
        if name in names:
            errs.append(duplicate(child_path(idx, "name"), name))
        elif name:
            names.add(name)
        if restart != "Always":
            for key in _INIT_ONLY_FORBIDDEN:
                if container.get(key) is not None:
                    errs.append(
                        forbidden(
                            child_path(idx, key),
                            "may not be set for init containers without restartPolicy=Always",
                        )
                    )
    eph_path = child_path(path, "ephemeralContainers")
    for i, container in enumerate(
        objects_in(as_list(errs, spec.get("ephemeralContainers"), eph_path))
    ):
        idx = index_path(eph_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        if name in names:
            errs.append(duplicate(child_path(idx, "name"), name))
        else:
            names.add(name)


def _validate_tolerations(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidateTolerations``."""
    for i, toleration in enumerate(objects_in(as_list(errs, value, path))):
        idx = index_path(path, i)
        key = as_str(errs, toleration.get("key"), child_path(idx, "key"))
        operator = as_str(errs, toleration.get("operator"), child_path(idx, "operator"))
        tol_value = as_str(errs, toleration.get("value"), child_path(idx, "value"))
        effect = as_str(errs, toleration.get("effect"), child_path(idx, "effect"))
        seconds = as_int(
            errs, toleration.get("tolerationSeconds"), child_path(idx, "tolerationSeconds")
        )
        if key:
            errs.extend(
                invalid(child_path(idx, "key"), key, msg) for msg in qualified_name_errors(key)
            )
        if not key and operator != "Exists":
            errs.append(
                invalid(
                    child_path(idx, "operator"),
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if seconds is not None and effect != "NoExecute":
            errs.append(
                invalid(
                    child_path(idx, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            msgs = label_value_errors(tol_value)
            if msgs:
                errs.append(invalid(child_path(idx, "operator"), tol_value, ";".join(msgs)))
        elif operator == "Exists":
            if tol_value:
                errs.append(
                    invalid(
                        child_path(idx, "operator"),
                        tol_value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(not_supported(child_path(idx, "operator"), operator, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(child_path(idx, "effect"), effect, TAINT_EFFECTS))


def _validate_name_field(errs: list[FieldError], value: object, path: str, name_fn: NameFn) -> str:
    text = as_str(errs, value, path)
    if text:
        errs.extend(invalid(path, text, msg) for msg in name_fn(text, False))
    return text


def _validate_pod_spec(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """Upstream ``ValidatePodSpec`` (pods and pod templates alike); returns the spec."""
    spec = as_map(errs, value, path)
    grace_path = child_path(path, "terminationGracePeriodSeconds")
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(required(grace_path))
    else:
        as_int(errs, spec.get("terminationGracePeriodSeconds"), grace_path)
    volumes_path = child_path(path, "volumes")
    volumes: set[str] = set()
    for i, volume in enumerate(objects_in(as_list(errs, spec.get("volumes"), volumes_path))):
        name_path = child_path(index_path(volumes_path, i), "name")
        name = as_str(errs, volume.get("name"), name_path)
        if not name:
            errs.append(required(name_path))
        else:
            errs.extend(invalid(name_path, name, msg) for msg in dns1123_label_errors(name))
        if name in volumes:
            errs.append(duplicate(name_path, name))
        volumes.add(name)
        _validate_host_path(errs, volume, index_path(volumes_path, i))
    restart_path = child_path(path, "restartPolicy")
    restart = as_str(errs, spec.get("restartPolicy"), restart_path)
    _validate_containers(errs, spec, path, restart_policy=restart, volumes=volumes)
    if not restart:
        errs.append(required(restart_path))
    elif restart not in _RESTART_POLICIES:
        errs.append(not_supported(restart_path, restart, _RESTART_POLICIES))
    dns_path = child_path(path, "dnsPolicy")
    dns = as_str(errs, spec.get("dnsPolicy"), dns_path)
    if not dns:
        errs.append(required(dns_path))
    elif dns not in _DNS_POLICIES:
        errs.append(not_supported(dns_path, dns, _DNS_POLICIES))
    validate_labels(errs, spec.get("nodeSelector"), child_path(path, "nodeSelector"))
    as_map(errs, spec.get("securityContext"), child_path(path, "securityContext"))
    _validate_name_field(
        errs,
        spec.get("serviceAccountName"),
        child_path(path, "serviceAccountName"),
        name_is_dns_subdomain,
    )
    _validate_name_field(
        errs, spec.get("nodeName"), child_path(path, "nodeName"), name_is_dns_subdomain
    )
    deadline_path = child_path(path, "activeDeadlineSeconds")
    deadline = as_int(errs, spec.get("activeDeadlineSeconds"), deadline_path)
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        errs.append(invalid(deadline_path, deadline, inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        text = as_str(errs, spec.get(key), child_path(path, key))
        if text:
            errs.extend(
                invalid(child_path(path, key), text, msg) for msg in dns1123_label_errors(text)
            )
    _validate_tolerations(errs, spec.get("tolerations"), child_path(path, "tolerations"))
    _validate_name_field(
        errs,
        spec.get("priorityClassName"),
        child_path(path, "priorityClassName"),
        name_is_dns_subdomain,
    )
    as_int(errs, spec.get("priority"), child_path(path, "priority"))
    if spec.get("preemptionPolicy") is not None:
        validate_preemption_policy(
            errs, spec.get("preemptionPolicy"), child_path(path, "preemptionPolicy")
        )
    gates_path = child_path(path, "schedulingGates")
    seen_gates: set[str] = set()
    for i, gate in enumerate(objects_in(as_list(errs, spec.get("schedulingGates"), gates_path))):
        gate_name = as_str(errs, gate.get("name"), child_path(index_path(gates_path, i), "name"))
        errs.extend(
            invalid(index_path(gates_path, i), gate_name, msg)
            for msg in qualified_name_errors(gate_name)
        )
        if gate_name in seen_gates:
            errs.append(duplicate(index_path(gates_path, i), gate_name))
        seen_gates.add(gate_name)
    for key in ("hostNetwork", "hostPID", "hostIPC", "enableServiceLinks"):
        check_bool(errs, spec.get(key), child_path(path, key))
    if spec.get("resources") is not None:
        validate_resource_requirements(errs, spec.get("resources"), child_path(path, "resources"))
    if spec.get("overhead") is not None:
        parse_resource_list(errs, spec.get("overhead"), child_path(path, "overhead"))
    return spec


def validate_preemption_policy(errs: list[FieldError], value: object, path: str) -> None:
    policy = as_str(errs, value, path)
    if not policy:
        errs.append(required(path))
    elif policy not in _PREEMPTION_POLICIES:
        errs.append(not_supported(path, policy, _PREEMPTION_POLICIES))


# Our annotations (DESIGN.md), checked wherever a pod or a pod template carries them.
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"


def _container_names(spec: object) -> list[str]:
    return [
        str(c.get("name"))
        for key in ("containers", "initContainers")
        for c in objects_in(spec.get(key) if isinstance(spec, Mapping) else None)
    ]


def _validate_inplace_annotations(
    errs: list[FieldError], annotations: object, path: str, spec: object
) -> None:
    """Our annotations' formats (``inplace.api.annotations``), each refused at its key."""
    if not isinstance(annotations, Mapping):
        return
    profile = annotations.get(USAGE_PROFILE)
    if profile is not None:
        problem = profile_errors(profile, _container_names(spec))
        if problem is not None:
            errs.append(invalid(key_path(path, USAGE_PROFILE), profile, problem))
    policy = annotations.get(RESIZE_POLICY)
    if policy is not None and policy not in RESIZE_POLICIES:
        errs.append(not_supported(key_path(path, RESIZE_POLICY), policy, RESIZE_POLICIES))
    oom = annotations.get(OOM_KILL_DISABLE)
    if oom is not None and oom not in ("true", "false"):
        errs.append(not_supported(key_path(path, OOM_KILL_DISABLE), oom, ("true", "false")))
    shrinkable = annotations.get(SHRINKABLE)
    if shrinkable is not None and shrinkable not in ("true", "false"):
        errs.append(not_supported(key_path(path, SHRINKABLE), shrinkable, ("true", "false")))
    original = annotations.get(ORIGINAL_RESOURCES)
    if isinstance(original, str):
        try:
            parse_original_resources(original)
        except ValueError as exc:
            errs.append(invalid(key_path(path, ORIGINAL_RESOURCES), original, str(exc)))
    for name, parse in _PAUSE_ANNOTATIONS:
        value = annotations.get(name)
        if not isinstance(value, str):
            continue
        try:
            parse(value)
        except ValueError as exc:
            errs.append(invalid(key_path(path, name), value, str(exc)))


_PAUSE_ANNOTATIONS: Final[tuple[tuple[str, Callable[[str], object]], ...]] = (
    (MEMORY_ON_PAUSE, parse_memory_on_pause),
    (MEMORY_MAX, parse_memory_max),
    (PAUSE_TIMEOUT, parse_pause_timeout),
)


def validate_pod_template(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """Upstream ``ValidatePodTemplateSpec``: labels at ``<path>.labels`` (sic), then the spec."""
    template = as_map(errs, value, path)
    meta = as_map(errs, template.get("metadata"), child_path(path, "metadata"))
    validate_labels(errs, meta.get("labels"), child_path(path, "labels"))
    annotations = validate_annotations(
        errs, meta.get("annotations"), child_path(path, "annotations")
    )
    _validate_inplace_annotations(
        errs, annotations, child_path(path, "annotations"), template.get("spec")
    )
    spec = _validate_pod_spec(errs, template.get("spec"), child_path(path, "spec"))
    if spec.get("ephemeralContainers"):
        errs.append(
            forbidden(
                child_path(child_path(path, "spec"), "ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    return template


# -- pods ----------------------------------------------------------------------------------------


def validate_pod_create(errs: list[FieldError], pod: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePodCreate``."""
    validate_pod(errs, pod, create=True)


def validate_pod(errs: list[FieldError], pod: Mapping[str, Any], *, create: bool) -> None:
    """Upstream ``validatePodMetadataAndSpec`` plus, on create, ``ValidatePodCreate``'s rules."""
    meta = validate_object_meta(errs, pod, namespaced=True, name_fn=name_is_dns_subdomain)
    _validate_inplace_annotations(
        errs, meta.get("annotations"), "metadata.annotations", pod.get("spec")
    )
    spec = _validate_pod_spec(errs, pod.get("spec"), "spec")
    for key in ("containers", "initContainers"):
        for i, container in enumerate(objects_in(spec.get(key))):
            image = container.get("image")
            if isinstance(image, str) and image != image.strip():
                errs.append(
                    invalid(
                        f"spec.{key}[{i}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    if create:
        if spec.get("ephemeralContainers"):
            errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            errs.append(
                forbidden(
                    "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
                )
            )


_UPDATABLE_POD_SPEC_FIELDS: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def validate_pod_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePodUpdate``: only images, the deadline, added tolerations (and
    removed scheduling gates) may change; resources change through ``pods/resize``."""
    validate_object_meta_update(errs, new, old)
    new_spec, old_spec = or_empty(new.get("spec")), or_empty(old.get("spec"))
    if new_spec == old_spec:
        # The common update (labels, annotations, finalizers): the spec was validated when it
        # was stored, so only the metadata needs a look. Full validation cost more than the
        # rest of the write path together.
        meta = validate_object_meta(errs, new, namespaced=True, name_fn=name_is_dns_subdomain)
        _validate_inplace_annotations(
            errs, meta.get("annotations"), "metadata.annotations", new_spec
        )
        return
    validate_pod(errs, new, create=False)
    for key in ("containers", "initContainers"):
        new_cs, old_cs = objects_in(new_spec.get(key)), objects_in(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            errs.append(forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            return
    new_deadline, old_deadline = (
        new_spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if isinstance(new_deadline, int) and not isinstance(new_deadline, bool):
        if not 0 <= new_deadline <= MAX_INT32:
            errs.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    new_deadline,
                    inclusive_range_error(0, MAX_INT32),
                )
            )
            return
        if is_int(old_deadline) and old_deadline < new_deadline:  # type: ignore[operator]
            errs.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    new_deadline,
                    "must be less than or equal to previous value",
                )
            )
            return
    elif new_deadline is None and old_deadline is not None:
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    _validate_only_added_tolerations(errs, new_spec.get("tolerations"), old_spec.get("tolerations"))
    old_gates = {
        g.get("name") for g in objects_in(old_spec.get("schedulingGates")) if isinstance(g, Mapping)
    }
    for i, gate in enumerate(objects_in(new_spec.get("schedulingGates"))):
        if gate.get("name") not in old_gates:
            errs.append(
                forbidden(
                    f"spec.schedulingGates[{i}].name",
                    f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
                )
            )
    munged = copy.deepcopy(dict(new_spec))
    for key in ("containers", "initContainers"):
        containers = munged.get(key)
        if isinstance(containers, list):
            for i, container in enumerate(containers):
                old_container = objects_in(old_spec.get(key))[i]
                if isinstance(container, dict):
                    container["image"] = old_container.get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged[key] = old_spec.get(key)
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        munged.get("terminationGracePeriodSeconds"),
    )
    if is_int(old_grace) and old_grace < 0 and new_grace == 1:  # type: ignore[operator]
        munged["terminationGracePeriodSeconds"] = old_grace
    changes: list[tuple[str, Any, Any]] = []
    diff(semantic(old_spec), semantic(munged), "spec", changes)
    if changes:
        lines = "\n".join(f"{p}: {render(o)} -> {render(n)}" for p, o, n in changes)
        errs.append(
            forbidden(
                "spec",
                "pod updates may not change fields other than "
                + ",".join(_UPDATABLE_POD_SPEC_FIELDS)
                + "\n"
                + lines,
            )
        )


def _validate_only_added_tolerations(errs: list[FieldError], new: object, old: object) -> None:
    new_list = [dict(t) for t in objects_in(new)]
    for old_toleration in objects_in(old):
        found = False
        for candidate in new_list:
            clone = dict(old_toleration)
            clone["tolerationSeconds"] = candidate.get("tolerationSeconds")
            if semantic(clone) == semantic(candidate):
                found = True
                break
        if not found:
            errs.append(
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            return


_SYSTEM_POD_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})


def validate_pod_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePodStatusUpdate`` (condition paths under ``metadata``, sic)."""
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    conditions = as_list(errs, status.get("conditions"), "status.conditions")
    for i, condition in enumerate(objects_in(conditions)):
        kind = as_str(errs, condition.get("type"), f"status.conditions[{i}].type")
        if kind in _SYSTEM_POD_CONDITIONS:
            continue
        path = f"metadata.conditions[{i}].Type"
        errs.extend(invalid(path, kind, msg) for msg in qualified_name_errors(kind))
    if lookup(new, "spec", "nodeName") != lookup(old, "spec", "nodeName"):
        errs.append(forbidden("status.nodeName", "may not be changed directly"))
    nominated = status.get("nominatedNodeName")
    if nominated and nominated != lookup(old, "status", "nominatedNodeName"):
        _validate_name_field(errs, nominated, "status.nominatedNodeName", name_is_dns_subdomain)
    new_qos, old_qos = status.get("qosClass"), lookup(old, "status", "qosClass")
    if (new_qos or "") != (old_qos or ""):
        errs.append(invalid("status.qosClass", new_qos or "", IMMUTABLE_MSG))
