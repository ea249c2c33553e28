"""Resize actuation (inplace.node.resize) driven through a real agent against fake actions."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.node.fakes import FakeCluster, admit_running, pod, running_agent


def _resized(
    cluster: FakeCluster, key: str, *, cpu: str, memory: str, generation: int
) -> dict[str, Any]:
    """The stored pod with new resources for ``main`` and ``generation``, as pods/resize
    would leave it."""
    body = copy.deepcopy(cluster.pods[key])
    body["metadata"]["generation"] = generation
    size = {"cpu": cpu, "memory": memory}
    resources = {"requests": dict(size), "limits": dict(size)}
    body["spec"]["containers"][0]["resources"] = resources
    return body


def _approve(body: dict[str, Any], generation: int) -> dict[str, Any]:
    """What the scheduler's arbiter writes when it approves ``generation``."""
    conditions = [
        c for c in body["status"].get("conditions") or () if c["type"] != "PodResizeScheduled"
    ]
    conditions.append(
        {"type": "PodResizeScheduled", "status": "True", "observedGeneration": generation}
    )
    body["status"]["conditions"] = conditions
    return body


async def test_an_approved_resize_is_allocated_written_to_cgroups_and_reported(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        pid = w.containers["main"].pid
        cluster.put(_approve(_resized(cluster, key, cpu="500m", memory="128Mi", generation=2), 2))
        assert await agent.reconcile(key) is None

        assert w.allocated["main"].requests == {"cpu": "500m", "memory": "128Mi"}
        cg = agent.driver.read(agent.ctx.paths.container(w.uid, "main"))
        assert (cg.cpu_quota_us, cg.memory_limit_bytes) == (50_000, 128 << 20)
        assert w.containers["main"].pid == pid  # in place: no restart
        status = cluster.pods[key]["status"]["containerStatuses"][0]
        assert status["allocatedResources"] == {"cpu": "500m", "memory": "128Mi"}
        assert status["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}
        assert cluster.condition(key, "PodResizeInProgress") is None
        assert cluster.condition(key, "PodResizeScheduled") is not None  # not the agent's
        assert cluster.reasons(key)[-2:] == ["ResizeStarted", "ResizeCompleted"]
        assert agent.ctx.checkpoints.load_all()[0].allocated == w.allocated


async def test_a_growth_waits_for_approval_and_one_larger_than_the_node_is_infeasible(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, cpu_milli=2000) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("big", cpu="250m"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        patches = len(cluster.status_patches)
        cluster.put(_resized(cluster, key, cpu="100", memory="64Mi", generation=2))
        held = await agent.reconcile(key)
        assert held is not None and 0 < held <= agent.config.approval_hold
        assert w.allocated["main"].requests["cpu"] == "250m"  # not approved: untouched
        # Only the generation is news: held for the approval to come with it.
        assert cluster.status_patches[patches:] == []
        agent.config.approval_hold = 0.0  # the hold is over: the retry writes
        assert await agent.reconcile(key) is None
        # The agent saw generation 2 and says so (status and its own conditions), nothing
        # about the resize itself: that is the arbiter's to decide.
        ((_, seen),) = cluster.status_patches[patches:]
        assert set(seen) == {"observedGeneration", "conditions", "$setElementOrder/conditions"}
        assert seen["observedGeneration"] == 2
        kubelets = [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        assert [c["type"] for c in seen["conditions"]] == kubelets
        assert seen["$setElementOrder/conditions"] == [{"type": t} for t in kubelets]
        assert all(c["observedGeneration"] == 2 for c in seen["conditions"])

        cluster.put(_approve(copy.deepcopy(cluster.pods[key]), 2))
        assert await agent.reconcile(key) is None  # Infeasible: no retry
        assert w.allocated["main"].requests["cpu"] == "250m"
        pending = cluster.condition(key, "PodResizePending")
        assert pending is not None
        assert (pending["reason"], pending["observedGeneration"]) == ("Infeasible", 2)
        assert pending["message"].startswith("Node didn't have enough capacity: cpu")
        assert cluster.reasons(key)[-1] == "ResizeInfeasible"


async def test_an_approval_within_the_hold_is_reported_with_the_generation_in_one_write(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        patches = len(cluster.status_patches)
        cluster.put(_resized(cluster, key, cpu="500m", memory="128Mi", generation=2))
        assert await agent.reconcile(key) is not None  # held
        assert cluster.status_patches[patches:] == []
        cluster.put(_approve(copy.deepcopy(cluster.pods[key]), 2))
        assert await agent.reconcile(key) is None
        ((_, seen),) = cluster.status_patches[patches:]
        assert seen["observedGeneration"] == 2
        assert seen["containerStatuses"][0]["allocatedResources"] == {
            "cpu": "500m",
            "memory": "128Mi",
        }
        assert cluster.reasons(key)[-2:] == ["ResizeStarted", "ResizeCompleted"]


async def test_a_deferral_by_the_arbiter_is_answered_with_the_generation_at_once(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        patches = len(cluster.status_patches)
        body = _resized(cluster, key, cpu="500m", memory="128Mi", generation=2)
        body["status"]["conditions"].append(
            {
                "type": "PodResizePending",
                "status": "True",
                "reason": "Deferred",
                "observedGeneration": 2,
            }
        )
        cluster.put(body)
        assert await agent.reconcile(key) is None
        ((_, seen),) = cluster.status_patches[patches:]
        assert seen["observedGeneration"] == 2


async def test_a_status_change_besides_the_generation_is_not_held(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web", cpu="250m", memory="64Mi"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        patches = len(cluster.status_patches)
        cluster.put(_resized(cluster, key, cpu="500m", memory="128Mi", generation=2))
        w.containers["main"].restart_count += 1  # news of its own: written with the generation
        assert await agent.reconcile(key) is None
        ((_, seen),) = cluster.status_patches[patches:]
        assert seen["observedGeneration"] == 2
        assert seen["containerStatuses"][0]["restartCount"] == 1


async def test_a_shrink_needs_no_approval(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("small", cpu="500m", memory="128Mi"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        cluster.put(_resized(cluster, key, cpu="250m", memory="64Mi", generation=2))
        await agent.reconcile(key)
        assert w.allocated["main"].requests == {"cpu": "250m", "memory": "64Mi"}
        assert agent.ledger.used() == (250, 64 << 20)


async def test_a_container_waiting_to_restart_reports_what_it_will_start_with(
    tmp_path: Path,
) -> None:
    """Found by the chaos storm: a container in CrashLoopBackOff when its resize was applied
    kept reporting its old ``resources`` until it ran again, so the resize looked stuck.
    Upstream: for a container not running, ``resources`` is what it will start with, the
    allocated resources."""
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("crashy", cpu="250m", memory="64Mi"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        w.containers["main"].state = "waiting"
        w.containers["main"].reason = "CrashLoopBackOff"
        cluster.put(_approve(_resized(cluster, key, cpu="500m", memory="128Mi", generation=2), 2))
        assert await agent.reconcile(key) is None

        status = cluster.pods[key]["status"]["containerStatuses"][0]
        assert status["allocatedResources"] == {"cpu": "500m", "memory": "128Mi"}
        assert status["resources"]["requests"] == {"cpu": "500m", "memory": "128Mi"}
