"""Table tests and properties of the donor choice (controllers/rescue/model.py)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.controllers.rescue.model import (
    MEMORY_STEP,
    ContainerShare,
    Donor,
    NodeRoom,
    Pending,
    Rescue,
    Size,
    choose_donors,
    container_floor,
    grow,
    plan,
    plan_growth,
)

MI = MEMORY_STEP
GI = 1024 * MI


def donor(
    key: str,
    cpu: int,
    memory: int = 0,
    *,
    floor: tuple[int, int] = (0, 0),
    node: str = "node-1",
    priority: int = 0,
    created: float = 0.0,
) -> Donor:
    """A one-container donor whose charge is its request."""
    share = ContainerShare("main", Size(cpu, memory), Size(*floor))
    return Donor(key, node, priority, (share,), Size(cpu, memory), created=created)


def pending(
    cpu: int, memory: int = 0, *, priority: int = 0, nodes: Sequence[str] | None = None
) -> Pending:
    return Pending(
        "default/new", priority, Size(cpu, memory), None if nodes is None else frozenset(nodes)
    )


def room(cpu: int, memory: int = 0, *, name: str = "node-1", pods: int = 10) -> NodeRoom:
    return NodeRoom(name, Size(cpu, memory), pods)


def taken(rescue: Rescue | str | None) -> dict[str, tuple[int, int]]:
    """Donor → (CPU, memory) its charge gives up."""
    assert isinstance(rescue, Rescue), rescue
    return {s.donor: (s.freed.cpu, s.freed.memory) for s in rescue.shrinks}


# -- floors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peak", "kwargs", "floor"),
    [
        ((100, 100 * MI), {}, (115, 115 * MI)),
        ((100, 100 * MI), {"margin": 0.5}, (150, 150 * MI)),
        ((0, 0), {"minimum": Size(10, 16 * MI)}, (10, 16 * MI)),
        ((100, 100 * MI), {"lower_bound": Size(300, 50 * MI)}, (300, 115 * MI)),
        ((100, 100 * MI), {"min_allowed": Size(50, 500 * MI)}, (115, 500 * MI)),
        ((7, 1000), {}, (9, MI)),  # rounded up: whole millicores, whole MiB
    ],
    ids=["margin", "wider margin", "minimum", "lowerBound", "minAllowed", "rounded up"],
)
def test_container_floor(
    peak: tuple[int, int], kwargs: dict[str, object], floor: tuple[int, int]
) -> None:
    assert container_floor(Size(*peak), **kwargs) == Size(*floor)  # type: ignore[arg-type]


# -- one pending pod ---------------------------------------------------------------------------


def test_fewest_donors_win_over_less_important_ones() -> None:
    donors = [
        donor("a", 2000, floor=(100, 0), priority=5),
        donor("b", 600, floor=(100, 0), priority=0),
        donor("c", 600, floor=(100, 0), priority=0),
    ]
    assert taken(choose_donors(pending(900, priority=5), [room(0)], donors)) == {"a": (900, 0)}


def test_least_important_donor_among_equals() -> None:
    donors = [
        donor("a", 2000, floor=(100, 0), priority=5),
        donor("b", 2000, floor=(100, 0), priority=1),
        donor("c", 2000, floor=(100, 0), priority=3),
    ]
    assert taken(choose_donors(pending(900, priority=5), [room(0)], donors)) == {"b": (900, 0)}


def test_only_equal_or_lower_priority() -> None:
    donors = [donor("vip", 4000, floor=(100, 0), priority=10), donor("peer", 500, priority=3)]
    assert choose_donors(pending(900, priority=3), [room(0)], donors) is None
    assert taken(choose_donors(pending(400, priority=3), [room(0)], donors)) == {"peer": (400, 0)}


def test_only_the_need_is_taken_least_important_first() -> None:
    donors = [
        donor("low", 1000, floor=(200, 0), priority=0),
        donor("mid", 1000, floor=(200, 0), priority=1),
    ]
    # Neither covers 1200m alone: both give, the least important everything it can.
    rescue = choose_donors(pending(1500, priority=1), [room(300)], donors)
    assert taken(rescue) == {"low": (800, 0), "mid": (400, 0)}
    assert isinstance(rescue, Rescue)
    assert {s.donor: s.containers[0][2] for s in rescue.shrinks} == {
        "low": Size(200, 0),
        "mid": Size(600, 0),
    }


def test_never_below_the_floor() -> None:
    # 1000m with a peak of 700m: floor 805m, so 195m to give, not enough for 300m.
    floor = container_floor(Size(700, 0))
    assert choose_donors(pending(300), [room(0)], [donor("a", 1000, floor=(floor.cpu, 0))]) is None
    rescue = choose_donors(pending(150), [room(0)], [donor("a", 1000, floor=(floor.cpu, 0))])
    assert taken(rescue) == {"a": (150, 0)}


def test_cpu_and_memory_from_different_donors() -> None:
    donors = [
        donor("cpu-rich", 3000, 256 * MI, floor=(100, 256 * MI)),
        donor("mem-rich", 300, 4 * GI, floor=(300, 512 * MI)),
    ]
    rescue = choose_donors(pending(1000, GI), [room(0, 0)], donors)
    assert taken(rescue) == {"cpu-rich": (1000, 0), "mem-rich": (0, GI)}


def test_memory_in_whole_mebibytes() -> None:
    d = donor("a", 1000, 1000 * MI + 12345, floor=(100, 100 * MI))
    rescue = choose_donors(pending(0, 300 * MI + 5), [room(10, 0)], [d])
    assert isinstance(rescue, Rescue)
    ((_name, before, after),) = rescue.shrinks[0].containers
    assert after.memory % MI == 0
    assert before.memory - after.memory >= 300 * MI + 5
    assert after.memory >= 100 * MI


def test_a_pod_that_no_shrinking_can_place_touches_nothing() -> None:
    donors = [donor("a", 1000, floor=(500, 0)), donor("b", 1000, floor=(500, 0))]
    assert choose_donors(pending(1100), [room(50)], donors) is None
    result = plan([pending(1100)], [room(50)], donors)
    assert result.rescues == ()
    assert result.unplaced == ("default/new",)


def test_fits_already_shrinks_nothing() -> None:
    donors = [donor("a", 1000, floor=(100, 0))]
    assert choose_donors(pending(500), [room(0), room(600, name="node-2")], donors) == "node-2"


def test_no_pod_slot_cannot_be_made() -> None:
    donors = [donor("a", 4000, floor=(100, 0))]
    assert choose_donors(pending(500), [room(0, pods=0)], donors) is None


def test_only_nodes_the_pod_may_use() -> None:
    donors = [donor("a", 4000, floor=(100, 0)), donor("b", 4000, floor=(100, 0), node="node-2")]
    rooms = [room(0), room(0, name="node-2")]
    rescue = choose_donors(pending(500, nodes=["node-2"]), rooms, donors)
    assert isinstance(rescue, Rescue)
    assert (rescue.node, rescue.donors) == ("node-2", ("b",))


def test_node_with_fewer_donors() -> None:
    donors = [
        donor("a1", 600, floor=(100, 0)),
        donor("a2", 600, floor=(100, 0)),
        donor("b1", 2000, floor=(100, 0), node="node-2"),
    ]
    rescue = choose_donors(pending(800), [room(0), room(0, name="node-2")], donors)
    assert isinstance(rescue, Rescue)
    assert (rescue.node, rescue.donors) == ("node-2", ("b1",))


def test_init_containers_keep_their_share() -> None:
    # An init container of 800m: the pod holds at least that, whatever its containers ask.
    share = ContainerShare("main", Size(1000, 0), Size(100, 0))
    d = Donor("a", "node-1", 0, (share,), charge=Size(1000, 0), fixed=Size(800, 0))
    assert d.reclaimable == Size(200, 0)
    assert choose_donors(pending(300), [room(0)], [d]) is None
    assert taken(choose_donors(pending(150), [room(0)], [d])) == {"a": (150, 0)}


def test_plan_does_not_count_the_same_room_twice() -> None:
    donors = [donor("a", 2000, floor=(1000, 0)), donor("b", 2000, floor=(1000, 0))]
    first = Pending("ns/first", 0, Size(1000, 0), created=1.0)
    second = Pending("ns/second", 0, Size(1000, 0), created=2.0)
    third = Pending("ns/third", 0, Size(1000, 0), created=3.0)
    result = plan([third, second, first], [room(0)], donors)
    assert [(r.pending, r.donors) for r in result.rescues] == [
        ("ns/first", ("a",)),
        ("ns/second", ("b",)),
    ]
    assert result.unplaced == ("ns/third",)


def test_plan_serves_higher_priority_first() -> None:
    donors = [donor("a", 2000, floor=(1000, 0), priority=0)]
    low = Pending("ns/low", 0, Size(1000, 0), created=1.0)
    high = Pending("ns/high", 5, Size(1000, 0), created=2.0)
    result = plan([low, high], [room(0)], donors)
    assert [r.pending for r in result.rescues] == ["ns/high"]
    assert result.unplaced == ("ns/low",)


def test_plan_counts_pods_that_fit_already() -> None:
    donors = [donor("a", 2000, floor=(1000, 0))]
    one = Pending("ns/one", 0, Size(1000, 0), created=1.0)
    two = Pending("ns/two", 0, Size(1000, 0), created=2.0)
    result = plan([one, two], [room(1000)], donors)
    assert result.fits == {"ns/one": "node-1"}
    assert [(r.pending, r.donors) for r in result.rescues] == [("ns/two", ("a",))]


# -- growing back ------------------------------------------------------------------------------


def test_grow_within_room_and_toward_the_goal() -> None:
    current = {"main": Size(200, 100 * MI)}
    goal = {"main": Size(1000, 1 * GI)}
    partial = grow("ns/a", "node-1", current, goal, Size(300, 100 * MI + 5))
    assert partial is not None and not partial.complete
    assert partial.containers == (("main", Size(200, 100 * MI), Size(500, 200 * MI)),)
    full = grow("ns/a", "node-1", current, goal, Size(5000, 4 * GI))
    assert full is not None and full.complete
    assert full.containers == (("main", Size(200, 100 * MI), Size(1000, GI)),)
    assert grow("ns/a", "node-1", current, goal, Size(0, 0)) is None
    assert grow("ns/a", "node-1", goal, current, Size(5000, 4 * GI)) is None  # never lowers


def test_plan_growth_most_important_first() -> None:
    wanted = [
        ("ns/low", "node-1", 0, {"main": Size(100, 0)}, {"main": Size(600, 0)}),
        ("ns/high", "node-1", 5, {"main": Size(100, 0)}, {"main": Size(600, 0)}),
    ]
    out = plan_growth(wanted, [room(700)])
    assert [(g.pod, g.containers[0][2], g.complete) for g in out] == [
        ("ns/high", Size(600, 0), True),
        ("ns/low", Size(300, 0), False),
    ]


# -- properties --------------------------------------------------------------------------------

_donors = st.lists(
    st.tuples(
        st.sampled_from(["node-1", "node-2"]),
        st.integers(-2, 2),  # priority
        st.integers(0, 4000),  # cpu request
        st.integers(0, 4096),  # memory request, MiB
        st.integers(0, 4000),  # cpu floor
        st.integers(0, 4096),  # memory floor, MiB
    ),
    max_size=7,
)


def _build(raw: list[tuple[str, int, int, int, int, int]]) -> list[Donor]:
    out = []
    for i, (node, priority, cpu, memory, floor_cpu, floor_memory) in enumerate(raw):
        out.append(
            donor(
                f"ns/d{i}",
                cpu,
                memory * MI,
                floor=(floor_cpu, floor_memory * MI),
                node=node,
                priority=priority,
                created=float(i),
            )
        )
    return out


@settings(max_examples=300, deadline=None)
@given(
    raw=_donors,
    need_cpu=st.integers(0, 6000),
    need_memory=st.integers(0, 6000),
    free_cpu=st.integers(-500, 1000),
    free_memory=st.integers(-500, 1000),
    priority=st.integers(-2, 2),
    exact=st.booleans(),
)
def test_properties(
    raw: list[tuple[str, int, int, int, int, int]],
    need_cpu: int,
    need_memory: int,
    free_cpu: int,
    free_memory: int,
    priority: int,
    exact: bool,
) -> None:
    """Never below a floor, only equal or lower priority, the pod fits after the shrink;
    nothing when nothing can place it; with an exact search, the fewest and then the least
    important donors of any node (brute force); with the greedy one, still a valid answer."""
    donors = _build(raw)
    free = Size(free_cpu, free_memory * MI)
    rooms = [NodeRoom("node-1", free, 10), NodeRoom("node-2", free, 10)]
    pod = Pending("ns/p", priority, Size(need_cpu, need_memory * MI))
    choice = choose_donors(pod, rooms, donors, search_limit=10**6 if exact else 1)
    by_key = {d.key: d for d in donors}

    need = (pod.request - free).positive()
    best: tuple[int, int, int] | None = None
    for node in ("node-1", "node-2"):
        eligible = [d for d in donors if d.node == node and d.priority <= priority]
        for size in range(len(eligible) + 1):
            for subset in itertools.combinations(eligible, size):
                if Size.total(d.reclaimable for d in subset).covers(need):
                    key = (
                        size,
                        max((d.priority for d in subset), default=0),
                        sum(d.priority for d in subset),
                    )
                    best = key if best is None or key < best else best
    if choice is None:
        assert best is None  # nothing can place it, and nothing is touched
        return
    assert best is not None
    if isinstance(choice, str):
        assert best[0] == 0
        return
    chosen = [by_key[s.donor] for s in choice.shrinks]
    if exact:
        assert (
            len(chosen),
            max(d.priority for d in chosen),
            sum(d.priority for d in chosen),
        ) == best
    freed = Size()
    for shrink in choice.shrinks:
        d = by_key[shrink.donor]
        assert d.node == choice.node and d.priority <= priority
        floors = {c.name: c.floor for c in d.containers}
        for name, before, after in shrink.containers:
            assert after.cpu >= floors[name].cpu or after.cpu == before.cpu
            assert after.memory >= floors[name].memory or after.memory == before.memory
            assert after.cpu <= before.cpu and after.memory <= before.memory
        freed += shrink.freed
    assert (free + freed).covers(pod.request)  # it fits after the shrink
