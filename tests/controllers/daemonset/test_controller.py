"""The DaemonSet controller against the real API server, the test playing the kubelet: one
pod per eligible node, made once and pinned to its node; taints and new nodes; a rolling
update within maxUnavailable and with maxSurge; OnDelete; the in-place rule (a resources-only
change relabels the pods, no pod replaced); history and status.

No scheduler runs here: daemon pods stay unbound, tied to their node by the matchFields
term the controller writes, which is all the controller reads."""

from __future__ import annotations

import asyncio
from typing import Any

from inplace.client import CONTROLLERREVISIONS, DAEMONSETS, EVENTS, NODES, PODS, Client
from inplace.controllers.daemonset.model import (
    REVISION_HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
    target_node,
)
from tests.controllers.conftest import Harness, set_phase
from tests.poll import await_until


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": {"cpu": "2", "memory": "2Gi", "pods": "10"},
            "allocatable": {"cpu": "2", "memory": "2Gi", "pods": "10"},
        },
    }


def container(image: str = "busybox", cpu: str = "100m") -> dict[str, Any]:
    return {
        "name": "main",
        "image": image,
        "resources": {"requests": {"cpu": cpu, "memory": "32Mi"}},
    }


def daemon_set(
    name: str,
    *,
    strategy: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    history_limit: int = 10,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "revisionHistoryLimit": history_limit,
            "updateStrategy": strategy
            or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": spec or {"containers": [container()]},
            },
        },
    }


async def nodes(client: Client, *names_: str, labels: dict[str, str] | None = None) -> None:
    for name in names_:
        await client.create(NODES, node(name, labels))


async def pods_by_node(harness: Harness, app: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in await harness.pods(selector=f"app={app}"):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        out.setdefault(str(target_node(pod)), []).append(pod)
    return out


async def one_per_node(harness: Harness, app: str, want: set[str]) -> dict[str, dict[str, Any]]:
    async def check() -> dict[str, dict[str, Any]] | None:
        by_node = await pods_by_node(harness, app)
        if set(by_node) == want and all(len(p) == 1 for p in by_node.values()):
            return {n: p[0] for n, p in by_node.items()}
        return None

    result: dict[str, dict[str, Any]] = await await_until(check, what=f"one {app} pod on {want}")
    return result


async def run_all(harness: Harness, app: str) -> None:
    """Play the kubelet: every pod of ``app`` not yet Running is Running and Ready."""
    for pod in await harness.pods(selector=f"app={app}"):
        if (pod.get("status") or {}).get("phase") != "Running":
            await set_phase(harness.client, pod, "Running")


async def status(client: Client, name: str) -> dict[str, Any]:
    ds = await client.get(DAEMONSETS, name, namespace="default")
    return dict(ds.get("status") or {})


async def revisions(client: Client, app: str) -> list[dict[str, Any]]:
    items = (
        await client.list(CONTROLLERREVISIONS, namespace="default", label_selector=f"app={app}")
    )["items"]
    return sorted(items, key=lambda r: r["revision"])


async def test_one_pod_per_eligible_node_made_once_with_its_revision(harness: Harness) -> None:
    client = harness.client
    await nodes(client, "n1", "n2", labels={"role": "edge"})
    await nodes(client, "n3")
    created: set[str] = set()

    async def record() -> None:
        async for event in client.watch(
            PODS, namespace="default", resource_version=None, label_selector="app=agent"
        ):
            if event.type == "ADDED":
                created.add(event.object["metadata"]["uid"])

    watcher = asyncio.create_task(record())
    await asyncio.sleep(0.1)
    await harness.start("daemonset")
    ds = daemon_set("agent", spec={"nodeSelector": {"role": "edge"}, "containers": [container()]})
    ds = await client.create(DAEMONSETS, ds)
    placed = await one_per_node(harness, "agent", {"n1", "n2"})
    await asyncio.sleep(0.5)  # every event of the creates has been through the controller
    assert len(created) == 2, "a pod was created twice"
    watcher.cancel()

    [rev] = await revisions(client, "agent")
    hash_ = rev["metadata"]["labels"][REVISION_HASH_LABEL]
    assert rev["metadata"]["name"] == f"agent-{hash_}"
    assert rev["revision"] == 1
    assert rev["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    for node_name, pod in placed.items():
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["name"].startswith("agent-")
        assert meta["labels"][REVISION_HASH_LABEL] == hash_
        assert meta["labels"][TEMPLATE_GENERATION_LABEL] == "1"
        [ref] = meta["ownerReferences"]
        assert ref["kind"] == "DaemonSet" and ref["controller"] is True
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
        assert {t["key"] for t in spec["tolerations"]} >= {
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unschedulable",
        }

    await run_all(harness, "agent")

    async def counted() -> bool:
        st = await status(client, "agent")
        return st.get("numberReady") == 2 and st.get("observedGeneration") == 1

    await await_until(counted, what="status counts the ready pods")
    st = await status(client, "agent")
    assert {
        k: st.get(k, 0) for k in st if k.startswith(("desired", "current", "number", "upd"))
    } == {
        "desiredNumberScheduled": 2,
        "currentNumberScheduled": 2,
        "numberMisscheduled": 0,
        "numberReady": 2,
        "updatedNumberScheduled": 2,
        "numberAvailable": 2,
        "numberUnavailable": 0,
    }

    want = sorted(f"Created pod: {p['metadata']['name']}" for p in placed.values())

    async def created_events() -> bool:
        items = (await client.list(EVENTS, namespace="default"))["items"]
        got = sorted(
            e["message"]
            for e in items
            if e["involvedObject"].get("kind") == "DaemonSet" and e["reason"] == "SuccessfulCreate"
        )
        return got == want

    await await_until(created_events, what="SuccessfulCreate events")


async def test_taints_and_new_nodes(harness: Harness) -> None:
    client = harness.client
    await nodes(client, "n1", "n2")
    await harness.start("daemonset")
    await client.create(DAEMONSETS, daemon_set("watch"))
    await one_per_node(harness, "watch", {"n1", "n2"})

    # NoSchedule keeps a new pod out (n3) but lets a running one stay (n1), counted
    # misscheduled as upstream counts it.
    no_schedule = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
    await client.create(NODES, {**node("n3"), "spec": {"taints": no_schedule}})
    await client.patch(NODES, "n1", {"spec": {"taints": no_schedule}})
    await await_until(
        lambda: _numbers(status(client, "watch"), desiredNumberScheduled=1, numberMisscheduled=1),
        what="n1 and n3 no longer desired",
    )
    assert set(await pods_by_node(harness, "watch")) == {"n1", "n2"}

    # NoExecute: the running pod goes too.
    await client.patch(
        NODES, "n1", {"spec": {"taints": [{"key": "gpu", "value": "x", "effect": "NoExecute"}]}}
    )
    await one_per_node(harness, "watch", {"n2"})

    # Tolerated: both tainted nodes run it again.
    await client.patch(
        DAEMONSETS,
        "watch",
        {"spec": {"template": {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}}},
        namespace="default",
    )
    await converge(harness, "watch", {"n1", "n2", "n3"})
    # A new node gets its pod.
    await nodes(client, "n4")
    await converge(harness, "watch", {"n1", "n2", "n3", "n4"})


async def converge(
    harness: Harness, app: str, want: set[str], image: str = "busybox"
) -> dict[str, dict[str, Any]]:
    """Play the kubelet until ``app`` runs one pod of ``image`` on each node of ``want``."""

    async def check() -> dict[str, dict[str, Any]] | None:
        await run_all(harness, app)
        by_node = await pods_by_node(harness, app)
        if set(by_node) != want or any(len(p) != 1 for p in by_node.values()):
            return None
        if any(p[0]["spec"]["containers"][0]["image"] != image for p in by_node.values()):
            return None
        return {n: p[0] for n, p in by_node.items()}

    result: dict[str, dict[str, Any]] = await await_until(
        check, interval=0.1, what=f"{app}: one {image} pod on {sorted(want)}"
    )
    return result


async def test_rolling_update_replaces_one_pod_at_a_time(harness: Harness) -> None:
    client = harness.client
    await nodes(client, "n1", "n2", "n3")
    await harness.start("daemonset")
    await client.create(DAEMONSETS, daemon_set("roll", history_limit=1))
    before = await one_per_node(harness, "roll", {"n1", "n2", "n3"})
    await run_all(harness, "roll")
    await await_until(
        lambda: _numbers(status(client, "roll"), numberAvailable=3), what="all available"
    )
    await client.patch(
        DAEMONSETS,
        "roll",
        {"spec": {"template": {"spec": {"containers": [container(image="nginx")]}}}},
        namespace="default",
    )
    [_, new_rev] = await await_until(
        lambda: _count(revisions(client, "roll"), 2), what="revision 2"
    )
    new_hash = new_rev["metadata"]["labels"][REVISION_HASH_LABEL]
    assert new_rev["revision"] == 2

    def updated(by_node: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        return [
            p
            for pods in by_node.values()
            for p in pods
            if p["metadata"]["labels"][REVISION_HASH_LABEL] == new_hash
        ]

    for step in range(1, 4):

        async def next_one(want: int = step) -> dict[str, list[dict[str, Any]]] | None:
            by_node = await pods_by_node(harness, "roll")
            return by_node if len(updated(by_node)) == want else None

        by_node = await await_until(next_one, what=f"{step} pods updated")
        await asyncio.sleep(0.3)  # the controller had every chance to go further
        by_node = await pods_by_node(harness, "roll")
        assert len(updated(by_node)) == step, "more than maxUnavailable pods replaced"
        old = [
            p
            for pods in by_node.values()
            for p in pods
            if p["metadata"]["labels"][REVISION_HASH_LABEL] != new_hash
        ]
        assert len(old) == 3 - step
        await run_all(harness, "roll")

    after = await one_per_node(harness, "roll", {"n1", "n2", "n3"})
    assert all(p["spec"]["containers"][0]["image"] == "nginx" for p in after.values())
    assert not {p["metadata"]["uid"] for p in after.values()} & {
        p["metadata"]["uid"] for p in before.values()
    }
    await await_until(
        lambda: _numbers(status(client, "roll"), updatedNumberScheduled=3, numberAvailable=3),
        what="status: all updated and available",
    )

    # Back to the first template: its revision is renumbered the newest; the limit of one
    # old revision keeps the nginx one.
    await client.patch(
        DAEMONSETS,
        "roll",
        {"spec": {"template": {"spec": {"containers": [container()]}}}},
        namespace="default",
    )

    async def renumbered() -> list[dict[str, Any]] | None:
        revs = await revisions(client, "roll")
        return revs if [r["revision"] for r in revs] == [2, 3] else None

    revs = await await_until(renumbered, what="revision 1 renumbered 3")
    assert revs[0]["metadata"]["name"] == new_rev["metadata"]["name"]


async def test_max_surge_starts_the_new_pod_before_the_old_one_goes(harness: Harness) -> None:
    client = harness.client
    await nodes(client, "n1", "n2")
    await harness.start("daemonset")
    surge = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    await client.create(DAEMONSETS, daemon_set("surge", strategy=surge))
    await one_per_node(harness, "surge", {"n1", "n2"})
    await run_all(harness, "surge")
    await await_until(
        lambda: _numbers(status(client, "surge"), numberAvailable=2), what="all available"
    )
    await client.patch(
        DAEMONSETS,
        "surge",
        {"spec": {"template": {"spec": {"containers": [container(image="nginx")]}}}},
        namespace="default",
    )

    async def two_on_a_node() -> dict[str, list[dict[str, Any]]] | None:
        by_node = await pods_by_node(harness, "surge")
        doubled = [n for n, pods in by_node.items() if len(pods) == 2]
        return by_node if len(doubled) == 1 else None

    await await_until(two_on_a_node, what="a surge pod beside its old pod")
    await asyncio.sleep(0.3)  # the controller had every chance to surge further
    assert sum(len(p) for p in (await pods_by_node(harness, "surge")).values()) == 3
    await converge(harness, "surge", {"n1", "n2"}, image="nginx")


async def test_a_resources_only_change_moves_the_pods_in_place(harness: Harness) -> None:
    """The in-place rule, for both strategies: the pods are relabelled to the new revision,
    none is deleted; an image change under OnDelete replaces nothing until a pod is deleted."""
    client = harness.client
    await nodes(client, "n1", "n2")
    await harness.start("daemonset")
    await resize_in_place(harness, "inplace-rolling", None)
    await resize_in_place(harness, "inplace-ondelete", {"type": "OnDelete"})

    # OnDelete: an image change replaces nothing by itself.
    await client.patch(
        DAEMONSETS,
        "inplace-ondelete",
        {"spec": {"template": {"spec": {"containers": [container(image="nginx", cpu="250m")]}}}},
        namespace="default",
    )
    await await_until(lambda: _count(revisions(client, "inplace-ondelete"), 3), what="revision 3")
    await asyncio.sleep(0.5)
    kept = await one_per_node(harness, "inplace-ondelete", {"n1", "n2"})
    assert all(p["spec"]["containers"][0]["image"] == "busybox" for p in kept.values())
    victim = kept["n1"]
    await client.delete(PODS, victim["metadata"]["name"], namespace="default")

    async def replaced() -> bool:
        by_node = await one_per_node(harness, "inplace-ondelete", {"n1", "n2"})
        return bool(by_node["n1"]["spec"]["containers"][0]["image"] == "nginx")

    await await_until(replaced, what="the deleted pod replaced from the new template")
    still = await one_per_node(harness, "inplace-ondelete", {"n1", "n2"})
    assert still["n2"]["metadata"]["uid"] == kept["n2"]["metadata"]["uid"]


async def resize_in_place(harness: Harness, name: str, strategy: dict[str, Any] | None) -> None:
    """A DaemonSet whose cpu request changes (QoS kept): its pods move to the new revision
    by their labels, the same pods."""
    client = harness.client
    await client.create(DAEMONSETS, daemon_set(name, strategy=strategy))
    before = await one_per_node(harness, name, {"n1", "n2"})
    await run_all(harness, name)
    await client.patch(
        DAEMONSETS,
        name,
        {"spec": {"template": {"spec": {"containers": [container(cpu="250m")]}}}},
        namespace="default",
    )
    [_, new_rev] = await await_until(lambda: _count(revisions(client, name), 2), what="revision 2")
    new_hash = new_rev["metadata"]["labels"][REVISION_HASH_LABEL]

    async def moved() -> dict[str, dict[str, Any]] | None:
        by_node = await one_per_node(harness, name, {"n1", "n2"})
        ok = all(
            p["metadata"]["labels"][REVISION_HASH_LABEL] == new_hash
            and p["metadata"]["labels"][TEMPLATE_GENERATION_LABEL] == "2"
            for p in by_node.values()
        )
        return by_node if ok else None

    after = await await_until(moved, what=f"{name}: pods moved to the new revision")
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == {
        n: p["metadata"]["uid"] for n, p in before.items()
    }, "a pod was replaced"
    await await_until(
        lambda: _numbers(status(client, name), updatedNumberScheduled=2),
        what="status counts them updated",
    )


async def test_a_failed_pod_is_replaced_with_an_event(harness: Harness) -> None:
    client = harness.client
    await nodes(client, "n1")
    await harness.start("daemonset")
    await client.create(DAEMONSETS, daemon_set("crashy"))
    first = (await one_per_node(harness, "crashy", {"n1"}))["n1"]
    await set_phase(client, first, "Failed")

    async def replaced() -> bool:
        pod = (await one_per_node(harness, "crashy", {"n1"}))["n1"]
        return bool(pod["metadata"]["uid"] != first["metadata"]["uid"])

    await await_until(replaced, what="the failed pod replaced")

    async def warned() -> bool:
        items = (await client.list(EVENTS, namespace="default"))["items"]
        return any(e["reason"] == "FailedDaemonPod" for e in items)

    await await_until(warned, what="a FailedDaemonPod event")


async def _count(got: Any, n: int) -> Any:
    items = await got
    return items if len(items) == n else None


async def _numbers(got: Any, **want: int) -> bool:
    st = await got
    return all(st.get(k, 0) == v for k, v in want.items())
