"""`x-kubernetes-validations` evaluated with cel-python, in upstream's wording."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.validation.errors import FieldError
from inplace.registry.schema.cel import compile_error, has_rules, validate_rules

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "min above max"},
                {
                    "rule": "!has(self.legacy)",
                    "reason": "FieldValueForbidden",
                    "fieldPath": ".legacy",
                },
                {"rule": "size(self.tags) <= 2"},
                {"rule": "self.name == oldSelf.name", "message": "name is immutable"},
                {"rule": "self.tags.all(t, t.startsWith('x-'))"},
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "legacy": {"type": "string"},
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        }
    },
}


def _messages(obj: Any, old: Any = None) -> list[str]:
    errs: list[FieldError] = []
    validate_rules(errs, SCHEMA, obj, old)
    return [e.message() for e in errs]


def _obj(**spec: Any) -> dict[str, Any]:
    return {"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "a", "tags": ["x-a"], **spec}}


@pytest.mark.parametrize(
    ("obj", "old", "expected"),
    [
        (_obj(), None, []),
        (_obj(minReplicas=3), None, ['spec: Invalid value: "object": min above max']),
        (_obj(legacy="x"), None, ["spec.legacy: Forbidden: failed rule: !has(self.legacy)"]),
        (
            _obj(tags=["x-a", "x-b", "x-c"]),
            None,
            ['spec: Invalid value: "object": failed rule: size(self.tags) <= 2'],
        ),
        (_obj(name="b"), None, []),  # a transition rule judges only a change
        (_obj(name="b"), _obj(), ['spec: Invalid value: "object": name is immutable']),
        (
            _obj(tags=["y"]),
            None,
            ["spec: Invalid value: \"object\": failed rule: self.tags.all(t, t.startsWith('x-'))"],
        ),
    ],
)
def test_rules(obj: Any, old: Any, expected: list[str]) -> None:
    assert _messages(obj, old) == expected


def test_rules_that_do_not_compile_are_reported() -> None:
    assert compile_error("self.x <=") is not None
    assert compile_error("self.x <= self.y") is None


def test_has_rules_finds_nested_rules() -> None:
    assert has_rules(SCHEMA)
    assert not has_rules({"type": "object", "properties": {"a": {"type": "string"}}})
