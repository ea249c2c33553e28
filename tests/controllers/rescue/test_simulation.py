"""The replay of the rescuer on a small simulated cluster (controllers/rescue/simulation.py)."""

from __future__ import annotations

from inplace.controllers.rescue.simulation import Scenario, simulate

SMALL = Scenario(
    nodes=3, burst=40, burst_at=300.0, burst_over=60.0, job_seconds=1200.0, duration=3600.0
)


def test_the_rescuer_places_the_burst_sooner_and_gives_the_room_back() -> None:
    without = simulate(SMALL, rescuer=False)
    with_rescuer = simulate(SMALL, rescuer=True)
    assert without.jobs == with_rescuer.jobs == 40
    assert without.shrinks == without.rescues == 0
    # Sized for peaks, the cluster has room for a few jobs only until others finish.
    assert without.wait(0.5) >= SMALL.job_seconds / 2
    assert with_rescuer.placed >= without.placed
    assert with_rescuer.rescues > 0 and with_rescuer.shrunk_pods
    assert with_rescuer.wait(0.5) < without.wait(0.5)
    # Never below usage: no shrunk service used more memory than it was left with, and
    # once the jobs were done every one was back at its size.
    assert with_rescuer.over_request == 0
    assert with_rescuer.restored_at is not None and with_rescuer.still_shrunk == 0
