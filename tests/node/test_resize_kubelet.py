"""Without an arbitrating scheduler (``inplace node --admit-without-scheduler``) the agent
reports a resize as the kubelet 1.36 does: the conditions, their generations and times, and
the events with their types and messages. Each expectation names the upstream source it
comes from (k8s.io/kubernetes v1.36.3, pkg/kubelet/...)."""

from __future__ import annotations

import contextlib
import copy
import errno
from pathlib import Path
from typing import Any

import pytest

from inplace.node.agent import NodeAgent
from inplace.node.cgroups.base import CgroupResources, CgroupUsage, CgroupWriteError
from inplace.node.worker import PodWorker
from tests.node.fakes import (
    Event,
    FakeCluster,
    RecordingRuntime,
    admit_running,
    fake_agent,
    pod,
    running_agent,
)


def _resized(cluster: FakeCluster, key: str, *, cpu: str, memory: str, generation: int) -> None:
    """Store the pod as pods/resize leaves it: new resources for ``main``, ``generation``."""
    body = copy.deepcopy(cluster.pods[key])
    body["metadata"]["generation"] = generation
    size = {"cpu": cpu, "memory": memory}
    body["spec"]["containers"][0]["resources"] = {"requests": dict(size), "limits": dict(size)}
    cluster.put(body)


def _summary(cpu: str, memory: str, generation: int, error: str = "") -> str:
    """The JSON the kubelet's podResizeMessage (events/resize.go) writes for the one-container
    pods of these tests."""
    size = f'{{"cpu":"{cpu}","memory":"{memory}"}}'
    text = (
        f'{{"containers":[{{"name":"main","resources":{{"limits":{size},"requests":{size}}}}}]'
        f',"generation":{generation}'
    )
    if error:
        text += f',"error":"{error}"'
    return text + "}"


def _events(cluster: FakeCluster, key: str, since: int = 0) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in cluster.events[since:] if e.key == key]


def _worker(agent: NodeAgent, key: str) -> PodWorker:
    w = agent.ctx.worker_for(key)
    assert w is not None
    return w


async def test_a_resize_that_fits_is_started_and_completed_in_the_kubelets_words(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, admit_without_scheduler=True) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        seen = len(cluster.events)
        # No PodResizeScheduled ever comes: the agent allocates on its own ledger.
        _resized(cluster, key, cpu="500m", memory="128Mi", generation=2)
        assert await agent.reconcile(key) is None

        # allocation_manager.go handlePodResourcesResize: ResizeStarted (Normal) with the
        # desired resources; kubelet.go SyncPod: ResizeCompleted (Normal) with the allocated
        # ones and the generation of the PodResizeInProgress it clears.
        assert _events(cluster, key, seen) == [
            ("Normal", "ResizeStarted", "Pod resize started: " + _summary("500m", "128Mi", 2)),
            ("Normal", "ResizeCompleted", "Pod resize completed: " + _summary("500m", "128Mi", 2)),
        ]
        stored = cluster.pods[key]
        assert cluster.condition(key, "PodResizePending") is None
        assert cluster.condition(key, "PodResizeInProgress") is None
        assert stored["status"]["observedGeneration"] == 2
        main = stored["status"]["containerStatuses"][0]
        assert main["allocatedResources"] == {"cpu": "500m", "memory": "128Mi"}
        assert main["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}


async def test_a_resize_larger_than_the_node_is_deferred_and_reported_once(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, admit_without_scheduler=True, cpu_milli=2000) as (
        cluster,
        agent,
    ):
        key = await admit_running(cluster, agent, pod("big", cpu="250m", memory="64Mi"))
        w = _worker(agent, key)
        seen = len(cluster.events)
        _resized(cluster, key, cpu="3", memory="64Mi", generation=2)
        retry = await agent.reconcile(key)
        assert retry is not None  # Deferred: looked at again

        # lifecycle/predicate.go: the resource fit has no capacity check of its own, so a
        # resize larger than the node is OutOfcpu like any other shortfall, and
        # status_manager.go SetPodResizePendingCondition turns every reason but Infeasible
        # into Deferred (allocation_manager_test.go: "Request CPU increase beyond node
        # capacity - expect Deferred").
        message = "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"
        pending = cluster.condition(key, "PodResizePending")
        assert pending is not None
        assert (pending["status"], pending["reason"], pending["message"]) == (
            "True",
            "Deferred",
            message,
        )
        assert pending["observedGeneration"] == 2
        assert pending["lastProbeTime"] and pending["lastTransitionTime"]
        assert cluster.condition(key, "PodResizeInProgress") is None
        # The event: Warning ResizeDeferred, "Pod resize <the admission's reason>: {…}" with
        # the desired resources and the message as "error".
        assert _events(cluster, key, seen) == [
            (
                "Warning",
                "ResizeDeferred",
                "Pod resize OutOfcpu: " + _summary("3", "64Mi", 2, message),
            )
        ]
        assert w.allocated["main"].requests["cpu"] == "250m"
        assert agent.ledger.deferred_order() == [key]

        # Looked at again with nothing new: no second event (SetPodResizePendingCondition
        # reports a change only for a new reason or generation), no status write.
        patches = len(cluster.status_patches)
        assert await agent.reconcile(key) is not None
        assert len(_events(cluster, key, seen)) == 1
        assert cluster.status_patches[patches:] == []

        # Reverted: desired is allocated again, nothing is pending, nothing is reported.
        _resized(cluster, key, cpu="250m", memory="64Mi", generation=3)
        assert await agent.reconcile(key) is None
        assert cluster.condition(key, "PodResizePending") is None
        assert len(_events(cluster, key, seen)) == 1
        assert agent.ledger.deferred_order() == []


async def test_a_deferral_leaves_an_erroring_resize_in_progress_with_its_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """allocation_manager_test.go "Deferred resize doesn't clear in-progress status" and
    "desired != allocated != actuated": the allocation being applied keeps its
    PodResizeInProgress (generation and error) while a newer resize waits."""
    async with running_agent(tmp_path, admit_without_scheduler=True, cpu_milli=2000) as (
        cluster,
        agent,
    ):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        seen = len(cluster.events)
        refused = CgroupWriteError("memory.limit_in_bytes", str(128 << 20), errno.EBUSY)

        async def refuse(w: PodWorker) -> None:
            raise refused

        monkeypatch.setattr(agent.resizer, "write_cgroups", refuse)
        _resized(cluster, key, cpu="500m", memory="128Mi", generation=2)
        assert await agent.reconcile(key) is not None  # retried with back-off

        error = f"resize of {key} could not be applied: {refused}"
        progress = cluster.condition(key, "PodResizeInProgress")
        assert progress is not None
        assert (progress["reason"], progress["message"], progress["observedGeneration"]) == (
            "Error",
            error,
            2,
        )
        # kubelet.go SyncPod: ResizeError (Warning), "Pod resize error: {…}" with the
        # allocated resources, the condition's generation and the error.
        assert _events(cluster, key, seen) == [
            ("Normal", "ResizeStarted", "Pod resize started: " + _summary("500m", "128Mi", 2)),
            (
                "Warning",
                "ResizeError",
                "Pod resize error: " + _summary("500m", "128Mi", 2, error),
            ),
        ]
        # The same error again changes nothing: no event (SetPodResizeInProgressCondition
        # reports no update), the condition as it was.
        assert await agent.reconcile(key) is not None
        assert len(_events(cluster, key, seen)) == 2

        # A newer resize that does not fit: Deferred for generation 3, while generation 2's
        # allocation stays in progress, its error and generation kept.
        _resized(cluster, key, cpu="3", memory="128Mi", generation=3)
        assert await agent.reconcile(key) is not None
        pending = cluster.condition(key, "PodResizePending")
        progress = cluster.condition(key, "PodResizeInProgress")
        assert pending is not None and progress is not None
        assert (pending["reason"], pending["observedGeneration"]) == ("Deferred", 3)
        assert (progress["reason"], progress["observedGeneration"]) == ("Error", 2)
        assert [reason for _, reason, _ in _events(cluster, key, seen)][-1] == "ResizeDeferred"

        # The kernel takes it now: generation 2 completes (its generation in the event),
        # generation 3 still waits.
        monkeypatch.undo()
        assert await agent.reconcile(key) is not None
        assert cluster.condition(key, "PodResizeInProgress") is None
        pending = cluster.condition(key, "PodResizePending")
        assert pending is not None and pending["observedGeneration"] == 3
        assert _events(cluster, key, seen)[-1] == (
            "Normal",
            "ResizeCompleted",
            "Pod resize completed: " + _summary("500m", "128Mi", 2),
        )


async def test_a_successor_agent_does_not_report_a_deferral_again(tmp_path: Path) -> None:
    """kubelet.go HandlePodAdditions: BackfillPodResizeConditions seeds the status manager
    from the pods' stored conditions, so a restarted kubelet does not repeat the event."""
    runtime = RecordingRuntime()
    async with running_agent(
        tmp_path, runtime=runtime, admit_without_scheduler=True, cpu_milli=2000
    ) as (cluster, first):
        key = await admit_running(cluster, first, pod("big", cpu="250m", memory="64Mi"))
        _resized(cluster, key, cpu="3", memory="64Mi", generation=2)
        await first.reconcile(key)
        assert [e.reason for e in cluster.events if e.key == key][-1] == "ResizeDeferred"
        for worker in first.workers.values():
            assert worker.task is not None
            worker.task.cancel()
            with contextlib.suppress(BaseException):
                await worker.task
        seen = len(cluster.events)
        successor = fake_agent(
            cluster, tmp_path, runtime=runtime, admit_without_scheduler=True, cpu_milli=2000
        )
        try:
            await successor.restore()
            assert await successor.reconcile(key) is not None
            assert _deferred_events(cluster.events[seen:], key) == []
            pending = cluster.condition(key, "PodResizePending")
            assert pending is not None and pending["reason"] == "Deferred"
        finally:
            successor.queue.shutdown()
            for worker in successor.workers.values():
                if worker.task is not None:
                    worker.task.cancel()
                    with contextlib.suppress(BaseException):
                        await worker.task


def _deferred_events(events: list[Event], key: str) -> list[Event]:
    return [e for e in events if e.key == key and e.reason == "ResizeDeferred"]


async def test_a_pod_that_ended_reports_no_resize(tmp_path: Path) -> None:
    """kubelet_pods.go determinePodResizeStatus: a terminal pod's resize conditions are
    cleared."""
    async with running_agent(tmp_path, admit_without_scheduler=True, cpu_milli=2000) as (
        cluster,
        agent,
    ):
        body: dict[str, Any] = pod("once", cpu="250m", memory="64Mi")
        body["spec"]["restartPolicy"] = "Never"
        key = await admit_running(cluster, agent, body)
        w = _worker(agent, key)
        _resized(cluster, key, cpu="3", memory="64Mi", generation=2)
        await agent.reconcile(key)
        assert cluster.condition(key, "PodResizePending") is not None
        w.containers["main"].state = "terminated"
        w.containers["main"].exit_code = 0
        assert w.phase() == "Succeeded"
        assert await agent.reconcile(key) is None
        assert cluster.condition(key, "PodResizePending") is None


async def test_a_memory_limit_below_usage_is_refused_before_any_cgroup_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kuberuntime_manager.go validateMemoryResizeAction: a memory limit lowered to or below
    what the cgroup uses is refused before the kubelet touches a cgroup, with its message;
    once usage fits, the same allocation is written."""
    async with running_agent(tmp_path, admit_without_scheduler=True, cpu_milli=2000) as (
        cluster,
        agent,
    ):
        key = await admit_running(cluster, agent, pod("hog", cpu="250m", memory="128Mi"))
        w = _worker(agent, key)
        seen = len(cluster.events)
        driver = agent.ctx.driver
        usage = {"bytes": 100 << 20}

        def used(path: str) -> CgroupUsage:
            return CgroupUsage(0, usage["bytes"], usage["bytes"])

        writes: list[str] = []
        update = driver.update

        def recorded(path: str, resources: CgroupResources) -> None:
            writes.append(path)
            update(path, resources)

        monkeypatch.setattr(driver, "usage", used)
        monkeypatch.setattr(driver, "update", recorded)
        _resized(cluster, key, cpu="250m", memory="64Mi", generation=2)
        assert await agent.reconcile(key) is not None  # retried with back-off
        assert writes == []
        error = (
            "cannot decrease memory limits: [attempting to set pod memory limit (67108864) "
            f'below current usage ({100 << 20}), attempting to set container "main" memory '
            f"limit (67108864) below current usage ({100 << 20})]"
        )
        progress = cluster.condition(key, "PodResizeInProgress")
        assert progress is not None
        assert (progress["reason"], progress["message"], progress["observedGeneration"]) == (
            "Error",
            error,
            2,
        )
        # the event's JSON (events/resize.go) escapes the quotes
        assert _events(cluster, key, seen)[-1] == (
            "Warning",
            "ResizeError",
            "Pod resize error: " + _summary("250m", "64Mi", 2, error.replace('"', '\\"')),
        )
        assert w.actual["main"].limits["memory"] == "128Mi"

        usage["bytes"] = 10 << 20
        assert await agent.reconcile(key) is None
        assert writes  # written now
        assert cluster.condition(key, "PodResizeInProgress") is None
        assert w.actual["main"].limits["memory"] == "64Mi"
