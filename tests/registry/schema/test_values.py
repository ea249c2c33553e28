"""A custom resource's values against its schema (beyond types), and its defaults."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.validation.errors import FieldError
from inplace.registry.schema.values import apply_schema_defaults, validate_values

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": True, "maximum": 3},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "tags": {
                    "type": "array",
                    "maxItems": 1,
                    "items": {"type": "string", "minLength": 1},
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 2},
                },
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "integer", "default": 1}},
                },
                "nullable": {"type": "string", "nullable": True, "default": "d"},
            },
        }
    },
}


def _messages(obj: Any) -> list[str]:
    errs: list[FieldError] = []
    validate_values(errs, SCHEMA, obj)
    return [e.message() for e in errs]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"name": "ok"}, []),
        ({}, ["spec.name: Required value"]),
        (
            {"name": "a"},
            ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'],
        ),
        ({"name": "abcdef"}, ["spec.name: Too long: may not be more than 5 bytes"]),
        (
            {"name": "A1"},
            ["spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'"],
        ),
        (
            {"name": "ok", "count": -1},
            [
                "spec.count: Invalid value: -1: spec.count in body should be greater than or "
                "equal to 0"
            ],
        ),
        (
            {"name": "ok", "count": 3},
            ["spec.count: Invalid value: 3: spec.count in body should be less than 3"],
        ),
        (
            {"name": "ok", "mode": "c"},
            ['spec.mode: Unsupported value: "c": supported values: "a", "b"'],
        ),
        ({"name": "ok", "tags": ["x", "y"]}, ["spec.tags: Too many: 2: must have at most 1 items"]),
        (
            {"name": "ok", "tags": [""]},
            [
                'spec.tags[0]: Invalid value: "": spec.tags[0] in body should be at least 1 '
                "chars long"
            ],
        ),
        (
            {"name": "ok", "labels": {"k": "long"}},
            ["spec.labels[k]: Too long: may not be more than 2 bytes"],
        ),
    ],
)
def test_values(spec: dict[str, Any], expected: list[str]) -> None:
    assert _messages({"spec": spec}) == expected


def test_required_at_the_root() -> None:
    assert _messages({"metadata": {"name": "x"}}) == ["spec: Required value"]


def test_defaults_fill_missing_fields_of_present_objects() -> None:
    obj: dict[str, Any] = {"spec": {"name": "ok", "nullable": None, "mode": None}}
    apply_schema_defaults(SCHEMA, obj)
    assert obj == {"spec": {"name": "ok", "mode": "a", "nested": {"level": 1}, "nullable": None}}
    empty: dict[str, Any] = {}
    apply_schema_defaults(SCHEMA, empty)
    assert empty == {}  # no spec: nothing below it is defaulted
