"""VolumeRestrictions: a ReadWriteOncePod claim is used by one pod at a time, cluster-wide."""

from __future__ import annotations

import random
from typing import Any

import pytest

from inplace.scheduler import Scheduler
from inplace.scheduler.cache import NodeCache
from inplace.scheduler.framework import Code, CycleState, Framework, PodInfo, Status, pod_info
from inplace.scheduler.plugins import VolumeObjects, VolumeRestrictions, default_plugins
from inplace.scheduler.plugins.restrictions import REASON_READ_WRITE_ONCE_POD_CONFLICT as RWOP
from tests.fakeclock import FakeClock
from tests.scheduler.helpers import FakeActions, node, pod


def with_claims(p: dict[str, Any], *claims: str) -> dict[str, Any]:
    p["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return p


def claim(name: str, *modes: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": list(modes), "storageClassName": "local-path"},
    }


def objects(*claims: dict[str, Any]) -> VolumeObjects:
    view = VolumeObjects()
    for c in claims:
        view.set_claim(c)
    return view


CLAIMS = (
    claim("solo", "ReadWriteOncePod"),
    claim("shared", "ReadWriteOnce"),
    claim("solo", "ReadWriteOncePod", namespace="other"),
)


@pytest.mark.parametrize(
    ("wanted", "others", "reason"),
    [
        (("solo",), [], ""),
        # Another pod (bound or only assumed) uses the RWOP claim: every node fails.
        (("solo",), [with_claims(pod("holder", node_name="node-1"), "solo")], RWOP),
        (("solo", "shared"), [with_claims(pod("holder", node_name="node-2"), "solo")], RWOP),
        # ReadWriteOnce is a per-node promise, not enforced by the scheduler.
        (("shared",), [with_claims(pod("holder", node_name="node-1"), "shared")], ""),
        # A finished pod does not hold the claim; one of another namespace names another.
        (
            ("solo",),
            [with_claims(pod("done", node_name="node-1", phase="Succeeded"), "solo")],
            "",
        ),
        (
            ("solo",),
            [with_claims(pod("far", node_name="node-1", namespace="other"), "solo")],
            "",
        ),
    ],
)
def test_filter_vector_agrees_with_per_node(
    wanted: tuple[str, ...], others: list[dict[str, Any]], reason: str
) -> None:
    cache = NodeCache(capacity=4)
    for name in ("node-1", "node-2", "node-3"):
        cache.upsert_node(node(name))
    for other in others:
        info = pod_info(other)
        if not info.terminal:
            cache.add_pod(info, info.node_name)
    plugin = VolumeRestrictions(objects(*CLAIMS))
    state = CycleState()
    info = pod_info(with_claims(pod("app"), *wanted))
    assert plugin.pre_filter(state, info, cache).ok
    mask = plugin.filter_nodes(state, info, cache)
    for slot in cache.slot_of.values():
        status = plugin.filter(state, info, cache, slot)
        assert status.ok == (True if mask is None else bool(mask[slot]))
        assert status.message() == reason
        if reason:
            assert status.code == Code.UNSCHEDULABLE  # upstream's code


def test_assumed_pods_hold_the_claim_and_forgetting_releases_it() -> None:
    cache = NodeCache(capacity=2)
    cache.upsert_node(node("node-1"))
    first = pod_info(with_claims(pod("first"), "solo"))
    cache.assume(first, "node-1")
    assert cache.claim_users == {"default/solo": 1}
    cache.forget(first.key)
    assert cache.claim_users == {}


def test_a_missing_claim_is_unresolvable() -> None:
    status = VolumeRestrictions(objects()).pre_filter(
        CycleState(), pod_info(with_claims(pod("app"), "nope")), NodeCache()
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'persistentvolumeclaim "nope" not found'


class Binder:
    name = "Binder"

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    async def bind(self, p: PodInfo, node_name: str) -> Status:
        self.bound[p.key] = node_name
        return Status.success()


async def test_second_pod_waits_until_the_first_is_deleted() -> None:
    view = objects(*CLAIMS)
    view.set_class(
        {
            "metadata": {"name": "local-path"},
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    binder = Binder()
    actions = FakeActions()
    clock = FakeClock()
    sched = Scheduler(
        None,
        actions=actions,
        clock=clock,
        framework=Framework([*default_plugins(None, volumes=view), binder]),
        rng=random.Random(1),
    )
    sched.on_node_add(node("node-1"))
    sched.on_node_add(node("node-2"))
    holder = with_claims(pod("holder", node_name="node-1", phase="Running"), "solo")
    sched.on_pod_add(holder)
    sched.on_pod_add(with_claims(pod("second"), "solo"))
    while (qp := sched.queue.pop_nowait()) is not None:
        sched.schedule_one(qp)
    await sched.settle()
    assert binder.bound == {}
    message = f"0/2 nodes are available: 2 {RWOP}."
    assert actions.events[-1] == ("default/second", "Warning", "FailedScheduling", message)
    assert actions.conditions("default/second")[-1]["message"] == message
    assert sched.queue.unschedulable_count == 1
    sched.on_pod_delete(holder)  # moves it back to the queue: no polling
    clock.advance(2)  # past its back-off
    while (qp := sched.queue.pop_nowait()) is not None:
        sched.schedule_one(qp)
    await sched.settle()
    assert list(binder.bound) == ["default/second"]
