"""The type graph's vocabulary: structs' required fields and the fields every kind shares."""

from __future__ import annotations

from inplace.registry.schema.types import (
    API_VERSION_DOC,
    KIND_DOC,
    STRING,
    Field,
    Struct,
    Tag,
    Type,
    type_meta_fields,
)


def test_required_lists_the_required_fields_in_field_order() -> None:
    struct = Struct(
        "io.k8s.example.v1.Thing",
        "Thing",
        "",
        {
            "b": Field("b", STRING, required=True),
            "a": Field("a", Type(Tag.LIST, elem=STRING)),
            "c": Field("c", STRING, required=True),
        },
    )
    assert struct.required == ["b", "c"]
    assert Struct("", "Empty", "").required == []


def test_type_meta_fields_are_optional_strings_with_upstreams_descriptions() -> None:
    fields = type_meta_fields()
    assert list(fields) == ["apiVersion", "kind"]
    assert all(f.type is STRING and not f.required for f in fields.values())
    assert fields["apiVersion"].description == API_VERSION_DOC
    assert fields["kind"].description == KIND_DOC
    assert type_meta_fields() is not fields  # each caller may add to its own copy
