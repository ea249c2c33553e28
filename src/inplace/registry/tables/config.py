"""ConfigMaps, Secrets and ServiceAccounts: upstream's printers (``printConfigMap``,
``printSecret``, ``printServiceAccount``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    get_path,
    name_of,
    text_at,
)

__all__ = ["CONFIG_MAP_TABLE", "SECRET_TABLE", "SERVICE_ACCOUNT_TABLE"]

_DATA_DOC: Final = (
    "Data contains the configuration data. Each key must consist of alphanumeric characters, "
    "'-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The"
    " keys stored in Data must not overlap with the keys in the BinaryData field, this is "
    "enforced during validation process."
)
_SECRET_TYPE_DOC: Final = (
    "Used to facilitate programmatic handling of secret data. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
)
_SECRET_DATA_DOC: Final = (
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', "
    "'_' or '.'. The serialized form of the secret data is a base64 encoded string, "
    "representing the arbitrary (possibly non-string) data value here. Described in "
    "https://tools.ietf.org/html/rfc4648#section-4"
)
_SA_SECRETS_DOC: Final = (
    "Secrets is a list of the secrets in the same namespace that pods running using this "
    "ServiceAccount are allowed to use. Pods are only limited to this list if this service "
    'account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The '
    '"kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer '
    "separate namespaces to isolate access to mounted secrets. This field should not be used "
    "to find auto-generated service account token secrets for use outside of pods. Instead, "
    "tokens can be requested directly using the TokenRequest API, or service account token "
    "secrets can be manually created. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret"
)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, Mapping | list) else 0


def _print_config_map(cm: Mapping[str, Any], now: datetime) -> Row:
    data = _count(get_path(cm, "data")) + _count(get_path(cm, "binaryData"))
    return [name_of(cm), data, age(cm, now)], None


def _print_secret(secret: Mapping[str, Any], now: datetime) -> Row:
    data = _count(get_path(secret, "data"))
    return [name_of(secret), text_at(secret, "type"), data, age(secret, now)], None


def _print_service_account(sa: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(sa), _count(get_path(sa, "secrets")), age(sa, now)], None


CONFIG_MAP_TABLE: Final = TablePrinter(
    (NAME_COLUMN, Column("Data", "string", _DATA_DOC), AGE_COLUMN), _print_config_map
)
SECRET_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column("Type", "string", _SECRET_TYPE_DOC),
        Column("Data", "string", _SECRET_DATA_DOC),
        AGE_COLUMN,
    ),
    _print_secret,
)
SERVICE_ACCOUNT_TABLE: Final = TablePrinter(
    (NAME_COLUMN, Column("Secrets", "string", _SA_SECRETS_DOC), AGE_COLUMN),
    _print_service_account,
)
