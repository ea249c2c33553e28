"""Pod resource math against upstream's rules (component-helpers/resource, helper/qos)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.resources import (
    BEST_EFFORT,
    BURSTABLE,
    GUARANTEED,
    add,
    container_limits,
    container_requests,
    get_pod_qos,
    is_resize_infeasible,
    max_each,
    parse_resource_list,
    pod_level_requests,
    pod_limits,
    pod_requests,
    qos_class,
    requests_milli_bytes,
    resize_accounting_requests,
    sub,
)

Pod = dict[str, Any]


def rl(**values: str) -> dict[str, Quantity]:
    """Resource list from keyword arguments; ``hugepages_2Mi`` means ``hugepages-2Mi``."""
    return {k.replace("_", "-"): Quantity.parse(v) for k, v in values.items()}


def raw(cpu: str = "", memory: str = "", **extra: str) -> dict[str, str]:
    out = {k.replace("_", "-"): v for k, v in extra.items()}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    return out


def container(
    name: str = "c",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "busybox"}
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    if resources:
        c["resources"] = resources
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    return c


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    *,
    overhead: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    if resources is not None:
        spec["resources"] = resources
    p: Pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    if status is not None:
        p["status"] = status
    return p


# -- resource lists ----------------------------------------------------------------------------


def test_parse_resource_list() -> None:
    assert parse_resource_list(None) == {}
    assert parse_resource_list({}) == {}
    got = parse_resource_list({"cpu": "500m", "memory": " 1Gi ", "nvidia.com/gpu": 1, "x": None})
    assert got == {
        "cpu": Quantity.from_milli(500),
        "memory": Quantity.from_int(2**30),
        "nvidia.com/gpu": Quantity.from_int(1),
        "x": Quantity.from_int(0),
    }
    assert str(got["memory"]) == "1Gi"


def test_parse_resource_list_names_the_resource() -> None:
    with pytest.raises(QuantityError) as info:
        parse_resource_list({"cpu": "1", "memory": "lots"})
    assert info.value.resource == "memory"
    assert str(info.value).startswith("memory: quantities must match the regular expression")
    assert '"lots"' in str(info.value)


def test_list_helpers() -> None:
    a = rl(cpu="1", memory="1Gi")
    b = rl(cpu="500m", ephemeral_storage="1G")
    assert add(a, b) == rl(cpu="1.5", memory="1Gi", ephemeral_storage="1G")
    assert max_each(a, rl(cpu="2", memory="1Mi")) == rl(cpu="2", memory="1Gi")
    assert sub(a, b) == rl(cpu="500m", memory="1Gi", ephemeral_storage="-1G")
    assert a == rl(cpu="1", memory="1Gi")  # inputs untouched
    assert requests_milli_bytes(rl(cpu="1.5", memory="1.5Gi")) == (1500, 1610612736)
    assert requests_milli_bytes(rl(cpu="0.1m", memory="0.5")) == (1, 1)  # rounded up
    assert requests_milli_bytes({}) == (0, 0)


# -- containers -------------------------------------------------------------------------------


def test_container_requests_default_from_limits() -> None:
    c = container(requests=raw(cpu="100m"), limits=raw(cpu="200m", memory="1Gi", gpu="1"))
    assert container_requests(c) == rl(cpu="100m", memory="1Gi", gpu="1")
    assert container_limits(c) == rl(cpu="200m", memory="1Gi", gpu="1")
    assert container_requests(container(limits=raw(cpu="1"))) == rl(cpu="1")
    assert container_requests(container()) == {}
    assert container_limits(container(requests=raw(cpu="1"))) == {}
    # an explicit zero request is kept (upstream only fills in missing ones)
    assert container_requests(container(requests=raw(cpu="0"), limits=raw(cpu="1"))) == rl(cpu="0")


# -- pod requests -----------------------------------------------------------------------------

REQUEST_CASES: list[tuple[str, Pod, dict[str, Quantity]]] = [
    ("no containers", pod([]), {}),
    (
        "sum of containers",
        pod(
            [
                container("a", raw(cpu="100m", memory="100Mi")),
                container("b", raw(cpu="200m", memory="1Gi")),
                container("c"),
            ]
        ),
        rl(cpu="300m", memory="1124Mi"),
    ),
    (
        "requests defaulted from limits",
        pod([container("a", limits=raw(cpu="1", memory="1Gi")), container("b", raw(cpu="1"))]),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "init container larger than the containers",
        pod(
            [container("a", raw(cpu="1", memory="1Gi"))],
            [container("init", raw(cpu="2", memory="512Mi"))],
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "init containers run one at a time: the largest counts",
        pod(
            [container("a", raw(cpu="100m"))],
            [container("i1", raw(cpu="1")), container("i2", raw(cpu="3")), container("i3")],
        ),
        rl(cpu="3"),
    ),
    (
        "init container with a resource the containers lack",
        pod([container("a", raw(cpu="1"))], [container("init", raw(ephemeral_storage="1G"))]),
        rl(cpu="1", ephemeral_storage="1G"),
    ),
    (
        "sidecar adds to the containers",
        pod(
            [container("a", raw(cpu="1", memory="1Gi"))],
            [container("side", raw(cpu="500m", memory="100Mi"), restart_policy="Always")],
        ),
        rl(cpu="1.5", memory="1124Mi"),
    ),
    (
        # KEP-753: InitContainerUse(i) = sum(sidecars before i) + init container i
        "init container after a sidecar runs alongside it",
        pod(
            [container("a", raw(cpu="100m"))],
            [
                container("side", raw(cpu="1"), restart_policy="Always"),
                container("init", raw(cpu="2")),
            ],
        ),
        rl(cpu="3"),
    ),
    (
        "init container before a sidecar does not",
        pod(
            [container("a", raw(cpu="100m"))],
            [
                container("init", raw(cpu="2")),
                container("side", raw(cpu="1"), restart_policy="Always"),
            ],
        ),
        rl(cpu="2"),
    ),
    (
        "several sidecars accumulate",
        pod(
            [container("a", raw(cpu="1"))],
            [
                container("s1", raw(cpu="1"), restart_policy="Always"),
                container("init", raw(cpu="1500m")),
                container("s2", raw(cpu="2"), restart_policy="Always"),
                container("init2", raw(cpu="3500m")),
            ],
        ),
        # containers + sidecars = 4; init2 with s1+s2 = 6.5
        rl(cpu="6.5"),
    ),
    (
        "a restartPolicy other than Always is a regular init container",
        pod(
            [container("a", raw(cpu="1"))],
            [container("init", raw(cpu="500m"), restart_policy="OnFailure")],
        ),
        rl(cpu="1"),
    ),
    (
        "overhead is added",
        pod(
            [container("a", raw(cpu="1", memory="1Gi"))],
            overhead=raw(cpu="250m", memory="120Mi"),
        ),
        rl(cpu="1250m", memory="1144Mi"),
    ),
    (
        "overhead is added to the init peak too",
        pod(
            [container("a", raw(cpu="1"))],
            [container("init", raw(cpu="2"))],
            overhead=raw(cpu="100m"),
        ),
        rl(cpu="2100m"),
    ),
    (
        "pod-level requests replace the resources they name",
        pod(
            [container("a", raw(cpu="100m", memory="100Mi", ephemeral_storage="1G"))],
            resources={"requests": raw(cpu="1")},
            overhead=raw(cpu="10m"),
        ),
        rl(cpu="1010m", memory="100Mi", ephemeral_storage="1G"),
    ),
    (
        "pod-level requests ignore unsupported resources",
        pod(
            [container("a", raw(cpu="100m", ephemeral_storage="1G"))],
            resources={"requests": raw(cpu="2", ephemeral_storage="5G")},
        ),
        rl(cpu="2", ephemeral_storage="1G"),
    ),
    (
        "pod-level limit without request: the containers' requests when they have some",
        pod(
            [container("a", raw(cpu="100m"))],
            resources={"limits": raw(cpu="2", memory="1Gi")},
        ),
        rl(cpu="100m", memory="1Gi"),
    ),
    (
        "pod-level hugepages",
        pod(
            [container("a", raw(cpu="1"))],
            resources={"requests": raw(hugepages_2Mi="4Mi")},
        ),
        rl(cpu="1", hugepages_2Mi="4Mi"),
    ),
]


@pytest.mark.parametrize(
    ("pod_", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_pod_requests(pod_: Pod, expected: dict[str, Quantity]) -> None:
    before = copy.deepcopy(pod_)
    assert pod_requests(pod_) == expected
    assert pod_ == before  # never mutates the pod


def test_pod_requests_exclude_overhead() -> None:
    p = pod([container("a", raw(cpu="1"))], overhead=raw(cpu="1", memory="1Mi"))
    assert pod_requests(p, exclude_overhead=True) == rl(cpu="1")
    assert pod_requests(p) == rl(cpu="2", memory="1Mi")


def test_pod_requests_bad_quantity_names_resource() -> None:
    with pytest.raises(QuantityError) as info:
        pod_requests(pod([container("a", raw(cpu="1 core"))]))
    assert info.value.resource == "cpu"


def test_pod_level_requests_defaulting() -> None:
    assert pod_level_requests(pod([container("a", raw(cpu="1"))])) is None
    assert pod_level_requests(pod([], resources={})) is None
    assert pod_level_requests(pod([], resources={"limits": raw(ephemeral_storage="1G")})) is None
    p = pod(
        [container("a", raw(cpu="100m"))],
        resources={"requests": raw(memory="64Mi"), "limits": raw(cpu="1", memory="1Gi")},
    )
    # cpu: from the containers; memory: as given
    assert pod_level_requests(p) == rl(cpu="100m", memory="64Mi")
    p = pod([container("a")], resources={"limits": raw(cpu="1", memory="1Gi")})
    assert pod_level_requests(p) == rl(cpu="1", memory="1Gi")  # from the limits


def test_pod_limits() -> None:
    p = pod(
        [
            container("a", limits=raw(cpu="1", memory="1Gi")),
            container("b", limits=raw(cpu="500m")),
        ],
        [
            container("init", limits=raw(cpu="4")),
            container("side", limits=raw(memory="100Mi"), restart_policy="Always"),
        ],
        overhead=raw(cpu="100m", ephemeral_storage="1G"),
    )
    # cpu: max(1.5, 4) + 100m overhead; memory: 1Gi + 100Mi sidecar; overhead only where limited
    assert pod_limits(p) == rl(cpu="4100m", memory="1124Mi")
    p = pod([container("a", limits=raw(cpu="1"))], resources={"limits": raw(cpu="3")})
    assert pod_limits(p) == rl(cpu="3")


# -- resize accounting ------------------------------------------------------------------------


def resizing_pod(
    *,
    desired: dict[str, str],
    allocated: dict[str, str] | None,
    actual: dict[str, str] | None,
    reason: str | None = None,
) -> Pod:
    status: dict[str, Any] = {"phase": "Running", "containerStatuses": []}
    cs: dict[str, Any] = {"name": "app", "ready": True}
    if allocated is not None:
        cs["allocatedResources"] = allocated
    if actual is not None:
        cs["resources"] = {"requests": actual, "limits": actual}
    status["containerStatuses"].append(cs)
    if reason is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True"},
            {"type": "PodResizePending", "status": "True", "reason": reason},
        ]
    return pod(
        [container("app", desired, desired), container("other", raw(cpu="100m"))],
        status=status,
    )


RESIZE_CASES: list[tuple[str, Pod, dict[str, Quantity], dict[str, Quantity]]] = [
    (
        "no status yet: the spec",
        pod([container("app", raw(cpu="1"))]),
        rl(cpu="1"),
        rl(cpu="1"),
    ),
    (
        "settled: all equal",
        resizing_pod(desired=raw("1", "1Gi"), allocated=raw("1", "1Gi"), actual=raw("1", "1Gi")),
        rl(cpu="1100m", memory="1Gi"),
        rl(cpu="1100m", memory="1Gi"),
    ),
    (
        "growing, not yet admitted: desired counts",
        resizing_pod(desired=raw("2", "2Gi"), allocated=raw("1", "1Gi"), actual=raw("1", "1Gi")),
        rl(cpu="2100m", memory="2Gi"),
        rl(cpu="2100m", memory="2Gi"),
    ),
    (
        "shrinking, not yet actuated: the old size counts",
        resizing_pod(desired=raw("1", "1Gi"), allocated=raw("1", "1Gi"), actual=raw("2", "2Gi")),
        rl(cpu="2100m", memory="2Gi"),
        rl(cpu="1100m", memory="1Gi"),
    ),
    (
        "mixed: cpu grows, memory shrinks; max per resource",
        resizing_pod(desired=raw("2", "1Gi"), allocated=raw("2", "1Gi"), actual=raw("1", "2Gi")),
        rl(cpu="2100m", memory="2Gi"),
        rl(cpu="2100m", memory="1Gi"),
    ),
    (
        "allocated above both (admitted, being actuated)",
        resizing_pod(desired=raw("1", "1Gi"), allocated=raw("3", "1Gi"), actual=raw("1", "1Gi")),
        rl(cpu="3100m", memory="1Gi"),
        rl(cpu="1100m", memory="1Gi"),
    ),
    (
        "infeasible: the desired size is not charged",
        resizing_pod(
            desired=raw("64", "1Ti"),
            allocated=raw("1", "1Gi"),
            actual=raw("1", "1Gi"),
            reason="Infeasible",
        ),
        rl(cpu="1100m", memory="1Gi"),
        rl(cpu="64100m", memory="1Ti"),
    ),
    (
        "deferred: the desired size is charged",
        resizing_pod(
            desired=raw("4", "1Gi"),
            allocated=raw("1", "1Gi"),
            actual=raw("1", "1Gi"),
            reason="Deferred",
        ),
        rl(cpu="4100m", memory="1Gi"),
        rl(cpu="4100m", memory="1Gi"),
    ),
    (
        "only allocatedResources reported",
        resizing_pod(desired=raw("1", "1Gi"), allocated=raw("2", "1Gi"), actual=None),
        rl(cpu="2100m", memory="1Gi"),
        rl(cpu="1100m", memory="1Gi"),
    ),
    (
        "only actual resources reported, infeasible",
        resizing_pod(
            desired=raw("8", "1Gi"), allocated=None, actual=raw("1", "1Gi"), reason="Infeasible"
        ),
        rl(cpu="1100m", memory="1Gi"),
        rl(cpu="8100m", memory="1Gi"),
    ),
    (
        "status without resources: the spec",
        resizing_pod(desired=raw("2", "1Gi"), allocated=None, actual=None, reason="Infeasible"),
        rl(cpu="2100m", memory="1Gi"),
        rl(cpu="2100m", memory="1Gi"),
    ),
]


@pytest.mark.parametrize(
    ("pod_", "charged", "spec_only"),
    [c[1:] for c in RESIZE_CASES],
    ids=[c[0] for c in RESIZE_CASES],
)
def test_resize_accounting(
    pod_: Pod, charged: dict[str, Quantity], spec_only: dict[str, Quantity]
) -> None:
    assert resize_accounting_requests(pod_) == charged
    assert pod_requests(pod_, use_status=True) == charged
    assert pod_requests(pod_) == spec_only


def test_resize_accounting_matches_statuses_by_name() -> None:
    p = pod(
        [container("a", raw(cpu="1")), container("b", raw(cpu="1"))],
        [
            container("side", raw(cpu="1"), restart_policy="Always"),
            container("init", raw(cpu="1")),
        ],
        status={
            "containerStatuses": [
                {"name": "b", "allocatedResources": raw(cpu="3")},
                {"name": "side", "allocatedResources": raw(cpu="50")},  # wrong list: ignored
            ],
            "initContainerStatuses": [
                {"name": "side", "resources": {"requests": raw(cpu="2")}},
                {"name": "init", "allocatedResources": raw(cpu="50")},  # not resizable
            ],
        },
    )
    # a 1 + b 3 + side 2 = 6; init (1) + side (2) = 3 < 6
    assert resize_accounting_requests(p) == rl(cpu="6")
    assert pod_requests(p) == rl(cpu="3")


def test_resize_accounting_with_overhead_and_sidecar_peak() -> None:
    p = pod(
        [container("app", raw(cpu="1"))],
        [
            container("side", raw(cpu="500m"), restart_policy="Always"),
            container("init", raw(cpu="1")),
        ],
        overhead=raw(cpu="100m"),
        status={
            "initContainerStatuses": [
                {"name": "side", "allocatedResources": raw(cpu="2"), "resources": {}},
            ],
            "containerStatuses": [{"name": "app", "allocatedResources": raw(cpu="1")}],
        },
    )
    # app 1 + side max(0.5, 2) = 3 vs init 1 + side 2 = 3; + overhead
    assert resize_accounting_requests(p) == rl(cpu="3100m")


def test_is_resize_infeasible() -> None:
    assert not is_resize_infeasible(pod([]))
    assert not is_resize_infeasible({"status": {"conditions": None}})
    assert is_resize_infeasible(
        {"status": {"conditions": [{"type": "PodResizePending", "reason": "Infeasible"}]}}
    )
    assert not is_resize_infeasible(
        {"status": {"conditions": [{"type": "PodResizePending", "reason": "Deferred"}]}}
    )
    assert not is_resize_infeasible(
        {"status": {"conditions": [{"type": "PodResizeInProgress", "reason": "Infeasible"}]}}
    )


# -- QoS --------------------------------------------------------------------------------------


def res(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    return raw(cpu, memory, **extra)


# upstream pkg/apis/core/v1/helper/qos/qos_test.go TestComputePodQOS (name, pod, expected)
QOS_CASES: list[tuple[str, Pod, str]] = [
    (
        "guaranteed",
        pod([container("g", res("100m", "100Mi"), res("100m", "100Mi"))]),
        GUARANTEED,
    ),
    (
        "guaranteed-guaranteed",
        pod(
            [
                container("g", res("100m", "100Mi"), res("100m", "100Mi")),
                container("g2", res("100m", "100Mi"), res("100m", "100Mi")),
            ]
        ),
        GUARANTEED,
    ),
    (
        "best-effort-best-effort",
        pod([container("be", res("", ""), res("", "")), container("be2", res("", ""))]),
        BEST_EFFORT,
    ),
    ("best-effort", pod([container("be", res("", ""), res("", ""))]), BEST_EFFORT),
    (
        "best-effort-burstable",
        pod(
            [container("be", res("", ""), res("", "")), container("b", res("1", ""), res("2", ""))]
        ),
        BURSTABLE,
    ),
    (
        "best-effort-guaranteed",
        pod(
            [
                container("be", res("", ""), res("", "")),
                container("g", res("10m", "100Mi"), res("10m", "100Mi")),
            ]
        ),
        BURSTABLE,
    ),
    (
        "burstable-cpu-guaranteed-memory",
        pod([container("b", res("", "100Mi"), res("", "100Mi"))]),
        BURSTABLE,
    ),
    (
        "burstable-no-limits",
        pod([container("b", res("100m", "100Mi"), res("", ""))]),
        BURSTABLE,
    ),
    (
        "burstable-guaranteed",
        pod(
            [
                container("b", res("1", "100Mi"), res("2", "100Mi")),
                container("g", res("100m", "100Mi"), res("100m", "100Mi")),
            ]
        ),
        BURSTABLE,
    ),
    (
        "burstable-unbounded-but-requests-match-limits",
        pod(
            [
                container("b", res("100m", "100Mi"), res("200m", "200Mi")),
                container("bu", res("100m", "100Mi"), res("", "")),
            ]
        ),
        BURSTABLE,
    ),
    (
        "burstable-1",
        pod([container("b", res("10m", "100Mi"), res("100m", "200Mi"))]),
        BURSTABLE,
    ),
    (
        "burstable-2",
        pod([container("b", res("0", "0"), res("100m", "200Mi"))]),
        BURSTABLE,
    ),
    (
        "best-effort-hugepages",
        pod(
            [
                container(
                    "be",
                    res("0", "0", hugepages_2Mi="1Gi"),
                    res("0", "0", hugepages_2Mi="1Gi"),
                )
            ]
        ),
        BEST_EFFORT,
    ),
    (
        "init-container",
        pod(
            [container("be", res("", ""), res("", ""))],
            [container("b", res("10m", "100Mi"), res("100m", "200Mi"))],
        ),
        BURSTABLE,
    ),
    (
        "guaranteed-with-pod-level-resources",
        pod(
            [container("be", res("", ""), res("", ""))],
            resources={"requests": res("10m", "100Mi"), "limits": res("10m", "100Mi")},
        ),
        GUARANTEED,
    ),
    (
        "guaranteed-with-pod-and-container-level-resources",
        pod(
            [container("b", res("3m", "10Mi"), res("5m", "20Mi"))],
            resources={"requests": res("10m", "100Mi"), "limits": res("10m", "100Mi")},
        ),
        GUARANTEED,
    ),
    (
        "burstable-with-pod-level-resources",
        pod(
            [container("be", res("", ""), res("", ""))],
            resources={"requests": res("10m", "10Mi"), "limits": res("20m", "50Mi")},
        ),
        BURSTABLE,
    ),
    (
        "burstable-with-pod-and-container-level-resources",
        pod(
            [container("b", res("5m", "10Mi"), res("5m", "10Mi"))],
            resources={"requests": res("10m", "10Mi"), "limits": res("20m", "50Mi")},
        ),
        BURSTABLE,
    ),
    (
        "burstable-with-pod-and-container-level-requests",
        pod(
            [container("b", res("5m", "10Mi"), res("", ""))],
            resources={"requests": res("10m", "10Mi"), "limits": res("", "")},
        ),
        BURSTABLE,
    ),
    (
        "burstable-with-pod-and-container-level-resources-2",
        pod(
            [
                container("b", res("5m", "10Mi"), res("", "")),
                container("g", res("5m", "10Mi"), res("5m", "10Mi")),
            ],
            resources={"requests": res("10m", "10Mi"), "limits": res("5m", "")},
        ),
        BURSTABLE,
    ),
    # Ours, beyond upstream's table:
    (
        "limits only: requests default to them",
        pod([container("g", limits=res("1", "1Gi"))]),
        GUARANTEED,
    ),
    (
        "equal values written differently",
        pod([container("g", res("1", "1Gi"), res("1000m", "1024Mi"))]),
        GUARANTEED,
    ),
    (
        "guaranteed with a burstable init container",
        pod(
            [container("g", res("1", "1Gi"), res("1", "1Gi"))],
            [container("i", res("1", "1Gi"), res("2", "1Gi"))],
        ),
        BURSTABLE,
    ),
    (
        "guaranteed sidecar and container",
        pod(
            [container("g", res("1", "1Gi"), res("1", "1Gi"))],
            [container("s", res("1", "1Gi"), res("1", "1Gi"), restart_policy="Always")],
        ),
        GUARANTEED,
    ),
    (
        "extended resources do not count",
        pod([container("g", res("1", "1Gi", gpu="1"), res("1", "1Gi", gpu="2"))]),
        GUARANTEED,
    ),
    (
        "ephemeral-storage alone is best effort",
        pod([container("be", raw(ephemeral_storage="1G"), raw(ephemeral_storage="2G"))]),
        BEST_EFFORT,
    ),
    (
        "pod-level limits only: requests default to them",
        pod([container("be")], resources={"limits": res("1", "1Gi")}),
        GUARANTEED,
    ),
    (
        "pod-level limits, containers request less",
        pod([container("b", res("500m", ""))], resources={"limits": res("1", "1Gi")}),
        BURSTABLE,
    ),
    ("no containers", pod([]), BEST_EFFORT),
]


@pytest.mark.parametrize(
    ("pod_", "expected"), [c[1:] for c in QOS_CASES], ids=[c[0] for c in QOS_CASES]
)
def test_qos_class(pod_: Pod, expected: str) -> None:
    assert qos_class(pod_) == expected


def test_get_pod_qos_prefers_status() -> None:
    p = pod([container("g", res("1", "1Gi"), res("1", "1Gi"))])
    assert get_pod_qos(p) == GUARANTEED
    p["status"] = {"qosClass": "Burstable"}
    assert get_pod_qos(p) == BURSTABLE
    assert qos_class(p) == GUARANTEED
