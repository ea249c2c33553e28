"""The scheduling cycle with a fake binder: placement, failures, retries, preemption, metrics."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from inplace.scheduler import Scheduler, SchedulerConfig
from inplace.scheduler.framework import Framework, PodInfo, Status
from inplace.scheduler.plugins import default_plugins
from tests.fakeclock import FakeClock

from .helpers import FakeActions, node, pod


class FakeBinder:
    name = "FakeBinder"

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        self.fail: set[str] = set()

    async def bind(self, pod: PodInfo, node: str) -> Status:
        await asyncio.sleep(0)
        if pod.key in self.fail:
            return Status.error("binding rejected: 409 Conflict")
        self.bound[pod.key] = node
        return Status.success()


class World:
    def __init__(self, **config: Any) -> None:
        self.clock = FakeClock()
        self.actions = FakeActions()
        self.binder = FakeBinder()
        self.sched = Scheduler(
            None,
            config=SchedulerConfig(**config),
            actions=self.actions,
            clock=self.clock,
            framework=Framework(
                [
                    *default_plugins(None, scoring=config.get("scoring", "LeastAllocated")),
                    self.binder,
                ]
            ),
            rng=random.Random(1),
        )

    def nodes(self, *objs: dict[str, Any]) -> None:
        for n in objs:
            self.sched.on_node_add(n)

    def pods(self, *objs: dict[str, Any]) -> None:
        for p in objs:
            self.sched.on_pod_add(p)

    async def run_queue(self) -> None:
        """Schedule everything active now, and let bindings finish."""
        while (qp := self.sched.queue.pop_nowait()) is not None:
            self.sched.schedule_one(qp)
        await self.sched.settle()

    def confirm_bindings(self) -> None:
        """The informer reports what the binder bound."""
        for key, node_name in self.binder.bound.items():
            name = key.split("/")[1]
            info = self.sched.pending.get(key)
            if info is None:
                continue
            obj = {**info.obj, "spec": {**info.obj["spec"], "nodeName": node_name}}
            obj["status"] = {"phase": "Running"}
            self.sched.on_pod_update(info.obj, obj)
            assert name


async def test_places_and_records_scheduled_events() -> None:
    w = World()
    w.nodes(node("a", cpu="2"), node("b", cpu="2"))
    w.pods(*(pod(f"p{i}", cpu="500m") for i in range(4)))
    await w.run_queue()
    assert sorted(w.binder.bound.values()) == ["a", "a", "b", "b"]
    events = [e for e in w.actions.events if e[2] == "Scheduled"]
    assert len(events) == 4
    key, type_, _, message = events[0]
    assert type_ == "Normal"
    assert message == f"Successfully assigned {key} to {w.binder.bound[key]}"
    metrics = w.sched.metrics.render().decode()
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 4.0'
        in metrics
    )
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in metrics
    assert 'scheduler_pending_pods{queue="active"} 0.0' in metrics
    assert 'inplace_resize_decisions_total{decision="approved"} 0.0' in metrics


async def test_assumed_pods_count_before_binding_is_seen() -> None:
    w = World()
    w.nodes(node("a", cpu="1"))
    w.pods(pod("p1", cpu="600m"), pod("p2", cpu="600m"))
    await w.run_queue()
    assert list(w.binder.bound) == ["default/p1"]
    assert w.sched.queue.where("default/p2") == "unschedulable"
    assert (
        "default/p2",
        "Warning",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient cpu.",
    ) in w.actions.events
    assert w.actions.patches[-1][1]["status"]["conditions"][0]["reason"] == "Unschedulable"


async def test_binding_failure_forgets_and_retries_with_backoff() -> None:
    w = World()
    w.nodes(node("a", cpu="1"))
    w.binder.fail.add("default/p")
    w.pods(pod("p", cpu="600m"))
    await w.run_queue()
    assert not w.sched.cache.is_assumed("default/p")
    slot = w.sched.cache.slot_of["a"]
    assert int(w.sched.cache.req_cpu[slot]) == 0
    assert w.sched.queue.where("default/p") == "backoff"
    # Upstream's handleSchedulingFailure: the event, and PodScheduled=False/SchedulerError.
    failed = ("default/p", "Warning", "FailedScheduling", "binding rejected: 409 Conflict")
    assert failed in w.actions.events
    condition = w.actions.conditions("default/p")[-1]
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert condition["message"] == "binding rejected: 409 Conflict"
    w.binder.fail.clear()
    w.clock.advance(1.0)
    await w.run_queue()
    assert w.binder.bound == {"default/p": "a"}


class FailingPreBind:
    name = "VolumeBinding"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def pre_bind(self, state: Any, p: PodInfo, node_name: str) -> Status:
        self.calls.append(node_name)
        return Status.error("binding volumes: timed out waiting for the condition")


async def test_pre_bind_failure_is_reported_with_upstreams_wording_and_retried() -> None:
    w = World()
    pre_bind = FailingPreBind()
    w.sched.framework = Framework([*w.sched.framework.filters, pre_bind, w.binder])
    w.nodes(node("a"))
    w.pods(pod("p"))
    await w.run_queue()
    assert pre_bind.calls == ["a"]
    assert w.binder.bound == {}  # never bound while PreBind fails
    message = (
        'running PreBind plugin "VolumeBinding": '
        "binding volumes: timed out waiting for the condition"
    )
    assert w.actions.events[-1] == ("default/p", "Warning", "FailedScheduling", message)
    assert w.actions.conditions("default/p")[-1]["reason"] == "SchedulerError"
    assert w.sched.queue.where("default/p") == "backoff"
    assert not w.sched.cache.is_assumed("default/p")


async def test_unschedulable_pod_moves_on_node_added_and_pod_deleted() -> None:
    w = World()
    w.nodes(node("a", cpu="1"))
    w.pods(pod("big", cpu="2"))
    await w.run_queue()
    assert w.sched.queue.where("default/big") == "unschedulable"
    w.nodes(node("b", cpu="4"))
    assert w.sched.queue.where("default/big") in ("active", "backoff")
    w.clock.advance(1)
    await w.run_queue()
    assert w.binder.bound["default/big"] == "b"

    # a pod waiting for room comes back when a pod on the node is deleted
    w2 = World()
    w2.nodes(node("a", cpu="1"))
    w2.pods(pod("x", cpu="1"))
    await w2.run_queue()
    w2.confirm_bindings()
    w2.pods(pod("y", cpu="1"))
    await w2.run_queue()
    assert w2.sched.queue.where("default/y") == "unschedulable"
    w2.clock.advance(5)
    w2.sched.on_pod_delete(pod("x", cpu="1", node_name="a"))
    assert w2.sched.queue.where("default/y") == "active"


async def test_node_changes_that_cannot_help_do_not_move() -> None:
    w = World()
    w.nodes(node("a", cpu="1"))
    w.pods(pod("big", cpu="2"))
    await w.run_queue()
    w.clock.advance(5)
    w.sched.on_node_update(node("a", cpu="1"), node("a", cpu="1"))  # heartbeat-like
    assert w.sched.queue.where("default/big") == "unschedulable"


async def test_other_schedulers_pods_are_ignored() -> None:
    w = World()
    w.nodes(node("a"))
    other = pod("p")
    other["spec"]["schedulerName"] = "someone-else"
    w.pods(other)
    assert len(w.sched.queue) == 0


async def test_selector_and_taints_in_the_cycle() -> None:
    w = World()
    w.nodes(
        node("plain", cpu="8"),
        node(
            "gpu", cpu="1", labels={"gpu": "yes"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]
        ),
    )
    w.pods(
        pod("wants-gpu", node_selector={"gpu": "yes"}),
        pod(
            "tolerates",
            node_selector={"gpu": "yes"},
            tolerations=[{"key": "gpu", "operator": "Exists"}],
        ),
    )
    await w.run_queue()
    assert w.binder.bound == {"default/tolerates": "gpu"}
    failed = [e for e in w.actions.events if e[2] == "FailedScheduling"]
    assert failed[0][3] == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {gpu: }."
    )


async def test_samples_nodes_to_score_at_scale() -> None:
    w = World()
    w.nodes(*(node(f"n{i:04d}", cpu="64") for i in range(1000)))
    w.pods(pod("p0"), pod("p1"))
    await w.run_queue()
    # 1000 nodes: 50 - 1000/125 = 42% → 420 scored per cycle, the window rotates
    assert w.sched._next_start == 840
    assert len(w.binder.bound) == 2


async def test_no_nodes() -> None:
    w = World()
    w.pods(pod("p"))
    await w.run_queue()
    assert w.actions.events[-1][3] == "no nodes available to schedule pods"


async def test_preemption_of_lower_priority_pods_for_a_pending_pod() -> None:
    w = World()
    w.nodes(node("a", cpu="2"), node("b", cpu="2"))
    w.pods(
        pod("a-low", cpu="1", priority=0, node_name="a"),
        pod("a-mid", cpu="1", priority=50, node_name="a"),
        pod("b-mid1", cpu="1", priority=50, node_name="b"),
        pod("b-mid2", cpu="1", priority=50, node_name="b"),
    )
    w.pods(pod("urgent", cpu="1", priority=100))
    await w.run_queue()
    # fewest victims of the lowest priority: a-low on node a
    assert w.actions.evicted == ["default/a-low"]
    assert ("default/urgent", {"status": {"nominatedNodeName": "a"}}) in w.actions.patches
    failed = [e for e in w.actions.events if e[2] == "FailedScheduling"][-1][3]
    assert failed.startswith("0/2 nodes are available: 2 Insufficient cpu. preemption:")
    # the room is held for the nominated pod: a lower-priority newcomer cannot take it
    w.sched.on_pod_delete(pod("a-low", cpu="1", priority=0, node_name="a"))
    w.pods(pod("sneaky", cpu="1", priority=10))
    w.clock.advance(2)
    await w.run_queue()
    assert w.binder.bound.get("default/urgent") == "a"
    assert "default/sneaky" not in w.binder.bound


async def test_preemption_never_policy() -> None:
    w = World()
    w.nodes(node("a", cpu="1"))
    w.pods(pod("low", cpu="1", node_name="a"))
    polite = pod("polite", cpu="1", priority=100)
    polite["spec"]["preemptionPolicy"] = "Never"
    w.pods(polite)
    await w.run_queue()
    assert w.actions.evicted == []
    assert "preemptionPolicy=Never" in w.actions.events[-1][3]


@pytest.mark.parametrize("scoring", ["LeastAllocated", "MostAllocated"])
async def test_scoring_strategy(scoring: str) -> None:
    w = World(scoring=scoring)
    w.nodes(node("a", cpu="4"), node("b", cpu="4"))
    w.pods(pod("x", cpu="2", memory="4Gi", node_name="a"))
    w.pods(pod("p", cpu="1", memory="2Gi"))
    await w.run_queue()
    assert w.binder.bound["default/p"] == ("b" if scoring == "LeastAllocated" else "a")
