"""The resize form (inplace.dashboard.resize): the patch and the kubectl line, one source."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from inplace.dashboard.resize import kubectl_command, plan_resize


def pod(*containers: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "worker", "namespace": "team-a"},
        "spec": {"containers": [{"name": n, "resources": r} for n, r in containers]},
    }


SIZED = pod(
    (
        "main",
        {
            "requests": {"cpu": "250m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        },
    ),
    ("side", {"requests": {"cpu": "100m"}}),
)


def test_only_what_changes_is_sent_in_container_order() -> None:
    plan = plan_resize(
        SIZED,
        {
            "side": {"limits": {"cpu": "", "memory": ""}, "requests": {"cpu": "0.2"}},
            "main": {
                "requests": {"cpu": "250m", "memory": "67108864"},  # the same sizes, other forms
                "limits": {"cpu": "1", "memory": " 256Mi "},
            },
        },
    )
    assert plan.errors == ()
    assert plan.patch == {
        "spec": {
            "containers": [
                {"name": "main", "resources": {"limits": {"cpu": "1", "memory": "256Mi"}}},
                {"name": "side", "resources": {"requests": {"cpu": "0.2"}}},
            ]
        }
    }


def test_the_command_sends_exactly_the_patch() -> None:
    plan = plan_resize(SIZED, {"main": {"limits": {"memory": "256Mi"}}})
    words = shlex.split(plan.command)
    assert words[:8] == [
        "kubectl",
        "patch",
        "pod",
        "worker",
        "-n",
        "team-a",
        "--subresource",
        "resize",
    ]
    assert words[8] == "-p"
    assert words[9].encode() == plan.body
    assert json.loads(words[9]) == plan.patch


def test_quoting_survives_a_shell() -> None:
    line = kubectl_command("ns", "p", """{"a":"it's"}""")
    assert shlex.split(line)[-1] == """{"a":"it's"}"""


@pytest.mark.parametrize(
    ("typed", "field", "words"),
    [
        (
            {"main": {"limits": {"memory": "lots"}}},
            "spec.containers[0].resources.limits.memory",
            "lots",
        ),
        ({"side": {"requests": {"cpu": "1x"}}}, "spec.containers[1].resources.requests.cpu", "1x"),
        (
            {"main": {"limits": {"nvidia.com/gpu": "1"}}},
            "spec.containers[0].resources.limits.nvidia.com/gpu",
            "only cpu and memory",
        ),
        ({"ghost": {"limits": {"cpu": "1"}}}, "spec.containers", "'ghost' is not one of"),
        ({"main": {"limits": {"cpu": "500m"}}}, "spec.containers", "nothing to change"),
        ({}, "spec.containers", "nothing to change"),
    ],
)
def test_refusals_name_the_field(typed: dict[str, Any], field: str, words: str) -> None:
    plan = plan_resize(SIZED, typed)
    assert plan.patch is None and plan.command == ""
    assert [e.field for e in plan.errors] == [field]
    assert words in plan.errors[0].message
