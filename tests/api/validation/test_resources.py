"""Container resource requirements: names, quantities, requests against limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from tests.api.validation.builders import (
    POD,
    QUANTITY_MSG,
    container,
    create_messages,
    pod,
)

INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "request above limit",
        POD,
        lambda: pod(container(limits={"cpu": "1"}, requests={"cpu": "2"})),
        [
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
            "to cpu limit of 1"
        ],
    ),
    (
        "memory request above limit, canonical quantities",
        POD,
        lambda: pod(container(limits={"memory": "1024Mi"}, requests={"memory": "2048Mi"})),
        [
            'spec.containers[0].resources.requests: Invalid value: "2Gi": must be less than or '
            "equal to memory limit of 1Gi"
        ],
    ),
    (
        "bad quantity names the exact field",
        POD,
        lambda: pod(container(limits={"memory": "lots"})),
        [f'spec.containers[0].resources.limits[memory]: Invalid value: "lots": {QUANTITY_MSG}'],
    ),
    (
        "negative quantity",
        POD,
        lambda: pod(container(requests={"cpu": "-100m"})),
        [
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-100m": must be greater '
            "than or equal to 0"
        ],
    ),
    (
        "unknown resource name",
        POD,
        lambda: pod(container(requests={"gpus": "1"})),
        [
            'spec.containers[0].resources.requests[gpus]: Invalid value: "gpus": must be a '
            "standard resource type or fully qualified",
            'spec.containers[0].resources.requests[gpus]: Invalid value: "gpus": must be a '
            "standard resource for containers",
        ],
    ),
    (
        "extended resources are whole and not overcommitted",
        POD,
        lambda: pod(
            container(limits={"example.com/gpu": "1"}, requests={"example.com/gpu": "500m"})
        ),
        [
            "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 500m: must "
            "be an integer",
            'spec.containers[0].resources.requests: Invalid value: "500m": must be equal to '
            "example.com/gpu limit of 1",
        ],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)
