"""Semantic equality and diffs: zero values and absent fields are the same, quantities compare by
value, and a diff names each changed leaf with upstream's path syntax."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.validation.equality import diff, semantic

SAME: list[tuple[str, Any, Any]] = [
    ("absent, null and empty are one", {"a": None, "b": "", "c": [], "d": {}}, {}),
    ("false is the zero value", {"hostNetwork": False}, {}),
    ("quantities by value", {"limits": {"cpu": "1000m"}}, {"limits": {"cpu": "1"}}),
    (
        "nested quantities",
        {"resources": {"requests": {"memory": "1Gi"}}},
        {"resources": {"requests": {"memory": "1073741824"}}},
    ),
    ("lists element-wise", [{"name": "a", "x": None}], [{"name": "a"}]),
]
DIFFERENT: list[tuple[str, Any, Any]] = [
    ("a set field", {"a": 1}, {}),
    ("quantities that differ", {"limits": {"cpu": "1001m"}}, {"limits": {"cpu": "1"}}),
    ("an empty label value is data", {"labels": {"app": ""}}, {"labels": {}}),
    ("quantities only in resource lists", {"image": "1000m"}, {"image": "1"}),
]


@pytest.mark.parametrize(("a", "b"), [c[1:] for c in SAME], ids=[c[0] for c in SAME])
def test_semantically_equal(a: Any, b: Any) -> None:
    assert semantic(a) == semantic(b)


@pytest.mark.parametrize(("a", "b"), [c[1:] for c in DIFFERENT], ids=[c[0] for c in DIFFERENT])
def test_semantically_different(a: Any, b: Any) -> None:
    assert semantic(a) != semantic(b)


def test_diff_names_each_changed_leaf() -> None:
    old = {
        "labels": {"app": "web", "tier": "front"},
        "containers": [{"name": "app", "image": "a:1", "resources": {"limits": {"cpu": "1"}}}],
        "dnsPolicy": "ClusterFirst",
    }
    new = {
        "labels": {"app": "web", "tier": "back"},
        "containers": [{"name": "app", "image": "a:2", "resources": {"limits": {"cpu": "1000m"}}}],
        "dnsPolicy": None,
        "hostNetwork": False,
    }
    changes: list[tuple[str, Any, Any]] = []
    diff(semantic(old), semantic(new), "spec", changes)
    assert changes == [
        ("spec.containers[0].image", "a:1", "a:2"),
        ("spec.dnsPolicy", "ClusterFirst", None),
        ("spec.labels[tier]", "front", "back"),
    ]


def test_diff_of_lists_of_other_lengths_is_the_whole_list() -> None:
    changes: list[tuple[str, Any, Any]] = []
    diff(semantic([1]), semantic([1, 2]), "spec.args", changes)
    assert changes == [("spec.args", [1], [1, 2])]
