"""The placement rules shared by the scheduler and the rescuer (api/placement.py); the
scheduler's plugin tests cover the filters built on them."""

from __future__ import annotations

import pytest

from inplace.api.placement import (
    Insufficient,
    affinity_matches,
    fit_reasons,
    insufficient_resources,
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("0/1 nodes are available: 1 Insufficient cpu.", {"cpu"}),
        ("0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory.", {"cpu", "memory"}),
        ("0/2 nodes are available: 2 Too many pods.", set()),
        ("0/1 nodes are available: 1 node(s) had untolerated taint {a: b}.", set()),
        ("", set()),
    ],
)
def test_insufficient_resources(message: str, expected: set[str]) -> None:
    assert insufficient_resources(message) == expected


def test_the_scheduler_words_read_back() -> None:
    reasons = fit_reasons(2000, 1, free_cpu=1000, free_memory=0, free_pods=0)
    assert reasons == [
        Insufficient("pods", 1, 0),
        Insufficient("cpu", 2000, 1000),
        Insufficient("memory", 1, 0),
    ]
    message = "0/1 nodes are available: " + ", ".join(f"1 {r.short}" for r in reasons) + "."
    assert insufficient_resources(message) == {"cpu", "memory"}


def test_affinity_matches() -> None:
    labels = {"zone": "a", "disk": "ssd"}
    assert affinity_matches({"zone": "a"}, None, labels, "n1")
    assert not affinity_matches({"zone": "b"}, None, labels, "n1")
    terms = [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}]
    assert not affinity_matches({}, terms, labels, "n1")
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    assert affinity_matches({}, terms, labels, "n1")
