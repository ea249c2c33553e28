"""The updater's decisions as tables: modes, bounds, pod age, OOMs, budgets, stuck resizes."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.api.timestamps import rfc3339
from inplace.controllers.vpa.settings import HOUR, UpdaterSettings
from inplace.controllers.vpa.updater import Action, Decision, UpdaterMemory, decide

NOW = 1767571200.0 + 2 * 86400
SETTINGS = UpdaterSettings()


def pod(
    name: str = "web-1",
    *,
    cpu: str = "100m",
    memory: str = "100Mi",
    limits: dict[str, str] | None = None,
    owner: tuple[str, str] | None = ("ReplicaSet", "web-abc"),
    phase: str = "Running",
    age: float = 24 * HOUR,
    resize: tuple[str, str] | None = None,
    oom_after: float | None = None,
    node: str = "node-1",
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = limits
    status: dict[str, Any] = {
        "phase": phase,
        "startTime": rfc3339(NOW - age),
        "containerStatuses": [{"name": "main", "resources": resources}],
    }
    if resize is not None:
        status["conditions"] = [{"type": resize[0], "status": "True", "reason": resize[1]}]
    if oom_after is not None:
        status["containerStatuses"][0]["lastState"] = {
            "terminated": {
                "reason": "OOMKilled",
                "startedAt": rfc3339(NOW - 100),
                "finishedAt": rfc3339(NOW - 100 + oom_after),
            }
        }
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    return {
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "main", "resources": resources}]},
        "status": status,
    }


def vpa(
    mode: str | None = "InPlaceOrRecreate",
    *,
    target: tuple[str, str] = ("100m", "100Mi"),
    lower: tuple[str, str] = ("50m", "50Mi"),
    upper: tuple[str, str] = ("200m", "200Mi"),
    min_replicas: int | None = 1,
    policies: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    update: dict[str, Any] = {}
    if mode is not None:
        update["updateMode"] = mode
    if min_replicas is not None:
        update["minReplicas"] = min_replicas
    spec: dict[str, Any] = {"targetRef": {"kind": "Deployment", "name": "web"}}
    spec["updatePolicy"] = update
    if policies:
        spec["resourcePolicy"] = {"containerPolicies": policies}

    def rl(pair: tuple[str, str]) -> dict[str, str]:
        return {"cpu": pair[0], "memory": pair[1]}

    entry = {
        "containerName": "main",
        "target": rl(target),
        "lowerBound": rl(lower),
        "upperBound": rl(upper),
    }
    return {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
        "status": {"recommendation": {"containerRecommendations": [entry]}},
    }


def one(
    v: dict[str, Any],
    p: dict[str, Any],
    *,
    replicas: int = 1,
    settings: UpdaterSettings = SETTINGS,
    memory: UpdaterMemory | None = None,
    now: float = NOW,
) -> Decision:
    (decision,) = decide(
        v,
        [p],
        replicas={("ReplicaSet", "web-abc"): replicas},
        now=now,
        settings=settings,
        memory=memory,
    )
    return decision


@pytest.mark.parametrize(
    ("case", "v", "p", "action", "reason"),
    [
        ("Off", vpa("Off", lower=("1", "1Gi")), pod(), Action.NONE, "updateMode Off"),
        ("Initial", vpa("Initial", lower=("1", "1Gi")), pod(), Action.NONE, "updateMode Initial"),
        (
            "below lowerBound",
            vpa(target=("300m", "300Mi"), lower=("200m", "200Mi"), upper=("1", "1Gi")),
            pod(),
            Action.RESIZE,
            "outside the recommended range",
        ),
        (
            "above upperBound",
            vpa(target=("20m", "20Mi"), lower=("10m", "10Mi"), upper=("50m", "50Mi")),
            pod(age=60),
            Action.RESIZE,
            "outside the recommended range",
        ),
        (
            "in range, young",
            vpa(target=("150m", "150Mi")),
            pod(age=HOUR),
            Action.NONE,
            "the pod is young",
        ),
        (
            "in range, old, 100% off",
            vpa(target=("150m", "150Mi")),
            pod(age=13 * HOUR),
            Action.RESIZE,
            "off the target",
        ),
        (
            "in range, old, 8% off",
            vpa(target=("104m", "104Mi")),
            pod(age=13 * HOUR),
            Action.NONE,
            "within 10% of the target",
        ),
        (
            "quick OOM",
            vpa(target=("150m", "150Mi")),
            pod(age=HOUR, oom_after=60),
            Action.RESIZE,
            "OOM-killed soon after start",
        ),
        (
            "slow OOM",
            vpa(target=("150m", "150Mi")),
            pod(age=HOUR, oom_after=3600),
            Action.NONE,
            "the pod is young",
        ),
        (
            "no controller",
            vpa(lower=("1", "1Gi")),
            pod(owner=None),
            Action.WAIT,
            "no controller",
        ),
        (
            "below minReplicas",
            vpa(lower=("1", "1Gi"), min_replicas=None),
            pod(),
            Action.WAIT,
            "fewer than minReplicas 2",
        ),
        ("pending", vpa(lower=("1", "1Gi")), pod(phase="Pending"), Action.WAIT, "Pending"),
        (
            "Recreate evicts",
            vpa("Recreate", lower=("1", "1Gi")),
            pod(),
            Action.EVICT,
            "outside the recommended range",
        ),
        (
            "unset mode is Recreate",
            vpa(None, lower=("1", "1Gi")),
            pod(),
            Action.EVICT,
            "outside",
        ),
        ("Auto is Recreate", vpa("Auto", lower=("1", "1Gi")), pod(), Action.EVICT, "outside"),
        (
            "resize Deferred, fresh",
            vpa(lower=("1", "1Gi")),
            pod(resize=("PodResizePending", "Deferred")),
            Action.WAIT,
            "Deferred; waiting",
        ),
        (
            "resize Infeasible",
            vpa(lower=("1", "1Gi")),
            pod(resize=("PodResizePending", "Infeasible")),
            Action.EVICT,
            "resize Infeasible",
        ),
        (
            "resize in progress",
            vpa(lower=("1", "1Gi")),
            pod(resize=("PodResizeInProgress", "")),
            Action.WAIT,
            "in progress; waiting",
        ),
        (
            "resize Error",
            vpa(lower=("1", "1Gi")),
            pod(resize=("PodResizeInProgress", "Error")),
            Action.EVICT,
            "resize failed (Error)",
        ),
        (
            "InPlace never evicts",
            vpa("InPlace", target=("1", "1Gi"), lower=("1", "1Gi"), upper=("2", "2Gi")),
            pod(resize=("PodResizePending", "Deferred")),
            Action.RESIZE,
            "outside",
        ),
    ],
)
def test_decisions(
    case: str, v: dict[str, Any], p: dict[str, Any], action: Action, reason: str
) -> None:
    decision = one(v, p)
    assert decision.action is action, decision
    assert reason in decision.reason


def test_resize_carries_the_target_and_limits_in_proportion() -> None:
    v = vpa(target=("300m", "300Mi"), lower=("200m", "200Mi"), upper=("1", "1Gi"))
    decision = one(v, pod(limits={"cpu": "200m", "memory": "150Mi"}))
    assert decision.action is Action.RESIZE
    (res,) = decision.resources
    assert res.requests == {"cpu": Quantity.parse("300m"), "memory": Quantity.parse("300Mi")}
    assert res.limits == {"cpu": Quantity.parse("600m"), "memory": Quantity.parse("450Mi")}
    assert decision.resize_body()["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "600m",
        "memory": "450Mi",
    }


HEADROOM = UpdaterSettings(
    pod_lifetime_update_threshold=0.0, update_threshold=0.05, memory_limit_headroom=2.0
)


def test_headroom_doubles_the_memory_limit_of_a_resize() -> None:
    v = vpa(target=("100m", "300Mi"), lower=("50m", "200Mi"), upper=("200m", "1Gi"))
    decision = one(v, pod(limits={"memory": "100Mi"}), settings=HEADROOM)
    assert decision.action is Action.RESIZE
    (res,) = decision.resources
    assert res.requests["memory"] == Quantity.parse("300Mi")
    assert res.limits == {"memory": Quantity.parse("600Mi")}


def test_a_pod_on_target_without_headroom_is_resized_to_get_it_once() -> None:
    v = vpa()  # target 100m/100Mi: the pod's requests
    tight = pod(limits={"memory": "100Mi"})
    decision = one(v, tight, settings=HEADROOM)
    assert decision.action is Action.RESIZE
    assert "headroom" in decision.reason
    assert decision.resources[0].limits == {"memory": Quantity.parse("200Mi")}
    # Given it, nothing more; a Guaranteed pod is never given it; upstream never asks.
    assert one(v, pod(limits={"memory": "200Mi"}), settings=HEADROOM).action is Action.NONE
    guaranteed = pod(limits={"cpu": "100m", "memory": "100Mi"})
    assert one(v, guaranteed, settings=HEADROOM).action is Action.NONE
    assert one(v, tight).action is Action.NONE
    # Nor is a pod evicted for it: under Recreate the limit waits for a real update.
    assert one(vpa("Recreate"), tight, settings=HEADROOM).action is Action.NONE


def test_a_resize_with_headroom_carries_upstreams_limits_and_a_refusal_is_remembered() -> None:
    v = vpa(target=("100m", "300Mi"), lower=("50m", "200Mi"), upper=("200m", "1Gi"))
    tight = pod(limits={"memory": "100Mi"})
    decision = one(v, tight, settings=HEADROOM)
    assert decision.resources[0].limits == {"memory": Quantity.parse("600Mi")}
    # What to send if the API refuses that limit: the template's ratio, as upstream.
    assert decision.without_headroom[0].limits == {"memory": Quantity.parse("300Mi")}
    # Once refused for this pod, the headroom is neither written nor a reason to resize.
    memory = UpdaterMemory()
    memory.headroom_refused.add("uid-web-1")
    again = one(v, tight, settings=HEADROOM, memory=memory)
    assert again.resources[0].limits == {"memory": Quantity.parse("300Mi")}
    assert not again.without_headroom
    on_target = pod(memory="300Mi", limits={"memory": "300Mi"})
    assert one(v, on_target, settings=HEADROOM, memory=memory).action is Action.NONE
    memory.forget("default/web-1", "uid-web-1")
    assert not memory.headroom_refused


def test_a_deferred_resize_falls_back_to_eviction_after_the_timeout() -> None:
    memory = UpdaterMemory()
    v = vpa(lower=("1", "1Gi"))
    first = one(v, pod(), memory=memory)
    assert first.action is Action.RESIZE
    deferred = pod(resize=("PodResizePending", "Deferred"))
    assert one(v, deferred, memory=memory, now=NOW + 60).action is Action.WAIT
    assert one(v, deferred, memory=memory, now=NOW + 299).action is Action.WAIT
    late = one(v, deferred, memory=memory, now=NOW + 301)
    assert late.action is Action.EVICT
    assert "Deferred for 301s" in late.reason


def test_in_place_retries_an_infeasible_size_only_when_the_target_drops() -> None:
    memory = UpdaterMemory()
    infeasible = pod(resize=("PodResizePending", "Infeasible"))
    v = vpa("InPlace", target=("4", "4Gi"), lower=("1", "1Gi"), upper=("8", "8Gi"))
    assert one(v, infeasible, memory=memory).action is Action.RESIZE
    again = one(v, infeasible, memory=memory, now=NOW + 10)
    assert again.action is Action.WAIT
    assert "infeasible" in again.reason
    lower = vpa("InPlace", target=("3", "4Gi"), lower=("1", "1Gi"), upper=("8", "8Gi"))
    assert one(lower, infeasible, memory=memory, now=NOW + 20).action is Action.RESIZE


def test_disruption_budget_and_growth_first() -> None:
    v = vpa(target=("300m", "300Mi"), lower=("200m", "200Mi"), upper=("1", "1Gi"), min_replicas=2)
    grow = pod("web-1")  # 100m -> 300m: growth
    shrink = pod("web-2", cpu="2", memory="2Gi")  # above the upper bound: shrink
    stay = pod("web-3", cpu="300m", memory="300Mi")
    decisions = decide(
        v,
        [shrink, stay, grow],
        replicas={("ReplicaSet", "web-abc"): 3},
        now=NOW,
        settings=SETTINGS,
    )
    by_pod = {d.pod: d for d in decisions}
    # Three replicas, tolerance int(3 * 0.5) = 1: one pod at a time, the growing one first.
    assert [d.pod for d in decisions][:1] == ["default/web-1"]
    assert by_pod["default/web-1"].action is Action.RESIZE
    assert by_pod["default/web-2"].action is Action.WAIT
    assert "no disruption budget left" in by_pod["default/web-2"].reason
    assert by_pod["default/web-3"].action is Action.NONE


def test_jobs_count_their_live_pods_and_finished_pods_are_ignored() -> None:
    v = vpa(lower=("1", "1Gi"))
    running = pod("etl-1", owner=("Job", "etl"))
    done = pod("etl-0", owner=("Job", "etl"), phase="Succeeded")
    unscheduled = pod("etl-2", owner=("Job", "etl"), node="")
    decisions = decide(v, [done, running, unscheduled], replicas={}, now=NOW, settings=SETTINGS)
    assert [(d.pod, d.action) for d in decisions] == [("default/etl-1", Action.RESIZE)]


def test_unknown_replica_count_waits() -> None:
    decision = one(vpa(lower=("1", "1Gi")), pod(), replicas=0)
    assert decision.action is Action.WAIT
    assert "replica count" in decision.reason


def test_no_recommendation_waits() -> None:
    v = vpa()
    v["status"] = {}
    assert one(v, pod()).action is Action.WAIT


def test_containers_with_mode_off_are_not_resized() -> None:
    v = vpa(lower=("1", "1Gi"), policies=[{"containerName": "main", "mode": "Off"}])
    decision = one(v, pod())
    assert decision.action is Action.NONE
    assert "no recommendation" in decision.reason
