"""ConfigMaps, Secrets and ServiceAccounts: the configuration every manifest carries.

Upstream ``ValidateConfigMap``, ``ValidateSecret``, ``ValidateServiceAccount`` and their
update rules (``pkg/apis/core/validation/validation.go``), with upstream's paths and messages:
keys are config keys (``[-._a-zA-Z0-9]+``, not ``.``/``..``), the data of one object is at most
1 MiB, an ``immutable`` object keeps its data and stays immutable, a Secret's ``type`` never
changes and the well-known types carry their required keys.

Secret and binary ConfigMap values are base64 in JSON; by the time validation runs they have
been checked as base64 (a bad one is a decode error, 400, as upstream) and ``stringData`` has
been merged into ``data`` (:func:`inplace.api.defaults.default_secret`), so sizes here are of
the decoded bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.names import max_len_error, regex_error
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    Bare,
    FieldError,
    as_map,
    as_str,
    check_bool,
    forbidden,
    invalid,
    key_path,
    name_is_dns_subdomain,
    required,
    too_long,
)
from inplace.api.validation.meta import validate_object_meta, validate_object_meta_update

__all__ = [
    "MAX_DATA_BYTES",
    "config_key_errors",
    "decoded_size",
    "validate_config_map",
    "validate_config_map_update",
    "validate_secret",
    "validate_secret_update",
    "validate_service_account",
    "validate_service_account_update",
]

#: Upstream ``core.MaxSecretSize``: the data of one ConfigMap or Secret.
MAX_DATA_BYTES: Final = 1 * 1024 * 1024

_CONFIG_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
)
_CONFIG_KEY_RE: Final = re.compile(_CONFIG_KEY_FMT)
_IMMUTABLE_WHEN_SET: Final = "field is immutable when `immutable` is set"
_REDACTED: Final = Bare('"<secret contents redacted>"')

# Secret types with required keys (upstream core/types.go).
_SERVICE_ACCOUNT_TOKEN: Final = "kubernetes.io/service-account-token"
_SERVICE_ACCOUNT_NAME_KEY: Final = "kubernetes.io/service-account.name"
_DOCKERCFG: Final = ("kubernetes.io/dockercfg", ".dockercfg")
_DOCKER_CONFIG_JSON: Final = ("kubernetes.io/dockerconfigjson", ".dockerconfigjson")
_BASIC_AUTH: Final = "kubernetes.io/basic-auth"
_SSH_AUTH: Final = "kubernetes.io/ssh-auth"
_TLS: Final = "kubernetes.io/tls"


def config_key_errors(key: str) -> list[str]:
    """Upstream ``IsConfigMapKey`` (ConfigMap and Secret keys, projected paths)."""
    errs: list[str] = []
    if len(key.encode()) > 253:
        errs.append(max_len_error(253))
    if not _CONFIG_KEY_RE.fullmatch(key):
        errs.append(
            regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key_name")
        )
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def decoded_size(value: object) -> int:
    """Bytes of a base64 value once decoded (0 for what is not valid base64: the decode
    check reports it)."""
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=False))
    except (binascii.Error, ValueError):
        return 0


def _decoded(value: object) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return None


def _check_keys(errs: list[FieldError], data: Mapping[str, Any], path: str) -> None:
    for key in data:
        errs.extend(invalid(key_path(path, key), key, msg) for msg in config_key_errors(str(key)))


def _text_size(data: Mapping[str, Any]) -> int:
    return sum(len(v.encode()) for v in data.values() if isinstance(v, str))


# -- ConfigMap ---------------------------------------------------------------------------------


def validate_config_map(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateConfigMap``: config keys, no key in both bags, at most 1 MiB."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    check_bool(errs, obj.get("immutable"), "immutable")
    data = as_map(errs, obj.get("data"), "data")
    binary = as_map(errs, obj.get("binaryData"), "binaryData")
    _check_keys(errs, data, "data")
    for key in data:
        if key in binary:
            errs.append(
                invalid(key_path("data", key), key, "duplicate of key present in binaryData")
            )
    _check_keys(errs, binary, "binaryData")
    total = _text_size(data) + sum(decoded_size(v) for v in binary.values())
    if total > MAX_DATA_BYTES:
        # The empty path refers to the whole object; upstream prints it as "[]".
        errs.append(too_long("[]", MAX_DATA_BYTES))


def validate_config_map_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateConfigMapUpdate``: an immutable ConfigMap keeps its data."""
    validate_object_meta_update(errs, new, old)
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", _IMMUTABLE_WHEN_SET))
        for bag in ("data", "binaryData"):
            if semantic(new.get(bag) or None) != semantic(old.get(bag) or None):
                errs.append(forbidden(bag, _IMMUTABLE_WHEN_SET))
    validate_config_map(errs, new)


# -- Secret ------------------------------------------------------------------------------------


def _json_error(raw: bytes) -> str | None:
    """Go's ``json.Unmarshal`` into a map, in its words for the common failures."""
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        return "invalid character looking for beginning of value"
    except json.JSONDecodeError as exc:
        if not raw.strip():
            return "unexpected end of JSON input"
        text = raw.decode(errors="replace")
        pos = min(exc.pos, len(text) - 1)
        if exc.msg.startswith("Expecting value"):
            return f"invalid character {text[pos]!r} looking for beginning of value"
        return f"invalid character {text[pos]!r} after top-level value"
    if not isinstance(value, dict):
        return "json: cannot unmarshal " + type(value).__name__ + " into Go value of type map"
    return None


def validate_secret(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateSecret``: config keys, at most 1 MiB, the type's required keys."""
    meta = validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    check_bool(errs, obj.get("immutable"), "immutable")
    data = as_map(errs, obj.get("data"), "data")
    _check_keys(errs, data, "data")
    if sum(decoded_size(v) for v in data.values()) > MAX_DATA_BYTES:
        errs.append(too_long("data", MAX_DATA_BYTES))
    secret_type = as_str(errs, obj.get("type"), "type")
    if secret_type == _SERVICE_ACCOUNT_TOKEN:
        annotations = meta.get("annotations")
        if not isinstance(annotations, Mapping) or not annotations.get(_SERVICE_ACCOUNT_NAME_KEY):
            errs.append(required(key_path("metadata.annotations", _SERVICE_ACCOUNT_NAME_KEY)))
    elif secret_type in (_DOCKERCFG[0], _DOCKER_CONFIG_JSON[0]):
        key = _DOCKERCFG[1] if secret_type == _DOCKERCFG[0] else _DOCKER_CONFIG_JSON[1]
        if key not in data:
            errs.append(required(key_path("data", key)))
        else:
            problem = _json_error(_decoded(data[key]) or b"")
            if problem is not None:
                errs.append(invalid(key_path("data", key), _REDACTED, problem))
    elif secret_type == _BASIC_AUTH:
        if "username" not in data and "password" not in data:
            errs.append(required(key_path("data", "username")))
            errs.append(required(key_path("data", "password")))
    elif secret_type == _SSH_AUTH:
        if not _decoded(data.get("ssh-privatekey")):
            errs.append(required(key_path("data", "ssh-privatekey")))
    elif secret_type == _TLS:
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(required(key_path("data", key)))


def validate_secret_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateSecretUpdate``: the type never changes; an immutable Secret keeps
    its data."""
    validate_object_meta_update(errs, new, old)
    if semantic(new.get("type")) != semantic(old.get("type")):
        errs.append(invalid("type", new.get("type") or "", IMMUTABLE_MSG))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", _IMMUTABLE_WHEN_SET))
        if semantic(new.get("data") or None) != semantic(old.get("data") or None):
            errs.append(forbidden("data", _IMMUTABLE_WHEN_SET))
    validate_secret(errs, new)


# -- ServiceAccount ----------------------------------------------------------------------------


def validate_service_account(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateServiceAccount``: its metadata (the name a DNS subdomain)."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    check_bool(errs, obj.get("automountServiceAccountToken"), "automountServiceAccountToken")


def validate_service_account_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_object_meta_update(errs, new, old)
    validate_service_account(errs, new)
