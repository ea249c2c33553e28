"""The agent's pure decisions (inplace.node.model): tables, no I/O, no clock."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.node.cgroups.base import CgroupResources
from inplace.node.cgroups.mapping import ContainerSizing
from inplace.node.model import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    Alloc,
    MemoryShrink,
    admission_check,
    approval_hold,
    arbiter_decided,
    bigger_of,
    container_cgroup,
    crash_backoff,
    desired_allocs,
    fits_allocatable,
    memory_decrease_error,
    plan_resize,
    pod_allocated_requests,
    pod_cgroup,
    requests_grow,
    restart_needed,
)

Mi = 2**20


# -- sizes -----------------------------------------------------------------------------------


def test_a_containers_allocation_defaults_requests_to_limits_and_keeps_cpu_memory_only() -> None:
    container = {
        "name": "c",
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi", "ephemeral-storage": "1Gi"}},
    }
    assert Alloc.of(container).to_json() == {
        "requests": {"cpu": "500m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "128Mi"},
    }
    assert Alloc.of({"name": "c"}).to_json() == {} and not Alloc.of({"name": "c"})


@pytest.mark.parametrize(
    ("alloc", "sizing"),
    [
        ({}, ContainerSizing()),
        (
            {"requests": {"cpu": "1", "memory": "1Gi"}},
            ContainerSizing(requests_cpu_milli=1000, requests_memory=2**30),
        ),
        (
            {"requests": {"cpu": "1500m"}, "limits": {"cpu": "2", "memory": "1e9"}},
            ContainerSizing(1500, 2000, None, 10**9),
        ),
    ],
)
def test_an_allocation_is_parsed_once_into_numbers(
    alloc: dict[str, Any], sizing: ContainerSizing
) -> None:
    assert Alloc.from_json(alloc).sizing == sizing
    assert Alloc.from_json(alloc).to_json() == alloc  # the quantities kept as written


def test_equal_quantities_in_other_spellings_are_equal_sizes() -> None:
    one, thousand = Alloc({"cpu": "1"}), Alloc({"cpu": "1000m"})
    assert one.sizing == thousand.sizing and one != thousand  # equal sizes, other quantities
    assert Alloc(limits={"memory": "1Gi"}).sizing == Alloc(limits={"memory": str(2**30)}).sizing


def _pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"containers": list(containers), "initContainers": list(init)},
    }


def _c(
    name: str, cpu: str | None = None, memory: str | None = None, **extra: Any
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"name": name, "resources": {"requests": requests}, **extra}


def test_pod_allocated_requests_uses_allocations_and_aggregates_sidecars() -> None:
    pod = _pod(
        _c("a", "100m", "10Mi"),
        _c("b", "200m", "20Mi"),
        init=(_c("init", "1", "5Mi"), _c("side", "50m", "1Mi", restartPolicy="Always")),
    )
    allocs = desired_allocs(pod)
    # init peak: 1000m (+ sidecars started before it: none) vs 100+200+50 = 350m -> 1000m
    assert pod_allocated_requests(pod, allocs)[0] == 1000
    assert pod_allocated_requests(pod, allocs)[1] == 31 * Mi
    allocs["a"] = Alloc({"cpu": "900m", "memory": "100Mi"})
    assert pod_allocated_requests(pod, allocs) == (1150, 121 * Mi)


# -- admission -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "used", "fits", "reason", "message", "never"),
    [
        ((500, Mi), (500, 0), True, "", "", False),
        (
            (600, Mi),
            (500, 0),
            False,
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000",
            False,
        ),
        (
            (100, 2 * 2**30),
            (0, 0),
            False,
            "OutOfmemory",
            f"Node didn't have enough resource: memory, requested: {2 * 2**30}, used: 0, "
            f"capacity: {2**30}",
            True,
        ),
        ((0, 0), (5000, 5 * 2**30), True, "", "", False),  # BestEffort always fits
        (
            (2000, 0),
            (0, 0),
            False,
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
            True,
        ),
    ],
)
def test_fits_allocatable(
    request_: tuple[int, int],
    used: tuple[int, int],
    fits: bool,
    reason: str,
    message: str,
    never: bool,
) -> None:
    result = fits_allocatable(request_, used, (1000, 2**30))
    assert (result.fits, result.reason, result.message, result.never_fits) == (
        fits,
        reason,
        message,
        never,
    )


def test_admission_counts_pods_first() -> None:
    result = admission_check((1, 1), (0, 0), (1000, 2**30), pods_running=3, max_pods=3)
    assert not result.fits and result.reason == "OutOfpods"
    assert admission_check((1, 1), (0, 0), (1000, 2**30), pods_running=2, max_pods=3).fits


# -- resize ----------------------------------------------------------------------------------


def R(shares: int, quota: int | None, memory: int | None) -> CgroupResources:
    return CgroupResources(cpu_shares=shares, cpu_quota_us=quota, memory_limit_bytes=memory)


def test_plan_grow_writes_pod_before_containers() -> None:
    plan = plan_resize(
        "pod",
        R(200, 40000, 256 * Mi),
        R(400, 80000, 512 * Mi),
        [
            ("pod/a", R(100, 20000, 128 * Mi), R(300, 60000, 384 * Mi)),
            ("pod/b", R(100, 20000, 128 * Mi), R(100, 20000, 128 * Mi)),
        ],
    )
    assert [(w.phase, w.path) for w in plan] == [("grow-pod", "pod"), ("grow-containers", "pod/a")]
    assert plan[0].resources == R(400, 80000, 512 * Mi)
    assert plan[1].resources == R(300, 60000, 384 * Mi)


def test_plan_shrink_writes_containers_before_pod() -> None:
    plan = plan_resize(
        "pod",
        R(400, 80000, 512 * Mi),
        R(200, 40000, 256 * Mi),
        [("pod/a", R(300, 60000, 384 * Mi), R(100, 20000, 128 * Mi))],
    )
    assert [(w.phase, w.path) for w in plan] == [
        ("shrink-containers", "pod/a"),
        ("shrink-pod", "pod"),
    ]


def test_plan_mixed_moves_never_exceed_the_parent() -> None:
    # a grows cpu and shrinks memory, b shrinks cpu and grows memory; the pod's totals
    # stay the same, but each step must keep every child within its parent.
    pod_old = R(400, 80000, 512 * Mi)
    pod_new = R(400, 80000, 512 * Mi)
    a_old, a_new = R(100, 20000, 384 * Mi), R(300, 60000, 128 * Mi)
    b_old, b_new = R(300, 60000, 128 * Mi), R(100, 20000, 384 * Mi)
    plan = plan_resize("pod", pod_old, pod_new, [("a", a_old, a_new), ("b", b_old, b_new)])
    assert [(w.phase, w.path) for w in plan] == [
        ("shrink-containers", "a"),
        ("shrink-containers", "b"),
        ("grow-containers", "a"),
        ("grow-containers", "b"),
    ]
    assert plan[0].resources == R(100, 20000, 128 * Mi)  # the smaller of old and new, per value
    state = {"pod": pod_old, "a": a_old, "b": b_old}
    for write in plan:
        state[write.path] = write.resources
        total_mem = sum(state[c].memory_limit_bytes or 0 for c in ("a", "b"))
        assert total_mem <= (state["pod"].memory_limit_bytes or 0)
    assert state == {"pod": pod_new, "a": a_new, "b": b_new}


def test_plan_unlimited_is_the_largest() -> None:
    plan = plan_resize(
        "pod",
        R(2, None, None),
        R(2, 10000, 64 * Mi),
        [("c", R(2, None, None), R(2, 10000, 64 * Mi))],
    )
    assert [(w.phase, w.path) for w in plan] == [("shrink-containers", "c"), ("shrink-pod", "pod")]


def test_plan_nothing_to_do() -> None:
    same = R(100, None, None)
    assert plan_resize("pod", same, same, [("c", same, same)]) == []


def test_container_and_pod_cgroup_values() -> None:
    alloc = Alloc.from_json(
        {
            "requests": {"cpu": "250m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        }
    )
    assert container_cgroup(alloc) == R(256, 50000, 128 * Mi)
    pod = _pod({"name": "a"}, {"name": "b"})
    allocs = {"a": alloc, "b": alloc}
    assert pod_cgroup(pod, allocs) == R(512, 100000, 256 * Mi)


@pytest.mark.parametrize(
    ("policy", "old", "new", "restart_all", "expected"),
    [
        ([], ContainerSizing(100), ContainerSizing(200), False, False),
        (
            [{"resourceName": "memory", "restartPolicy": "RestartContainer"}],
            ContainerSizing(100),
            ContainerSizing(200),
            False,
            False,
        ),
        (
            [{"resourceName": "memory", "restartPolicy": "RestartContainer"}],
            ContainerSizing(limits_memory=1),
            ContainerSizing(limits_memory=2),
            False,
            True,
        ),
        (
            [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
            ContainerSizing(100),
            ContainerSizing(200),
            False,
            True,
        ),
        (
            [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
            ContainerSizing(100),
            ContainerSizing(200),
            True,
            True,
        ),
        ([], ContainerSizing(100), ContainerSizing(100), True, False),
    ],
)
def test_restart_needed(
    policy: list[dict[str, str]],
    old: ContainerSizing,
    new: ContainerSizing,
    restart_all: bool,
    expected: bool,
) -> None:
    container = {"name": "c", "resizePolicy": policy}
    assert restart_needed(container, old, new, restart_all=restart_all) is expected


# -- back-off --------------------------------------------------------------------------------


def test_crash_backoff_doubles_to_five_minutes_and_resets_after_ten() -> None:
    delays: list[float] = []
    delay = None
    for _ in range(8):
        delay = crash_backoff(delay, ran_for=1.0)
        delays.append(delay)
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300]
    assert delays[1] == BACKOFF_INITIAL
    assert crash_backoff(BACKOFF_MAX, ran_for=600.0) == 0  # ran 10 minutes: start over
    assert crash_backoff(BACKOFF_MAX, ran_for=599.0) == BACKOFF_MAX


def test_retry_order_follows_the_design() -> None:
    from inplace.node.model import PendingResize, retry_order

    items = [
        PendingResize("grow-low", True, 0, False, "T1"),
        PendingResize("grow-high", True, 100, False, "T3"),
        PendingResize("shrink", False, 0, False, "T9"),
        PendingResize("grow-low-guaranteed", True, 0, True, "T5"),
        PendingResize("grow-low-older", True, 0, False, "T0"),
        PendingResize("grow-low-no-condition", True, 0, False, ""),
    ]
    # The kubelet's sortPendingResizes (pkg/kubelet/allocation/allocation_manager.go): a pod
    # with no PodResizePending transition time comes after those with one.
    assert retry_order(items) == [
        "shrink",
        "grow-high",
        "grow-low-guaranteed",
        "grow-low-older",
        "grow-low",
        "grow-low-no-condition",
    ]


# The kubelet's own expectations (pkg/kubelet/allocation/allocation_manager_test.go,
# TestRetryPendingResizes... "desired != allocated != actuated"), the spec's 5000m in Go's
# canonical form.
UPSTREAM_POD = {
    "spec": {
        "containers": [
            {"name": "c1", "resources": {"requests": {"cpu": "5000m", "memory": "4500Mi"}}}
        ]
    }
}


def test_resize_messages_are_the_kubelets() -> None:
    from inplace.node.model import resize_message

    error = "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"
    assert resize_message("Pod resize OutOfcpu", UPSTREAM_POD, 2, error=error) == (
        'Pod resize OutOfcpu: {"containers":[{"name":"c1","resources":{"requests":'
        '{"cpu":"5","memory":"4500Mi"}}}],"generation":2,"error":"Node didn\'t have enough '
        'resource: cpu, requested: 5000, used: 0, capacity: 4000"}'
    )
    started = {
        "spec": {
            "containers": [{"name": "c1", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        }
    }
    assert resize_message("Pod resize started", started, 1) == (
        'Pod resize started: {"containers":[{"name":"c1","resources":{"requests":'
        '{"cpu":"1","memory":"1Gi"}}}],"generation":1}'
    )


def test_resize_messages_name_every_container_and_can_show_the_allocation() -> None:
    """podResizeMessage lists init containers first, every container with all its resources
    (``{}`` when none), limits before requests; Go escapes <, > and & in JSON."""
    from inplace.node.model import resize_message

    pod = {
        "spec": {
            "initContainers": [{"name": "setup"}],
            "containers": [
                {
                    "name": "app",
                    "resources": {
                        "requests": {"memory": "64Mi", "ephemeral-storage": "1Gi", "cpu": "0.5"},
                        "limits": {"memory": "128Mi"},
                    },
                }
            ],
        }
    }
    allocated = {"app": Alloc({"cpu": "250m", "memory": "64Mi"})}
    assert resize_message("Pod resize error", pod, 3, allocated=allocated, error="a<b") == (
        'Pod resize error: {"initContainers":[{"name":"setup","resources":{}}],'
        '"containers":[{"name":"app","resources":{"requests":{"cpu":"250m",'
        '"ephemeral-storage":"1Gi","memory":"64Mi"}}}],"generation":3,"error":"a\\u003cb"}'
    )


@pytest.mark.parametrize(
    ("allocated", "desired", "grows"),
    [
        ({"requests": {"cpu": "100m"}}, {"requests": {"cpu": "200m"}}, True),
        ({"requests": {"cpu": "200m"}}, {"requests": {"cpu": "100m"}}, False),
        ({"requests": {"memory": "64Mi"}}, {"requests": {"memory": "64Mi"}}, False),
        (
            {"requests": {"memory": "64Mi"}, "limits": {"memory": "64Mi"}},
            {"requests": {"memory": "64Mi"}, "limits": {"memory": "1Gi"}},
            False,
        ),
        ({"limits": {"cpu": "1"}}, {"limits": {"cpu": "2"}}, True),  # request follows the limit
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "500m", "memory": "1Mi"}}, True),
    ],
)
def test_requests_grow_decides_whether_approval_is_needed(
    allocated: dict[str, dict[str, str]], desired: dict[str, dict[str, str]], grows: bool
) -> None:
    grown = {"main": Alloc.from_json(desired)}
    assert requests_grow({"main": Alloc.from_json(allocated)}, grown) is grows


@pytest.mark.parametrize(
    ("current", "needed", "expected"),
    [
        # A resize allocated in back-off: the pod cgroup is raised to hold it.
        (
            CgroupResources(cpu_shares=1024, cpu_quota_us=100_000, memory_limit_bytes=24 << 20),
            CgroupResources(cpu_shares=563, cpu_quota_us=110_000, memory_limit_bytes=56 << 20),
            CgroupResources(cpu_shares=1024, cpu_quota_us=110_000, memory_limit_bytes=56 << 20),
        ),
        # Never lowered: that is the resize path's, in its safe order.
        (
            CgroupResources(cpu_shares=2048, cpu_quota_us=200_000, memory_limit_bytes=1 << 30),
            CgroupResources(cpu_shares=512, cpu_quota_us=50_000, memory_limit_bytes=1 << 20),
            CgroupResources(cpu_shares=2048, cpu_quota_us=200_000, memory_limit_bytes=1 << 30),
        ),
        # Unlimited on either side stays unlimited.
        (
            CgroupResources(cpu_shares=2, cpu_quota_us=None, memory_limit_bytes=None),
            CgroupResources(cpu_shares=2, cpu_quota_us=50_000, memory_limit_bytes=1 << 20),
            CgroupResources(cpu_shares=2, cpu_quota_us=None, memory_limit_bytes=None),
        ),
    ],
)
def test_bigger_of_only_raises(
    current: CgroupResources, needed: CgroupResources, expected: CgroupResources
) -> None:
    assert bigger_of(current, needed) == expected


# -- the status write held for the arbiter's approval -----------------------------------------


@pytest.mark.parametrize(
    ("awaiting", "decided", "only_generation", "waited", "hold"),
    [
        (True, False, True, 0.0, 1.0),  # just seen: held for the whole window
        (True, False, True, 0.4, 0.6),  # the rest of the window
        (True, False, True, 1.0, None),  # the window is over: written alone
        (True, False, True, 5.0, None),
        (True, True, True, 0.0, None),  # the arbiter decided (approved or pending): written
        (True, False, False, 0.0, None),  # something else changed too: written at once
        (False, False, True, 0.0, None),  # nothing waits for approval: written
    ],
)
def test_approval_hold(
    awaiting: bool, decided: bool, only_generation: bool, waited: float, hold: float | None
) -> None:
    got = approval_hold(
        awaiting_approval=awaiting,
        arbiter_decided=decided,
        only_generation=lambda: only_generation,
        waited=waited,
        hold=1.0,
    )
    assert got == (None if hold is None else pytest.approx(hold))


def test_approval_hold_computes_the_status_only_when_it_would_hold() -> None:
    def never() -> bool:
        raise AssertionError("the status was computed for a write that is not held")

    for awaiting, decided, waited in [(False, False, 0.0), (True, True, 0.0), (True, False, 2.0)]:
        assert (
            approval_hold(
                awaiting_approval=awaiting,
                arbiter_decided=decided,
                only_generation=never,
                waited=waited,
                hold=1.0,
            )
            is None
        )


@pytest.mark.parametrize(
    ("conditions", "decided"),
    [
        ([], False),
        ([{"type": "PodResizeScheduled", "status": "True", "observedGeneration": 3}], True),
        ([{"type": "PodResizePending", "reason": "Deferred", "observedGeneration": 3}], True),
        ([{"type": "PodResizeScheduled", "status": "True", "observedGeneration": 2}], False),
        ([{"type": "PodResizeInProgress", "status": "True", "observedGeneration": 3}], False),
        ([{"type": "Ready", "status": "True", "observedGeneration": 3}], False),
    ],
)
def test_arbiter_decided_reads_the_generation_stamp(
    conditions: list[dict[str, Any]], decided: bool
) -> None:
    assert arbiter_decided({"status": {"conditions": conditions}}, 3) is decided


@pytest.mark.parametrize(
    ("pod", "containers", "expected"),
    [
        # nothing decreases: nothing read, nothing refused
        (MemoryShrink("", 300, 200, None), [MemoryShrink("main", 200, 100, None)], None),
        # decreasing but above usage
        (MemoryShrink("", 100, 200, 50), [MemoryShrink("main", 60, 100, 40)], None),
        # the container below its usage: the message names the pod's usage (upstream's)
        (
            MemoryShrink("", None, None, 90),
            [MemoryShrink("main", 50, 100, 70), MemoryShrink("side", 10, 10, 5)],
            'cannot decrease memory limits: attempting to set container "main" memory limit '
            "(50) below current usage (90)",
        ),
        # a limit added counts as decreasing; pod and container: both, in brackets
        (
            MemoryShrink("", 80, None, 100),
            [MemoryShrink("main", 50, None, 100), MemoryShrink("side", 30, 30, 1)],
            "cannot decrease memory limits: [attempting to set pod memory limit (80) below "
            'current usage (100), attempting to set container "main" memory limit (50) below '
            "current usage (100)]",
        ),
        (
            MemoryShrink("", 80, 100, None),
            [],
            "cannot decrease memory limits: missing pod memory usage",
        ),
    ],
)
def test_memory_decrease_error_is_the_kubelets(
    pod: MemoryShrink, containers: list[MemoryShrink], expected: str | None
) -> None:
    """kuberuntime_manager.go validateMemoryResizeAction, NewAggregate's formatting."""
    assert memory_decrease_error(pod, containers) == expected
