"""What a DELETE decides before it writes (`inplace.apiserver.deletion`)."""

from __future__ import annotations

import datetime

import pytest

from inplace.apiserver.deletion import (
    deletion_finalizers,
    marked_for_deletion,
    terminating_namespace,
)
from inplace.apiserver.errors import StatusError

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("options", "added", "expected"),
    [
        ({}, None, ["mine"]),
        ({"propagationPolicy": "Orphan"}, None, ["mine", "orphan"]),
        ({"orphanDependents": True, "propagationPolicy": "Foreground"}, None, ["mine", "orphan"]),
        ({"propagationPolicy": "Foreground"}, "cleanup", ["mine", "foregroundDeletion", "cleanup"]),
        ({"propagationPolicy": "Background"}, "mine", ["mine"]),
    ],
)
def test_the_finalizers_a_deletion_adds(
    options: dict[str, object], added: str | None, expected: list[str]
) -> None:
    assert deletion_finalizers({"finalizers": ["mine"]}, options, added) == expected


def test_a_graceful_deletion_is_marked_and_only_ever_shortened() -> None:
    obj = {"metadata": {"name": "p"}}
    marked = marked_for_deletion(obj, 30, [], NOW)
    assert marked is not None and "deletionTimestamp" not in obj["metadata"]  # a copy
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:35Z"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "finalizers" not in marked["metadata"]
    assert marked_for_deletion(marked, 30, [], NOW) is None
    assert marked_for_deletion(marked, 60, [], NOW) is None
    shorter = marked_for_deletion(marked, 0, ["orphan"], NOW)
    assert shorter is not None and shorter["metadata"]["deletionGracePeriodSeconds"] == 0
    assert shorter["metadata"]["finalizers"] == ["orphan"]


def test_a_namespace_is_marked_terminating_once_and_the_systems_never() -> None:
    marked = terminating_namespace("team", {"metadata": {"name": "team"}}, "2026-01-02T03:04:05Z")
    assert marked is not None and marked["status"]["phase"] == "Terminating"
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:05Z"
    assert terminating_namespace("team", marked, "later") is None
    with pytest.raises(StatusError) as refused:
        terminating_namespace("kube-system", {"metadata": {"name": "kube-system"}}, "now")
    assert refused.value.code == 403 and "may not be deleted" in refused.value.message
