"""Node cache: running totals by ±pod, assumed pods, resize accounting, node churn."""

from __future__ import annotations

from inplace.scheduler.cache import NodeCache
from inplace.scheduler.framework import pod_info

from .helpers import node, pod

GI = 1024**3


def totals(cache: NodeCache, name: str) -> tuple[int, int, int, int, int]:
    s = cache.slot_of[name]
    return (
        int(cache.req_cpu[s]),
        int(cache.req_mem[s]),
        int(cache.req_pods[s]),
        int(cache.com_cpu[s]),
        int(cache.com_mem[s]),
    )


def test_totals_follow_pods() -> None:
    cache = NodeCache(capacity=1)
    cache.upsert_node(node("a", cpu="4", memory="8Gi"))
    cache.add_pod(pod_info(pod("x", cpu="1", memory="1Gi", node_name="a")), "a")
    cache.add_pod(pod_info(pod("y", cpu="500m", memory="1Gi", node_name="a")), "a")
    assert totals(cache, "a") == (1500, 2 * GI, 2, 1500, 2 * GI)
    assert cache.free(cache.slot_of["a"]) == (2500, 6 * GI, 108, 0)
    # update replaces the charge
    cache.add_pod(pod_info(pod("y", cpu="250m", memory="1Gi", node_name="a")), "a")
    assert totals(cache, "a")[:3] == (1250, 2 * GI, 2)
    cache.remove_pod("default/x")
    assert totals(cache, "a") == (250, GI, 1, 250, GI)
    assert cache.remove_pod("default/nope") is None


def test_ephemeral_storage_totals_follow_pods() -> None:
    """Counted as upstream's NodeInfo counts it: the node's allocatable (none reported: none),
    each pod at its request, whatever a resize does to its cpu and memory."""
    cache = NodeCache(capacity=1)
    cache.upsert_node(node("a", ephemeral_storage="10Gi"))
    slot = cache.slot_of["a"]
    x = pod_info(pod("x", node_name="a", ephemeral_storage="1Gi"))
    assert x.ephemeral_storage == GI
    cache.add_pod(x, "a")
    resizing = pod(
        "y",
        cpu="2",
        node_name="a",
        allocated={"cpu": "1", "memory": "128Mi"},
        ephemeral_storage="2Gi",
    )
    cache.add_pod(pod_info(resizing), "a")
    assert cache.free(slot)[3] == 7 * GI
    cache.remove_pod("default/x")
    assert (int(cache.req_storage[slot]), cache.free(slot)[3]) == (2 * GI, 8 * GI)
    assert cache.upsert_node(node("a", ephemeral_storage="20Gi")).grew
    assert cache.free(slot)[3] == 18 * GI
    cache.upsert_node(node("b"))
    assert cache.free(cache.slot_of["b"])[3] == 0


def test_assume_and_forget() -> None:
    cache = NodeCache()
    cache.upsert_node(node("a"))
    info = pod_info(pod("p", cpu="1", memory="1Gi"))
    cache.assume(info, "a")
    assert cache.is_assumed("default/p")
    assert totals(cache, "a")[:3] == (1000, GI, 1)
    cache.forget("default/p")
    assert totals(cache, "a")[:3] == (0, 0, 0)
    # confirmed by the informer: no longer assumed, and forget leaves it alone
    cache.assume(info, "a")
    cache.add_pod(pod_info(pod("p", cpu="1", memory="1Gi", node_name="a")), "a")
    assert not cache.is_assumed("default/p")
    cache.forget("default/p")
    assert totals(cache, "a")[:3] == (1000, GI, 1)


def test_resizing_pod_placement_and_committed_charges() -> None:
    cache = NodeCache()
    cache.upsert_node(node("a", cpu="4", memory="8Gi"))
    # desired 3 cpu / 1Gi, allocated 1 cpu / 2Gi
    info = pod_info(
        pod("r", cpu="3", memory="1Gi", node_name="a", allocated={"cpu": "1", "memory": "2Gi"})
    )
    assert info.resizing and info.resize_pending
    cache.add_pod(info, "a")
    # placement: max(desired, allocated) per resource; committed: what it holds
    assert totals(cache, "a") == (3000, 2 * GI, 1, 1000, 2 * GI)
    cache.approve_resize("default/r", info.target_cpu, info.target_memory)
    assert totals(cache, "a") == (3000, 2 * GI, 1, 3000, 2 * GI)


def test_pods_before_their_node_and_node_removal() -> None:
    cache = NodeCache(capacity=1)
    cache.add_pod(pod_info(pod("early", cpu="1", memory="1Gi", node_name="late")), "late")
    cache.upsert_node(node("other"))
    cache.upsert_node(node("late"))  # grows the arrays; the early pod is charged now
    assert totals(cache, "late")[:3] == (1000, GI, 1)
    gen = cache.generation
    change = cache.remove_node("late")
    assert change.removed and cache.generation > gen
    assert "late" not in cache.slot_of
    # the slot is reused and starts clean
    cache.upsert_node(node("fresh"))
    assert totals(cache, "fresh") == (0, 0, 0, 0, 0)
    cache.upsert_node(node("late"))
    assert totals(cache, "late")[:3] == (1000, GI, 1)


def test_node_change_reports_what_may_help() -> None:
    cache = NodeCache()
    assert cache.upsert_node(node("a", cpu="2")).added
    assert not cache.upsert_node(node("a", cpu="2")).may_help
    assert cache.upsert_node(node("a", cpu="4")).grew
    assert not cache.upsert_node(node("a", cpu="3")).may_help
    assert cache.upsert_node(node("a", cpu="3", labels={"x": "y"})).labels_changed
    cache.upsert_node(node("a", cpu="3", labels={"x": "y"}, unschedulable=True))
    assert cache.upsert_node(node("a", cpu="3", labels={"x": "y"})).became_schedulable


def test_priorities_counter() -> None:
    cache = NodeCache()
    cache.upsert_node(node("a"))
    cache.add_pod(pod_info(pod("x", node_name="a", priority=5)), "a")
    cache.add_pod(pod_info(pod("y", node_name="a", priority=5)), "a")
    assert cache.priorities == {5: 2}
    cache.remove_pod("default/x")
    cache.remove_pod("default/y")
    assert not cache.priorities


def test_taints_are_read_from_the_node_not_inferred_from_its_conditions() -> None:
    """The node lifecycle controller taints a node that is not ready; the cache reads the
    taints it wrote and infers nothing from the Ready condition itself."""
    cache = NodeCache()
    ready = node("ready")
    unreachable = node("gone")
    unreachable["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    unreachable["spec"]["taints"] = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
    ]
    not_yet_tainted = node("sick")
    not_yet_tainted["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    for obj in (ready, unreachable, not_yet_tainted):
        cache.upsert_node(obj)
    tainted = {name: bool(cache.tainted[cache.slot(name)]) for name in ("ready", "gone", "sick")}
    assert tainted == {"ready": False, "gone": True, "sick": False}
    recovered = node("gone")
    change = cache.upsert_node(recovered)
    assert change.taints_changed and not cache.tainted[cache.slot("gone")]
