"""Webhook configurations (NAME, WEBHOOKS, AGE) and admission policies, as upstream's printers
show them."""

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
    list_at,
    name_of,
)

_WEBHOOK_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE_COLUMN,
)


def _print_webhook_configuration(obj: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(obj), len(list_at(obj, "webhooks")), age(obj, now)], None


MUTATING_WEBHOOK_CONFIGURATION_TABLE: Final = TablePrinter(
    _WEBHOOK_COLUMNS, _print_webhook_configuration
)
VALIDATING_WEBHOOK_CONFIGURATION_TABLE: Final = TablePrinter(
    _WEBHOOK_COLUMNS, _print_webhook_configuration
)

_POLICY_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    Column(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE_COLUMN,
)
_BINDING_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    Column(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE_COLUMN,
)


def _print_policy(obj: Mapping[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind")
    param_kind = (
        f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"
        if isinstance(kind, Mapping)
        else "<unset>"
    )
    return [name_of(obj), len(list_at(obj, "spec", "validations")), param_kind, age(obj, now)], None


def _selector_text(selector: Mapping[str, Any]) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()`` for the usual selectors."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, op = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or ()))
        terms.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})"}.get(
                op, key if op == "Exists" else f"!{key}"
            )
        )
    return ",".join(terms)


def _print_binding(obj: Mapping[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, Mapping):
        if ref.get("name"):
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), Mapping):
            param = _selector_text(ref["selector"])
    return [name_of(obj), str(spec.get("policyName") or ""), param, age(obj, now)], None


VALIDATING_ADMISSION_POLICY_TABLE: Final = TablePrinter(_POLICY_COLUMNS, _print_policy)
VALIDATING_ADMISSION_POLICY_BINDING_TABLE: Final = TablePrinter(_BINDING_COLUMNS, _print_binding)
