"""Victim selection: fewest, lowest-priority victims; budgets respected first."""

from __future__ import annotations

import pytest

from inplace.scheduler.framework import pod_info
from inplace.scheduler.preemption import (
    Candidate,
    DisruptionBudgets,
    Room,
    Victims,
    pick_node,
    select_victims,
)

from .helpers import pod


def c(key: str, priority: int, cpu: int, violates: bool = False, storage: int = 0) -> Candidate:
    return Candidate(key, priority, cpu, 0, violates, ephemeral_storage=storage)


@pytest.mark.parametrize(
    ("need", "room", "pods", "expected"),
    [
        # fits already: no victims
        ((500, 0, 1, 0), (1000, 0, 5, 0), [c("a", 0, 1000)], []),
        # only higher-priority pods: cannot help
        ((2000, 0, 1, 0), (0, 0, 5, 0), [c("a", 50, 1000), c("b", 100, 1000)], None),
        # removing every lower pod is not enough
        ((5000, 0, 1, 0), (0, 0, 5, 0), [c("a", 0, 1000), c("b", 0, 1000)], None),
        # the lowest priority goes; the higher one is reprieved
        ((1000, 0, 1, 0), (0, 0, 5, 0), [c("low", 0, 1000), c("mid", 5, 1000)], ["low"]),
        # fewest victims: one big pod beats two small ones of the same priority
        (
            (2000, 0, 1, 0),
            (0, 0, 5, 0),
            [c("small1", 0, 1000), c("small2", 0, 1000), c("big", 0, 2000)],
            ["big"],
        ),
        # a budget-violating pod is reprieved first: the other goes, though higher priority
        (
            (1000, 0, 1, 0),
            (0, 0, 5, 0),
            [c("guarded", 0, 1000, True), c("free", 5, 1000)],
            ["free"],
        ),
        # pod slots count too
        ((0, 0, 1, 0), (5000, 0, 0, 0), [c("a", 0, 100)], ["a"]),
        # and ephemeral storage: the pod holding it goes, not the one holding cpu alone
        (
            (100, 0, 1, 500),
            (1000, 0, 5, 200),
            [c("cpu-only", 0, 1000), c("disk", 5, 0, storage=400)],
            ["disk"],
        ),
        # removing every lower pod frees too little storage: preemption cannot help
        ((100, 0, 1, 500), (1000, 0, 5, 0), [c("a", 0, 1000, storage=100)], None),
    ],
)
def test_select_victims(
    need: Room,
    room: Room,
    pods: list[Candidate],
    expected: list[str] | None,
) -> None:
    got = select_victims("n", preemptor_priority=10, need=need, room=room, pods=pods)
    if expected is None:
        assert got is None
    else:
        assert got is not None
        assert sorted(v.key for v in got.pods) == sorted(expected)


def test_pick_node_criteria() -> None:
    violating = Victims("a", (c("x", 0, 1, True),))
    high = Victims("b", (c("y", 5, 1),))
    low_two = Victims("c", (c("z1", 1, 1), c("z2", 1, 1)))
    low_one = Victims("d", (c("w", 1, 1),))
    assert pick_node([violating, high, low_two, low_one]) is low_one
    assert pick_node([violating, high]) is high
    assert pick_node([high, low_two]) is low_two  # lower highest priority wins first
    assert pick_node([]) is None


def _pdb(name: str, allowed: int, labels: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_disruption_budgets_spend_as_victims_are_chosen() -> None:
    budgets = DisruptionBudgets([_pdb("web", 1, {"app": "web"}), _pdb("db", 0, {"app": "db"})])
    web1 = pod_info(pod("web1", labels={"app": "web"}, priority=0))
    web2 = pod_info(pod("web2", labels={"app": "web"}, priority=1))
    db = pod_info(pod("db", labels={"app": "db"}))
    other = pod_info(pod("other", labels={"app": "x"}))
    assert budgets.matching(web1) == ["default/web"]
    assert not budgets.would_violate(web1)
    assert budgets.would_violate(db)
    cands = {
        x.key: x
        for x in budgets.candidates([(web1, 1, 0), (web2, 1, 0), (db, 1, 0), (other, 1, 0)])
    }
    assert not cands["default/web1"].violates_budget  # spends the one allowed disruption
    assert cands["default/web2"].violates_budget
    assert cands["default/db"].violates_budget
    assert not cands["default/other"].violates_budget
    # candidates() does not consume the real budget
    assert not budgets.would_violate(web1)
