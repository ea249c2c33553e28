"""StatefulSets, DaemonSets, ControllerRevisions and CronJobs through the in-process API
server over HTTP: create, read, list, watch, update, status, scale, kubectl's rollout patches,
and 422s that name the field."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from tests.apiserver.support import API, make_api
from tests.conftest import InProcessServer

APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
GENERATION = "deprecated.daemonset.template.generation"


def template(image: str = "busybox:1", **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"app": "web"}}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"containers": [{"name": "main", "image": image}]}}


def stateful_set(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
            **spec,
        },
    }


def daemon_set(name: str = "agent") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()},
    }


def cron_job(name: str = "tick", schedule: str = "*/5 * * * *") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    }


async def created(api: API, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = await api.call("POST", path, body)
    assert status == 201, answer
    result: dict[str, Any] = answer
    return result


async def test_each_kind_is_created_read_listed_and_watched(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        for path, body in (
            (f"{APPS}/statefulsets", stateful_set()),
            (f"{APPS}/daemonsets", daemon_set()),
            (f"{BATCH}/cronjobs", cron_job()),
            (
                f"{APPS}/controllerrevisions",
                {"metadata": {"name": "web-1"}, "revision": 1, "data": {"spec": {}}},
            ),
        ):
            obj = await created(api, path, body)
            name = obj["metadata"]["name"]
            status, got = await api.call("GET", f"{path}/{name}")
            assert status == 200 and got["metadata"]["uid"] == obj["metadata"]["uid"]
            status, listed = await api.call("GET", path)
            assert [item["metadata"]["name"] for item in listed["items"]] == [name]
            status, table = await api.call("GET", path, None, Accept=TABLE)
            assert status == 200 and table["rows"][0]["cells"][0] == name
            events = await watch_events(apiserver, f"{path}?watch=1&resourceVersion=0", 1)
            assert events == [("ADDED", name)]


async def watch_events(server: InProcessServer, path: str, count: int) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    async with (
        aiohttp.ClientSession() as session,
        session.get(server.url + path, headers=server.headers()) as response,
    ):
        async with asyncio.timeout(10):
            async for line in response.content:
                event = json.loads(line)
                events.append((event["type"], event["object"]["metadata"]["name"]))
                if len(events) == count:
                    break
    return events


async def test_created_objects_carry_upstreams_defaults_and_reset_status(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = stateful_set(
            updateStrategy={"rollingUpdate": {"maxUnavailable": 2}},
            volumeClaimTemplates=[
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        )
        body["status"] = {"replicas": 7}
        sts = await created(api, f"{APPS}/statefulsets", body)
        assert sts["metadata"]["generation"] == 1
        # The MaxUnavailableStatefulSet gate is off in v1.36: the field is dropped.
        assert sts["spec"]["updateStrategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"partition": 0},
        }
        assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
        assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
        assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
        ds = await created(api, f"{APPS}/daemonsets", daemon_set())
        assert ds["status"] == {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }
        assert ds["metadata"]["annotations"] == {GENERATION: "1"}
        cj = await created(api, f"{BATCH}/cronjobs", cron_job())
        assert cj["spec"]["concurrencyPolicy"] == "Allow" and cj["spec"]["suspend"] is False
        assert "completions" not in cj["spec"]["jobTemplate"]["spec"]


async def test_daemon_set_template_generation_counts_template_changes(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    path = f"{APPS}/daemonsets/agent"
    async with session:
        await created(api, f"{APPS}/daemonsets", daemon_set())
        status, ds = await api.call(
            "PATCH", path, {"metadata": {"labels": {"team": "a"}}}, STRATEGIC
        )
        assert status == 200
        assert (ds["metadata"]["annotations"][GENERATION], ds["metadata"]["generation"]) == (
            "1",
            1,
        )
        status, ds = await api.call(
            "PATCH",
            path,
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
                }
            },
            STRATEGIC,
        )
        assert (ds["metadata"]["annotations"][GENERATION], ds["metadata"]["generation"]) == (
            "2",
            2,
        )
        # A writer cannot set it, and a spec change outside the template leaves it.
        status, ds = await api.call(
            "PATCH",
            path,
            {"metadata": {"annotations": {GENERATION: "9"}}, "spec": {"minReadySeconds": 5}},
            MERGE,
        )
        assert (ds["metadata"]["annotations"][GENERATION], ds["metadata"]["generation"]) == (
            "2",
            3,
        )
        status, ds = await api.call(
            "PUT",
            f"{path}/status",
            {
                **ds,
                "metadata": {**ds["metadata"], "annotations": {}},
                "status": {**ds["status"], "numberReady": 1, "observedGeneration": 3},
            },
        )
        assert status == 200, ds
        assert ds["metadata"]["annotations"][GENERATION] == "2"
        assert ds["status"]["numberReady"] == 1


async def test_status_and_scale_of_a_stateful_set(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    path = f"{APPS}/statefulsets/web"
    async with session:
        sts = await created(api, f"{APPS}/statefulsets", stateful_set())
        status, sts = await api.call(
            "PUT",
            f"{path}/status",
            {
                **sts,
                "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
                "spec": {**sts["spec"], "replicas": 9},
            },
        )
        assert status == 200, sts
        assert sts["status"]["readyReplicas"] == 1 and sts["spec"]["replicas"] == 1
        # The object itself cannot write status.
        status, sts = await api.call("PATCH", path, {"status": {"readyReplicas": 0}}, MERGE)
        assert sts["status"]["readyReplicas"] == 1
        status, scale = await api.call("GET", f"{path}/scale")
        assert (status, scale["kind"], scale["spec"], scale["status"]) == (
            200,
            "Scale",
            {"replicas": 1},
            {"replicas": 1, "selector": "app=web"},
        )
        status, scale = await api.call("PATCH", f"{path}/scale", {"spec": {"replicas": 3}}, MERGE)
        assert status == 200 and scale["spec"]["replicas"] == 3
        status, sts = await api.call("GET", path)
        assert (sts["spec"]["replicas"], sts["metadata"]["generation"]) == (3, 2)
        status, answer = await api.call(
            "PUT", f"{path}/status", {**sts, "status": {"replicas": 1, "readyReplicas": 2}}
        )
        assert status == 422
        assert answer["details"]["causes"][0]["field"] == "status.readyReplicas"


async def test_rollout_undo_replaces_the_template_with_a_revisions(
    apiserver: InProcessServer,
) -> None:
    """kubectl rollout undo sends a ControllerRevision's ``data`` as a strategic merge patch
    whose template says ``$patch: replace``; rollout restart patches a template annotation."""
    api, session = await make_api(apiserver)
    path = f"{APPS}/statefulsets/web"
    async with session:
        await created(api, f"{APPS}/statefulsets", stateful_set())
        first = await created(
            api,
            f"{APPS}/controllerrevisions",
            {
                "metadata": {"name": "web-1"},
                "revision": 1,
                "data": {"spec": {"template": {**template(), "$patch": "replace"}}},
            },
        )
        status, sts = await api.call(
            "PATCH",
            path,
            {
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}},
                        "spec": {
                            "containers": [
                                {"name": "main", "image": "busybox:2"},
                                {"name": "side", "image": "envoy"},
                            ]
                        },
                    }
                }
            },
            STRATEGIC,
        )
        assert status == 200 and sts["metadata"]["generation"] == 2
        assert len(sts["spec"]["template"]["spec"]["containers"]) == 2
        status, sts = await api.call("PATCH", path, first["data"], STRATEGIC)
        assert status == 200, sts
        restored = sts["spec"]["template"]
        assert "annotations" not in restored["metadata"]
        assert [(c["name"], c["image"]) for c in restored["spec"]["containers"]] == [
            ("main", "busybox:1")
        ]
        # Defaults are filled in again on the replaced template.
        assert restored["spec"]["restartPolicy"] == "Always"
        assert sts["metadata"]["generation"] == 3
        # The revision's data itself never changes.
        status, answer = await api.call(
            "PATCH", f"{APPS}/controllerrevisions/web-1", {"data": {"other": 1}}, MERGE
        )
        assert status == 422
        assert answer["details"]["causes"][0]["field"] == "data"


async def test_refusals_name_the_field(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, answer = await api.call(
            "POST", f"{APPS}/statefulsets", stateful_set(selector={"matchLabels": {"app": "x"}})
        )
        assert status == 422
        assert answer["message"] == (
            'StatefulSet.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
            'map[string]string{"app":"web"}: `selector` does not match template `labels`'
        )
        status, answer = await api.call(
            "POST", f"{BATCH}/cronjobs", cron_job(schedule="not a schedule")
        )
        assert status == 422
        assert [c["field"] for c in answer["details"]["causes"]] == ["spec.schedule"]
        await created(api, f"{APPS}/statefulsets", stateful_set())
        status, answer = await api.call(
            "PATCH", f"{APPS}/statefulsets/web", {"spec": {"serviceName": "other"}}, MERGE
        )
        assert status == 422
        assert answer["details"]["causes"][0]["field"] == "spec"
        assert answer["details"]["causes"][0]["message"].startswith(
            "Forbidden: updates to statefulset spec for fields other than 'replicas'"
        )


async def test_a_daemon_sets_given_template_generation(apiserver: InProcessServer) -> None:
    """On create a generation below 1 becomes 1 and a higher one is kept (upstream's
    ``PrepareForCreate``); one that is not an integer is refused."""
    api, session = await make_api(apiserver)
    async with session:
        for name, given, stored in (("low", "-5", "1"), ("high", "7", "7")):
            body = daemon_set(name)
            body["metadata"]["annotations"] = {GENERATION: given}
            ds = await created(api, f"{APPS}/daemonsets", body)
            assert ds["metadata"]["annotations"][GENERATION] == stored
        body = daemon_set("bad")
        body["metadata"]["annotations"] = {GENERATION: "seven"}
        status, answer = await api.call("POST", f"{APPS}/daemonsets", body)
        assert status == 422
        assert [c["field"] for c in answer["details"]["causes"]] == [
            f"metadata.annotations[{GENERATION}]"
        ]
        status, answer = await api.call(
            "PATCH",
            f"{APPS}/daemonsets/high",
            {"metadata": {"annotations": {GENERATION: "eight"}}},
            MERGE,
        )
        assert status == 422
