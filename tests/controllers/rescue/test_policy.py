"""One pass of the rescuer (controllers/rescue/policy.py)."""

from __future__ import annotations

from inplace.controllers.rescue.model import ContainerShare, Donor, NodeRoom, Pending, Size
from inplace.controllers.rescue.policy import InFlight, Shrunk, decide


def donor(key: str, cpu: int, floor: int, node: str = "node-1") -> Donor:
    share = ContainerShare("main", Size(cpu, 0), Size(floor, 0))
    return Donor(key, node, 0, (share,), Size(cpu, 0))


def shrunk(key: str, now: int, goal: int, floor: int, node: str = "node-1") -> Shrunk:
    return Shrunk(
        key, node, 0, {"main": Size(now, 0)}, {"main": Size(goal, 0)}, {"main": Size(floor, 0)}
    )


ROOMS = [NodeRoom("node-1", Size(0, 0), 10), NodeRoom("node-2", Size(2000, 0), 10)]


def test_a_rescue_in_flight_holds_its_pod_and_donors() -> None:
    pods = [Pending("ns/p", 0, Size(500, 0), frozenset({"node-1"}))]
    donors = [donor("ns/a", 1000, 100), donor("ns/b", 1000, 100)]
    first = decide(pods, ROOMS, donors, [], {}, now=0.0)
    assert [(r.pending, r.donors) for r in first.rescues] == [("ns/p", ("ns/a",))]
    flight = {"ns/p": InFlight("ns/p", "node-1", ("ns/a",), since=0.0)}
    held = decide(pods, ROOMS, donors, [], flight, now=10.0)
    assert held.rescues == () and held.expired == ()
    # Timed out, or the scheduler had its chance once the shrinks were applied: again.
    assert decide(pods, ROOMS, donors, [], flight, now=60.0).expired == ("ns/p",)
    settled = {"ns/p": InFlight("ns/p", "node-1", ("ns/a",), since=0.0, settled=5.0)}
    again = decide(pods, ROOMS, donors, [], settled, now=7.0)
    assert again.expired == ("ns/p",) and [r.pending for r in again.rescues] == ["ns/p"]
    assert settled["ns/p"].deadline(timeout=60.0, grace=2.0) == 7.0


def test_growth_back_where_there_is_no_pressure_only_to_the_floor_where_there_is() -> None:
    pods = [Pending("ns/p", 0, Size(500, 0), frozenset({"node-1"}))]
    donors = [donor("ns/a", 1000, 100)]
    back = [shrunk("ns/s1", 200, 1000, 400), shrunk("ns/s2", 200, 1000, 400, node="node-2")]
    rooms = [NodeRoom("node-1", Size(300, 0), 10), NodeRoom("node-2", Size(2000, 0), 10)]
    decision = decide(pods, rooms, donors, back, {}, now=0.0)
    # node-1 is under pressure: the rescue planned there takes room, s1 grows to its floor
    # only with what is left after the pending pod (nothing); s2 grows back fully.
    assert [(g.pod, g.containers[0][2], g.complete) for g in decision.growths] == [
        ("ns/s2", Size(1000, 0), True)
    ]
    quiet = decide([], rooms, donors, back, {}, now=0.0)
    assert sorted((g.pod, g.containers[0][2]) for g in quiet.growths) == [
        ("ns/s1", Size(500, 0)),
        ("ns/s2", Size(1000, 0)),
    ]
    busy = {"ns/q": InFlight("ns/q", "node-1", ("ns/a",), since=0.0)}
    floor_only = decide(
        [], [NodeRoom("node-1", Size(2000, 0), 10)], donors, back[:1], busy, now=1.0
    )
    assert [(g.pod, g.containers[0][2]) for g in floor_only.growths] == [("ns/s1", Size(400, 0))]
