"""The recommender against hand-computed histograms: percentiles, decay, confidence bounds,
OOM bumps, minimums, capping, controlled resources; and properties of its output."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.controllers.vpa.model import AggregateContainerState, ContainerState
from inplace.controllers.vpa.recommend import confidence, estimate, recommend
from inplace.controllers.vpa.recommender import ContainerKey, Recommender
from inplace.controllers.vpa.settings import DAY, MIB, RecommenderSettings, variant

T0 = 1767571200.0  # 2026-01-05T00:00:00Z
UPSTREAM = RecommenderSettings()


def cpu_bucket_end(cores: float) -> float:
    """End of the 5% CPU bucket holding ``cores``: first bucket 0.01 core."""
    n = math.floor(math.log(cores * 0.05 / 0.01 + 1) / math.log(1.05))
    return 0.01 * (1.05 ** (n + 1) - 1) / 0.05


def memory_bucket_end(bytes_: float) -> float:
    n = math.floor(math.log(bytes_ * 0.05 / 1e7 + 1) / math.log(1.05))
    return 1e7 * (1.05 ** (n + 1) - 1) / 0.05


def with_margin(value: float, margin: float = 0.15) -> int:
    amount = int(value)
    return amount + int(amount * margin)


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


def steady(
    minutes: int, cpu_milli: int, memory: int, s: RecommenderSettings = UPSTREAM
) -> AggregateContainerState:
    """A container using the same CPU and memory every minute for ``minutes``."""
    agg = AggregateContainerState(s, creation_time=T0)
    container = ContainerState(agg)
    for i in range(minutes):
        container.add_cpu_sample(T0 + 60 * i, cpu_milli, 1000)
        container.add_memory_sample(T0 + 60 * i, memory)
    return agg


def test_steady_day_target_and_bounds() -> None:
    agg = steady(1440, 1000, 500 * MIB)
    # 1439 minutes between first and last sample; 1440 samples at one a minute.
    conf = confidence(agg, DAY)
    assert conf == pytest.approx(1439 / 1440)
    est = estimate(agg, UPSTREAM)
    cpu_end = cpu_bucket_end(1.0) * 1000  # p50 = p90 = p95: one bucket
    mem_end = memory_bucket_end(500 * MIB)
    assert est.target == {"cpu": with_margin(cpu_end), "memory": with_margin(mem_end)}
    upper = 1 + 1 / conf  # history of ~a day: upper bound ~2x
    lower = (1 + 0.001 / conf) ** -2
    assert est.upper_bound["cpu"] == int(with_margin(cpu_end) * upper)
    assert est.upper_bound["memory"] == int(with_margin(mem_end) * upper)
    assert est.lower_bound["cpu"] == int(with_margin(cpu_end) * lower)
    assert est.lower_bound["memory"] == int(with_margin(mem_end) * lower)


@pytest.mark.parametrize(
    ("minutes", "upper_factor", "lower_factor"),
    [
        # No history: upper unbounded (saturates), lower 0 (then the pod minimum).
        (1, math.inf, 0.0),
        # 12 h of one-a-minute samples: confidence 0.5 -> upper x3 (upstream's comment).
        (721, 3.0, (1 + 0.002) ** -2),
        # A week: x(1 + 1/7) ~ 1.14.
        (7 * 1440 + 1, 1 + 1 / 7, (1 + 0.001 / 7) ** -2),
    ],
)
def test_confidence_widens_bounds_for_short_histories(
    minutes: int, upper_factor: float, lower_factor: float
) -> None:
    agg = steady(minutes, 2000, 1024 * MIB)
    est = estimate(agg, UPSTREAM)
    base_cpu = with_margin(cpu_bucket_end(2.0) * 1000)
    if math.isinf(upper_factor):
        assert est.upper_bound["cpu"] == 10**14
        assert est.lower_bound == {"cpu": 25, "memory": 250 * MIB}
    else:
        assert est.upper_bound["cpu"] == pytest.approx(base_cpu * upper_factor, abs=1)
        assert est.lower_bound["cpu"] == pytest.approx(base_cpu * lower_factor, abs=1)


def test_percentiles_of_a_two_level_cpu_history() -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    container = ContainerState(agg)
    # 80 samples at 100m then 20 at 1000m, same request (same weight), within a minute
    # of each other so decay does not matter: p50 = 100m's bucket, p90/p95 = 1000m's.
    for i in range(100):
        container.add_cpu_sample(T0 + i * 0.1, 100 if i < 80 else 1000, 500)
    est = estimate(agg, UPSTREAM)
    assert est.target["cpu"] == with_margin(cpu_bucket_end(1.0) * 1000)
    low = with_margin(cpu_bucket_end(0.1) * 1000) * (1 + 0.001 / confidence(agg, DAY)) ** -2
    assert est.lower_bound["cpu"] == max(int(low), 25)


def test_decay_makes_the_recent_level_win() -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    container = ContainerState(agg)
    # 60 samples at 2 cores, then two days later 30 at 200m: the old ones weigh 1/4
    # each, 15 in all, against 30: p50 and p90 are the new level.
    for i in range(60):
        container.add_cpu_sample(T0 + i, 2000, 1000)
    for i in range(30):
        container.add_cpu_sample(T0 + 2 * DAY + i, 200, 1000)
    assert agg.cpu.percentile(0.5) == pytest.approx(cpu_bucket_end(0.2))
    assert agg.cpu.percentile(0.66) == pytest.approx(cpu_bucket_end(0.2))
    assert agg.cpu.percentile(0.7) == pytest.approx(cpu_bucket_end(2.0))


def test_cpu_samples_weigh_by_request() -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    agg.add_cpu_sample(T0, 100, 50)  # weight max(0.05, 0.1) = 0.1
    agg.add_cpu_sample(T0, 1000, 2000)  # weight 2
    assert agg.cpu.total_weight == pytest.approx(2.1)
    flat = AggregateContainerState(
        dataclasses.replace(UPSTREAM, cpu_weight_by_request=False), creation_time=T0
    )
    flat.add_cpu_sample(T0, 1000, 2000)
    assert flat.cpu.total_weight == pytest.approx(0.1)


def test_memory_keeps_one_peak_per_interval() -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    container = ContainerState(agg)
    for usage in (100, 300, 200):  # one interval: the peak 300 replaces 100
        container.add_memory_sample(T0 + usage, usage * MIB)
    assert agg.memory_peaks.total_weight == pytest.approx(1.0, rel=1e-2)
    assert agg.memory_peaks.percentile(1.0) == pytest.approx(memory_bucket_end(300 * MIB))
    container.add_memory_sample(T0 + DAY + 200, 50 * MIB)  # the next interval: a new peak
    assert agg.memory_peaks.total_weight == pytest.approx(1.0 + 2.0, rel=1e-2)  # a day on: x2
    assert not container.add_memory_sample(T0, 999 * MIB)  # out of order: discarded


@pytest.mark.parametrize(
    ("request_mib", "peak_mib", "expected_mib"),
    [
        (200, 0, 300),  # +100Mi beats x1.2
        (1024, 0, 1228.8),  # x1.2 beats +100Mi
        (200, 600, 720),  # the observed peak is larger than the request
        (500, 500, 600),
    ],
)
def test_oom_bump(request_mib: int, peak_mib: int, expected_mib: float) -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    container = ContainerState(agg)
    if peak_mib:
        container.add_memory_sample(T0, peak_mib * MIB)
    assert container.record_oom(T0 + 60, request_mib * MIB)
    assert container.oom_peak == int(expected_mib * MIB)
    assert agg.memory_peaks.percentile(1.0) == pytest.approx(
        memory_bucket_end(int(expected_mib * MIB))
    )


def test_old_ooms_are_discarded() -> None:
    container = ContainerState(AggregateContainerState(UPSTREAM, creation_time=T0))
    container.add_memory_sample(T0 + 2 * DAY, 100 * MIB)
    assert not container.record_oom(T0, 100 * MIB)
    assert container.record_oom(T0 + 1.5 * DAY, 100 * MIB)


@pytest.mark.parametrize(
    ("containers", "cpu", "memory"),
    # The smallest CPU bucket ends at 10m, +15% = 11m: above a third of 25m (8m).
    [(1, 25, 250 * MIB), (2, 12, 125 * MIB), (3, 11, int(250 * MIB / 3))],
)
def test_pod_minimum_is_split_across_containers(containers: int, cpu: int, memory: int) -> None:
    agg = steady(60, 1, 1 * MIB)
    est = estimate(agg, UPSTREAM, containers)
    assert est.target == {"cpu": cpu, "memory": memory}


def vpa(policies: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"targetRef": {"kind": "Deployment", "name": "web"}}
    if policies is not None:
        spec["resourcePolicy"] = {"containerPolicies": policies}
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def test_recommendation_status_is_upstreams_shape() -> None:
    aggs = {"main": steady(1440, 1000, 500 * MIB), "idle": steady(0, 0, 0)}
    out = recommend(vpa(), aggs, UPSTREAM)
    assert out is not None
    (entry,) = out["containerRecommendations"]  # no usage yet: no entry
    target_cpu = with_margin(cpu_bucket_end(1.0) * 1000)
    assert entry["containerName"] == "main"
    assert entry["target"]["cpu"] == f"{target_cpu}m"
    assert entry["target"]["memory"] == str(with_margin(memory_bucket_end(500 * MIB)))
    assert entry["uncappedTarget"] == entry["target"]
    assert set(entry) == {"containerName", "target", "lowerBound", "upperBound", "uncappedTarget"}
    assert recommend(vpa(), {"idle": steady(0, 0, 0)}, UPSTREAM) is None


def test_min_and_max_allowed_cap_every_bound_but_not_the_uncapped_target() -> None:
    aggs = {"main": steady(1440, 1000, 500 * MIB)}
    policy = {"containerName": "*", "minAllowed": {"cpu": "2"}, "maxAllowed": {"memory": "256Mi"}}
    out = recommend(vpa([policy]), aggs, UPSTREAM)
    assert out is not None
    (entry,) = out["containerRecommendations"]
    for key in ("target", "lowerBound"):
        assert entry[key] == {"cpu": "2", "memory": "256Mi"}
    assert entry["upperBound"]["memory"] == "256Mi"
    assert entry["upperBound"]["cpu"] != "2"  # ~2x the target: above the minimum
    assert entry["uncappedTarget"]["cpu"] == f"{with_margin(cpu_bucket_end(1.0) * 1000)}m"


def test_controlled_resources_and_mode_off() -> None:
    aggs = {"main": steady(60, 500, 300 * MIB), "sidecar": steady(60, 100, 100 * MIB)}
    out = recommend(
        vpa(
            [
                {"containerName": "main", "controlledResources": ["memory"]},
                {"containerName": "sidecar", "mode": "Off"},
            ]
        ),
        aggs,
        UPSTREAM,
    )
    assert out is not None
    (entry,) = out["containerRecommendations"]
    assert entry["containerName"] == "main"
    assert set(entry["target"]) == {"memory"}


def test_rounding() -> None:
    s = dataclasses.replace(UPSTREAM, round_cpu_millicores=100, round_memory_bytes=MIB)
    out = recommend(vpa(), {"main": steady(60, 333, 333 * MIB)}, s)
    assert out is not None
    target = out["containerRecommendations"][0]["target"]
    assert target["cpu"].endswith("00m") or target["cpu"].isdigit()
    assert target["memory"].endswith("Mi")


def test_recommender_feeds_aggregates_by_vpa_and_container() -> None:
    clock = Clock()
    rec = Recommender(UPSTREAM, clock)
    key = ("default", "web")
    for pod in ("a", "b"):
        for i in range(10):
            rec.add_sample(
                key,
                ContainerKey(pod, "main"),
                T0 + 60 * i,
                cpu_millicores=250,
                memory_bytes=300 * MIB,
                cpu_request_millicores=250,
            )
    assert rec.aggregates(key)["main"].total_samples_count == 20
    assert rec.recommendation(key, vpa()) is not None
    rec.forget_pod("a")
    assert rec.aggregates(key)["main"].total_samples_count == 20  # history stays
    clock.t = T0 + 9 * DAY
    assert rec.garbage_collect() == [(key, "main")]
    assert rec.recommendation(key, vpa()) is None


def test_memory_pressure_raises_the_recommendation_before_an_oom() -> None:
    pressure = dataclasses.replace(UPSTREAM, memory_pressure_fraction=0.9)
    results = {}
    for name, s in (("upstream", UPSTREAM), ("pressure", pressure)):
        rec = Recommender(s, Clock())
        rec.add_sample(
            ("ns", "v"),
            ContainerKey("p", "main"),
            T0,
            cpu_millicores=100,
            memory_bytes=950 * MIB,
            memory_limit_bytes=1000 * MIB,
        )
        results[name] = rec.aggregates(("ns", "v"))["main"].memory_peaks.percentile(1.0)
    assert results["upstream"] == pytest.approx(memory_bucket_end(950 * MIB))
    assert results["pressure"] == pytest.approx(memory_bucket_end(1140 * MIB))  # 950 * 1.2


def test_jump_margin_follows_the_largest_recent_rise() -> None:
    s = dataclasses.replace(UPSTREAM, memory_jump_margin=1.0, memory_jump_half_life=3600)
    agg = AggregateContainerState(s, creation_time=T0)
    container = ContainerState(agg)
    container.add_memory_sample(T0, 1000 * MIB)
    container.add_memory_sample(T0 + 60, 1500 * MIB)  # +500Mi
    container.add_memory_sample(T0 + 120, 1600 * MIB)  # +100Mi: smaller, not kept
    assert agg.jump(T0 + 120) == pytest.approx(500 * MIB * 2 ** (-60 / 3600))
    assert agg.jump(T0 + 60 + 3600) == pytest.approx(250 * MIB)
    plain = estimate(agg, UPSTREAM, now=T0 + 60).target["memory"]
    widened = estimate(agg, s, now=T0 + 60).target["memory"]
    peak = int(memory_bucket_end(1600 * MIB))
    assert plain == peak + int(peak * 0.15)
    assert widened == peak + int(peak * 0.15) + 500 * MIB


def test_an_oom_kill_counts_as_a_jump_and_memory_pressure_does_not() -> None:
    s = dataclasses.replace(UPSTREAM, memory_jump_margin=1.0)
    agg = AggregateContainerState(s, creation_time=T0)
    container = ContainerState(agg)
    container.add_memory_sample(T0, 100 * MIB)
    container.record_oom(T0 + 60, 100 * MIB, kill=False)
    assert agg.jump(T0 + 60) == 0.0
    container.record_oom(T0 + 120, 100 * MIB)  # killed: a rise to 200Mi at least
    assert agg.jump(T0 + 120) == pytest.approx(100 * MIB)


# -- properties ------------------------------------------------------------------------------

usage = st.lists(
    st.tuples(st.integers(0, 8000), st.integers(0, 16 * 1024).map(lambda m: m * MIB)),
    min_size=1,
    max_size=40,
)


@given(usage, st.integers(1, 3))
@settings(max_examples=150, deadline=None)
def test_bounds_are_ordered(samples: list[tuple[int, int]], containers: int) -> None:
    agg = AggregateContainerState(UPSTREAM, creation_time=T0)
    container = ContainerState(agg)
    for i, (cpu, memory) in enumerate(samples):
        container.add_cpu_sample(T0 + 300 * i, cpu, 500)
        container.add_memory_sample(T0 + 300 * i, memory)
    est = estimate(agg, UPSTREAM, containers)
    for resource in ("cpu", "memory"):
        assert est.lower_bound[resource] <= est.target[resource] <= est.upper_bound[resource]


@given(usage, st.integers(1, 5))
@settings(max_examples=150, deadline=None)
def test_more_usage_never_lowers_the_recommendation(
    samples: list[tuple[int, int]], factor: int
) -> None:
    def target(scale: int) -> dict[str, int]:
        agg = AggregateContainerState(UPSTREAM, creation_time=T0)
        container = ContainerState(agg)
        for i, (cpu, memory) in enumerate(samples):
            container.add_cpu_sample(T0 + 300 * i, cpu * scale, 500)
            container.add_memory_sample(T0 + 300 * i, memory * scale)
        return estimate(agg, UPSTREAM).target

    base, scaled = target(1), target(factor)
    assert scaled["cpu"] >= base["cpu"]
    assert scaled["memory"] >= base["memory"]


@pytest.mark.parametrize("variant_name", ["upstream", "inplace"])
def test_first_recommendation_within_30s_of_the_first_reading(variant_name: str) -> None:
    # The node agents sample every 5 s; the recommender runs every recommender_interval.
    settings_, _ = variant(variant_name)
    clock = Clock(T0 + 2.5)  # the pod starts reporting between two passes
    rec = Recommender(settings_, clock)
    key = ("default", "web")
    first_reading = None
    next_pass = T0 + settings_.recommender_interval
    for step in range(60):
        clock.t = T0 + 2.5 + 5 * step
        rec.add_sample(
            key, ContainerKey("uid", "main"), clock.t, cpu_millicores=120, memory_bytes=80 * MIB
        )
        first_reading = first_reading or clock.t
        if clock.t >= next_pass:
            next_pass += settings_.recommender_interval
            if rec.recommendation(key, vpa()) is not None:
                break
    assert first_reading is not None
    assert clock.t - first_reading <= 30.0
