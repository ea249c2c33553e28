"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: upstream's validation.

Upstream ``ValidatePersistentVolume(Update)``, ``ValidatePersistentVolumeClaim(Update)``
(``pkg/apis/core/validation/validation.go``) and ``ValidateStorageClass(Update)``
(``pkg/apis/storage/validation``), with upstream's paths and messages: access modes (with
``ReadWriteOncePod`` alone), a positive ``storage`` request or capacity, class names that are
DNS subdomains, ``volumeMode`` and reclaim policies from upstream's sets, exactly one volume
source on a PV (a ``local`` one needs node affinity); a claim's spec is immutable once
created except that the controller sets ``volumeName`` once and a bound claim's request may
grow; a class's provisioner, parameters, reclaim policy and binding mode never change.

Only the volume sources this project can mount are accepted on a PV (``hostPath`` and
``local``): another is refused naming the field, never stored and left unmountable.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.names import qualified_name_errors
from inplace.api.quantity import Quantity
from inplace.api.storage import LOCAL_PATH_DIRECTORY
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    FieldError,
    as_list,
    as_map,
    as_str,
    as_str_map,
    child_path,
    forbidden,
    index_path,
    invalid,
    key_path,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    or_empty,
    required,
    too_long,
    too_many,
)
from inplace.api.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from inplace.api.validation.pods import protected_dir_of
from inplace.api.validation.resources import parse_quantity

__all__ = [
    "validate_persistent_volume",
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_update",
    "validate_persistent_volume_update",
    "validate_storage_class",
    "validate_storage_class_update",
]

_ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES: Final = ("Block", "Filesystem")
_PV_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
_CLASS_RECLAIM_POLICIES: Final = ("Delete", "Retain")
_BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
_HOST_PATH_TYPES: Final = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
_NODE_SELECTOR_OPERATORS: Final = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
#: Volume sources upstream knows; only the first two can be mounted on this host.
_MOUNTABLE_SOURCES: Final = ("hostPath", "local")
_OTHER_SOURCES: Final = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "storageos",
    "csi",
)
_MAX_PARAMETERS: Final = 512
_MAX_PARAMETERS_BYTES: Final = 256 * 1024
_POSITIVE_MSG: Final = "must be greater than zero"


def _class_name(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidateClassName`` where a class name may be given (empty: no class)."""
    name = as_str(errs, value, path)
    if name:
        errs.extend(invalid(path, name, msg) for msg in name_is_dns_subdomain(name, False))


def _access_modes(errs: list[FieldError], value: object, path: str, detail: str) -> None:
    modes = as_list(errs, value, path)
    if not modes:
        errs.append(required(path, detail))
    once_pod = other = False
    for i, mode in enumerate(modes):
        text = as_str(errs, mode, index_path(path, i))
        if text not in _ACCESS_MODES:
            errs.append(not_supported(path, text, _ACCESS_MODES))
        elif text == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))


def _positive(errs: list[FieldError], value: object, path: str) -> Quantity | None:
    q = parse_quantity(errs, value, path)
    if q is not None and q.sign() <= 0:
        errs.append(invalid(path, str(q), _POSITIVE_MSG))
        return None
    return q


def _volume_mode(errs: list[FieldError], value: object, path: str) -> None:
    if value is None:
        return
    mode = as_str(errs, value, path)
    if mode not in _VOLUME_MODES:
        errs.append(not_supported(path, mode, _VOLUME_MODES))


def _node_selector_terms(errs: list[FieldError], value: object, path: str) -> None:
    terms = objects_in(as_list(errs, value, path))
    if not terms:
        errs.append(required(path, "must have at least one node selector term"))
    for i, term in enumerate(terms):
        term_path = index_path(path, i)
        exprs_path = child_path(term_path, "matchExpressions")
        for j, expr in enumerate(
            objects_in(as_list(errs, term.get("matchExpressions"), exprs_path))
        ):
            expr_path = index_path(exprs_path, j)
            key = as_str(errs, expr.get("key"), child_path(expr_path, "key"))
            errs.extend(
                invalid(child_path(expr_path, "key"), key, msg)
                for msg in qualified_name_errors(key)
            )
            op = as_str(errs, expr.get("operator"), child_path(expr_path, "operator"))
            values = as_list(errs, expr.get("values"), child_path(expr_path, "values"))
            if op not in _NODE_SELECTOR_OPERATORS:
                errs.append(
                    invalid(child_path(expr_path, "operator"), op, "not a valid selector operator")
                )
            elif op in ("In", "NotIn") and not values:
                errs.append(
                    required(
                        child_path(expr_path, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
            elif op in ("Exists", "DoesNotExist") and values:
                errs.append(
                    forbidden(
                        child_path(expr_path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )


def _volume_node_affinity(errs: list[FieldError], value: object, path: str) -> bool:
    """Upstream ``validateVolumeNodeAffinity``; True when required terms are given."""
    affinity = as_map(errs, value, path)
    req = affinity.get("required")
    if req is None:
        errs.append(
            required(child_path(path, "required"), "must specify required node constraints")
        )
        return False
    req_path = child_path(path, "required")
    _node_selector_terms(
        errs,
        as_map(errs, req, req_path).get("nodeSelectorTerms"),
        child_path(req_path, "nodeSelectorTerms"),
    )
    return True


def _local_path(errs: list[FieldError], source: Mapping[str, Any], path: str) -> None:
    text = as_str(errs, source.get("path"), child_path(path, "path"))
    if not text:
        errs.append(required(child_path(path, "path")))
    elif ".." in text.split("/"):
        errs.append(invalid(child_path(path, "path"), text, "must not contain '..'"))
    else:
        # A volume is mounted into pods: like a pod's hostPath, it may not reach the
        # cluster's own data dir (keys, tokens, store), except the local-path volumes in it.
        protected = protected_dir_of(text)
        if protected is not None and not posixpath.normpath(text).startswith(
            posixpath.join(protected, LOCAL_PATH_DIRECTORY) + "/"
        ):
            errs.append(
                invalid(
                    child_path(path, "path"),
                    text,
                    f"must not be the cluster's data directory {protected} or lie under it, "
                    f"except {posixpath.join(protected, LOCAL_PATH_DIRECTORY)}/",
                )
            )


# -- PersistentVolume ------------------------------------------------------------------------


def _pv_spec(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    path = "spec"
    _access_modes(errs, spec.get("accessModes"), child_path(path, "accessModes"), "")
    cap_path = child_path(path, "capacity")
    capacity = as_map(errs, spec.get("capacity"), cap_path)
    if not capacity:
        errs.append(required(cap_path))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(not_supported(cap_path, dict(capacity), ("storage",)))
    for name, raw in capacity.items():
        _positive(errs, raw, key_path(cap_path, name))
    policy_path = child_path(path, "persistentVolumeReclaimPolicy")
    policy = as_str(errs, spec.get("persistentVolumeReclaimPolicy"), policy_path)
    if policy and policy not in _PV_RECLAIM_POLICIES:
        errs.append(not_supported(policy_path, policy, _PV_RECLAIM_POLICIES))
    affinity_given = False
    if spec.get("nodeAffinity") is not None:
        affinity_given = _volume_node_affinity(
            errs, spec.get("nodeAffinity"), child_path(path, "nodeAffinity")
        )
    sources = [s for s in (*_MOUNTABLE_SOURCES, *_OTHER_SOURCES) if spec.get(s) is not None]
    if not sources:
        errs.append(required(path, "must specify a volume type"))
    for extra in sources[1:]:
        errs.append(forbidden(child_path(path, extra), "may not specify more than 1 volume type"))
    if sources:
        first = sources[0]
        source_path = child_path(path, first)
        if first not in _MOUNTABLE_SOURCES:
            errs.append(
                forbidden(
                    source_path, "only hostPath and local volumes can be mounted on this host"
                )
            )
        else:
            source = as_map(errs, spec.get(first), source_path)
            _local_path(errs, source, source_path)
            if first == "hostPath":
                kind = as_str(errs, source.get("type"), child_path(source_path, "type"))
                if kind not in _HOST_PATH_TYPES:
                    errs.append(
                        not_supported(child_path(source_path, "type"), kind, _HOST_PATH_TYPES[1:])
                    )
                host = as_str(errs, source.get("path"), child_path(source_path, "path"))
                if policy == "Recycle" and host and posixpath.normpath(host) == "/":
                    errs.append(
                        forbidden(policy_path, "may not be 'recycle' for a hostPath mount of '/'")
                    )
            elif not affinity_given:
                errs.append(
                    required(
                        child_path(path, "nodeAffinity"), "Local volume requires node affinity"
                    )
                )
    _class_name(errs, spec.get("storageClassName"), child_path(path, "storageClassName"))
    _volume_mode(errs, spec.get("volumeMode"), child_path(path, "volumeMode"))
    claim_ref = spec.get("claimRef")
    if claim_ref is not None:
        as_map(errs, claim_ref, child_path(path, "claimRef"))


def validate_persistent_volume(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePersistentVolume``."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    _pv_spec(errs, as_map(errs, obj.get("spec"), "spec"))


def validate_persistent_volume_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePersistentVolumeUpdate``: the volume source and mode never change,
    node affinity once set never changes."""
    validate_object_meta_update(errs, new, old)
    validate_persistent_volume(errs, new)
    new_spec, old_spec = or_empty(new.get("spec")), or_empty(old.get("spec"))
    for source in (*_MOUNTABLE_SOURCES, *_OTHER_SOURCES):
        if semantic(new_spec.get(source)) != semantic(old_spec.get(source)):
            errs.append(
                forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation",
                )
            )
            break
    if semantic(new_spec.get("volumeMode")) != semantic(old_spec.get("volumeMode")):
        errs.append(invalid("volumeMode", new_spec.get("volumeMode"), IMMUTABLE_MSG))
    old_affinity = old_spec.get("nodeAffinity")
    if old_affinity is not None and semantic(new_spec.get("nodeAffinity")) != semantic(
        old_affinity
    ):
        errs.append(invalid("nodeAffinity.required", new_spec.get("nodeAffinity"), IMMUTABLE_MSG))


# -- PersistentVolumeClaim -------------------------------------------------------------------


def validate_pvc_spec(errs: list[FieldError], spec: Mapping[str, Any], path: str = "spec") -> None:
    """Upstream ``ValidatePersistentVolumeClaimSpec`` at `path` (a claim's ``spec``, or a
    StatefulSet's ``spec.volumeClaimTemplates[i].spec``)."""
    _access_modes(
        errs,
        spec.get("accessModes"),
        child_path(path, "accessModes"),
        "at least 1 access mode is required",
    )
    if spec.get("selector") is not None:
        validate_label_selector(errs, spec.get("selector"), child_path(path, "selector"))
    resources_path = child_path(path, "resources")
    resources = as_map(errs, spec.get("resources"), resources_path)
    requests = as_map(errs, resources.get("requests"), child_path(resources_path, "requests"))
    storage_path = key_path(resources_path, "storage")
    if "storage" not in requests:
        errs.append(required(storage_path))
    else:
        _positive(errs, requests["storage"], storage_path)
    if spec.get("storageClassName") is not None:
        _class_name(errs, spec.get("storageClassName"), child_path(path, "storageClassName"))
    _volume_mode(errs, spec.get("volumeMode"), child_path(path, "volumeMode"))
    as_str(errs, spec.get("volumeName"), child_path(path, "volumeName"))


def validate_persistent_volume_claim(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePersistentVolumeClaim``."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    validate_pvc_spec(errs, as_map(errs, obj.get("spec"), "spec"))


def _storage_request(spec: Mapping[str, Any]) -> Quantity | None:
    raw = or_empty(or_empty(spec.get("resources")).get("requests")).get("storage")
    try:
        return Quantity.from_json(raw) if raw is not None else None
    except (ValueError, ArithmeticError):
        return None


def validate_persistent_volume_claim_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePersistentVolumeClaimUpdate``: the spec is immutable except that
    ``volumeName`` may be set once (binding), a class may be set on a claim that had none,
    and a bound claim's storage request may change but never shrink."""
    validate_object_meta_update(errs, new, old)
    validate_persistent_volume_claim(errs, new)
    new_spec = dict(or_empty(new.get("spec")))
    old_spec = dict(or_empty(old.get("spec")))
    compare_new, compare_old = dict(new_spec), dict(old_spec)
    if not old_spec.get("volumeName"):
        compare_old["volumeName"] = new_spec.get("volumeName")
    if old_spec.get("storageClassName") is None and new_spec.get("storageClassName") is not None:
        compare_old["storageClassName"] = new_spec.get("storageClassName")
    bound = or_empty(new.get("status")).get("phase") == "Bound"
    if bound:
        for spec, source in ((compare_new, new_spec), (compare_old, old_spec)):
            resources = dict(or_empty(source.get("resources")))
            requests = dict(or_empty(resources.get("requests")))
            requests.pop("storage", None)
            resources["requests"] = requests
            spec["resources"] = resources
    compare_new.pop("volumeAttributesClassName", None)
    compare_old.pop("volumeAttributesClassName", None)
    if semantic(compare_new) != semantic(compare_old):
        errs.append(
            forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        )
    new_size, old_size = _storage_request(new_spec), _storage_request(old_spec)
    if new_size is not None and old_size is not None and new_size < old_size:
        errs.append(
            forbidden(
                "spec.resources.requests.storage", "field can not be less than status.capacity"
            )
        )


# -- StorageClass ----------------------------------------------------------------------------


def validate_storage_class(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateStorageClass``."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    provisioner = as_str(errs, obj.get("provisioner"), "provisioner")
    if not provisioner:
        errs.append(required("provisioner"))
    else:
        errs.extend(
            invalid("provisioner", provisioner, msg)
            for msg in qualified_name_errors(provisioner.lower())
        )
    parameters = as_str_map(errs, obj.get("parameters"), "parameters")
    if len(parameters) > _MAX_PARAMETERS:
        errs.append(too_many("parameters", len(parameters), _MAX_PARAMETERS))
    total = 0
    for key, value in parameters.items():
        if not key:
            errs.append(invalid("parameters", parameters, "key cannot be empty"))
        total += len(key.encode()) + len(value.encode())
    if total > _MAX_PARAMETERS_BYTES:
        errs.append(too_long("parameters", _MAX_PARAMETERS_BYTES))
    policy = as_str(errs, obj.get("reclaimPolicy"), "reclaimPolicy")
    if policy and policy not in _CLASS_RECLAIM_POLICIES:
        errs.append(not_supported("reclaimPolicy", policy, _CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(required("volumeBindingMode"))
    else:
        text = as_str(errs, mode, "volumeBindingMode")
        if text not in _BINDING_MODES:
            errs.append(not_supported("volumeBindingMode", text, _BINDING_MODES))
    as_list(errs, obj.get("mountOptions"), "mountOptions")
    as_list(errs, obj.get("allowedTopologies"), "allowedTopologies")


def validate_storage_class_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateStorageClassUpdate``: parameters, provisioner, reclaim policy and
    binding mode are fixed at creation."""
    validate_object_meta_update(errs, new, old)
    validate_storage_class(errs, new)
    if semantic(new.get("parameters") or {}) != semantic(old.get("parameters") or {}):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(invalid("volumeBindingMode", new.get("volumeBindingMode"), IMMUTABLE_MSG))
