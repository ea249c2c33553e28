"""Containers' ``env`` and ``envFrom``: upstream ``ValidateEnv`` (with ``validateEnvVarValueFrom``)
and ``ValidateEnvFrom``, with relaxed variable names (v1.32+: printable ASCII but ``=``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.names import qualified_name_errors
from inplace.api.validation.config import config_key_errors
from inplace.api.validation.errors import (
    FieldError,
    as_list,
    as_str,
    child_path,
    index_path,
    invalid,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    required,
)

__all__ = ["ENV_FIELD_PATHS", "validate_env", "validate_env_from"]

_RELAXED_NAME_MSG: Final = (
    "a valid environment variable name must consist only of printable ASCII characters other "
    "than '='"
)
#: What ``fieldRef`` may name in ``env`` (upstream ``validEnvDownwardAPIFieldPathExpressions``).
ENV_FIELD_PATHS: Final = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
#: Every label ``ConvertDownwardAPIFieldLabel`` knows (the ones env does not take included).
_CONVERTIBLE: Final = frozenset(
    {
        *ENV_FIELD_PATHS,
        "metadata.annotations",
        "metadata.labels",
        "spec.restartPolicy",
        "spec.schedulerName",
        "status.phase",
    }
)
_RESOURCES: Final = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_BYTE_DIVISORS: Final = (
    "1",
    "1k",
    "1M",
    "1G",
    "1T",
    "1P",
    "1E",
    "1Ki",
    "1Mi",
    "1Gi",
    "1Ti",
    "1Pi",
    "1Ei",
)
_BYTE_DIVISORS_TEXT: Final = ", ".join(_BYTE_DIVISORS)


def _relaxed_name_errors(name: str) -> list[str]:
    if all(0x20 <= ord(ch) <= 0x7E and ch != "=" for ch in name):
        return []
    return [_RELAXED_NAME_MSG]


def _split_subscript(path: str) -> tuple[str, str] | None:
    """Upstream ``SplitMaybeSubscriptedPath``: ``metadata.labels['k']`` → (path, k)."""
    if not path.endswith("']"):
        return None
    head, sep, subscript = path[:-2].partition("['")
    return (head, subscript) if sep else None


def _field_ref(errs: list[FieldError], ref: Mapping[str, Any], path: str) -> None:
    """Upstream ``validateObjectFieldSelector`` with env's expressions."""
    version = as_str(errs, ref.get("apiVersion"), child_path(path, "apiVersion"))
    if not version:
        errs.append(required(child_path(path, "apiVersion")))
        return
    field_path = as_str(errs, ref.get("fieldPath"), child_path(path, "fieldPath"))
    if not field_path:
        errs.append(required(child_path(path, "fieldPath")))
        return
    subscripted = _split_subscript(field_path)
    label = subscripted[0] if subscripted else field_path
    if version != "v1":
        problem = f"unsupported pod version: {version}"
    elif label not in _CONVERTIBLE or (
        subscripted and label not in ("metadata.annotations", "metadata.labels")
    ):
        problem = f"field label not supported: {field_path}"
    else:
        problem = ""
    if problem:
        errs.append(
            invalid(
                child_path(path, "fieldPath"), field_path, f"error converting fieldPath: {problem}"
            )
        )
        return
    if subscripted:
        key = subscripted[1].lower() if label == "metadata.annotations" else subscripted[1]
        errs.extend(invalid(path, key, msg) for msg in qualified_name_errors(key))
    elif label not in ENV_FIELD_PATHS:
        errs.append(not_supported(child_path(path, "fieldPath"), label, ENV_FIELD_PATHS))


def _resource_field_ref(errs: list[FieldError], ref: Mapping[str, Any], path: str) -> None:
    """Upstream ``validateContainerResourceFieldSelector`` (env: no container name needed)."""
    resource = as_str(errs, ref.get("resource"), child_path(path, "resource"))
    if not resource:
        errs.append(required(child_path(path, "resource")))
    elif resource not in _RESOURCES and not resource.startswith(
        ("requests.hugepages-", "limits.hugepages-")
    ):
        errs.append(not_supported(child_path(path, "resource"), resource, _RESOURCES))
    divisor = ref.get("divisor")
    if divisor in (None, "0", 0):
        return
    shown = str(divisor)
    if resource in ("limits.cpu", "requests.cpu") and shown not in ("1m", "1"):
        errs.append(
            invalid(
                child_path(path, "divisor"),
                resource,
                "only divisor's values 1m and 1 are supported with the cpu resource",
            )
        )
    elif resource in ("limits.memory", "requests.memory") and shown not in _BYTE_DIVISORS:
        errs.append(
            invalid(
                child_path(path, "divisor"),
                resource,
                f"only divisor's values {_BYTE_DIVISORS_TEXT} are supported with the memory "
                "resource",
            )
        )
    elif resource.endswith("ephemeral-storage") and shown not in _BYTE_DIVISORS:
        errs.append(
            invalid(
                child_path(path, "divisor"),
                resource,
                f"only divisor's values {_BYTE_DIVISORS_TEXT} are supported with the local "
                "ephemeral storage resource",
            )
        )


def _key_ref(errs: list[FieldError], ref: Mapping[str, Any], path: str) -> None:
    """Upstream ``validateConfigMapKeySelector`` / ``validateSecretKeySelector``."""
    name = as_str(errs, ref.get("name"), child_path(path, "name"))
    errs.extend(
        invalid(child_path(path, "name"), name, m) for m in name_is_dns_subdomain(name, False)
    )
    key = as_str(errs, ref.get("key"), child_path(path, "key"))
    if not key:
        errs.append(required(child_path(path, "key")))
    else:
        errs.extend(invalid(child_path(path, "key"), key, msg) for msg in config_key_errors(key))


def validate_env(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidateEnv``: names, and one source per ``valueFrom``."""
    for i, env in enumerate(objects_in(as_list(errs, value, path))):
        idx = index_path(path, i)
        name = as_str(errs, env.get("name"), child_path(idx, "name"))
        if not name:
            errs.append(required(child_path(idx, "name")))
        else:
            errs.extend(
                invalid(child_path(idx, "name"), name, m) for m in _relaxed_name_errors(name)
            )
        text = as_str(errs, env.get("value"), child_path(idx, "value"))
        source = env.get("valueFrom")
        if source is None:
            continue
        from_path = child_path(idx, "valueFrom")
        if not isinstance(source, Mapping):
            continue  # the decode check reports the type
        checks = (
            ("fieldRef", _field_ref),
            ("resourceFieldRef", _resource_field_ref),
            ("configMapKeyRef", _key_ref),
            ("secretKeyRef", _key_ref),
        )
        count = 0
        for key, check in checks:
            ref = source.get(key)
            if isinstance(ref, Mapping):
                count += 1
                check(errs, ref, child_path(from_path, key))
        if count == 0:
            errs.append(
                invalid(
                    from_path,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif text:
            errs.append(invalid(from_path, "", "may not be specified when `value` is not empty"))
        elif count > 1:
            errs.append(
                invalid(from_path, "", "may not have more than one field specified at a time")
            )


def validate_env_from(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidateEnvFrom``: a prefix that makes names, one named source each."""
    for i, source in enumerate(objects_in(as_list(errs, value, path))):
        idx = index_path(path, i)
        prefix = as_str(errs, source.get("prefix"), child_path(idx, "prefix"))
        if prefix:
            errs.extend(
                invalid(child_path(idx, "prefix"), prefix, m) for m in _relaxed_name_errors(prefix)
            )
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if not isinstance(ref, Mapping):
                continue
            count += 1
            name_path = child_path(child_path(idx, key), "name")
            name = as_str(errs, ref.get("name"), name_path)
            if not name:
                errs.append(required(name_path))
            else:
                errs.extend(invalid(name_path, name, m) for m in name_is_dns_subdomain(name, True))
        if count == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
