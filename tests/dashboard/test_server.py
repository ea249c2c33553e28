"""The dashboard's HTTP side against the real API server: token, streams, one watch per
kind, usage history, and the resize form (preview with the server's dry-run, then apply)."""

from __future__ import annotations

import contextlib
from typing import Any

import aiohttp

from inplace.client import PODS, VERTICALPODAUTOSCALERS
from tests.dashboard.conftest import TOKEN, Board, next_event, sse_events
from tests.poll import await_until


def pod(name: str, *, node: str = "n1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "demo"}},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "64Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                    },
                }
            ],
        },
    }


async def test_every_page_needs_the_token(board: Board) -> None:
    async with aiohttp.ClientSession() as anonymous:
        for path in ("/", "/?token=wrong", "/static/app.js", "/api/view?view=cluster"):
            async with anonymous.get(board.base + path, allow_redirects=False) as r:
                assert r.status == 401, path
                assert "needs its token" in await r.text()
        async with anonymous.get(board.base + "/healthz") as r:
            assert r.status == 200  # for the supervisor and tests, reveals nothing
        async with anonymous.get(
            board.base + "/api/view?view=cluster", headers={"Authorization": "Bearer nope"}
        ) as r:
            assert r.status == 401
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for an IP address
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(f"{board.base}/?token={TOKEN}", allow_redirects=False) as r:
            assert r.status == 302 and r.headers["Location"] == "/"  # the token leaves the URL
            cookie = r.cookies[board.server.cookie_name]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
        async with browser.get(board.base + "/") as r:
            assert r.status == 200 and "inplace dashboard" in await r.text()
        async with browser.get(board.base + "/static/vendor/uplot/uPlot.iife.min.js") as r:
            assert r.status == 200 and "uPlot" in await r.text()
        async with browser.get(board.base + "/static/vendor/uplot/LICENSE") as r:
            assert "MIT License" in await r.text()
        form = {"namespace": "default", "name": "x", "containers": {}}
        async with browser.post(
            board.base + "/api/resize/apply", json=form, headers={"Origin": "http://evil.test"}
        ) as r:
            assert r.status == 403  # another page on this host would carry the cookie
        async with browser.post(board.base + "/api/resize/apply", data="{}") as r:
            assert r.status == 415


async def test_the_pods_stream_sends_a_snapshot_then_what_changed(board: Board) -> None:
    await board.client.create(PODS, pod("a"))
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{board.base}/api/stream", params={"view": "pods"}, headers=board.auth()
        ) as response,
    ):
        assert response.headers["Content-Type"] == "text/event-stream"
        events = sse_events(response)
        await await_until(lambda: "default/a" in board.state.summaries, what="pod a seen")
        event, data = await next_event(events)
        while event == "snapshot" and not data["rows"]:
            event, data = await next_event(events)  # the first may precede the informer's sync
        keys = {r["key"] for r in data.get("rows", data.get("upsert", []))}
        assert "default/a" in keys
        await board.client.create(PODS, pod("b"))
        event, data = await next_event(events)
        assert event == "delta" and [r["key"] for r in data["upsert"]] == ["default/b"]
        await board.client.delete(PODS, "b", namespace="default", grace_period_seconds=0)
        event, data = await next_event(events)
        assert event == "delta" and data["delete"] == ["default/b"]


async def test_filters_and_a_bad_selector(board: Board) -> None:
    await board.client.create(PODS, pod("web-1", labels={"app": "web", "tier": "front"}))
    await board.client.create(PODS, pod("db-1", labels={"app": "db"}))
    await await_until(lambda: len(board.state.summaries) == 2, what="two pods seen")
    async with aiohttp.ClientSession() as session:
        rows = (await board.view(session, view="pods", labels="app in (web),tier"))["rows"]
        assert [r["name"] for r in rows] == ["web-1"]
        rows = (await board.view(session, view="pods", q="db"))["rows"]
        assert [r["name"] for r in rows] == ["db-1"]
        async with session.get(
            f"{board.base}/api/stream",
            params={"view": "pods", "labels": "app in web"},
            headers=board.auth(),
        ) as r:
            assert r.status == 400
            assert "labels:" in (await r.json())["error"]


async def test_one_watch_per_kind_whatever_the_tabs(board: Board) -> None:
    registry = board.api.server.metrics.registry

    def pod_watchers() -> float:
        value = registry.get_sample_value(
            "apiserver_registered_watchers", {"group": "", "version": "v1", "kind": "Pod"}
        )
        return value or 0.0

    await await_until(lambda: board.state.pods.has_synced, what="informer synced")
    await await_until(lambda: pod_watchers() == 1, what="the dashboard's pod watch")
    async with aiohttp.ClientSession() as session, contextlib.AsyncExitStack() as stack:
        for view in ("pods", "pods", "cluster", "workloads", "pod"):
            params = {"view": view, "namespace": "default", "name": "a"}
            r = await stack.enter_async_context(
                session.get(f"{board.base}/api/stream", params=params, headers=board.auth())
            )
            await next_event(sse_events(r))
        assert board.server.streams == 5
        assert pod_watchers() == 1  # five tabs, still the one watch
    await await_until(lambda: board.server.streams == 0, what="streams closed")


async def test_usage_history_comes_from_metrics_without_repeats(board: Board) -> None:
    await board.client.create(PODS, pod("a"))
    board.usage[("default", "a")] = {"main": (120_000_000, 50 * 2**20)}
    await await_until(lambda: "default/a" in board.state.summaries, what="pod seen")
    async with aiohttp.ClientSession() as session:

        async def usage() -> Any:
            row = (await board.view(session, view="pods"))["rows"][0]
            return row["memory"]["usage"]

        assert await await_until(usage, what="usage from metrics.k8s.io") == 50 * 2**20
        summary = board.state.summaries["default/a"]
        ring = board.state.histories[summary.uid].containers["main"].usage
        polls = board.state.metrics_polls
        await await_until(lambda: board.state.metrics_polls > polls + 2, what="more polls")
        assert len(ring) == 1  # the same sample, answered again, is not kept twice
        board.sampled_at += 5  # the node agent's next sample (time stamps have whole seconds)
        board.usage[("default", "a")] = {"main": (240_000_000, 60 * 2**20)}
        await await_until(lambda: len(ring) == 2, what="the next sample")
        detail = await board.view(session, view="pod", namespace="default", name="a")
        (container,) = detail["containers"]
        assert [v for v in container["cpu"]["usage"] if v is not None] == [120.0, 240.0]
        assert container["current"]["memory"]["usage"] == 60 * 2**20


async def test_the_resize_form_previews_with_a_dry_run_and_applies(board: Board) -> None:
    await board.client.create(PODS, pod("a"))
    await await_until(lambda: board.state.pods.get("default/a"), what="pod in the cache")
    url = board.base + "/api/resize/"
    bigger = {
        "namespace": "default",
        "name": "a",
        "containers": {"main": {"limits": {"memory": "256Mi"}}},
    }
    wrong = {
        "namespace": "default",
        "name": "a",
        "containers": {"main": {"requests": {"memory": "1Gi"}}},
    }
    async with aiohttp.ClientSession(headers=board.auth()) as session:
        async with session.post(url + "preview", json=bigger) as r:
            preview = await r.json()
        assert preview["errors"] == [] and preview["server"]["ok"]
        assert preview["command"] == (
            "kubectl patch pod a -n default --subresource resize -p "
            """'{"spec":{"containers":[{"name":"main","resources":{"limits":{"memory":"256Mi"}}}]}}'"""
        )
        async with session.post(url + "preview", json=wrong) as r:
            refused = (await r.json())["server"]
        assert not refused["ok"] and refused["code"] == 422
        assert "spec.containers[0].resources.requests" in refused["message"]
        current = await board.client.get(PODS, "a", namespace="default")
        assert current["spec"]["containers"][0]["resources"]["limits"]["memory"] == "128Mi"

        async with session.post(url + "apply", json=wrong) as r:
            assert r.status == 422 and not (await r.json())["ok"]
        async with session.post(url + "apply", json=bigger) as r:
            applied = await r.json()
        assert applied["ok"], applied
        current = await board.client.get(PODS, "a", namespace="default")
        assert current["spec"]["containers"][0]["resources"]["limits"]["memory"] == "256Mi"
        assert current["metadata"]["generation"] == 2
        async with session.post(url + "apply", json={**bigger, "name": "ghost"}) as r:
            assert r.status == 404


async def test_a_vpa_band_follows_the_recommendation_written_to_its_status(board: Board) -> None:
    job = {
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
    }
    from inplace.client import JOBS

    created = await board.client.create(JOBS, job)
    owned = pod("crunch-1")
    # the Job's selector (defaulted to its uid), as the Job controller labels its pods
    owned["metadata"]["labels"] = created["spec"]["selector"]["matchLabels"]
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "crunch",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
    ]
    await board.client.create(PODS, owned)
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "crunch", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "crunch"},
            "updatePolicy": {"updateMode": "Off"},
        },
    }
    await board.client.create(VERTICALPODAUTOSCALERS, vpa)
    async with aiohttp.ClientSession() as session:

        async def detail() -> dict[str, Any]:
            return await board.view(session, view="pod", namespace="default", name="crunch-1")

        got = await await_until(lambda: _vpa_named(detail()), what="the VPA covers the pod")
        assert (
            got["containers"][0]["current"]["memory"]["target"] is None
        )  # empty status: no band yet
        status = {
            "status": {
                "recommendation": {
                    "containerRecommendations": [
                        {
                            "containerName": "main",
                            "lowerBound": {"cpu": "100m", "memory": "80Mi"},
                            "target": {"cpu": "300m", "memory": "100Mi"},
                            "upperBound": {"cpu": "600m", "memory": "200Mi"},
                        }
                    ]
                }
            }
        }
        await board.client.patch(
            VERTICALPODAUTOSCALERS, "crunch", status, namespace="default", subresource="status"
        )

        async def band() -> Any:
            current = (await detail())["containers"][0]["current"]["memory"]
            return current if current["target"] else None

        current = await await_until(band, what="the band")
        assert (current["lower"], current["target"], current["upper"]) == (
            80 * 2**20,
            100 * 2**20,
            200 * 2**20,
        )


async def _vpa_named(detail: Any) -> Any:
    got = await detail
    return got if got.get("vpa") == "crunch" else None


async def test_a_pod_moved_away_stays_on_its_workload_row(board: Board) -> None:
    from inplace.api.timestamps import rfc3339
    from inplace.client import EVENTS, JOBS

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
    owned = pod("crunch-a")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "crunch",
         "uid": job["metadata"]["uid"], "controller": True}
    ]  # fmt: skip
    created = await board.client.create(PODS, owned)
    await await_until(lambda: "default/crunch-a" in board.state.summaries, what="pod seen")
    message = "Node didn't have enough resources: evicted so its owner recreates it elsewhere"
    await board.client.create(
        EVENTS,
        {
            "metadata": {"name": "crunch-a.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "crunch-a", "namespace": "default",
                               "uid": created["metadata"]["uid"]},
            "reason": "ResizeEvicted",
            "message": message,
            "type": "Normal",
            "lastTimestamp": rfc3339(),
        },
    )  # fmt: skip
    summary = board.state.summaries["default/crunch-a"]
    await await_until(lambda: board.state.histories[summary.uid].markers, what="the move marked")
    await board.client.delete(PODS, "crunch-a", namespace="default", grace_period_seconds=0)
    async with aiohttp.ClientSession() as session:

        async def departed() -> list[dict[str, Any]]:
            rows = (await board.view(session, view="workloads"))["workloads"]
            return [d for row in rows for d in row["departed"]]

        (gone,) = await await_until(departed, what="the move on the Job's row")
    assert (gone["pod"], gone["kind"], gone["message"]) == ("crunch-a", "moved", message)
