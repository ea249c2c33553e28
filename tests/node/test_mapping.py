"""kubelet's conversions, checked against upstream's values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.node.cgroups import CgroupResources
from inplace.node.cgroups.mapping import (
    MAX_SHARES,
    ContainerSizing,
    container_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    pod_resources,
    shares_to_weight,
    weight_to_shares,
)

Mi = 1024 * 1024


@pytest.mark.parametrize(
    ("milli", "shares"),
    [
        (0, 2),
        (1, 2),
        (2, 2),
        (3, 3),
        (100, 102),
        (250, 256),
        (500, 512),
        (1000, 1024),
        (2000, 2048),
        (256_000, 262144),
        (300_000, MAX_SHARES),
    ],
)
def test_milli_cpu_to_shares(milli: int, shares: int) -> None:
    assert milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize(
    ("milli", "period", "quota"),
    [
        (0, 100_000, 0),
        (1, 100_000, 1000),
        (5, 100_000, 1000),
        (9, 100_000, 1000),
        (10, 100_000, 1000),
        (11, 100_000, 1100),
        (100, 100_000, 10_000),
        (250, 100_000, 25_000),
        (1000, 100_000, 100_000),
        (1500, 100_000, 150_000),
        (200, 50_000, 10_000),
        (10, 50_000, 1000),
    ],
)
def test_milli_cpu_to_quota(milli: int, period: int, quota: int) -> None:
    assert milli_cpu_to_quota(milli, period) == quota


@pytest.mark.parametrize(
    ("shares", "weight"),
    [(2, 1), (1024, 39), (102, 4), (512, 20), (2048, 79), (262144, 10000), (1, 1)],
)
def test_shares_to_weight(shares: int, weight: int) -> None:
    assert shares_to_weight(shares) == weight


@pytest.mark.parametrize(("weight", "shares"), [(1, 2), (39, 999), (100, 2598), (10000, 262144)])
def test_weight_to_shares(weight: int, shares: int) -> None:
    assert weight_to_shares(weight) == shares


@given(st.integers(min_value=2, max_value=MAX_SHARES))
def test_weight_round_trip_is_stable(shares: int) -> None:
    weight = shares_to_weight(shares)
    assert 1 <= weight <= 10000
    assert shares_to_weight(weight_to_shares(weight)) == weight
    assert weight_to_shares(weight) <= shares


@pytest.mark.parametrize(
    ("req", "lim", "mem", "expected"),
    [
        (None, None, None, CgroupResources(cpu_shares=2, cpu_quota_us=None)),
        (100, None, None, CgroupResources(cpu_shares=102, cpu_quota_us=None)),
        (None, 500, None, CgroupResources(cpu_shares=512, cpu_quota_us=50_000)),
        (250, 1000, 64 * Mi, CgroupResources(2 * 128, 100_000, memory_limit_bytes=64 * Mi)),
        (0, 0, 0, CgroupResources(cpu_shares=2, cpu_quota_us=None)),
    ],
)
def test_container_resources(
    req: int | None, lim: int | None, mem: int | None, expected: CgroupResources
) -> None:
    assert container_resources(req, lim, mem) == expected


def test_pod_best_effort() -> None:
    assert pod_resources([ContainerSizing(), ContainerSizing()]) == CgroupResources(
        cpu_shares=2, cpu_quota_us=None
    )


def test_pod_guaranteed() -> None:
    c = ContainerSizing(500, 500, 64 * Mi, 64 * Mi)
    assert pod_resources([c, c]) == CgroupResources(
        cpu_shares=1024, cpu_quota_us=100_000, memory_limit_bytes=128 * Mi
    )


def test_pod_burstable_without_every_limit() -> None:
    limited = ContainerSizing(requests_cpu_milli=100, limits_cpu_milli=200, limits_memory=64 * Mi)
    unlimited = ContainerSizing(requests_cpu_milli=100, requests_memory=10 * Mi)
    assert pod_resources([limited, unlimited]) == CgroupResources(
        cpu_shares=204, cpu_quota_us=None, memory_limit_bytes=None
    )
    # every container has a CPU limit but not a memory limit
    cpu_only = ContainerSizing(requests_cpu_milli=100, limits_cpu_milli=300)
    assert pod_resources([limited, cpu_only]) == CgroupResources(
        cpu_shares=204, cpu_quota_us=50_000, memory_limit_bytes=None
    )


def test_pod_requests_default_to_limits_and_init_containers_take_the_max() -> None:
    app = ContainerSizing(limits_cpu_milli=100, limits_memory=32 * Mi)
    big_init = ContainerSizing(requests_cpu_milli=2000, limits_cpu_milli=2000, limits_memory=Mi)
    res = pod_resources([app], init_containers=[big_init])
    assert res == CgroupResources(cpu_shares=2048, cpu_quota_us=200_000, memory_limit_bytes=32 * Mi)
