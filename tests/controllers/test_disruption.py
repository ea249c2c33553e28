"""Disruption-budget math, tabled (upstream ``disruption_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.client import PODDISRUPTIONBUDGETS, PODS, REPLICASETS, APITooManyRequestsError, Client
from inplace.controllers.disruption import DELETION_TIMEOUT, budget_numbers
from tests.controllers.conftest import Harness, set_phase
from tests.controllers.test_replicaset import replica_set
from tests.poll import await_until

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def pod(name: str, *, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pdb(disrupted: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"spec": spec, "status": {"disruptedPods": disrupted} if disrupted else {}}


THREE = [pod("a"), pod("b"), pod("c")]


@pytest.mark.parametrize(
    ("budget", "pods", "scale", "numbers"),
    [
        # (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed)
        (pdb(minAvailable=2), THREE, None, (3, 2, 3, 1)),
        (pdb(minAvailable=3), THREE, None, (3, 3, 3, 0)),
        (pdb(minAvailable=1), [pod("a", ready=False), pod("b")], None, (1, 1, 2, 0)),
        (pdb(minAvailable="50%"), THREE, 4, (3, 2, 4, 1)),  # 50% of the scale, rounded up
        (pdb(minAvailable="34%"), THREE, 3, (3, 2, 3, 1)),
        (pdb(maxUnavailable=1), THREE, 3, (3, 2, 3, 1)),
        (pdb(maxUnavailable="50%"), THREE, 3, (3, 1, 3, 2)),  # 50% of 3 rounds up to 2
        (pdb(maxUnavailable=0), THREE, 3, (3, 3, 3, 0)),
        (pdb(minAvailable=0), [], None, (0, 0, 0, 0)),  # nothing expected: nothing allowed
        (pdb(minAvailable=1), [pod("a", deleting=True), pod("b")], None, (1, 1, 2, 0)),
    ],
)
def test_budget_numbers(
    budget: dict[str, Any],
    pods: list[dict[str, Any]],
    scale: int | None,
    numbers: tuple[int, int, int, int],
) -> None:
    got = budget_numbers(budget, pods, scale, T0)
    assert (
        got.current_healthy,
        got.desired_healthy,
        got.expected_pods,
        got.disruptions_allowed,
    ) == numbers


def test_an_evicted_pod_stops_counting_until_deleted_or_two_minutes_pass() -> None:
    budget = pdb({"a": "2026-01-01T00:00:00Z"}, minAvailable=1)
    fresh = budget_numbers(budget, THREE, None, T0 + 10)
    assert (fresh.current_healthy, fresh.disruptions_allowed) == (2, 1)
    assert fresh.disrupted_pods == {"a": "2026-01-01T00:00:00Z"}
    assert fresh.recheck_in == pytest.approx(DELETION_TIMEOUT - 10)
    stale = budget_numbers(budget, THREE, None, T0 + DELETION_TIMEOUT + 1)
    assert (stale.current_healthy, stale.disrupted_pods) == (3, {})
    being_deleted = budget_numbers(budget, [pod("a", deleting=True), *THREE[1:]], None, T0 + 10)
    assert being_deleted.disrupted_pods == {}


# -- against the API server ----------------------------------------------------------------


async def test_budget_status_drives_the_eviction_api(harness: Harness) -> None:
    client = harness.client
    await harness.start("replicaset,disruption")
    await client.create(REPLICASETS, replica_set("guarded", 3, {"app": "guarded"}))
    await client.create(
        PODDISRUPTIONBUDGETS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": "default"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )

    async def three() -> bool:
        return len(await harness.pods(selector="app=guarded")) == 3

    await await_until(three, what="3 pods")
    for pod in await harness.pods(selector="app=guarded"):
        await set_phase(client, pod, "Running")

    async def allowed(n: int) -> bool:
        st = (await client.get(PODDISRUPTIONBUDGETS, "guard", namespace="default"))["status"]
        return bool(st.get("disruptionsAllowed") == n and st.get("currentHealthy") == 3 - (1 - n))

    await await_until(lambda: allowed(1), what="one disruption allowed")
    status = (await client.get(PODDISRUPTIONBUDGETS, "guard", namespace="default"))["status"]
    assert (status["desiredHealthy"], status["expectedPods"]) == (2, 3)
    assert status["observedGeneration"] == 1
    cond = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert (cond["status"], cond["reason"]) == ("True", "SufficientPods")
    first, second = (await harness.pods(selector="app=guarded"))[:2]
    await evict(client, first)
    with pytest.raises(APITooManyRequestsError) as refused:
        await evict(client, second)
    assert "guard" in str(refused.value.details)


async def evict(client: Client, pod: dict[str, Any]) -> None:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod["metadata"]["name"], "namespace": "default"},
    }
    await client.create(PODS, body, namespace="default", subresource="eviction")
