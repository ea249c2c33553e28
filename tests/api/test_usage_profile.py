"""The ``inplace.dev/usage-profile`` annotation: its JSON forms, and the 422 a bad one gets
on a pod or a pod template."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inplace.api.annotations import USAGE_PROFILE
from inplace.api.usage_profile import (
    UsageProfile,
    parse_profile,
    parse_profiles,
    profile_errors,
    profile_for,
)
from inplace.api.validation import ValidationError
from inplace.registry.validation import validate_create
from tests.api.validation.builders import (
    DEPLOYMENT,
    POD,
    container,
    create_messages,
    deployment,
    pod,
)

Mi = 2**20


@pytest.mark.parametrize(
    ("text", "profiles"),
    [
        ('{"cpu": "250m", "memory": "100Mi"}', {None: UsageProfile(((0.0, 250, 100 * Mi),))}),
        ("{}", {None: UsageProfile(((0.0, 0, 0),))}),
        (
            '{"ramp": {"from": {"cpu": "100m"}, "to": {"cpu": 1}, "seconds": 10}}',
            {None: UsageProfile(((0.0, 100, 0), (10.0, 1000, 0)))},
        ),
        (
            '{"points": [[10, "1", "1Gi"], [0, 0, "0"]]}',
            {None: UsageProfile(((0.0, 0, 0), (10.0, 1000, 1024 * Mi)))},
        ),
        (
            '{"app": {"cpu": "1"}, "sidecar": {"memory": "1Mi"}}',
            {"app": UsageProfile(((0.0, 1000, 0),)), "sidecar": UsageProfile(((0.0, 0, Mi),))},
        ),
    ],
)
def test_forms(text: str, profiles: dict[str | None, UsageProfile]) -> None:
    assert parse_profiles(text) == profiles


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("not json", "must be JSON: Expecting value: line 1 column 1 (char 0)"),
        ("[1, 2]", "must be a JSON object: a profile, or profiles by container name"),
        ('{"cpu": "lots"}', "the profile.cpu: quantities must match the regular expression"),
        ('{"cpu": "1", "mem": "1Gi"}', "the profile: unknown field 'mem' (cpu and memory"),
        ('{"points": [[0, "1"]]}', "points[0] must be [seconds, cpu, memory]"),
        ('{"points": []}', "points must be a non-empty list"),
        ('{"ramp": {"to": {"cpu": "1"}, "seconds": -5}}', "ramp.seconds must be a number"),
        ('{"ghost": {"cpu": "1"}}', "no container named 'ghost' in this pod"),
        ('{"app": {"cpu": "x"}}', "container 'app': the profile.cpu: quantities must match"),
        (5, "must be a string holding JSON"),
    ],
)
def test_what_is_wrong_is_said(value: object, problem: str) -> None:
    error = profile_errors(value, ["app"])
    assert error is not None and error.startswith(problem), error


def with_profile(obj: dict[str, Any], value: str, *, template: bool = False) -> dict[str, Any]:
    meta = obj["spec"]["template"]["metadata"] if template else obj["metadata"]
    meta.setdefault("annotations", {})[USAGE_PROFILE] = value
    return obj


def test_a_bad_profile_is_a_422_naming_the_annotation() -> None:
    bad = with_profile(pod(container("app")), '{"cpu": "lots"}')
    [message] = create_messages(POD, bad)
    assert message.startswith(
        'metadata.annotations[inplace.dev/usage-profile]: Invalid value: "{\\"cpu\\": '
        '\\"lots\\"}": the profile.cpu: quantities must match the regular expression'
    )
    good = with_profile(pod(container("app")), json.dumps({"app": {"cpu": "1"}}))
    assert not create_messages_or_none(good)


def create_messages_or_none(obj: dict[str, Any]) -> list[str]:
    try:
        validate_create(POD, obj)
    except ValidationError as exc:
        return [e.message() for e in exc.errors]
    return []


def test_templates_are_checked_against_their_containers() -> None:
    bad = with_profile(deployment(), '{"nope": {"cpu": "1"}}', template=True)
    assert create_messages(DEPLOYMENT, bad) == [
        'spec.template.annotations[inplace.dev/usage-profile]: Invalid value: "{\\"nope\\": '
        '{\\"cpu\\": \\"1\\"}}": no container named \'nope\' in this pod'
    ]


def test_profile_for_a_container() -> None:
    annotated = {"metadata": {"annotations": {USAGE_PROFILE: '{"a": {"cpu": "1"}}'}}}
    assert profile_for(annotated, "a") == UsageProfile(((0.0, 1000, 0),))
    assert profile_for(annotated, "b") is None
    everyone = {"metadata": {"annotations": {USAGE_PROFILE: '{"memory": "1Mi"}'}}}
    assert profile_for(everyone, "b") == UsageProfile(((0.0, 0, Mi),))
    assert profile_for({"metadata": {}}, "a") is None
    assert profile_for({"metadata": {"annotations": {USAGE_PROFILE: "nope"}}}, "a") is None


@pytest.mark.parametrize(
    ("raw", "at", "expected"),
    [
        ({"cpu": "250m", "memory": "100Mi"}, 0, (250, 100 * Mi)),
        ({"cpu": "250m", "memory": "100Mi"}, 1e6, (250, 100 * Mi)),
        (
            {"ramp": {"from": {"cpu": "100m", "memory": "0"}, "to": {"cpu": "1"}, "seconds": 10}},
            5,
            (550, 0),
        ),
        ({"ramp": {"from": {"cpu": "100m"}, "to": {"cpu": "1"}, "seconds": 10}}, 99, (1000, 0)),
        ({"points": [[10, "1", "1Gi"], [0, "0", "0"]]}, 2.5, (250, 256 * Mi)),
        ({"points": [[0, "1", "1Gi"], [10, "0", "0"]]}, -1, (1000, 1024 * Mi)),
    ],
)
def test_usage_over_time(raw: dict[str, Any], at: float, expected: tuple[int, int]) -> None:
    assert parse_profile(raw).at(at) == expected
