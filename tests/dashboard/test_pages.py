"""The pages in a real Chromium (Playwright) over the real API server, with the objects'
status written through the API as the node agent, the scheduler and a VPA recommender would
write it — so every state the pages can show is shown, deterministically. The end-to-end
test (tests/e2e/test_dashboard.py) drives the same pages against a real `inplace up`."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.async_api import Page, expect

from inplace.api.timestamps import rfc3339
from inplace.client import (
    DEPLOYMENTS,
    EVENTS,
    JOBS,
    NAMESPACES,
    NODES,
    PODS,
    REPLICASETS,
    VERTICALPODAUTOSCALERS,
)
from tests.dashboard.browser import (
    CELLS,
    OVERFLOW,
    artifacts,
    assert_shown_whole,
    chromium,
)
from tests.dashboard.conftest import TOKEN, Board

pytestmark = pytest.mark.timeout(120)

Mi = 2**20
SMALL = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}
BIG = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "200m", "memory": "256Mi"}}


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
    owner: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels or {"app": "demo"},
    }
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "main", "image": "busybox", "resources": resources or SMALL}],
        },
    }


async def running(
    board: Board,
    name: str,
    size: dict[str, Any],
    *conditions: dict[str, Any],
    namespace: str = "default",
) -> None:
    """Write the status a node agent would: running, at ``size``, with ``conditions``."""
    now = rfc3339()
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
            *({"lastTransitionTime": now, **c} for c in conditions),
        ],
        "containerStatuses": [
            {
                "name": "main",
                "ready": True,
                "restartCount": 0,
                "image": "busybox",
                "imageID": "",
                "state": {"running": {"startedAt": now}},
                "allocatedResources": size["requests"],
                "resources": size,
            }
        ],
    }
    await board.client.patch(
        PODS, name, {"status": status}, namespace=namespace, subresource="status"
    )


async def event(board: Board, pod_name: str, uid: str, reason: str, message: str) -> None:
    await board.client.create(
        EVENTS,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod_name}.{time.time_ns():x}", "namespace": "default"},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_name,
                "namespace": "default",
                "uid": uid,
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": "kubelet"},
            "firstTimestamp": rfc3339(),
            "lastTimestamp": rfc3339(),
            "count": 1,
        },
    )


async def open_page(page: Page, board: Board, route: str) -> None:
    response = await page.goto(f"{board.base}/?token={TOKEN}")
    assert response is not None and response.ok
    assert "token" not in page.url  # traded for a cookie
    await page.goto(f"{board.base}/#{route}")


async def test_a_wrong_token_gets_401(board: Board) -> None:
    async with chromium() as browser:
        page = await browser.new_page()
        response = await page.goto(f"{board.base}/?token=not-the-token")
        assert response is not None and response.status == 401
        await expect(page.locator("body")).to_contain_text("needs its token")
        response = await page.goto(f"{board.base}/#/pods")
        assert response is not None and response.status == 401


async def test_the_pods_table_sorts_filters_and_follows_the_cluster(board: Board) -> None:
    for name, labels in (
        ("web-1", {"app": "web"}),
        ("web-2", {"app": "web"}),
        ("db-1", {"app": "db"}),
    ):
        await board.client.create(PODS, pod(name, labels=labels))
    board.usage[("default", "web-1")] = {"main": (50_000_000, 40 * Mi)}
    async with chromium() as browser:
        page = await browser.new_page()
        await open_page(page, board, "/pods")
        rows = page.locator("#pods tbody tr")
        await expect(rows).to_have_count(3)
        await expect(rows.first).to_contain_text("db-1")  # by name, ascending
        await page.get_by_role("button", name="Name", exact=True).click()
        await expect(page.locator("#pods th[data-col=name]")).to_have_attribute(
            "aria-sort", "descending"
        )
        await expect(rows.first).to_contain_text("web-2")
        await expect(page.locator("#pods tbody tr[data-key='default/web-1']")).to_contain_text(
            "40Mi"
        )
        await page.evaluate("window.stillTheSamePage = true")

        await page.get_by_label("Labels (selector)").fill("app=web")
        await expect(rows).to_have_count(2)
        await page.get_by_label("Labels (selector)").fill("app in web")
        await expect(page.get_by_role("alert")).to_contain_text("labels:")
        await page.get_by_label("Labels (selector)").fill("")
        await expect(rows).to_have_count(3)

        await board.client.create(PODS, pod("cache-1", labels={"app": "cache"}))
        await expect(rows).to_have_count(4)  # live, no reload:
        assert await page.evaluate("window.stillTheSamePage") is True
        await page.get_by_label("State").select_option("Deferred")
        await expect(rows).to_have_count(0)
        await page.screenshot(path=artifacts() / "inprocess-pods-filtered.png", full_page=True)


async def test_one_pod_shows_the_vpa_band_a_pause_markers_and_why_it_waits(board: Board) -> None:
    job = await board.client.create(
        JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "crunch", "namespace": "default"},
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                },
            },
        },
    )
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "crunch",
        "uid": job["metadata"]["uid"],
    }
    created = await board.client.create(
        PODS,
        pod(
            "crunch-1",
            owner=owner,
            # the Job's selector (defaulted to its uid), as the Job controller labels its pods
            labels=job["spec"]["selector"]["matchLabels"],
            annotations={"inplace.dev/oom-kill-disable": "true"},
        ),
    )
    uid = created["metadata"]["uid"]
    board.usage[("default", "crunch-1")] = {"main": (90_000_000, 100 * Mi)}
    await running(board, "crunch-1", SMALL)
    await board.client.create(
        VERTICALPODAUTOSCALERS,
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": "crunch", "namespace": "default"},
            "spec": {"targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "crunch"}},
        },
    )
    recommendation = {
        "containerRecommendations": [
            {
                "containerName": "main",
                "lowerBound": {"cpu": "50m", "memory": "96Mi"},
                "target": {"cpu": "120m", "memory": "160Mi"},
                "upperBound": {"cpu": "300m", "memory": "240Mi"},
            }
        ]
    }
    await board.client.patch(
        VERTICALPODAUTOSCALERS,
        "crunch",
        {"status": {"recommendation": recommendation}},
        namespace="default",
        subresource="status",
    )
    async with chromium() as browser:
        page = await browser.new_page()
        await open_page(page, board, "/pod/default/crunch-1")
        await expect(page.locator("#pod-facts")).to_contain_text("Job/crunch")
        vpa_cell = page.locator("[data-field=memory-vpa]")
        await expect(vpa_cell).to_have_text("160Mi (96Mi \u2013 240Mi)")
        target = await page.evaluate(
            "inplaceDashboard.charts['main/memory'].data.target.filter(v => v !== null)"
        )
        assert target and set(target) == {160 * Mi}

        # the agent pauses it at its limit; the user asks for more; the scheduler defers that
        await running(
            board,
            "crunch-1",
            SMALL,
            {
                "type": "MemoryPaused",
                "status": "True",
                "reason": "MemoryLimitReached",
                "message": "containers paused at their memory limit: [main]",
            },
        )
        await event(
            board,
            "crunch-1",
            uid,
            "MemoryPaused",
            "containers ['main'] reached their memory limit and are paused",
        )
        await expect(page.locator("#pod-resize")).to_contain_text(
            "Paused: containers paused at their memory limit"
        )
        await board.client.patch(
            PODS,
            "crunch-1",
            {"spec": {"containers": [{"name": "main", "resources": BIG}]}},
            namespace="default",
            subresource="resize",
            patch_type="strategic",
        )
        why = "Node didn't have enough resources: Insufficient memory: requested 128Mi, free 32Mi"
        await running(
            board,
            "crunch-1",
            SMALL,
            {"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": why},
            {"type": "MemoryPaused", "status": "True", "reason": "MemoryLimitReached"},
        )
        await event(board, "crunch-1", uid, "ResizeDeferred", why)
        await expect(page.locator("#pod-resize")).to_contain_text(f"Resize Deferred: {why}")
        await expect(page.locator("#markers tbody tr[data-kind=resize-deferred]")).to_contain_text(
            why
        )
        await expect(page.locator("#markers tbody tr[data-kind=paused]")).to_have_count(1)
        await expect(page.locator("[data-field=memory-limit]")).to_have_text("256Mi")  # asked
        await expect(page.locator("[data-field=memory-applied]")).to_have_text(
            "64Mi / 128Mi"
        )  # held
        pauses = await page.evaluate("inplaceDashboard.charts['main/memory'].box.pauses")
        assert len(pauses) == 1 and pauses[0][1] is None
        await page.screenshot(
            path=artifacts() / "inprocess-pod-vpa-pause-deferred.png", full_page=True
        )

        # the cluster page lists it among the pods waiting, with the reason
        await page.get_by_role("link", name="Cluster").click()
        waiting = page.locator("#waiting tbody tr", has_text="default/crunch-1")
        await expect(waiting).to_contain_text("Deferred")
        await expect(waiting).to_contain_text(why)


async def deployment_with_replicaset(
    board: Board, name: str, rs_name: str, template: dict[str, Any]
) -> dict[str, Any]:
    """A Deployment of 3 and the ReplicaSet it controls (labels ``app: <template's app>``), as
    the deployment controller leaves them; returns the owner reference its pods carry."""
    app = template["metadata"]["labels"]["app"]
    spec = {"replicas": 3, "selector": {"matchLabels": {"app": app}}, "template": template}
    deployment = await board.client.create(
        DEPLOYMENTS,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        },
    )
    controller = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": name,
        "uid": deployment["metadata"]["uid"],
        "controller": True,
    }
    rs = await board.client.create(
        REPLICASETS,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": "default",
                "labels": {"app": app},
                "ownerReferences": [controller],
            },
            "spec": spec,
        },
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs_name,
        "uid": rs["metadata"]["uid"],
    }


async def test_workloads_show_their_pods_resize_progress(board: Board) -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx", "resources": BIG}]},
    }
    owner = await deployment_with_replicaset(board, "web", "web-6d4b", template)
    for name in ("web-6d4b-a", "web-6d4b-b", "web-6d4b-c"):
        await board.client.create(PODS, pod(name, labels={"app": "web"}, owner=owner))
        await running(board, name, SMALL)
    resize = {"spec": {"containers": [{"name": "main", "resources": BIG}]}}
    for name in ("web-6d4b-a", "web-6d4b-b"):
        await board.client.patch(
            PODS, name, resize, namespace="default", subresource="resize", patch_type="strategic"
        )
    await running(board, "web-6d4b-a", BIG)  # resized and applied
    await running(
        board,
        "web-6d4b-b",
        SMALL,
        {
            "type": "PodResizePending",
            "status": "True",
            "reason": "Deferred",
            "message": "Insufficient memory",
        },
    )
    async with chromium() as browser:
        page = await browser.new_page()
        await open_page(page, board, "/workloads")
        row = page.locator("#workloads tbody tr[data-key='Deployment/default/web']")
        await expect(row).to_contain_text("1 current, 1 outdated, 1 deferred")
        await expect(row).to_contain_text("(no status reported yet)")  # no controller writes it yet
        await expect(row.get_by_role("link", name="web-6d4b-b")).to_be_visible()
        await board.client.patch(
            DEPLOYMENTS,
            "web",
            {
                "status": {
                    "replicas": 3,
                    "readyReplicas": 3,
                    "availableReplicas": 3,
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "reason": "MinimumReplicasAvailable",
                        }
                    ],
                }
            },
            namespace="default",
            subresource="status",
        )
        await expect(row).to_contain_text("ready 3")
        await expect(row).to_contain_text("Available=True")
        await page.screenshot(path=artifacts() / "inprocess-workloads.png", full_page=True)


CLOUD_NODE = "ip-10-0-1-23.ec2.internal"
DASH_PODS = (
    "dash-deployment-7d9f8c6b5-x2x9q",
    "dash-deployment-7d9f8c6b5-k8f2m",
    "dash-deployment-7d9f8c6b5-p4w7z",
)
CHECKOUT_POD = "checkout-api-5c8d7b9f4-q7wz2"


async def node(board: Board, name: str) -> None:
    await board.client.create(
        NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    )
    room = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    status = {
        "capacity": room,
        "allocatable": room,
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": rfc3339()}],
    }
    await board.client.patch(NODES, name, {"status": status}, subresource="status")


async def long_names(board: Board) -> None:
    """A Deployment's pods on node-1 (one Deferred) and another namespace's pod on a node
    named as EC2 names them: the names real clusters have."""
    await node(board, "node-1")
    await node(board, CLOUD_NODE)
    template = {
        "metadata": {"labels": {"app": "dash"}},
        "spec": {"containers": [{"name": "main", "image": "nginx", "resources": SMALL}]},
    }
    owner = await deployment_with_replicaset(
        board, "dash-deployment", "dash-deployment-7d9f8c6b5", template
    )
    for i, name in enumerate(DASH_PODS):
        await board.client.create(PODS, pod(name, labels={"app": "dash"}, owner=owner))
        await running(board, name, SMALL)
        board.usage[("default", name)] = {"main": ((30 + 40 * i) * 1_000_000, (40 + 20 * i) * Mi)}
    await board.client.patch(
        PODS,
        DASH_PODS[2],
        {"spec": {"containers": [{"name": "main", "resources": BIG}]}},
        namespace="default",
        subresource="resize",
        patch_type="strategic",
    )
    why = "Node didn't have enough resources: Insufficient memory: requested 128Mi, free 32Mi"
    await running(
        board,
        DASH_PODS[2],
        SMALL,
        {"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": why},
    )
    await board.client.create(
        NAMESPACES,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "payments"}},
    )
    checkout = pod(CHECKOUT_POD, namespace="payments", labels={"app": "checkout"})
    checkout["spec"]["nodeName"] = CLOUD_NODE
    await board.client.create(PODS, checkout, namespace="payments")
    await running(board, CHECKOUT_POD, SMALL, namespace="payments")
    board.usage[("payments", CHECKOUT_POD)] = {"main": (120_000_000, 90 * Mi)}


async def test_columns_share_the_room_names_first(board: Board) -> None:
    """How the pods table shares a width among its columns (app.js ``shareColumns``)."""
    async with chromium() as browser:
        page = await browser.new_page()
        await open_page(page, board, "/pods")

        async def share(floors: list[int], stages: list[list[int | None]], room: int) -> Any:
            wants = [max(w or 0 for w in column) for column in zip(floors, *stages, strict=True)]
            return await page.evaluate(
                "([f, s, w, a]) => inplaceDashboard.shareColumns(f, s, w, a)",
                [floors, stages, wants, room],
            )

        # the shorter whole first, the longer cut to one width; the next stage gets nothing
        assert await share([40, 40, 40, 40], [[60, 300, 200, None], [None] * 3 + [90]], 440) == [
            60,
            170,
            170,
            40,
        ]
        # then the next stage; what is left over is shared in proportion to the wants
        assert await share([40, 40], [[100, None], [None, 60]], 160) == [100, 60]
        assert await share([40, 40], [[100, None], [None, 60]], 320) == [200, 120]
        # narrower than the floors: the floors (the table is wider than the window)
        assert await share([40, 40], [[100, None], [None, 60]], 60) == [40, 40]


async def test_tables_give_names_the_room_they_need(board: Board) -> None:
    """Issue 25: on a 1400-pixel window, every pod's and node's name is whole, in every
    table; on a 1024-pixel one a name may be cut, and then its whole text is its title."""
    await long_names(board)
    pods = {*DASH_PODS, CHECKOUT_POD}
    nodes = {"node-1", CLOUD_NODE}
    for width in (1400, 1024):
        async with chromium(width=width, height=800) as browser:
            page = await browser.new_page()
            await open_page(page, board, "/pods")
            await expect(page.locator("#pods tbody tr")).to_have_count(4)
            await expect(page.locator("#pods tbody svg.spark")).to_have_count(8)
            name_cells = await page.evaluate(CELLS, "#pods tbody th")
            node_cells = await page.evaluate(CELLS, "#pods tbody tr > :nth-child(4)")
            await page.screenshot(path=artifacts() / f"inprocess-pods-{width}.png")
            # whole at both widths: too narrow for one line, a name wraps; its title is its text
            assert_shown_whole(name_cells, pods)
            assert_shown_whole(node_cells, nodes)
            assert all(c["title"] == c["text"] for c in name_cells + node_cells)
            assert await page.evaluate(OVERFLOW) == 0
            if width == 1024:  # some name did need the second line
                assert any(c["lines"] > 1 for c in name_cells), name_cells

            await page.get_by_role("link", name="Cluster").click()
            await expect(page.locator("#nodes tbody tr")).to_have_count(2)
            waiting = page.locator("#waiting tbody tr", has_text=DASH_PODS[2])
            await expect(waiting).to_contain_text("Deferred")
            # the other tables lay themselves out: names whole at both widths
            assert_shown_whole(await page.evaluate(CELLS, "#nodes tbody th .name"), nodes)
            assert_shown_whole(
                await page.evaluate(CELLS, "#waiting tbody th .name"), {f"default/{DASH_PODS[2]}"}
            )
            assert await page.evaluate(OVERFLOW) == 0
            await page.screenshot(path=artifacts() / f"inprocess-cluster-{width}.png")

            await page.get_by_role("link", name="Workloads").click()
            row = page.locator("#workloads tbody tr[data-key='Deployment/default/dash-deployment']")
            await expect(row).to_contain_text("deferred")
            assert_shown_whole(
                await page.evaluate(CELLS, "#workloads tbody th .name"),
                {"Deployment default/dash-deployment"},
            )
            assert_shown_whole(
                await page.evaluate(CELLS, "#workloads tbody td .name"), {DASH_PODS[2]}
            )
            assert await page.evaluate(OVERFLOW) == 0
            await page.screenshot(path=artifacts() / f"inprocess-workloads-{width}.png")
