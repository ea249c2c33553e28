"""fieldValidation: Strict refuses unknown fields, Warn drops and reports them, Ignore drops
them; a wrong type is refused whatever the mode, in the wording of the kind's decoder."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.apiserver.errors import StatusError
from inplace.apiserver.fieldvalidation import FIELD_VALIDATION_MODES, drop_path, validate_fields
from inplace.registry.kinds import REGISTRY, Kind


def _kind(group: str, name: str) -> Kind:
    kind = REGISTRY.by_kind(group, name)
    assert kind is not None
    return kind


POD = _kind("", "Pod")
VPA = _kind("autoscaling.k8s.io", "VerticalPodAutoscaler")


def pod(**container_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "main", "image": "busybox", **container_extra}]},
    }


def with_unknown_fields() -> dict[str, Any]:
    obj = pod(imagePullPolicyy="Always")
    obj["spec"]["restartPolicyy"] = "Never"
    return obj


def test_strict_refuses_unknown_fields_naming_each() -> None:
    obj = with_unknown_fields()
    with pytest.raises(StatusError) as info:
        validate_fields(POD, obj, "Strict")
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    assert info.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagePullPolicyy", unknown field "spec.restartPolicyy"'
    )
    assert obj == with_unknown_fields()  # nothing dropped from a refused body


def test_warn_drops_unknown_fields_with_a_warning_each() -> None:
    obj = with_unknown_fields()
    warnings = validate_fields(POD, obj, "Warn")
    assert warnings == (
        'unknown field "spec.containers[0].imagePullPolicyy"',
        'unknown field "spec.restartPolicyy"',
    )
    assert obj == pod()


def test_ignore_drops_unknown_fields_silently() -> None:
    obj = with_unknown_fields()
    assert validate_fields(POD, obj, "Ignore") == ()
    assert obj == pod()


@pytest.mark.parametrize("mode", FIELD_VALIDATION_MODES)
def test_a_known_object_passes_unchanged(mode: str) -> None:
    obj = pod(ports=[{"containerPort": 80}])
    assert validate_fields(POD, obj, mode) == ()
    assert obj == pod(ports=[{"containerPort": 80}])


@pytest.mark.parametrize("mode", FIELD_VALIDATION_MODES)
def test_a_wrong_type_is_a_decode_error_whatever_the_mode(mode: str) -> None:
    obj = pod(ports=[{"containerPort": "80"}], imagePullPolicyy="Always")
    with pytest.raises(StatusError) as info:
        validate_fields(POD, obj, mode)
    assert info.value.code == 400
    assert info.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go '
        "struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    )


def test_a_wrong_type_in_a_crd_kind_is_invalid_as_the_crd_validator_says() -> None:
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"updatePolicy": {"minReplicas": "two"}},
    }
    with pytest.raises(StatusError) as info:
        validate_fields(VPA, vpa, "Warn")
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert info.value.message == (
        'VerticalPodAutoscaler.autoscaling.k8s.io "web" is invalid: '
        'spec.updatePolicy.minReplicas: Invalid value: "string": '
        'spec.updatePolicy.minReplicas in body must be of type integer: "string"'
    )


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(StatusError) as info:
        validate_fields(POD, pod(), "Loud")
    assert info.value.code == 400
    assert info.value.message == (
        'fieldValidation must be one of "Ignore", "Warn", "Strict", got "Loud"'
    )


OBJECT: dict[str, Any] = {"a": {"b": [{"c": 1, "d": 2}, {"c": 3}], "e": {"f": 4}}, "g": 5}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("g", {"a": OBJECT["a"]}),
        ("a.e.f", {"a": {"b": OBJECT["a"]["b"], "e": {}}, "g": 5}),
        ("a.b[0].d", {"a": {"b": [{"c": 1}, {"c": 3}], "e": {"f": 4}}, "g": 5}),
        ("a.b[1].c", {"a": {"b": [{"c": 1, "d": 2}, {}], "e": {"f": 4}}, "g": 5}),
        (".g", {"a": OBJECT["a"]}),  # a leading dot is tolerated
        ("a.b[7].c", OBJECT),  # paths that lead nowhere change nothing
        ("x.y", OBJECT),
        ("g.h", OBJECT),
        ("a.b[0]", OBJECT),  # list items are never removed, only fields
    ],
)
def test_drop_path_removes_exactly_the_field_at_an_upstream_path(
    path: str, expected: dict[str, Any]
) -> None:
    obj = copy.deepcopy(OBJECT)
    drop_path(obj, path)
    assert obj == expected
