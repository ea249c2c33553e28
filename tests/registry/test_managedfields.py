"""The stored form of managedFields: entries, identifiers, the checks of write options."""

from __future__ import annotations

import pytest

from inplace.registry import fieldpath as fp
from inplace.registry import managedfields as mf
from inplace.registry.managedfields import ApplyConflict

# --- options and names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("manager", "force", "apply_", "messages"),
    [
        ("kubectl", True, True, []),
        ("", False, True, ["fieldManager: Required value: is required for apply patch"]),
        ("m", True, False, ["force: Forbidden: may not be specified for non-apply patch"]),
        ("x" * 129, False, False, ["fieldManager: Too long: may not be more than 128 bytes"]),
        (
            "a\tb",
            False,
            False,
            ['fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)'],
        ),
    ],
)
def test_write_options(manager: str, force: bool, apply_: bool, messages: list[str]) -> None:
    errors = mf.option_errors(manager, force_given=force, apply=apply_)
    assert [e.message() for e in errors] == messages


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        ("kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0", "kubectl"),
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("inplace-scheduler", "inplace-scheduler"),
        ("bad\x00agent/1", "badagent"),
        ("", ""),
        ("x" * 200, "x" * 128),
    ],
)
def test_the_manager_a_user_agent_names(agent: str, manager: str) -> None:
    assert mf.manager_from_user_agent(agent) == manager


def test_decode_refuses_what_upstream_refuses() -> None:
    good = {"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    assert mf.decode([good]).fields
    for bad, message in (
        ({**good, "operation": "Patch"}, "operation must be `Apply` or `Update`"),
        ({**good, "apiVersion": ""}, "apiVersion must not be empty"),
        ({**good, "fieldsType": ""}, "missing fieldsType in managed fields entry 0"),
        (
            {**good, "fieldsType": "FieldsV2"},
            'invalid fieldsType "FieldsV2" in managed fields entry 0',
        ),
    ):
        with pytest.raises(ValueError, match=message):
            mf.decode([bad])


def test_conflicts_are_grouped_by_manager_in_upstream_words() -> None:
    one = mf.manager_identifier("kubectl", "Apply", "", None)
    other = mf.manager_identifier("scaler", "Update", "apps/v1", "scale")
    conflict = ApplyConflict(
        {
            other: fp.set_of(("f:spec", "f:replicas")),
            one: fp.set_of(("f:spec", "f:replicas"), ("f:metadata", "f:labels", "f:a")),
        }
    )
    assert conflict.message == (
        'Apply failed with 3 conflicts: conflicts with "kubectl":\n'
        "- .metadata.labels.a\n"
        "- .spec.replicas\n"
        'conflicts with "scaler" with subresource "scale" using apps/v1:\n'
        "- .spec.replicas"
    )


def test_entries_are_encoded_in_go_field_order_and_sorted() -> None:
    update = mf.manager_identifier("b", "Update", "v1", "status")
    apply = mf.manager_identifier("a", "Apply", "v1", None)
    managed = mf.Managed(
        {
            update: mf.Entry(fp.set_of(("f:status", "f:phase")), "v1", False),
            apply: mf.Entry(
                fp.set_of(("f:spec", "f:x"), ("f:metadata", "f:labels", "f:l")), "v1", True
            ),
        },
        {update: "2026-01-01T00:00:00Z", apply: "2026-01-02T00:00:00Z"},
    )
    encoded = mf.encode(managed)
    assert encoded is not None
    assert [list(e) for e in encoded] == [
        ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"],
        ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"],
    ]
    assert encoded[0]["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:l": {}}},
        "f:spec": {"f:x": {}},
    }
    assert list(encoded[0]["fieldsV1"]) == ["f:metadata", "f:spec"]
    assert mf.decode(encoded).fields == managed.fields
    assert mf.encode(mf.Managed({}, {})) is None


@pytest.mark.parametrize(
    ("entries", "reset"), [([], True), ([{}], True), (None, False), ([{"manager": "m"}], False)]
)
def test_clearing_managed_fields(entries: object, reset: bool) -> None:
    assert mf.is_reset(entries) is reset
