"""Field errors and the 422 Status in upstream's formats; a wrong JSON type is a field error."""

from __future__ import annotations

import pytest

from inplace.api.validation import (
    FieldError,
    ValidationError,
    dns1123_label_errors,
    qualified_name_errors,
)
from inplace.registry.validation import validate_create
from tests.api.validation.builders import (
    POD,
    create_messages,
    pod,
)

# -- field error and status formatting ------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            FieldError("FieldValueRequired", "spec.containers", ""),
            "spec.containers: Required value",
        ),
        (
            FieldError("FieldValueRequired", "metadata.name", "name or generateName is required"),
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            FieldError(
                "FieldValueInvalid",
                "spec.containers[0].resources.requests",
                "must be less than or equal to cpu limit of 1",
                "2",
            ),
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or '
            "equal to cpu limit of 1",
        ),
        (
            FieldError(
                "FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0", -1
            ),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            FieldError("FieldValueForbidden", "spec", "pod updates may not change fields"),
            "spec: Forbidden: pod updates may not change fields",
        ),
        (
            FieldError(
                "FieldValueNotSupported",
                "spec.restartPolicy",
                'supported values: "Always", "OnFailure", "Never"',
                "Sometimes",
            ),
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"',
        ),
        (
            FieldError("FieldValueDuplicate", "spec.containers[1].name", "", "app"),
            'spec.containers[1].name: Duplicate value: "app"',
        ),
        (
            FieldError(
                "FieldValueTooLong", "metadata.annotations", "may not be more than 262144 bytes"
            ),
            "metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (
            FieldError("FieldValueInvalid", "x", "bad", 'quote " and\nnewline'),
            'x: Invalid value: "quote \\" and\\nnewline": bad',
        ),
        (FieldError("FieldValueInvalid", "x", "bad", None), "x: Invalid value: null: bad"),
        (FieldError("FieldValueInvalid", "x", "bad", True), "x: Invalid value: true: bad"),
    ],
)
def test_field_error_message(error: FieldError, message: str) -> None:
    assert error.message() == message


def test_validation_error_message_and_status() -> None:
    one = ValidationError(
        "Pod", "web", [FieldError("FieldValueRequired", "spec.containers[0].image")]
    )
    assert one.message() == 'Pod "web" is invalid: spec.containers[0].image: Required value'
    two = ValidationError(
        "Deployment",
        "web",
        [
            FieldError("FieldValueRequired", "spec.selector"),
            FieldError(
                "FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0", -1
            ),
            FieldError("FieldValueRequired", "spec.selector"),  # duplicates collapse
        ],
        group="apps",
    )
    assert two.message() == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.replicas: '
        "Invalid value: -1: must be greater than or equal to 0]"
    )
    assert str(two) == two.message()
    assert two.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": two.message(),
        "reason": "Invalid",
        "details": {
            "name": "web",
            "group": "apps",
            "kind": "Deployment",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.selector",
                },
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be greater than or equal to 0",
                    "field": "spec.replicas",
                },
            ],
        },
        "code": 422,
    }


def test_format_messages_are_upstreams() -> None:
    assert dns1123_label_errors("My_Name") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert dns1123_label_errors("a" * 64) == ["must be no more than 63 characters"]
    assert qualified_name_errors("example.com/") == [
        "name part must be non-empty",
        (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ),
    ]
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("inplace.dev/resize-policy") == []


def test_wrong_json_types_are_field_errors() -> None:
    bad = pod()
    bad["spec"]["containers"][0]["command"] = "sleep 1"
    bad["spec"]["terminationGracePeriodSeconds"] = "30"
    bad["metadata"]["labels"] = {"app": 1}
    assert sorted(create_messages(POD, bad)) == [
        "metadata.labels[app]: Invalid value: 1: must be of type string",
        'spec.containers[0].command: Invalid value: "sleep 1": must be of type array',
        'spec.terminationGracePeriodSeconds: Invalid value: "30": must be of type integer',
    ]
    with pytest.raises(ValidationError) as info:
        validate_create(POD, ["not", "an", "object"])  # type: ignore[arg-type]
    assert info.value.errors[0].type == "FieldValueTypeInvalid"
