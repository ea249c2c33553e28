"""The inplace.dev/original-resources annotation (api/original_resources.py)."""

from __future__ import annotations

import pytest

from inplace.api.original_resources import format_original_resources, parse_original_resources
from inplace.api.quantity import Quantity


def test_original_resources_round_trip() -> None:
    text = format_original_resources(
        {"main": {"requests": {"memory": "1Gi", "cpu": "1500m"}, "limits": {"memory": "1Gi"}}}
    )
    assert text == '{"main":{"limits":{"memory":"1Gi"},"requests":{"cpu":"1500m","memory":"1Gi"}}}'
    assert parse_original_resources(text) == {
        "main": {
            "limits": {"memory": Quantity.parse("1Gi")},
            "requests": {"cpu": Quantity.parse("1500m"), "memory": Quantity.parse("1Gi")},
        }
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "must be JSON"),
        ("[]", "must be a JSON object of container names"),
        ('{"main": 3}', "main: must be an object with requests and limits"),
        ('{"main": {"claims": {}}}', "main: unknown key 'claims' (requests, limits)"),
        ('{"main": {"requests": []}}', "main.requests: must be an object"),
        ('{"main": {"requests": {"gpu": "1"}}}', "main.requests: only cpu and memory, not 'gpu'"),
        ('{"main": {"limits": {"cpu": "lots"}}}', "main.limits.cpu: "),
        ('{"main": {"limits": {"cpu": "-1"}}}', "main.limits.cpu: must not be negative"),
    ],
)
def test_bad_original_resources(text: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_original_resources(text)
    assert str(exc.value).startswith(message)
