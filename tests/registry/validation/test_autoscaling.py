"""The VPA's admission rules (upstream's messages) and its checkpoint kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.validation import validate_create
from tests.api.validation.builders import VPA, create_messages, kind, mutate, vpa

CHECKPOINT = kind("autoscaling.k8s.io", "VerticalPodAutoscalerCheckpoint")
P0 = "spec.resourcePolicy.containerPolicies[0]"


def policy0(**fields: Any) -> Callable[[dict[str, Any]], object]:
    return lambda v: v["spec"]["resourcePolicy"]["containerPolicies"][0].update(fields)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            policy0(minAllowed={"cpu": "2"}, maxAllowed={"cpu": "1"}),
            [
                f'{P0}.maxAllowed[cpu]: Invalid value: "1": max resource for cpu is lower than min '
                'of "2"'
            ],
        ),
        (
            policy0(minAllowed={"cpu": "100u", "memory": "1.5"}, maxAllowed={"memory": "1m"}),
            [
                f'{P0}.minAllowed[cpu]: Invalid value: "100u": must be a whole number of milli '
                "CPUs",
                f'{P0}.minAllowed[memory]: Invalid value: "1500m": must be a whole number of bytes',
                f'{P0}.maxAllowed[memory]: Invalid value: "1m": max resource for memory is lower '
                'than min of "1500m"',
                f'{P0}.maxAllowed[memory]: Invalid value: "1m": must be a whole number of bytes',
            ],
        ),
        (
            policy0(mode="Off", controlledValues="RequestsAndLimits"),
            [
                f"{P0}.controlledValues: Forbidden: controlledValues shouldn't be specified if "
                "container scaling mode is off"
            ],
        ),
        (
            lambda v: v["spec"]["updatePolicy"].pop("updateMode"),
            [
                "spec.updatePolicy.updateMode: Required value: updateMode is required if "
                "UpdatePolicy is used"
            ],
        ),
        (
            lambda v: v["spec"]["updatePolicy"].update(minReplicas=0, evictAfterOOMSeconds=0),
            [
                "spec.updatePolicy.minReplicas: Invalid value: 0: minReplicas has to be positive",
                "spec.updatePolicy.evictAfterOOMSeconds: Invalid value: 0: must be greater than or "
                "equal to 1",
            ],
        ),
        (
            lambda v: v["spec"].update(recommenders=[{"name": "a"}, {"name": "b"}]),
            ["spec.recommenders: Too many: 2: must have at most 1 items"],
        ),
        (
            lambda v: v["spec"].update(startupBoost={"cpu": {"type": "Factor", "factor": 2}}),
            [
                "spec.startupBoost: Forbidden: in order to use startupBoost, you must enable "
                "feature gate CPUStartupBoost in the admission-controller args"
            ],
        ),
        (
            policy0(oomBumpUpRatio="0.5", oomMinBumpUp="-1", memoryAggregationIntervalCount=0),
            [
                f"{P0}.oomBumpUpRatio: Invalid value: 0.5: must be greater than or equal to 1.0",
                f"{P0}.oomMinBumpUp: Invalid value: -1: must be greater than or equal to 0",
                f"{P0}.memoryAggregationIntervalCount: Invalid value: 0: must be greater than or "
                "equal to 1",
            ],
        ),
    ],
)
def test_vpa_admission_rules(
    change: Callable[[dict[str, Any]], object], expected: list[str]
) -> None:
    assert sorted(create_messages(VPA, mutate(vpa(), change))) == sorted(expected)


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v["spec"]["updatePolicy"].update(updateMode="InPlace", evictAfterOOMSeconds=30),
        lambda v: v["spec"].pop("updatePolicy"),
        lambda v: v["spec"].update(recommenders=[{"name": "default"}]),
        policy0(mode="Off", controlledValues="RequestsOnly"),
        policy0(oomBumpUpRatio="1.5", oomMinBumpUp="100Mi", memoryAggregationIntervalSeconds=60),
    ],
)
def test_vpa_accepted(change: Callable[[dict[str, Any]], object]) -> None:
    validate_create(VPA, mutate(vpa(), change))


def checkpoint(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscalerCheckpoint",
        "metadata": {"name": "web-app", "namespace": "default"},
        "spec": {"vpaObjectName": "web", "containerName": "app"},
        "status": status,
    }


def test_checkpoints_validate_metadata_only() -> None:
    validate_create(CHECKPOINT, checkpoint(version="v3", totalSamplesCount=3))
    bad = mutate(checkpoint(), lambda c: c["metadata"].update(name="Web_App"))
    (message,) = create_messages(CHECKPOINT, bad)
    assert message.startswith('metadata.name: Invalid value: "Web_App"')
    assert CHECKPOINT.subresources == ()
    assert CHECKPOINT.short_names == ("vpacheckpoint",)
