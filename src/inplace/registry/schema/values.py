"""A custom resource's values against its CRD schema: validation and defaulting.

Types are the field check's (`check.py`, which already speaks the CRD validator's wording and
whose unknown fields are what pruning drops); this module adds what kube-openapi's validator
checks beyond types, with the wording apiextensions-apiserver turns its results into
(`kubeOpenAPIResultToFieldErrors`): `required`, `enum`, `minimum`/`maximum` (and their
exclusive forms), `minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/
`maxProperties`, `pattern` and `multipleOf`. Paths are upstream's (`spec.items[0].name`).

Defaulting is upstream's structural defaulting: a `default` fills a missing field of an
object that is present (never an absent parent), from the root down, on every read of a
request body, as the decoder applies it; a null in a field that is not `nullable` is pruned
first (and so takes the field's default, if it has one).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from inplace.api.validation.errors import (
    FieldError,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)

_METADATA_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def validate_values(errs: list[FieldError], schema: Mapping[str, Any], obj: Any) -> None:
    """Append every value of `obj` (a custom resource) that its schema refuses."""
    if not isinstance(obj, Mapping):
        return
    _object(errs, schema, obj, "", root=True)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(errs: list[FieldError], schema: Mapping[str, Any], value: Any, path: str) -> None:
    if value is None:  # a null the schema does not allow was pruned before this
        return
    _value_rules(errs, schema, value, path)
    if isinstance(value, Mapping):
        _object(errs, schema, value, path)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _walk(errs, items, item, f"{path}[{i}]")


def _object(
    errs: list[FieldError],
    schema: Mapping[str, Any],
    obj: Mapping[str, Any],
    path: str,
    *,
    root: bool = False,
) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        properties = {}
    for name in schema.get("required") or ():
        if name not in obj and not (root and name in _METADATA_ROOT_FIELDS):
            errs.append(required(_child(path, name)))
    for name, value in obj.items():
        if root and name in _METADATA_ROOT_FIELDS:
            continue
        child = properties.get(name)
        if isinstance(child, Mapping):
            _walk(errs, child, value, _child(path, name))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping) and not properties:
        for key, value in obj.items():
            _walk(errs, additional, value, f"{path}[{key}]" if path else str(key))


def _value_rules(errs: list[FieldError], schema: Mapping[str, Any], value: Any, path: str) -> None:
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = [v if isinstance(v, str) else json.dumps(v) for v in enum]
        errs.append(not_supported(path, value, allowed))
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        _number_rules(errs, schema, value, path)
    elif isinstance(value, str):
        _string_rules(errs, schema, value, path)
    elif isinstance(value, list):
        _size_rules(errs, schema, len(value), path, "minItems", "maxItems", "items")
    elif isinstance(value, Mapping):
        _size_rules(errs, schema, len(value), path, "minProperties", "maxProperties", "properties")


def _number_rules(
    errs: list[FieldError], schema: Mapping[str, Any], value: float, path: str
) -> None:
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") and value <= minimum:
            errs.append(
                invalid(path, value, f"{path} in body should be greater than {_num(minimum)}")
            )
        elif value < minimum:
            errs.append(
                invalid(
                    path,
                    value,
                    f"{path} in body should be greater than or equal to {_num(minimum)}",
                )
            )
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(invalid(path, value, f"{path} in body should be less than {_num(maximum)}"))
        elif value > maximum:
            errs.append(
                invalid(
                    path, value, f"{path} in body should be less than or equal to {_num(maximum)}"
                )
            )
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple and (value / multiple) % 1:
        errs.append(
            invalid(path, value, f"{path} in body should be a multiple of {_num(multiple)}")
        )


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _string_rules(errs: list[FieldError], schema: Mapping[str, Any], value: str, path: str) -> None:
    length = len(value)
    max_length = schema.get("maxLength")
    if isinstance(max_length, int) and length > max_length:
        errs.append(too_long(path, max_length))
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and length < min_length:
        errs.append(
            invalid(path, value, f"{path} in body should be at least {min_length} chars long")
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True  # refused when the CRD was written
        if not matched:
            errs.append(invalid(path, value, f"{path} in body should match '{pattern}'"))


def _size_rules(
    errs: list[FieldError],
    schema: Mapping[str, Any],
    size: int,
    path: str,
    low: str,
    high: str,
    noun: str,
) -> None:
    maximum = schema.get(high)
    if isinstance(maximum, int) and size > maximum:
        errs.append(too_many(path, size, maximum))
    minimum = schema.get(low)
    if isinstance(minimum, int) and size < minimum:
        errs.append(invalid(path, size, f"{path} in body should have at least {minimum} {noun}"))


# --- defaulting ----------------------------------------------------------------------------


def apply_schema_defaults(schema: Mapping[str, Any], obj: Any) -> None:
    """Fill in `default`s, in place, as upstream's structural defaulting does."""
    if isinstance(obj, dict):
        _default_object(schema, obj, root=True)


def _default(schema: Mapping[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        _default_object(schema, value)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _default(items, item)


def _default_object(schema: Mapping[str, Any], obj: dict[str, Any], *, root: bool = False) -> None:
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, child in properties.items():
            if not isinstance(child, Mapping) or (root and name == "metadata"):
                continue
            if name in obj and obj[name] is None and not child.get("nullable"):
                del obj[name]  # upstream prunes a null the schema does not allow
            if name not in obj and "default" in child:
                obj[name] = copy.deepcopy(child["default"])
            if name in obj:
                _default(child, obj[name])
        return
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        for value in obj.values():
            _default(additional, value)
