"""The pure parts of `apiserver/crds`: CRD validation with upstream's messages, structural
schemas, names, version priority, the JSONPath columns and the kinds a CRD serves."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from inplace.api.validation.errors import FieldError
from inplace.apiserver.crds.columns import find, parse, printer_for
from inplace.apiserver.crds.kinds import kinds_from_crd
from inplace.apiserver.crds.model import (
    by_priority,
    default_crd,
    names_conflict,
    validate_crd,
    validate_crd_update,
    validate_structural,
)
from tests.apiserver.test_crds import widget_crd


def _messages(crd: dict[str, Any]) -> list[str]:
    errs: list[FieldError] = []
    default_crd(crd, True)
    validate_crd(errs, crd)
    return [e.message() for e in errs]


def test_a_valid_crd_has_no_errors() -> None:
    assert _messages(widget_crd()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda c: c["spec"].update(group="example"),
            'spec.group: Invalid value: "example": should be a domain with at least one dot',
        ),
        (
            lambda c: c["spec"].update(scope="Global"),
            'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        ),
        (
            lambda c: c["spec"]["names"].update(listKind="Widget"),
            'spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same',
        ),
        (
            lambda c: c["spec"]["names"].update(shortNames=["Bad_Name"]),
            'spec.names.shortNames[0]: Invalid value: "Bad_Name": a DNS-1035 label must consist',
        ),
        (
            lambda c: c["spec"]["versions"][0].pop("schema"),
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        ),
        (
            lambda c: c["spec"]["versions"][0]["subresources"]["scale"].update(
                specReplicasPath=".status.replicas"
            ),
            "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: "
            '".status.replicas": should be a json path under .spec',
        ),
        (
            lambda c: c["spec"]["versions"][0]["additionalPrinterColumns"][0].update(type="int"),
            'spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "int": '
            'supported values: "boolean", "date", "integer", "number", "string"',
        ),
    ],
)
def test_crd_errors(change: Any, expected: str) -> None:
    crd = widget_crd()
    change(crd)
    assert any(m.startswith(expected) for m in _messages(crd)), _messages(crd)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"properties": {}}, ["s.type: Required value: must not be empty at the root"]),
        ({"type": "string"}, ['s.type: Invalid value: "string": must be object at the root']),
        (
            {"type": "object", "properties": {"a": {"type": "array"}}},
            ["s.properties[a].items: Required value: must be specified"],
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            ["s.additionalProperties: Forbidden: must not be used at the root"],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "x-kubernetes-int-or-string": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            },
            [
                "s.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must "
                "be false if x-kubernetes-int-or-string is true"
            ],
        ),
        (
            {"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": True}}},
            [
                "s.properties[e].properties: Required value: must not be empty if "
                "x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
                "s.properties[e].type: Required value: must be object if "
                "x-kubernetes-embedded-resource is true",
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                },
            },
            [
                "s.properties[metadata]: Forbidden: must not specify anything other than name and "
                "generateName, but metadata is implicitly specified"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "m": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            },
            [],
        ),
    ],
)
def test_structural_schemas(schema: dict[str, Any], expected: list[str]) -> None:
    assert [e.message() for e in validate_structural(schema, "s")] == expected


def test_updates_keep_group_and_plural() -> None:
    old = widget_crd()
    default_crd(old, True)
    new = copy.deepcopy(old)
    new["spec"]["names"]["plural"] = "gizmos"
    new["metadata"]["name"] = "gizmos.example.com"
    errs: list[FieldError] = []
    validate_crd_update(errs, new, old)
    assert 'spec.names.plural: Invalid value: "gizmos": field is immutable' in [
        e.message() for e in errs
    ]


def test_names_accepted_by_another_crd_conflict() -> None:
    other = widget_crd()
    other["metadata"]["name"] = "things.example.com"
    other["status"] = {"acceptedNames": {"plural": "things", "singular": "widget", "kind": "Thing"}}
    assert names_conflict(widget_crd(), [other]) == (
        "SingularConflict",
        '"widget" is already in use',
    )
    assert names_conflict(widget_crd(), []) is None


def test_version_priority_is_upstreams() -> None:
    assert by_priority(["v1alpha1", "v1", "v2beta1", "v2", "foo", "v1beta2", "v1beta1"]) == [
        "v2",
        "v1",
        "v2beta1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]


def test_kinds_from_a_crd() -> None:
    crd = widget_crd()
    crd["metadata"].update(uid="u1", generation=3)
    default_crd(crd, True)
    (kind,) = kinds_from_crd(crd)
    assert (kind.group, kind.version, kind.kind, kind.plural) == (
        "example.com",
        "v1",
        "Widget",
        "widgets",
    )
    assert kind.namespaced and kind.short_names == ("wg",) and kind.categories == ("all",)
    assert kind.subresources == ("status", "scale")
    assert kind.revision == "u1/3" and kind.list_kind == "WidgetList"
    assert kind.crd is not None and kind.crd.scale is not None
    assert kind.crd.scale.label_selector == ".spec.selector"


@pytest.mark.parametrize(
    ("path", "obj", "expected"),
    [
        (".spec.a", {"spec": {"a": 1}}, [1]),
        (".spec.missing", {"spec": {}}, []),
        (".items[1]", {"items": [1, 2]}, [2]),
        (".items[*].n", {"items": [{"n": 1}, {"n": 2}]}, [1, 2]),
        (".metadata.labels['a.b/c']", {"metadata": {"labels": {"a.b/c": "x"}}}, ["x"]),
        (
            '.status.conditions[?(@.type=="Ready")].status',
            {
                "status": {
                    "conditions": [
                        {"type": "Other", "status": "1"},
                        {"type": "Ready", "status": "True"},
                    ]
                }
            },
            ["True"],
        ),
        ("{.spec.a}", {"spec": {"a": "b"}}, ["b"]),
    ],
)
def test_jsonpath(path: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert find(obj, parse(path)) == expected


def test_printer_columns_cells() -> None:
    printer = printer_for(
        [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
            {"name": "Since", "type": "date", "jsonPath": ".status.since", "priority": 1},
        ]
    )
    assert [c.name for c in printer.columns] == ["Name", "Size", "Tags", "Ready", "Since"]
    assert printer.columns[4].priority == 1
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    obj = {
        "metadata": {"name": "a"},
        "spec": {"size": 3, "tags": ["x", "y"]},
        "status": {"since": "2026-01-01T00:00:00Z"},
    }
    cells, _ = printer.row(obj, now)
    assert cells == ["a", 3, '["x","y"]', None, "5m"]
    default = printer_for([])
    assert [c.name for c in default.columns] == ["Name", "Age"]
