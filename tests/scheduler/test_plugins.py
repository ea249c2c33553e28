"""Table tests for every plugin: per-node Status with reasons, and the vector form agrees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.scheduler.cache import NodeCache
from inplace.scheduler.framework import Code, CycleState, FilterPlugin, Framework, pod_info
from inplace.scheduler.plugins import (
    BalancedAllocation,
    Insufficient,
    LeastAllocated,
    MostAllocated,
    NodeAffinity,
    NodeName,
    NodeResourcesFit,
    NodeUnschedulable,
    TaintToleration,
    default_plugins,
    fit_reasons,
    tolerates,
)

from .helpers import node, pod

GI = 1024**3


def cache_of(*nodes: dict[str, Any], bound: Sequence[dict[str, Any]] = ()) -> NodeCache:
    cache = NodeCache(capacity=4)
    for n in nodes:
        cache.upsert_node(n)
    for p in bound:
        info = pod_info(p)
        cache.add_pod(info, info.node_name)
    return cache


def run_filter(plugin: FilterPlugin, p: dict[str, Any], cache: NodeCache) -> dict[str, Any]:
    """Per-node statuses by node name, after checking the vector form agrees."""
    info = pod_info(p)
    state = CycleState()
    pre = getattr(plugin, "pre_filter", None)
    if pre is not None:
        assert pre(state, info, cache).ok
    mask = plugin.filter_nodes(state, info, cache)
    out = {}
    for name, slot in cache.slot_of.items():
        status = plugin.filter(state, info, cache, slot)
        vector_ok = True if mask is None else bool(mask[slot])
        assert vector_ok == status.ok, (name, status)
        out[name] = status
    return out


# -- NodeResourcesFit ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "memory", "free_cpu", "free_memory", "free_pods", "expected"),
    [
        (1000, GI, 2000, 2 * GI, 1, []),
        (0, 0, 0, 0, 1, []),  # requests nothing: always fits (but needs a pod slot)
        (0, 0, 0, 0, 0, ["Too many pods: requested 1, free 0"]),
        (2000, GI, 1000, 2 * GI, 5, ["Insufficient cpu: requested 2, free 1"]),
        (500, 2 * GI, 1000, GI, 5, ["Insufficient memory: requested 2Gi, free 1Gi"]),
        (
            1500,
            3 * GI,
            1000,
            GI,
            5,
            [
                "Insufficient cpu: requested 1500m, free 1",
                "Insufficient memory: requested 3Gi, free 1Gi",
            ],
        ),
        (-500, -GI, 0, 0, 0, ["Too many pods: requested 1, free 0"]),
        (100, 0, -200, 0, 3, ["Insufficient cpu: requested 100m, free 0"]),  # overcommitted
    ],
)
def test_fit_reasons(
    cpu: int, memory: int, free_cpu: int, free_memory: int, free_pods: int, expected: list[str]
) -> None:
    got = fit_reasons(cpu, memory, free_cpu, free_memory, free_pods)
    assert [str(r) for r in got] == expected


def test_fit_reasons_for_a_resize_delta_need_no_pod_slot() -> None:
    assert fit_reasons(500, 0, 1000, 0, 0, pods=0) == []
    assert fit_reasons(500, 0, 100, 0, 0, pods=0) == [Insufficient("cpu", 500, 100)]


def test_fit_reasons_count_ephemeral_storage_after_memory() -> None:
    got = fit_reasons(0, 2 * GI, 0, GI, ephemeral_storage=2 * GI, free_ephemeral_storage=GI)
    assert [str(r) for r in got] == [
        "Insufficient memory: requested 2Gi, free 1Gi",
        "Insufficient ephemeral-storage: requested 2Gi, free 1Gi",
    ]
    assert [r.short for r in got] == ["Insufficient memory", "Insufficient ephemeral-storage"]


def test_node_resources_fit_counts_ephemeral_storage() -> None:
    """As upstream's ``fitsRequest``: a pod's ephemeral-storage request must fit what the
    node's allocatable leaves; a node that reports none has none to give."""
    cache = cache_of(
        node("a", ephemeral_storage="10Gi"),
        node("b"),
        node("c", ephemeral_storage="10Gi"),
        bound=[pod("x", node_name="a", ephemeral_storage="9Gi")],
    )
    wants = pod("p", ephemeral_storage="2Gi")
    statuses = run_filter(NodeResourcesFit(), wants, cache)
    assert statuses["a"].reasons == ("Insufficient ephemeral-storage: requested 2Gi, free 1Gi",)
    assert statuses["b"].reasons == ("Insufficient ephemeral-storage: requested 2Gi, free 0",)
    assert statuses["c"].ok
    assert all(s.ok for s in run_filter(NodeResourcesFit(), pod("q"), cache).values())
    cache.remove_node("c")
    fw = Framework(default_plugins(None))
    info, state = pod_info(wants), CycleState()
    assert not fw.feasible(state, info, cache).any()
    assert fw.diagnose(state, info, cache).message() == (
        "0/2 nodes are available: 2 Insufficient ephemeral-storage."
    )


def test_node_resources_fit_counts_bound_and_assumed_pods() -> None:
    cache = cache_of(
        node("a", cpu="2", memory="4Gi"),
        node("b", cpu="2", memory="4Gi"),
        node("c", cpu="4", memory="1Gi", pods=1),
        bound=[pod("x", cpu="1500m", memory="1Gi", node_name="a")],
    )
    cache.assume(pod_info(pod("y", cpu="1", memory="3Gi")), "b")
    statuses = run_filter(NodeResourcesFit(), pod("p", cpu="1", memory="2Gi"), cache)
    assert statuses["a"].code == Code.UNSCHEDULABLE
    assert statuses["a"].reasons == ("Insufficient cpu: requested 1, free 500m",)
    assert statuses["b"].reasons == ("Insufficient memory: requested 2Gi, free 1Gi",)
    assert statuses["c"].reasons == ("Insufficient memory: requested 2Gi, free 1Gi",)
    cache.forget("default/y")
    assert run_filter(NodeResourcesFit(), pod("p", cpu="1", memory="2Gi"), cache)["b"].ok


def test_node_resources_fit_charges_resize_accounting() -> None:
    # desired 3 cpu, allocated 1: the pod holds max(desired, allocated) = 3 against new pods
    resizing = pod(
        "r", cpu="3", memory="1Gi", node_name="a", allocated={"cpu": "1", "memory": "1Gi"}
    )
    cache = cache_of(node("a", cpu="4", memory="8Gi"), bound=[resizing])
    status = run_filter(NodeResourcesFit(), pod("p", cpu="2"), cache)["a"]
    assert status.reasons == ("Insufficient cpu: requested 2, free 1",)
    # Infeasible: desired drops out of the charge
    infeasible = pod(
        "r",
        cpu="3",
        memory="1Gi",
        node_name="a",
        allocated={"cpu": "1", "memory": "1Gi"},
        conditions=[{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
    )
    cache = cache_of(node("a", cpu="4", memory="8Gi"), bound=[infeasible])
    assert run_filter(NodeResourcesFit(), pod("p", cpu="2"), cache)["a"].ok


def test_fit_holds_room_for_nominated_pods_of_higher_priority() -> None:
    cache = cache_of(node("a", cpu="2", memory="4Gi"))
    high = pod_info(pod("high", cpu="1500m", priority=100))
    cache.nominate(high, "a")
    low = run_filter(NodeResourcesFit(), pod("low", cpu="1", priority=0), cache)
    assert low["a"].reasons == ("Insufficient cpu: requested 1, free 500m",)
    higher = run_filter(NodeResourcesFit(), pod("top", cpu="1", priority=1000), cache)
    assert higher["a"].ok


def test_invalid_resources_are_unresolvable() -> None:
    bad = pod("bad", cpu="lots")
    info = pod_info(bad)
    assert info.error
    status = NodeResourcesFit().pre_filter(CycleState(), info, cache_of(node("a")))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- NodeName, NodeUnschedulable ------------------------------------------------------------


def test_node_name() -> None:
    cache = cache_of(node("a"), node("b"))
    statuses = run_filter(NodeName(), pod("p", node_name="b"), cache)
    assert statuses["b"].ok
    assert statuses["a"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["a"].reasons == ("node(s) didn't match the requested node name",)
    assert all(s.ok for s in run_filter(NodeName(), pod("q"), cache).values())


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        (None, False),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], True),
        (
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "effect": "NoSchedule",
                    "operator": "Exists",
                }
            ],
            True,
        ),
        ([{"operator": "Exists"}], True),
        ([{"key": "other", "operator": "Exists"}], False),
    ],
)
def test_node_unschedulable(tolerations: list[dict[str, str]] | None, fits: bool) -> None:
    cache = cache_of(node("cordoned", unschedulable=True), node("ok"))
    statuses = run_filter(NodeUnschedulable(), pod("p", tolerations=tolerations), cache)
    assert statuses["ok"].ok
    assert statuses["cordoned"].ok is fits
    if not fits:
        assert statuses["cordoned"].reasons == ("node(s) were unschedulable",)


# -- TaintToleration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (
            {"key": "k", "operator": "Equal", "value": "v"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            True,
        ),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "w", "effect": "NoSchedule"}, False),
        (
            {"key": "k", "operator": "Exists"},
            {"key": "k", "value": "w", "effect": "NoSchedule"},
            True,
        ),
        ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),
        (
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"key": "k", "effect": "NoSchedule"},
            False,
        ),
        ({"key": "", "operator": "Equal"}, {"key": "k", "effect": "NoSchedule"}, False),
    ],
)
def test_tolerates(toleration: dict[str, str], taint: dict[str, str], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_taint_toleration_filter() -> None:
    gpu = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    soft = {"key": "soft", "value": "x", "effect": "PreferNoSchedule"}
    cache = cache_of(node("plain"), node("gpu", taints=[gpu]), node("soft", taints=[soft]))
    statuses = run_filter(TaintToleration(), pod("p"), cache)
    assert statuses["plain"].ok and statuses["soft"].ok  # PreferNoSchedule does not filter
    assert statuses["gpu"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["gpu"].reasons == ("node(s) had untolerated taint {gpu: true}",)
    tolerating = pod("q", tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert all(s.ok for s in run_filter(TaintToleration(), tolerating, cache).values())


# -- NodeAffinity -----------------------------------------------------------------------------


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


AFFINITY_NODES = (
    node("a", labels={"zone": "z1", "disk": "ssd", "cores": "8"}),
    node("b", labels={"zone": "z2", "cores": "2"}),
    node("c", labels={"zone": "z3"}),
)


@pytest.mark.parametrize(
    ("selector", "affinity", "expected"),
    [
        (None, None, {"a", "b", "c"}),
        ({"zone": "z1"}, None, {"a"}),
        ({"zone": "z1", "disk": "hdd"}, None, set()),
        (
            None,
            _affinity(
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}
            ),
            {"a", "b"},
        ),
        (
            None,
            _affinity(
                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}
            ),
            {"b", "c"},
        ),
        (None, _affinity({"matchExpressions": [{"key": "disk", "operator": "Exists"}]}), {"a"}),
        (
            None,
            _affinity({"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}),
            {"b", "c"},
        ),
        (
            None,
            _affinity({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}),
            {"a"},
        ),
        (
            None,
            _affinity({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["4"]}]}),
            {"b"},
        ),
        # terms are ORed
        (
            None,
            _affinity(
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z3"]}]},
                {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
            ),
            {"a", "c"},
        ),
        # an empty term matches nothing
        (None, _affinity({}), set()),
        (
            None,
            _affinity(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
            ),
            {"b"},
        ),
        # nodeSelector AND affinity
        (
            {"zone": "z2"},
            _affinity({"matchExpressions": [{"key": "disk", "operator": "Exists"}]}),
            set(),
        ),
    ],
)
def test_node_affinity(
    selector: dict[str, str] | None, affinity: dict[str, Any] | None, expected: set[str]
) -> None:
    cache = cache_of(*AFFINITY_NODES)
    statuses = run_filter(
        NodeAffinity(), pod("p", node_selector=selector, affinity=affinity), cache
    )
    assert {n for n, s in statuses.items() if s.ok} == expected
    for s in statuses.values():
        if not s.ok:
            assert s.reasons == ("node(s) didn't match Pod's node affinity/selector",)
            assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_affinity_mask_cache_follows_label_changes() -> None:
    cache = cache_of(node("a", labels={"zone": "z1"}), node("b"))
    plugin = NodeAffinity()
    p = pod("p", node_selector={"zone": "z1"})
    assert {n for n, s in run_filter(plugin, p, cache).items() if s.ok} == {"a"}
    cache.upsert_node(node("b", labels={"zone": "z1"}))
    assert {n for n, s in run_filter(plugin, p, cache).items() if s.ok} == {"a", "b"}


# -- scores -----------------------------------------------------------------------------------


def _scores(plugin: Any, p: dict[str, Any], cache: NodeCache) -> dict[str, float]:
    info = pod_info(p)
    slots = np.array(sorted(cache.slot_of.values()), dtype=np.intp)
    values = plugin.score_nodes(CycleState(), info, cache, slots)
    return {
        str(cache.names[int(s)]): round(float(v), 3) for s, v in zip(slots, values, strict=True)
    }


def test_least_and_most_allocated() -> None:
    cache = cache_of(
        node("empty", cpu="4", memory="4Gi"),
        node("half", cpu="4", memory="4Gi"),
        bound=[pod("x", cpu="2", memory="2Gi", node_name="half")],
    )
    p = pod("p", cpu="1", memory="1Gi")
    least = _scores(LeastAllocated(), p, cache)
    assert least == {"empty": 75.0, "half": 25.0}
    most = _scores(MostAllocated(), p, cache)
    assert most == {"empty": 25.0, "half": 75.0}


def test_balanced_allocation() -> None:
    cache = cache_of(
        node("cpu-heavy", cpu="4", memory="4Gi"),
        node("even", cpu="4", memory="4Gi"),
        bound=[pod("x", cpu="3", memory="0", node_name="cpu-heavy")],
    )
    scores = _scores(BalancedAllocation(), pod("p", cpu="1", memory="1Gi"), cache)
    assert scores["even"] == 100.0
    assert scores["cpu-heavy"] == pytest.approx(100 * (1 - (1.0 - 0.25) / 2))


def test_zero_request_pods_score_with_upstream_defaults() -> None:
    cache = cache_of(node("a", cpu="1", memory="1000Mi"))
    scores = _scores(LeastAllocated(), pod("p", cpu=None, memory=None), cache)
    assert scores["a"] == pytest.approx((90 + 80) / 2)


# -- the framework ----------------------------------------------------------------------------


def test_framework_diagnosis_message_is_upstreams() -> None:
    gpu = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    cache = cache_of(
        node("small", cpu="1", memory="1Gi"),
        node("tiny", cpu="500m", memory="512Mi"),
        node("tainted", cpu="8", memory="8Gi", taints=[gpu]),
        node("cordoned", cpu="8", memory="8Gi", unschedulable=True),
    )
    fw = Framework(default_plugins(None))
    info = pod_info(pod("p", cpu="2", memory="768Mi"))
    state = CycleState()
    assert fw.run_pre_filters(state, info, cache).ok
    assert not fw.feasible(state, info, cache).any()
    diagnosis = fw.diagnose(state, info, cache)
    assert diagnosis.message() == (
        "0/4 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint "
        "{gpu: true}, 1 node(s) were unschedulable, 2 Insufficient cpu."
    )
    assert diagnosis.unresolvable is not None
    unresolvable = {cache.names[int(s)] for s in np.flatnonzero(diagnosis.unresolvable)}
    assert unresolvable == {"tainted", "cordoned"}
    # filter_one stops at the first failing plugin and names it
    status = fw.filter_one(state, info, cache, cache.slot_of["tainted"])
    assert status.plugin == "TaintToleration"


@settings(max_examples=60, deadline=None)
@given(
    free=st.lists(
        st.tuples(
            st.integers(0, 4000), st.integers(0, 8 * GI), st.integers(0, 3), st.integers(0, GI)
        ),
        min_size=1,
        max_size=8,
    ),
    req=st.tuples(st.integers(0, 4000), st.integers(0, 8 * GI), st.integers(0, GI)),
)
def test_vector_fit_agrees_with_fit_reasons(
    free: list[tuple[int, int, int, int]], req: tuple[int, int, int]
) -> None:
    cache = NodeCache(capacity=2)
    for i, (cpu, mem, pods, storage) in enumerate(free):
        cache.upsert_node(
            node(f"n{i}", cpu=f"{cpu}m", memory=str(mem), pods=pods, ephemeral_storage=str(storage))
        )
    info = pod_info(pod("p", cpu=f"{req[0]}m", memory=str(req[1]), ephemeral_storage=str(req[2])))
    plugin = NodeResourcesFit()
    state = CycleState()
    mask = plugin.filter_nodes(state, info, cache)
    assert mask is not None
    for i, (cpu, mem, pods, storage) in enumerate(free):
        slot = cache.slot_of[f"n{i}"]
        reasons = fit_reasons(
            req[0], req[1], cpu, mem, pods, ephemeral_storage=req[2], free_ephemeral_storage=storage
        )
        assert bool(mask[slot]) == (reasons == [])
