"""VolumeBinding: claims that must exist, unbound Immediate claims, the nodes that can serve
a pod's claims (bound volumes' affinity, static volumes and provisioning for
WaitForFirstConsumer claims), and PreBind's selected-node annotation and bounded wait."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from inplace.api.storage import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from inplace.scheduler.cache import NodeCache
from inplace.scheduler.framework import Code, CycleState, Framework, PodInfo, pod_info
from inplace.scheduler.plugins import (
    NodeResourcesFit,
    VolumeBinding,
    VolumeObjects,
    default_plugins,
)
from inplace.scheduler.plugins.volumes import (
    REASON_BIND_CONFLICT as BIND,
)
from inplace.scheduler.plugins.volumes import (
    REASON_NODE_CONFLICT as CONFLICT,
)
from inplace.scheduler.plugins.volumes import (
    REASON_PV_NOT_EXIST as NOT_EXIST,
)
from inplace.scheduler.plugins.volumes import (
    REASON_TIMED_OUT,
    REASON_UNBOUND_IMMEDIATE,
)
from tests.scheduler.helpers import node, pod


def cache_of(*names: str) -> NodeCache:
    cache = NodeCache(capacity=4)
    for name in names:
        cache.upsert_node(node(name, labels={"zone": "a" if name == "node-1" else "b"}))
    return cache


def claim_pod(*claims: str) -> dict[str, Any]:
    p = pod("app")
    p["spec"]["volumes"] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ] + [{"name": "tmp", "emptyDir": {}}]
    return p


def claim(
    name: str, cls: str = "local-path", volume: str = "", size: str = "1Gi", **meta: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": cls,
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if volume:
        spec["volumeName"] = volume
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **meta},
        "spec": spec,
    }


def volume(
    name: str,
    node_name: str = "",
    *,
    cls: str = "",
    size: str = "1Gi",
    claim_ref: str = "",
    phase: str = "Available",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": cls,
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": size},
    }
    if claim_ref:
        spec["claimRef"] = {"namespace": "default", "name": claim_ref, "uid": f"uid-{claim_ref}"}
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
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def objects(*items: dict[str, Any]) -> VolumeObjects:
    view = VolumeObjects()
    view.set_class(
        {
            "metadata": {"name": "local-path"},
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    view.set_class({"metadata": {"name": "now"}, "volumeBindingMode": "Immediate"})
    view.set_class(
        {
            "metadata": {"name": "static"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    view.set_class(
        {
            "metadata": {"name": "zonal"},
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
        }
    )
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


NODES = ("node-1", "node-2", "node-3")
ALL = {n: "" for n in NODES}


def only(node_name: str, reason: str) -> dict[str, str]:
    return {n: "" if n == node_name else reason for n in NODES}


@pytest.mark.parametrize(
    ("claims", "items", "expected"),
    [
        # A bound claim: its volume's node affinity.
        (
            ("data",),
            (claim("data", volume="pv1"), volume("pv1", "node-2")),
            only("node-2", CONFLICT),
        ),
        (("data",), (claim("data", volume="pv1"), volume("pv1")), ALL),
        (("data",), (claim("data", volume="gone"),), {n: NOT_EXIST for n in NODES}),
        # WaitForFirstConsumer, local-path: provisioned on any node.
        (("data",), (claim("data"),), ALL),
        # ... even with a static volume of its class somewhere.
        (("data",), (claim("data"), volume("pv1", "node-2", cls="local-path")), ALL),
        # A class that cannot provision: only where a volume satisfies the claim.
        (("data",), (claim("data", cls="static"),), {n: BIND for n in NODES}),
        (
            ("data",),
            (claim("data", cls="static"), volume("pv1", "node-2", cls="static")),
            only("node-2", BIND),
        ),
        (
            ("data",),
            (claim("data", cls="static"), volume("pv1", "node-2", cls="static", size="1Mi")),
            {n: BIND for n in NODES},
        ),
        (
            ("data",),
            (claim("data", cls="static"), volume("pv1", "node-2", cls="static", phase="Released")),
            {n: BIND for n in NODES},
        ),
        # Pre-bound to this claim (or to another one).
        (
            ("data",),
            (claim("data", cls="static"), volume("pv1", "node-3", cls="static", claim_ref="data")),
            only("node-3", BIND),
        ),
        (
            ("data",),
            (claim("data", cls="static"), volume("pv1", "node-3", cls="static", claim_ref="x")),
            {n: BIND for n in NODES},
        ),
        # Two claims, one volume on node-1: each volume serves one claim.
        (
            ("a", "b"),
            (
                claim("a", cls="static"),
                claim("b", cls="static"),
                volume("pv1", "node-1", cls="static"),
            ),
            {n: BIND for n in NODES},
        ),
        (
            ("a", "b"),
            (
                claim("a", cls="static"),
                claim("b", cls="static"),
                volume("pv1", "node-1", cls="static"),
                volume("pv2", "node-1", cls="static"),
            ),
            only("node-1", BIND),
        ),
        # allowedTopologies: only node-1 is in zone a.
        (("data",), (claim("data", cls="zonal"),), only("node-1", BIND)),
        # A bound claim's conflict is named before a delayed one's.
        (
            ("data", "more"),
            (claim("data", volume="pv1"), volume("pv1", "node-2"), claim("more", cls="static")),
            {"node-1": CONFLICT, "node-2": BIND, "node-3": CONFLICT},
        ),
    ],
)
def test_filter_vector_agrees_with_per_node(
    claims: tuple[str, ...], items: tuple[dict[str, Any], ...], expected: dict[str, str]
) -> None:
    plugin = VolumeBinding(objects(*items))
    cache = cache_of(*NODES)
    state = CycleState()
    info = pod_info(claim_pod(*claims))
    assert plugin.pre_filter(state, info, cache).ok
    mask = plugin.filter_nodes(state, info, cache)
    for name, slot in cache.slot_of.items():
        status = plugin.filter(state, info, cache, slot)
        assert status.ok == (True if mask is None else bool(mask[slot])), name
        assert status.message() == expected[name], name
        if not status.ok:
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


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
        f"0/2 nodes are available: 2 {CONFLICT}."
    )


class FakeController:
    """The API as PreBind sees it: a patch lands in the scheduler's informer copy (with a new
    resourceVersion), and the test plays the PersistentVolume controller."""

    def __init__(self, view: VolumeObjects) -> None:
        self.view = view
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []
        self.version = 10

    async def patch(
        self, resource: Any, name: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        self.patches.append((name, body, namespace))
        current = self.view.claims[f"{namespace}/{name}"]
        self.version += 1
        meta = dict(current["metadata"])
        meta["annotations"] = {**meta.get("annotations", {}), **body["metadata"]["annotations"]}
        meta["resourceVersion"] = str(self.version)
        updated = {**current, "metadata": meta}
        self.view.set_claim(updated)
        return updated

    def bind(self, name: str, volume_name: str, node_name: str, *, phase: bool = True) -> None:
        """The controller provisions a volume on ``node_name`` and binds the claim to it."""
        self.view.set_volume(volume(volume_name, node_name, cls="local-path"))
        current = self.view.claims[f"default/{name}"]
        meta = dict(current["metadata"])
        meta["annotations"] = {**meta.get("annotations", {}), ANN_BIND_COMPLETED: "yes"}
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        spec = {**current["spec"], "volumeName": volume_name}
        self.view.set_claim({**current, "metadata": meta, "spec": spec})
        if phase:
            self.set_phase(name, "Bound")

    def set_phase(self, name: str, phase: str) -> None:
        current = self.view.claims[f"default/{name}"]
        self.version += 1
        meta = {**current["metadata"], "resourceVersion": str(self.version)}
        self.view.set_claim({**current, "metadata": meta, "status": {"phase": phase}})

    def annotate(self, name: str, **annotations: str) -> None:
        current = self.view.claims[f"default/{name}"]
        meta = {**current["metadata"], "annotations": annotations}
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        self.view.set_claim({**current, "metadata": meta})


def prepared(
    *items: dict[str, Any], claims: tuple[str, ...], timeout: float = 60.0
) -> tuple[FakeController, Framework, CycleState, PodInfo]:
    view = objects(*items)
    api = FakeController(view)
    plugin = VolumeBinding(view, api, bind_timeout=timeout)  # type: ignore[arg-type]
    state = CycleState()
    info = pod_info(claim_pod(*claims))
    assert plugin.pre_filter(state, info, cache_of("node-1", "node-2")).ok
    return api, Framework([plugin]), state, info


SELECT_1 = {"metadata": {"annotations": {ANN_SELECTED_NODE: "node-1"}}}


async def test_pre_bind_selects_the_node_and_waits_until_the_claims_are_bound() -> None:
    api, framework, state, info = prepared(
        claim("fresh"),
        claim("chosen", annotations={ANN_SELECTED_NODE: "node-1"}),
        claim("done", volume="pv1"),
        volume("pv1"),
        claims=("fresh", "chosen", "done"),
    )
    task = asyncio.create_task(framework.pre_bind(state, info, "node-1"))
    await asyncio.sleep(0.01)
    # Only the claim without the annotation is written; nothing is bound yet: waiting.
    assert api.patches == [("fresh", SELECT_1, "default")]
    assert not task.done()
    api.bind("fresh", "pvc-fresh", "node-1")
    await asyncio.sleep(0.01)
    assert not task.done()  # "chosen" is not bound yet
    api.bind("chosen", "pvc-chosen", "node-1")
    status = await asyncio.wait_for(task, 10)
    assert status.ok


async def test_pre_bind_waits_for_the_bound_phase_too() -> None:
    """Upstream stops at "fully bound" (volumeName and bind-completed); here the pod is bound
    only once the claim also reads Bound, the controller's next write."""
    api, framework, state, info = prepared(claim("fresh"), claims=("fresh",))
    task = asyncio.create_task(framework.pre_bind(state, info, "node-1"))
    await asyncio.sleep(0.01)
    api.bind("fresh", "pvc-fresh", "node-1", phase=False)
    await asyncio.sleep(0.01)
    assert not task.done()
    api.set_phase("fresh", "Bound")
    assert (await asyncio.wait_for(task, 10)).ok


@pytest.mark.parametrize(
    ("happen", "reason"),
    [
        # The provisioner gives the claim back (upstream: the annotation is removed).
        (lambda api: api.annotate("fresh"), 'provisioning failed for PVC "fresh"'),
        (
            lambda api: api.annotate("fresh", **{ANN_SELECTED_NODE: "node-2"}),
            'provisioning failed for PVC "fresh"',
        ),
        # Bound to a volume that the node cannot use.
        (
            lambda api: api.bind("fresh", "pvc-fresh", "node-2"),
            'pv "pvc-fresh" node affinity doesn\'t match node "node-1"',
        ),
        (
            lambda api: api.view.drop_claim(claim("fresh")),
            'persistentvolumeclaim "fresh" not found',
        ),
    ],
)
async def test_pre_bind_gives_up_when_the_binding_goes_wrong(
    happen: Callable[[FakeController], None], reason: str
) -> None:
    api, framework, state, info = prepared(claim("fresh"), claims=("fresh",))
    task = asyncio.create_task(framework.pre_bind(state, info, "node-1"))
    await asyncio.sleep(0.01)
    assert not task.done()
    happen(api)
    status = await asyncio.wait_for(task, 10)
    assert status.code == Code.ERROR
    assert status.message() == f'running PreBind plugin "VolumeBinding": binding volumes: {reason}'


async def test_pre_bind_gives_up_when_the_pod_goes() -> None:
    api, framework, state, info = prepared(claim("fresh"), claims=("fresh",))
    pending = {info.key}
    api.view.pod_pending = pending.__contains__
    task = asyncio.create_task(framework.pre_bind(state, info, "node-1"))
    await asyncio.sleep(0.01)
    assert not task.done()
    pending.clear()
    api.view.changed()
    status = await asyncio.wait_for(task, 10)
    assert status.message().endswith("binding volumes: pod does not exist any more")


async def test_pre_bind_waits_for_its_own_write_to_be_seen() -> None:
    """The informer's copy lags the patch: an older claim without the annotation is not
    read as "the provisioner removed it"."""
    api, framework, state, info = prepared(claim("fresh"), claims=("fresh",))
    stale = api.view.claims["default/fresh"]
    task = asyncio.create_task(framework.pre_bind(state, info, "node-1"))
    await asyncio.sleep(0.01)
    written = api.view.claims["default/fresh"]
    api.view.set_claim(stale)  # an event from before the write
    await asyncio.sleep(0.01)
    assert not task.done()
    api.view.set_claim(written)  # the informer catches up
    api.bind("fresh", "pvc-fresh", "node-1")
    assert (await asyncio.wait_for(task, 10)).ok


async def test_pre_bind_times_out_with_upstreams_message() -> None:
    # The timeout is the feature under test; 50 ms keeps the test short.
    _, framework, state, info = prepared(claim("fresh"), claims=("fresh",), timeout=0.05)
    status = await asyncio.wait_for(framework.pre_bind(state, info, "node-1"), 10)
    assert status.code == Code.ERROR
    assert status.message() == f'running PreBind plugin "VolumeBinding": {REASON_TIMED_OUT}'
    assert status.message() == (
        'running PreBind plugin "VolumeBinding": '
        "binding volumes: timed out waiting for the condition"
    )


async def test_pre_bind_with_every_claim_bound_writes_nothing() -> None:
    api, framework, state, info = prepared(
        claim("done", volume="pv1"), volume("pv1"), claims=("done",)
    )
    assert (await framework.pre_bind(state, info, "node-1")).ok
    assert api.patches == []


def test_default_plugins_include_volume_binding_only_with_objects() -> None:
    names = [getattr(p, "name", "") for p in default_plugins(None, volumes=VolumeObjects())]
    # Upstream's filter order: ... NodeResourcesFit, VolumeRestrictions, VolumeBinding.
    assert names.index("VolumeRestrictions") == names.index("NodeResourcesFit") + 1
    assert names.index("VolumeBinding") == names.index("VolumeRestrictions") + 1
    assert "VolumeBinding" not in [getattr(p, "name", "") for p in default_plugins(None)]
