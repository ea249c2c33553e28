"""Garbage-collection decisions, tabled (upstream ``garbagecollector_test.go``'s cases)."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.gc.model import (
    Action,
    Decision,
    Owner,
    blocking_dependents,
    decide,
    deleting_with,
)


def obj(*owners: str, finalizers: list[str] | None = None, block: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "x",
        "ownerReferences": [
            {"uid": uid, "kind": "ReplicaSet", "name": uid, "blockOwnerDeletion": block}
            for uid in owners
        ],
    }
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("the_obj", "owners", "has_dependents", "decision"),
    [
        (obj(), {}, False, Decision(Action.NOTHING)),
        (obj("a"), {"a": Owner.SOLID}, False, Decision(Action.NOTHING)),
        (obj("a"), {"a": Owner.UNKNOWN}, False, Decision(Action.NOTHING)),
        (obj("a"), {"a": Owner.DANGLING}, False, Decision(Action.DELETE, "Background")),
        (obj("a"), {"a": Owner.WAITING}, False, Decision(Action.DELETE, "Background")),
        # a foreground owner and dependents of its own: the chain waits for the leaves
        (obj("a"), {"a": Owner.WAITING}, True, Decision(Action.DELETE, "Foreground")),
        # another owner keeps it alive: only the dead and waiting references go
        (
            obj("a", "b", "c"),
            {"a": Owner.SOLID, "b": Owner.DANGLING, "c": Owner.WAITING},
            False,
            Decision(Action.REMOVE_REFERENCES, remove_uids=("b", "c")),
        ),
        # the object's own finalizers choose how its dependents go
        (
            obj("a", finalizers=["orphan"]),
            {"a": Owner.DANGLING},
            True,
            Decision(Action.DELETE, "Orphan"),
        ),
        (
            obj("a", finalizers=["foregroundDeletion"]),
            {"a": Owner.DANGLING},
            True,
            Decision(Action.DELETE, "Foreground"),
        ),
    ],
)
def test_decide(
    the_obj: dict[str, Any], owners: dict[str, Owner], has_dependents: bool, decision: Decision
) -> None:
    assert decide(the_obj, owners, has_dependents=has_dependents) == decision


def test_only_blocking_references_hold_a_foreground_owner() -> None:
    blocking = obj("a", block=True)
    passive = obj("a", block=False)
    other = obj("b", block=True)
    assert blocking_dependents("a", [blocking, passive, other]) == [blocking]


def test_deleting_with_needs_both_the_timestamp_and_the_finalizer() -> None:
    pending = {"metadata": {"finalizers": ["orphan"]}}
    assert not deleting_with(pending, "orphan")
    pending["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert deleting_with(pending, "orphan") and not deleting_with(pending, "foregroundDeletion")
