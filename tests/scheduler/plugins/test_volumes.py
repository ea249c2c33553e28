"""VolumeBinding: claims that must exist, unbound Immediate claims, volume node affinity, and
the selected-node annotation of a WaitForFirstConsumer claim."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inplace.scheduler.cache import NodeCache
from inplace.scheduler.framework import Code, CycleState, Framework, pod_info
from inplace.scheduler.plugins import (
    NodeResourcesFit,
    VolumeBinding,
    VolumeObjects,
    default_plugins,
)
from inplace.scheduler.plugins.volumes import REASON_NODE_CONFLICT, REASON_UNBOUND_IMMEDIATE
from tests.scheduler.helpers import node, pod


def cache_of(*names: str) -> NodeCache:
    cache = NodeCache(capacity=4)
    for name in names:
        cache.upsert_node(node(name))
    return cache


def claim_pod(*claims: str) -> dict[str, Any]:
    p = pod("app")
    p["spec"]["volumes"] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ] + [{"name": "tmp", "emptyDir": {}}]
    return p


def claim(name: str, cls: str = "local-path", volume: str = "", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": cls}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "default", **meta}, "spec": spec}


def volume(name: str, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_name:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [node_name],
                            }
                        ]
                    }
                ]
            }
        }
    return {"metadata": {"name": name}, "spec": spec}


def objects(*items: dict[str, Any]) -> VolumeObjects:
    view = VolumeObjects()
    view.set_class(
        {"metadata": {"name": "local-path"}, "volumeBindingMode": "WaitForFirstConsumer"}
    )
    view.set_class({"metadata": {"name": "now"}, "volumeBindingMode": "Immediate"})
    for item in items:
        if "namespace" in item["metadata"]:
            view.set_claim(item)
        else:
            view.set_volume(item)
    return view


@pytest.mark.parametrize(
    ("claims", "items", "code", "reason"),
    [
        ((), (), Code.SUCCESS, ""),
        (
            ("data",),
            (),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" not found',
        ),
        (
            ("data",),
            (claim("data", deletionTimestamp="2026-01-01T00:00:00Z"),),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" is being deleted',
        ),
        (
            ("data",),
            (claim("data", cls="now"),),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
        ),
        # No class ("") binds Immediate too.
        (
            ("data",),
            (claim("data", cls=""),),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
        ),
        # WaitForFirstConsumer waits for the scheduler: schedulable.
        (("data",), (claim("data"),), Code.SUCCESS, ""),
        (("data",), (claim("data", cls="now", volume="pv1"), volume("pv1")), Code.SUCCESS, ""),
    ],
)
def test_pre_filter(
    claims: tuple[str, ...], items: tuple[dict[str, Any], ...], code: Code, reason: str
) -> None:
    plugin = VolumeBinding(objects(*items))
    status = plugin.pre_filter(CycleState(), pod_info(claim_pod(*claims)), cache_of("node-1"))
    assert status.code == code
    assert status.message() == reason


def test_bound_volume_node_affinity_filters_nodes() -> None:
    plugin = VolumeBinding(objects(claim("data", volume="pv1"), volume("pv1", "node-2")))
    cache = cache_of("node-1", "node-2", "node-3")
    state = CycleState()
    info = pod_info(claim_pod("data"))
    assert plugin.pre_filter(state, info, cache).ok
    mask = plugin.filter_nodes(state, info, cache)
    assert mask is not None
    for name, slot in cache.slot_of.items():
        status = plugin.filter(state, info, cache, slot)
        assert status.ok == bool(mask[slot]) == (name == "node-2")
        if not status.ok:
            assert status.reasons == (REASON_NODE_CONFLICT,)


def test_framework_diagnosis_names_the_conflict() -> None:
    framework = Framework(
        [
            NodeResourcesFit(),
            VolumeBinding(objects(claim("data", volume="pv1"), volume("pv1", "gone"))),
        ]
    )
    cache = cache_of("node-1", "node-2")
    state = CycleState()
    info = pod_info(claim_pod("data"))
    assert framework.run_pre_filters(state, info, cache).ok
    assert not framework.feasible(state, info, cache).any()
    assert framework.diagnose(state, info, cache).message() == (
        "0/2 nodes are available: 2 node(s) had volume node affinity conflict."
    )


class RecordingClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []

    async def patch(
        self, resource: Any, name: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        self.patches.append((name, body, namespace))
        return {}


def test_pre_bind_selects_the_node_for_delayed_claims() -> None:
    client = RecordingClient()
    view = objects(
        claim("fresh"),
        claim("chosen", annotations={"volume.kubernetes.io/selected-node": "node-1"}),
        claim("done", volume="pv1"),
        volume("pv1"),
    )
    plugin = VolumeBinding(view, client)  # type: ignore[arg-type]
    framework = Framework([plugin])
    state = CycleState()
    info = pod_info(claim_pod("fresh", "chosen", "done"))
    assert plugin.pre_filter(state, info, cache_of("node-1")).ok
    status = asyncio.run(framework.pre_bind(state, info, "node-1"))
    assert status.ok
    assert client.patches == [
        (
            "fresh",
            {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-1"}}},
            "default",
        )
    ]


def test_default_plugins_include_volume_binding_only_with_objects() -> None:
    names = [getattr(p, "name", "") for p in default_plugins(None, volumes=VolumeObjects())]
    assert names.index("VolumeBinding") == names.index("NodeResourcesFit") + 1
    assert "VolumeBinding" not in [getattr(p, "name", "") for p in default_plugins(None)]
