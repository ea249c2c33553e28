"""Capping a reaction's resize to what fits the pod's node."""

from __future__ import annotations

from typing import Any

from inplace.api.quantity import Quantity
from inplace.api.vpa_policy import ContainerResources
from inplace.controllers.vpa.fit import fit_to_node, free_room

Q = Quantity.parse
NODE = {"status": {"allocatable": {"cpu": "2", "memory": "1Gi"}}}


def pod(name: str, cpu: str, memory: str, limit: str | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limit:
        resources["limits"] = {"memory": limit}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "resources": resources}]},
        "status": {"phase": "Running"},
    }


def test_free_room_is_allocatable_minus_the_other_pods() -> None:
    finished = pod("done", "1", "900Mi")
    finished["status"]["phase"] = "Succeeded"
    assert free_room(NODE, [pod("a", "500m", "256Mi"), finished]) == {
        "cpu": 1500,
        "memory": 768 * 2**20 * 1000,
    }


def test_growth_beyond_the_room_is_capped() -> None:
    me = pod("me", "100m", "256Mi")
    wanted = [ContainerResources("app", {"cpu": Q("300m"), "memory": Q("900Mi")}, {})]
    fitted = fit_to_node(wanted, me, NODE, [pod("other", "500m", "512Mi")])
    # 1Gi - 512Mi (other) - 256Mi (mine) = 256Mi to grow into; cpu has room.
    assert fitted[0].requests == {"cpu": Q("300m"), "memory": Q("512Mi")}


def test_a_limit_equal_to_the_request_follows_it() -> None:
    me = pod("me", "100m", "256Mi", limit="256Mi")
    wanted = [ContainerResources("app", {"memory": Q("2Gi")}, {"memory": Q("2Gi")})]
    fitted = fit_to_node(wanted, me, NODE, [])
    assert fitted[0].requests == {"memory": Q("1Gi")}
    assert fitted[0].limits == {"memory": Q("1Gi")}


def test_shrinking_and_unknown_nodes_are_left_alone() -> None:
    me = pod("me", "100m", "256Mi")
    wanted = [ContainerResources("app", {"memory": Q("128Mi")}, {})]
    assert fit_to_node(wanted, me, NODE, [pod("big", "1", "1Gi")])[0].requests == {
        "memory": Q("128Mi")
    }
    big = [ContainerResources("app", {"memory": Q("8Gi")}, {})]
    assert fit_to_node(big, me, None, []) == tuple(big)


def test_a_memory_limit_past_the_node_is_lowered_to_it() -> None:
    me = pod("me", "100m", "256Mi", limit="512Mi")
    wanted = [ContainerResources("app", {"memory": Q("600Mi")}, {"memory": Q("4Gi")})]
    fitted = fit_to_node(wanted, me, NODE, [])
    assert fitted[0].requests == {"memory": Q("600Mi")}
    assert fitted[0].limits == {"memory": Q("1Gi")}  # the node's allocatable
