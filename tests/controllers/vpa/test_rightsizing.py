"""The ``inplace`` variant's decisions on small synthetic series, replayed through the real
recommender and updater (one container, one-minute samples, memory in MiB)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from inplace.controllers.vpa.model import AggregateContainerState, ContainerState
from inplace.controllers.vpa.settings import MIB
from inplace.controllers.vpa.simulation import Policy, PolicyResult, Simulation
from inplace.controllers.vpa.trace import read_trace
from tests.controllers.vpa.presets import LEARNING_JUMPS

HOUR_STEPS = 60


def replay(tmp_path: Path, memory_mib: list[float], policy: str = "inplace") -> PolicyResult:
    path = tmp_path / "trace.csv"
    path.write_text(
        "".join(f"{i * 60},svc-0,main,0.2,{round(m)}Mi\n" for i, m in enumerate(memory_mib))
    )
    sim = Simulation(
        read_trace(path),
        Policy.of(policy),
        nodes=1,
        node_cpu_milli=4000,
        node_memory=16 * 1024 * MIB,
        keep_series=True,
    )
    return sim.run()


def requests_mib(result: PolicyResult) -> list[float]:
    return [r / MIB for r in result.series[("svc-0", "main")].memory_request]


def test_growth_is_followed_without_a_kill(tmp_path: Path) -> None:
    # Two hours flat at 500Mi, then +1% a minute for almost two hours (to ~1.5Gi).
    usage = [500.0] * 2 * HOUR_STEPS + [500 * 1.01**k for k in range(110)]
    result = replay(tmp_path, usage)
    requests = requests_mib(result)
    assert result.ooms == 0
    assert requests[-1] > usage[-1]  # grown three times over, always ahead of usage
    assert requests[-1] < usage[-1] * 1.25  # and never far ahead
    assert requests[2 * HOUR_STEPS - 1] < 600  # sized to the flat part before


def test_decay_is_slow(tmp_path: Path) -> None:
    # Three hours at 1Gi, then eight at 300Mi.
    result = replay(tmp_path, [1000.0] * 3 * HOUR_STEPS + [300.0] * 8 * HOUR_STEPS)
    requests = requests_mib(result)
    drop = 3 * HOUR_STEPS
    assert result.ooms == 0
    assert min(requests[drop : drop + HOUR_STEPS // 2]) > 1000  # half an hour on, it holds
    assert requests[-1] < 400  # hours on, it is back to the new level
    after = requests[drop:]  # and it only ever comes down
    assert all(a >= b for a, b in itertools.pairwise(after))


@pytest.mark.parametrize(
    ("name", "spike", "kills"),
    [
        # A spike the policy can see coming: +40Mi a minute for ten minutes.
        ("ramp", [500.0 + 40 * k for k in range(1, 11)] + [900.0] * 10, 0),
        # The same height at once, within one sample: no recommender sees that coming, but
        # it stays under the limit's headroom (twice the ~515Mi request), and the next
        # pass grows the request to cover it.
        ("instant", [900.0] * 20, 0),
        # At once past twice the request: the kernel kills it, once; the bump covers it.
        ("past the headroom", [1200.0] * 20, 1),
    ],
)
def test_a_spike_seen_coming_or_within_the_headroom_is_not_a_kill(
    tmp_path: Path, name: str, spike: list[float], kills: int
) -> None:
    result = replay(tmp_path, [500.0] * 3 * HOUR_STEPS + spike + [500.0] * HOUR_STEPS)
    assert result.ooms == kills, name


def test_an_instant_spike_within_the_headroom_is_followed_by_the_request(tmp_path: Path) -> None:
    usage = [500.0] * 3 * HOUR_STEPS + [900.0] * 20 + [500.0] * HOUR_STEPS
    result = replay(tmp_path, usage)
    requests = requests_mib(result)
    spike = 3 * HOUR_STEPS
    assert requests[spike] < 600  # the spike's first minute runs above the request
    assert requests[spike + 1] >= 900  # and the next pass grows the request over it


def test_upstream_is_not_safer_on_an_instant_spike_and_holds_more(tmp_path: Path) -> None:
    usage = [500.0] * 3 * HOUR_STEPS + [900.0] * 20 + [500.0] * HOUR_STEPS
    upstream, inplace = replay(tmp_path, usage, "upstream"), replay(tmp_path, usage)
    assert upstream.ooms >= 1  # its limit is its request: the spike kills (twice, bumped)
    assert inplace.ooms == 0
    assert upstream.memory_slack > inplace.memory_slack


def test_the_jump_margin_is_learned_per_shape_against_the_recent_high() -> None:
    settings = LEARNING_JUMPS
    assert settings.memory_jump_window is not None
    t0 = 1_000_000.0
    # Noise around a steady level: the largest rise between two readings is 17Mi (495 to
    # 512), but no reading tops the last half hour's high by more than 10Mi.
    steady = AggregateContainerState(settings, creation_time=t0)
    container = ContainerState(steady)
    for i, mib in enumerate([500, 510, 495, 505, 512, 498, 507, 511, 503, 509]):
        container.add_memory_sample(t0 + 60 * i, mib * MIB)
    assert steady.jump(t0 + 600) == pytest.approx(10 * MIB, rel=0.01)
    # Bursts: a rise of 300Mi over the high is remembered, and fades over a day.
    bursty = AggregateContainerState(settings, creation_time=t0)
    container = ContainerState(bursty)
    for i, mib in enumerate([500, 505, 500, 800, 500, 505]):
        container.add_memory_sample(t0 + 60 * i, mib * MIB)
    assert bursty.jump(t0 + 360) == pytest.approx(295 * MIB, rel=0.01)
    assert bursty.jump(t0 + 180 + settings.memory_jump_half_life) == pytest.approx(
        295 * MIB / 2, rel=0.01
    )
